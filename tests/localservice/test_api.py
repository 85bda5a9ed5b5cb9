"""Every ARM operation the extension uses, through the real SDK client, every response checked against the swagger."""
import json
import os
import time
import urllib.request

import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.mgmt.batchai import models

from tests.localservice.conftest import job_params, raw, wait_state
from tests.spec_conformance import validate

ARM = '/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}'


def test_workspace_lifecycle(client, local_service):
    rg = 'rg-ws'
    created = client.workspaces.begin_create(rg, 'ws1', models.WorkspaceCreateParameters(
        location='eastus', tags={'a': 'b'})).result()
    assert created.name == 'ws1' and created.location == 'eastus' and created.provisioning_state == 'succeeded'
    again = client.workspaces.begin_create(rg, 'WS1', models.WorkspaceCreateParameters(
        location='eastus', tags={'c': 'd'})).result()
    assert again.tags == {'c': 'd'} and again.creation_time == created.creation_time  # names are case-insensitive
    with pytest.raises(ResourceExistsError):
        client.workspaces.begin_create(rg, 'ws1', models.WorkspaceCreateParameters(location='westus')).result()
    assert [w.name for w in client.workspaces.list_by_resource_group(rg)] == ['ws1']
    assert 'ws1' in [w.name for w in client.workspaces.list()]
    client.workspaces.begin_delete(rg, 'ws1').result()
    with pytest.raises(ResourceNotFoundError):
        client.workspaces.get(rg, 'ws1')


def test_cluster_lifecycle(client, local_service):
    rg, ws = 'rg-cl', 'ws'
    client.workspaces.begin_create(rg, ws, models.WorkspaceCreateParameters(location='eastus')).result()
    params = models.ClusterCreateParameters(
        vm_size='STANDARD_D1', user_account_settings=models.UserAccountSettings(
            admin_user_name='me', admin_user_password='hunter2'),
        scale_settings=models.ScaleSettings(manual=models.ManualScaleSettings(target_node_count=3)))
    cluster = client.clusters.begin_create(rg, ws, 'c1', params).result()
    assert cluster.current_node_count == 3 and cluster.node_state_counts.idle_node_count == 3
    assert cluster.user_account_settings.admin_user_password is None
    assert client.clusters.begin_create(rg, ws, 'c1', params).result().creation_time == cluster.creation_time
    params.scale_settings.manual.target_node_count = 5
    with pytest.raises(ResourceExistsError):
        client.clusters.begin_create(rg, ws, 'c1', params).result()
    assert [c.name for c in client.clusters.list_by_workspace(rg, ws)] == ['c1']
    client.clusters.begin_delete(rg, ws, 'c1').result()
    with pytest.raises(ResourceNotFoundError):
        client.clusters.get(rg, ws, 'c1')
    client.workspaces.begin_delete(rg, ws).result()


def test_job_create_get_list_idempotent_put(client, local_service):
    rg, ws = local_service.resource_group, local_service.workspace
    client.experiments.begin_create(rg, ws, 'api').result()
    assert 'api' in [e.name for e in client.experiments.list_by_workspace(rg, ws)]
    params = job_params(local_service, 'echo out; echo err >&2', scheduling_priority='high',
                        secrets=[models.EnvironmentVariableWithSecretValue(name='TOKEN', value='s3cr3t')],
                        constraints=models.JobBasePropertiesConstraints(max_wall_clock_time='PT1H'))
    job = client.jobs.begin_create(rg, ws, 'api', 'j1', params).result()
    assert job.secrets[0].name == 'TOKEN' and job.secrets[0].value is None
    assert job.mount_volumes.azure_file_shares[0].credentials.account_key is None
    assert job.tool_type == 'custom' and job.scheduling_priority == 'high'
    assert job.job_output_directory_path_segment.startswith(
        '{}/{}/workspaces/{}/experiments/api/jobs/j1/'.format(local_service.subscription, rg, ws))
    same = client.jobs.begin_create(rg, ws, 'api', 'j1', params).result()
    assert same.creation_time == job.creation_time and same.job_output_directory_path_segment == \
        job.job_output_directory_path_segment
    params.node_count = 2
    with pytest.raises(ResourceExistsError) as conflict:
        client.jobs.begin_create(rg, ws, 'api', 'j1', params).result()
    assert conflict.value.status_code == 409
    done = wait_state(client, local_service, 'api', 'j1')
    assert done.execution_state == 'succeeded' and done.execution_info.end_time >= done.execution_info.start_time
    status, _, body = raw(local_service, 'GET', ARM.format(local_service.subscription, rg, ws) +
                          '/experiments/api/jobs/j1')
    assert status == 200 and 's3cr3t' not in str(body) and 'not-a-real-key' not in str(body)
    files = {f.name: f for f in client.jobs.list_output_files(
        rg, ws, 'api', 'j1', models.JobsListOutputFilesOptions(outputdirectoryid='stdouterr'))}
    assert set(files) == {'stdout.txt', 'stderr.txt'}
    assert files['stdout.txt'].content_length == 4 and files['stdout.txt'].file_type == 'file'
    with urllib.request.urlopen(files['stderr.txt'].download_url) as response:
        assert response.read() == b'err\n'
    client.jobs.begin_delete(rg, ws, 'api', 'j1').result()
    with pytest.raises(ResourceNotFoundError):
        client.jobs.get(rg, ws, 'api', 'j1')


