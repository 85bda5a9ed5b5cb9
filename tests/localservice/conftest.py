"""A spec-checking client on the session's local service, and small helpers shared by the service tests."""
import json
import time
import urllib.error
import urllib.request

import pytest
from azure.mgmt.batchai import models

from azext_batchai_sweep.core.service.client import local_batchai_client
from tests.spec_conformance import SpecCheckPolicy


@pytest.fixture(scope='session')
def spec_policy():
    return SpecCheckPolicy()


@pytest.fixture(scope='session')
def client(local_service, spec_policy):
    """The real SDK client whose every response body is validated against the swagger."""
    return local_batchai_client(local_service.endpoint, local_service.token_file, local_service.subscription,
                                per_retry_policies=[spec_policy])


def job_params(service, command='true', node_count=1, **kwargs):
    """Job create parameters on the service's default cluster, stdout/stderr in a local 'logs' share."""
    return models.JobCreateParameters(
        cluster=models.ResourceId(id=kwargs.pop('cluster_id', service.cluster_id)), node_count=node_count,
        std_out_err_path_prefix='$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
        mount_volumes=models.MountVolumes(azure_file_shares=[models.AzureFileShareReference(
            account_name='acct', azure_file_url='https://acct.file.core.windows.net/logs',
            credentials=models.AzureStorageCredentialsInfo(account_key='not-a-real-key'),
            relative_mount_path='logs')]),
        custom_toolkit_settings=models.CustomToolkitSettings(command_line=command), **kwargs)


def job_outputs(client, service, experiment, job):
    """{file name: text} of a job's stdouterr folder, read through its download links."""
    files = client.jobs.list_output_files(service.resource_group, service.workspace, experiment, job,
                                          models.JobsListOutputFilesOptions(outputdirectoryid='stdouterr'))
    texts = {}
    for entry in files:
        with urllib.request.urlopen(entry.download_url) as response:
            texts[entry.name] = response.read().decode()
    return texts


def job_pids(path, count=1, timeout=10):
    """The process ids a job writes to `path` (one per line), once there are `count` of them."""
    deadline = time.monotonic() + timeout
    while not path.exists() or len(path.read_text().split()) < count:
        assert time.monotonic() < deadline, 'the job did not write {} pid(s) to {}'.format(count, path)
        time.sleep(0.05)
    return [int(pid) for pid in path.read_text().split()]


def process_alive(pid):
    """Whether a process exists and is not a zombie (an exited child its parent has not reaped yet)."""
    try:
        with open('/proc/{}/stat'.format(pid)) as f:
            return f.read().split(') ', 1)[1][0] != 'Z'
    except OSError:
        return False


def wait_state(client, service, experiment, job, states=('succeeded', 'failed'), timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = client.jobs.get(service.resource_group, service.workspace, experiment, job)
        if result.execution_state in states:
            return result
        time.sleep(0.05)
    raise AssertionError('job {} never reached {}'.format(job, states))


def raw(service, method, path, body=None, token=None, query='api-version=2018-05-01'):
    """A raw ARM request: (status, headers, parsed JSON body or None)."""
    url = service.endpoint + path + ('?' + query if query else '')
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        'Authorization': 'Bearer ' + (service.token if token is None else token),
        'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            payload = response.read()
            return response.status, dict(response.headers), json.loads(payload) if payload else None
    except urllib.error.HTTPError as ex:
        payload = ex.read()
        return ex.code, dict(ex.headers), json.loads(payload) if payload else None
