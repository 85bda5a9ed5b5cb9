"""Jobs of the local service on a real Slurm cluster (tests/slurm/cluster.py): the mapping of docs/slurm.md."""
import time

from azure.mgmt.batchai import models

from tests.localservice.conftest import job_params


def wait_end(client, service, experiment, name, timeout=60, states=('succeeded', 'failed')):
    deadline = time.monotonic() + timeout
    while True:
        job = client.jobs.get(service.resource_group, service.workspace, experiment, name)
        if job.execution_state in states:
            return job
        assert time.monotonic() < deadline, 'job {} still {}'.format(name, job.execution_state)
        time.sleep(0.1)


def create(client, service, experiment, name, params):
    client.experiments.begin_create(service.resource_group, service.workspace, experiment).result()
    return client.jobs.begin_create(service.resource_group, service.workspace, experiment, name, params).result()


def stdout_of(service, job, name='stdout.txt'):
    path = '{}/storage/acct/shares/logs/{}/stdouterr/{}'.format(service.data_dir,
                                                                  job.job_output_directory_path_segment, name)
    with open(path, encoding='utf-8') as f:
        return f.read()


def test_job_succeeds_and_fails_with_its_exit_code(slurm_client, slurm_service, idle_cluster):
    create(slurm_client, slurm_service, 'basic', 'ok', job_params(slurm_service, 'echo hello from $SLURMD_NODENAME'))
    create(slurm_client, slurm_service, 'basic', 'bad', job_params(slurm_service, 'echo oops >&2; exit 3'))
    ok = wait_end(slurm_client, slurm_service, 'basic', 'ok')
    assert ok.execution_state == 'succeeded' and ok.execution_info.exit_code == 0
    assert 'hello from n' in stdout_of(slurm_service, ok)
    bad = wait_end(slurm_client, slurm_service, 'basic', 'bad')
    assert bad.execution_state == 'failed' and bad.execution_info.exit_code == 3
    assert bad.execution_info.errors[0].code == 'NonZeroExitCode' and '3' in bad.execution_info.errors[0].message
    assert 'oops' in stdout_of(slurm_service, bad, 'stderr.txt')