def test_list_jobs_pages_with_next_link(client, local_service, spec_policy):
    rg, ws = local_service.resource_group, local_service.workspace
    client.experiments.begin_create(rg, ws, 'paging').result()
    names = ['p{}'.format(i) for i in range(5)]
    for name in names:
        client.jobs.begin_create(rg, ws, 'paging', name, job_params(local_service), polling=False)
    before = spec_policy.checked
    listed = client.jobs.list_by_experiment(rg, ws, 'paging', models.JobsListByExperimentOptions(max_results=2))
    assert [j.name for j in listed] == names
    assert spec_policy.checked - before == 3  # pages of 2, 2, 1
    status, _, body = raw(local_service, 'GET', ARM.format(local_service.subscription, rg, ws) +
                          '/experiments/paging/jobs', query='api-version=2018-05-01&maxresults=1001')
    assert status == 400 and body['error']['code'] == 'InvalidQueryParameterValue'


def test_errors_are_arm_shaped(client, local_service):
    base = ARM.format(local_service.subscription, local_service.resource_group, local_service.workspace)
    cases = [
        ('GET', base + '/experiments/nope', None, {}, 404, 'ExperimentNotFound'),
        ('GET', base, None, {'query': ''}, 400, 'MissingApiVersionParameter'),
        ('GET', base, None, {'query': 'api-version=2017-09-01'}, 400, 'InvalidApiVersionParameter'),
        ('GET', base, None, {'token': 'wrong'}, 401, 'AuthenticationFailed'),
        ('PUT', base + '/experiments/bad.name', None, {}, 400, 'InvalidResourceName'),
        ('PUT', base + '/experiments/' + 'x' * 65, None, {}, 400, 'InvalidResourceName'),
    ]
    for method, path, body, kwargs, status, code in cases:
        got_status, _, got = raw(local_service, method, path, body, **kwargs)
        assert (got_status, got['error']['code']) == (status, code), path
        validate('CloudError', got)
    rg, ws = local_service.resource_group, local_service.workspace
    client.experiments.begin_create(rg, ws, 'errors').result()
    no_toolkit = job_params(local_service)
    no_toolkit.custom_toolkit_settings = None
    too_big = job_params(local_service, node_count=99)
    outside = job_params(local_service)
    outside.std_out_err_path_prefix = '/tmp'
    for params, code in ((no_toolkit, 'InvalidToolkitSettings'), (too_big, 'InvalidNodeCount'),
                         (outside, 'InvalidPath')):
        with pytest.raises(HttpResponseError) as error:
            client.jobs.begin_create(rg, ws, 'errors', 'bad', params).result()
        assert error.value.status_code == 400 and error.value.error.code == code
    with pytest.raises(ResourceNotFoundError):
        client.jobs.get(rg, ws, 'errors', 'missing')


@pytest.mark.parametrize('credentials, code', [(None, 'InvalidRequestContent'), ({}, 'InvalidRequestContent'),
                                               ({'accountKeySecretReference': {'sourceVault': {'id': 'x'},
                                                                               'secretUrl': 'y'}},
                                                'UnsupportedSecretReference')])
