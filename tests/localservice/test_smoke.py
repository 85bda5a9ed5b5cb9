"""First slice: workspaces, experiments and jobs through the real SDK client; a commandLine job runs."""
import time

from azure.mgmt.batchai import models


def wait_done(client, service, experiment, job, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = client.jobs.get(service.resource_group, service.workspace, experiment, job)
        if result.execution_state in ('succeeded', 'failed'):
            return result
        time.sleep(0.05)
    raise AssertionError('job {} did not finish'.format(job))


def test_command_line_job_runs_and_reports(local_service, batchai_client):
    rg, ws = local_service.resource_group, local_service.workspace
    batchai_client.experiments.begin_create(rg, ws, 'smoke').result()
    params = models.JobCreateParameters(
        cluster=models.ResourceId(id=local_service.cluster_id), node_count=1,
        std_out_err_path_prefix='$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
        mount_volumes=models.MountVolumes(azure_file_shares=[models.AzureFileShareReference(
            account_name='acct', azure_file_url='https://acct.file.core.windows.net/logs',
            credentials=models.AzureStorageCredentialsInfo(account_key='k'), relative_mount_path='logs')]),
        custom_toolkit_settings=models.CustomToolkitSettings(command_line='echo hello $AZ_BATCHAI_JOB_NAME'))
    job = batchai_client.jobs.begin_create(rg, ws, 'smoke', 'hello', params).result()
    assert job.name == 'hello' and job.provisioning_state == 'succeeded'
    job = wait_done(batchai_client, local_service, 'smoke', 'hello')
    assert job.execution_state == 'succeeded' and job.execution_info.exit_code == 0
    names = [j.name for j in batchai_client.jobs.list_by_experiment(rg, ws, 'smoke')]
    assert names == ['hello']
