"""Batch AI's launch of each toolkit on the processes scheduler, through the real az (tests/launch_jobs.py): a node is
a slot of this machine, so a 2-node job runs 2 processes (or one mpirun over 2 local slots), with loopback hosts
and free ports; the per-process output files are listed, streamed, read by `sweep metrics` and `sweep status`."""
import json
import os
import shutil
import uuid

import pytest

from tests import launch_jobs
from tests.fixtures_az import service_az

pytestmark = [pytest.mark.az, pytest.mark.service]


def need_mpirun():
    if shutil.which('mpirun') is None:
        message = 'mpirun (OpenMPI) is missing: make test installs it (scripts/install_system_deps.sh mpi) as root'
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(message)
        pytest.skip('MPI LAUNCH TESTS SKIPPED: ' + message)


def test_each_toolkit_runs_as_batchai_launched_it(local_service, tmp_path):
    need_mpirun()
    az, group, experiment, tf_out = launch_jobs.launch_through_az(local_service, str(tmp_path))
    # The nodes are this machine's slots: loopback addresses, each process its own free port.
    config = json.loads(launch_jobs.env_lines(tf_out['stdout-wk-0.txt'])[0]['TF_CONFIG'])
    addresses = config['cluster']['ps'] + config['cluster']['worker']
    assert {a.rsplit(':', 1)[0] for a in addresses} == {'127.0.0.1'} and len(set(addresses)) == 3
    shown = az('batchai', 'job', 'show', *group, '-e', experiment, '-n', 'tf', '--query', 'executionState', '-o',
               'tsv')
    assert shown.stdout.strip() == 'succeeded', shown.stderr


def write_tf_sweep(directory, script):
    job = {'nodeCount': 2, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
           'tensorFlowSettings': {'pythonScriptFilePath': script, 'parameterServerCount': 1,
                                  'masterCommandLineArgs': '--lr={{LR}}', 'workerCommandLineArgs': '--lr={{LR}}',
                                  'parameterServerCommandLineArgs': '--lr={{LR}}'}}
    path = os.path.join(directory, 'sweep.yaml')
    with open(path, 'w', encoding='utf-8') as f:
        f.write('jobNamePrefix: tfsweep\nparameters:\n  - {{name: LR, type: discrete, values: [0.1, 0.2]}}\n'
                'job: {}\n'.format(json.dumps(job)))
    return path


def test_a_sweep_of_distributed_tensorflow_jobs_reads_the_masters_output(local_service, tmp_path):
    az = service_az(local_service, str(tmp_path))
    script = tmp_path / 'tf.py'
    script.write_text(launch_jobs.TF_SCRIPT)
    spec = write_tf_sweep(str(tmp_path), str(script))
    experiment = 'tfsweep-' + uuid.uuid4().hex[:6]
    args = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', experiment, '-n', 'tfsweep']
    submitted = az('batchai', 'sweep', 'submit', *args, '--spec', spec, '-c', local_service.cluster, '-o', 'json')
    assert submitted.exit_code == 0, submitted.stderr
    waited = az('batchai', 'sweep', 'status', *args, '--wait', '--interval', '0.3', '-o', 'json')
    assert waited.exit_code == 0, waited.stderr
    metrics = az('batchai', 'sweep', 'metrics', *args, '--file', 'stdout-wk-1.txt', '--regex',
                 r'^args --lr=(?P<value>[0-9.]+)', '-o', 'json')
    assert metrics.exit_code == 0, metrics.stderr
    # Worker 1's own file: every process of every job got its job's parameter.
    assert {row['parameters']['LR']: row['metric'] for row in metrics.json()} == {0.1: 0.1, 0.2: 0.2}
    job = sorted(row['name'] for row in metrics.json())[0]
    tail = az('batchai', 'sweep', 'status', *args, '--job', job, '--tail', '1', '-o', 'tsv')
    assert tail.exit_code == 0, tail.stderr
    assert tail.stdout.startswith('master 0 at 127.0.0.1:') and ' met ' in tail.stdout, tail.stdout
    assert 'has no' not in tail.stderr