def test_a_mount_without_an_account_key_is_refused_as_azure_does(local_service, client, credentials, code):
    # The spec requires credentials on every storage mount: Azure answers 400, and so does the local service.
    path = ('/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}/experiments/creds'
            .format(local_service.subscription, local_service.resource_group, local_service.workspace))
    assert raw(local_service, 'PUT', path, body={})[0] in (200, 201, 202)
    mount = {'accountName': 'acct', 'azureFileUrl': 'https://acct.file.core.windows.net/logs',
             'relativeMountPath': 'logs'}
    if credentials is not None:
        mount['credentials'] = credentials
    body = {'properties': {'cluster': {'id': local_service.cluster_id}, 'nodeCount': 1,
                           'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
                           'mountVolumes': {'azureFileShares': [mount]},
                           'customToolkitSettings': {'commandLine': 'true'}}}
    status, _, answer = raw(local_service, 'PUT', path + '/jobs/no-key', body=body)
    assert status == 400 and answer['error']['code'] == code, answer
    assert 'accountKey' in answer['error']['message']
    validate('CloudError', answer)


def test_an_unmappable_mount_never_shows_its_account_key(local_service):
    # A mount the service cannot map to local storage (a file URL without a share) must not echo the storage
    # account key in the job's errors (GET answers them) nor anywhere else in the answer.
    path = ('/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}/experiments/unmappable'
            .format(local_service.subscription, local_service.resource_group, local_service.workspace))
    assert raw(local_service, 'PUT', path, body={})[0] in (200, 201, 202)
    mount = {'accountName': 'acct', 'azureFileUrl': 'https://acct.file.core.windows.net/',
             'relativeMountPath': 'nowhere', 'credentials': {'accountKey': 'TOP-SECRET-KEY'}}
    body = {'properties': {'cluster': {'id': local_service.cluster_id}, 'nodeCount': 1,
                           'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/nowhere',
                           'mountVolumes': {'azureFileShares': [mount]},
                           'customToolkitSettings': {'commandLine': 'true'}}}
    status, _, answer = raw(local_service, 'PUT', path + '/jobs/no-share', body=body)
    deadline = time.monotonic() + 10
    while status in (200, 201, 202):
        status, _, answer = raw(local_service, 'GET', path + '/jobs/no-share')
        if answer['properties']['executionState'] in ('succeeded', 'failed'):
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert 'TOP-SECRET-KEY' not in json.dumps(answer), answer
    log = os.path.join(local_service.data_dir, 'service.log')
    if os.path.exists(log):
        with open(log, encoding='utf-8') as f:
            assert 'TOP-SECRET-KEY' not in f.read()


def _raw_http(service, request_bytes):
    """Send raw bytes to the ARM port; return (status line, the whole answer) with the connection's end."""
    import socket
    host, port = service.endpoint.rsplit('/', 1)[-1].rsplit(':', 1)
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request_bytes)
        answer = b''
        while True:
            data = conn.recv(65536)
            if not data:
                break
            answer += data
    return answer.split(b'\r\n', 1)[0].decode(), answer


def test_a_body_is_not_read_before_the_token_is_checked(local_service):
    # An unauthenticated client announcing a huge body gets 401 at once and the connection closes: the service does
    # not wait for (or hold) the body. With 10 s of socket timeout, a service reading it first would hang here.
    path = '/subscriptions/{}/resourceGroups/rg/providers/Microsoft.BatchAI/workspaces/w?api-version=2018-05-01'.format(
        local_service.subscription)
    status, answer = _raw_http(local_service, 'PUT {} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n{{'
                               .format(path).encode())
    assert status.endswith('401 Unauthorized') and b'Connection: close' in answer


@pytest.mark.parametrize('length, expected', [('-1', '400 Bad Request'), ('abc', '400 Bad Request'),
                                              (str(64 * 1024 * 1024), '413 Request Entity Too Large')])
def test_a_bad_or_huge_content_length_is_refused_unread(local_service, length, expected):
    path = '/subscriptions/{}/resourceGroups/rg/providers/Microsoft.BatchAI/workspaces/w?api-version=2018-05-01'.format(
        local_service.subscription)
    status, answer = _raw_http(local_service, 'PUT {} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n'
                               'Content-Length: {}\r\n\r\n'.format(path, local_service.token, length).encode())
    assert status.endswith(expected), answer[:300]
    assert b'Connection: close' in answer
