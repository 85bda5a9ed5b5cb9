"""Batch AI's launch of each toolkit on the Slurm scheduler, through the real az (tests/launch_jobs.py): one task per
node through srun, the launch planned on the job's allocation (node names, NodeAddr, Batch AI's TensorFlow ports),
MPI toolkits through mpirun over the host file from the first node."""
import json

import pytest

from tests import launch_jobs
from tests.localservice.test_job_launch import need_mpirun

pytestmark = [pytest.mark.az, pytest.mark.service]


def test_each_toolkit_runs_on_its_nodes_as_batchai_launched_it(slurm_service, idle_cluster, tmp_path):
    need_mpirun()
    tf_out = launch_jobs.launch_through_az(slurm_service, str(tmp_path))[3]
    # The allocation's nodes: the host list names Slurm nodes, TensorFlow's hosts are their NodeAddr with Batch AI's
    # ports (counted on, since the emulated nodes share 127.0.0.1).
    [env] = launch_jobs.env_lines(tf_out['stdout-wk-0.txt'])
    nodes = env['AZ_BATCH_HOST_LIST'].split(',')
    assert len(nodes) == 2 and all(n.startswith('n') for n in nodes)
    config = json.loads(env['TF_CONFIG'])
    assert config['cluster'] == {'ps': ['127.0.0.1:2222'], 'worker': ['127.0.0.1:2223', '127.0.0.1:2224']}
    wk1 = launch_jobs.env_lines(tf_out['stdout-wk-1.txt'])[0]
    assert wk1['AZ_BATCHAI_MPI_MASTER_NODE'] == nodes[0]
    # Each process on its node: the master and the parameter server on the first, worker 1 on the second; Caffe2's
    # node i on node i; the two MPI ranks one on each node (the host file's slots).
    ran_on = {name: launch_jobs.nodes_of(text) for name, text in tf_out.items()}
    assert ran_on['stdout-wk-0.txt'] == ran_on['stdout-ps-0.txt'] == [nodes[0]]
    assert ran_on['stdout-wk-1.txt'] == [nodes[1]]
    assert ran_on['caffe2 stdout-0.txt'] == [nodes[0]] and ran_on['caffe2 stdout-1.txt'] == [nodes[1]]
    assert sorted(line.rsplit(' ', 1)[1] for line in tf_out['mpi stdout.txt'].splitlines()
                  if line.startswith('rank')) == sorted(nodes)
