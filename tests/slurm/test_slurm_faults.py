"""Faults on Slurm: a compute node dies under a job; the service is SIGKILLed while its Slurm jobs run."""
import subprocess
import sys
import time

from azext_batchai_sweep.core.service.client import local_batchai_client
from tests.fixtures_service import kill_service, restart_service, start_service, stop_service
from tests.localservice.conftest import job_params
from tests.slurm.conftest import slurm_service_args
from tests.slurm.test_slurm_jobs import create, stdout_of, wait_end


def test_node_failure_fails_the_job_and_a_resubmit_succeeds(slurm_client, slurm_service, idle_cluster):
    rg, ws = slurm_service.resource_group, slurm_service.workspace
    create(slurm_client, slurm_service, 'nodefail', 'victim',
           job_params(slurm_service, 'echo on $SLURMD_NODENAME; sleep 300'))
    job = wait_end(slurm_client, slurm_service, 'nodefail', 'victim', states=('running',))
    deadline = time.monotonic() + 10
    while True:  # Slurm reports RUNNING a moment before the job's stdout file exists
        try:
            if 'on n' in stdout_of(slurm_service, job):
                break
        except FileNotFoundError:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.1)
    node = stdout_of(slurm_service, job).split()[1]
    idle_cluster.kill_node(node)  # SIGKILL its slurmd: slurmctld notices after ~16 s
    try:
        failed = wait_end(slurm_client, slurm_service, 'nodefail', 'victim', timeout=60)
        assert failed.execution_state == 'failed'
        (err,) = failed.execution_info.errors
        assert err.code == 'NodeFailure' and node in err.message
        # Batch AI's resubmit: the same job created again (sweep resubmit deletes and re-creates it).
        params = job_params(slurm_service, 'echo again on $SLURMD_NODENAME')
        slurm_client.jobs.begin_delete(rg, ws, 'nodefail', 'victim').result()
        again = wait_end(slurm_client, slurm_service, 'nodefail',
                         create(slurm_client, slurm_service, 'nodefail', 'victim', params).name)
        assert again.execution_state == 'succeeded'
        assert 'again on n' in stdout_of(slurm_service, again) and node not in stdout_of(slurm_service, again)
    finally:
        idle_cluster.start_node(node)
        idle_cluster.wait_node(node, 'idle')


def test_service_sigkill_reattaches_to_running_slurm_jobs(slurm_cluster, tmp_path):
    slurm_cluster.wait_idle()
    service = start_service(str(tmp_path / 'svc'), extra_args=slurm_service_args(slurm_cluster))
    client = local_batchai_client(service.endpoint, service.token_file, service.subscription)
    create(client, service, 'crash', 'runs', job_params(service, 'sleep 3; echo finished'))
    create(client, service, 'crash', 'fails', job_params(service, 'sleep 3; exit 7'))
    create(client, service, 'crash', 'stopped', job_params(service, 'sleep 300'))
    for name in ('runs', 'fails', 'stopped'):
        wait_end(client, service, 'crash', name, states=('running',))
    service = restart_service(service)  # SIGKILL, then a new service on the same data dir
    try:
        client = local_batchai_client(service.endpoint, service.token_file, service.subscription)
        assert client.jobs.get(service.resource_group, service.workspace, 'crash', 'stopped').execution_state == \
            'running', 'a Slurm job survives the service and is not failed at restart'
        runs = wait_end(client, service, 'crash', 'runs')
        assert runs.execution_state == 'succeeded' and 'finished' in stdout_of(service, runs)
        fails = wait_end(client, service, 'crash', 'fails')
        assert fails.execution_state == 'failed' and fails.execution_info.exit_code == 7
        # The processes scheduler refuses a data dir whose jobs run on Slurm (it would run them a second time).
        kill_service(service)
        refused = subprocess.run([sys.executable, '-m', 'azext_batchai_sweep.localservice', '--data-dir',
                                  service.data_dir], capture_output=True, text=True, timeout=60, check=False)
        assert refused.returncode == 2 and 'handed to Slurm by an earlier start' in refused.stderr
        service = start_service(service.data_dir, extra_args=slurm_service_args(slurm_cluster))
        client = local_batchai_client(service.endpoint, service.token_file, service.subscription)
        client.jobs.begin_terminate(service.resource_group, service.workspace, 'crash', 'stopped').result()
        stopped = client.jobs.get(service.resource_group, service.workspace, 'crash', 'stopped')
        assert stopped.execution_info.errors[0].code == 'JobTerminated'
    finally:
        stop_service(service)
