"""Batch AI's launch of each toolkit on the processes scheduler, through the real az (tests/launch_jobs.py): a node is
a slot of this machine, so a 2-node job runs 2 processes (or one mpirun over 2 local slots), with loopback hosts
and free ports; the per-process output files are listed, streamed, read by `sweep metrics` and `sweep status`."""
import json
import os
import shutil
import time
import uuid

import pytest
from azure.mgmt.batchai import models

from azext_batchai_sweep.core.service.client import local_batchai_client
from tests import launch_jobs
from tests.fixtures_az import service_az
from tests.fixtures_service import kill_service
from tests.localservice.conftest import job_params, process_alive, wait_state

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


def caffe2_params(service, script, node_count=2, **kwargs):
    params = job_params(service, node_count=node_count, **kwargs)
    params.custom_toolkit_settings = None
    params.caffe2_settings = models.Caffe2Settings(python_script_file_path=str(script))
    return params


# Each process writes its pid (and its node's GPUs) to a file named by its task index, then hangs.
HANG = ('import os, sys, time\nwith open(os.path.join(sys.argv[0] + ".out", os.environ["AZ_BATCHAI_TASK_INDEX"]), '
        '"w") as f:\n    f.write("{} [{}]\\n".format(os.getpid(), os.environ.get("CUDA_VISIBLE_DEVICES")))\n'
        'time.sleep(float(os.environ.get("HANG", "60")))\n')


def pids_of(out_dir, count, timeout=15):
    deadline = time.monotonic() + timeout
    while len(os.listdir(out_dir)) < count:
        assert time.monotonic() < deadline, os.listdir(out_dir)
        time.sleep(0.05)
    time.sleep(0.1)
    return {name: (out_dir / name).read_text().split() for name in sorted(os.listdir(out_dir))}


def hang_script(tmp_path):
    script = tmp_path / 'hang.py'
    script.write_text(HANG)
    (tmp_path / 'hang.py.out').mkdir()
    return script


def wait_gone(pids, timeout=5):
    deadline = time.monotonic() + timeout
    while any(process_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, 'a process of the job survived it'
        time.sleep(0.05)


@pytest.mark.parametrize('how', ['terminate', 'wallclock'])
def test_every_process_of_a_multi_node_job_ends_with_it(client, local_service, tmp_path, how):
    rg, ws = local_service.resource_group, local_service.workspace
    client.experiments.begin_create(rg, ws, 'ends').result()
    script = hang_script(tmp_path)
    constraints = models.JobBasePropertiesConstraints(max_wall_clock_time='PT2S') if how == 'wallclock' else None
    client.jobs.begin_create(rg, ws, 'ends', how, caffe2_params(local_service, script, constraints=constraints),
                             polling=False)
    pids = [int(v[0]) for v in pids_of(tmp_path / 'hang.py.out', 2).values()]
    assert len(set(pids)) == 2 and all(process_alive(pid) for pid in pids)
    if how == 'terminate':
        client.jobs.begin_terminate(rg, ws, 'ends', how).result()
    job = wait_state(client, local_service, 'ends', how)
    assert job.execution_info.errors[0].code == {'terminate': 'JobTerminated',
                                                 'wallclock': 'MaxWallClockTimeExceeded'}[how]
    wait_gone(pids)


def test_crash_recovery_finds_every_process_of_a_multi_node_job(service_factory, tmp_path):
    """The service is SIGKILLed while a 2-node job runs: at the next start both processes are killed (they carry the
    job's marker, as a single process does) and the job is failed."""
    service = service_factory(slots=2)
    client = local_batchai_client(service.endpoint, service.token_file, service.subscription)
    rg, ws = service.resource_group, service.workspace
    client.experiments.begin_create(rg, ws, 'crash').result()
    client.jobs.begin_create(rg, ws, 'crash', 'two', caffe2_params(service, hang_script(tmp_path)), polling=False)
    pids = [int(v[0]) for v in pids_of(tmp_path / 'hang.py.out', 2).values()]
    kill_service(service)
    assert all(process_alive(pid) for pid in pids), 'the processes outlive the service until it starts again'
    service = service_factory.restart(service)
    client = local_batchai_client(service.endpoint, service.token_file, service.subscription)
    wait_gone(pids)
    job = client.jobs.get(rg, ws, 'crash', 'two')
    assert job.execution_state == 'failed' and job.execution_info.errors[0].code == 'ServiceInterrupted'
