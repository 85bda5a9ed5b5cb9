"""The local service's answers have the shape of the real Batch AI service's recorded answers (tests/localservice/
recorded/, excerpts of azure-cli's recorded batchai tests): long-running operations, error codes, defaults filled in
and keys left out. The same requests go to the session's service; what is compared is shape (keys, codes, header
forms, defaults), never ids or times."""
import json
import os
import re
import urllib.parse
import uuid

import pytest

from tests.localservice.conftest import raw, wait_state
from tests.spec_conformance import load_spec, validate, validate_operation_status

pytestmark = pytest.mark.service

RECORDED = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'recorded')
ARM = '/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}'


def recorded(name):
    with open(os.path.join(RECORDED, name), encoding='utf-8') as f:
        return json.load(f)


JOB = recorded('job_level_mounting.json')
CLUSTER = recorded('cluster_with_auto_storage.json')


def _swagger_keys(definition):
    return set(load_spec()['definitions'][definition]['properties'])


def _path(url):
    return urllib.parse.urlsplit(url).path


def _operation_shape(url):
    """The path of an operation URL with its variable parts (host, subscription, location, id) replaced."""
    path = re.sub(r'/subscriptions/[^/]+/', '/subscriptions/S/', _path(url))
    path = re.sub(r'/locations/[^/]+/', '/locations/L/', path)
    return path.rsplit('/', 1)[0], urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)


def _workspace(service):
    name = 'rec-' + uuid.uuid4().hex[:8]
    base = ARM.format(service.subscription, service.resource_group, name)
    status, _, body = raw(service, 'PUT', base, JOB['workspace_create_request'])
    return base, status, body


def test_a_workspace_without_tags_has_no_tags_key_as_recorded(local_service):
    base, _, _ = _workspace(local_service)
    status, _, body = raw(local_service, 'GET', base)
    theirs = JOB['workspace_create_response']['body']
    assert status == 200 and 'tags' not in theirs and 'tags' not in body
    assert set(body) == set(theirs) and set(body['properties']) == set(theirs['properties'])
    # Tags given, then taken away: there, then gone again.
    raw(local_service, 'PUT', base, {'location': 'eastus', 'tags': {'a': 'b'}})
    assert raw(local_service, 'GET', base)[2]['tags'] == {'a': 'b'}
    raw(local_service, 'PUT', base, {'location': 'eastus', 'tags': {}})
    assert 'tags' not in raw(local_service, 'GET', base)[2]


@pytest.mark.parametrize('kind, tail, recorded_answer', [
    ('job', '/experiments/{e}/jobs/nope', JOB['job_get_missing']),
    ('cluster', '/clusters/nope', JOB['cluster_get_missing']),
])
def test_a_missing_resource_answers_the_recorded_code(local_service, kind, tail, recorded_answer):
    base, _, _ = _workspace(local_service)
    experiment = 'e' + uuid.uuid4().hex[:6]
    raw(local_service, 'PUT', base + '/experiments/' + experiment)
    status, _, body = raw(local_service, 'GET', base + tail.format(e=experiment))
    assert (status, body['error']['code']) == (recorded_answer['status'], recorded_answer['body']['error']['code'])
    mine, theirs = body['error']['message'], recorded_answer['body']['error']['message']
    assert mine == (theirs.replace('job job', 'job nope') if kind == 'job' else theirs)
    validate('CloudError', body)


@pytest.mark.parametrize('existing_workspace, tail, code', [
    (False, '', 'WorkspaceNotFound'), (True, '/experiments/none', 'ExperimentNotFound'),
    (True, '/experiments/none/jobs', 'ExperimentNotFound'), (True, '/clusters/none', 'ClusterNotFound'),
    (False, '/clusters', 'WorkspaceNotFound'), (False, '/experiments', 'WorkspaceNotFound'),
])
def test_missing_workspaces_and_experiments_have_their_own_codes(local_service, existing_workspace, tail, code):
    workspace = local_service.workspace if existing_workspace else 'absent-' + uuid.uuid4().hex[:6]
    base = ARM.format(local_service.subscription, local_service.resource_group, workspace)
    status, _, body = raw(local_service, 'GET', base + tail)
    assert (status, body['error']['code']) == (404, code)
    validate('CloudError', body)


def _check_accepted(local_service, headers, recorded_headers):
    """A 202 as recorded: Azure-AsyncOperation (operationresults) and Location (operationstatuses), same forms."""
    lower = {k.lower(): v for k, v in headers.items()}
    for name in ('azure-asyncoperation', 'location'):
        assert _operation_shape(lower[name]) == _operation_shape(recorded_headers[name]), name
    status, _, body = raw(local_service, 'GET', _path(lower['azure-asyncoperation']), query='api-version=2018-05-01')
    assert status == 200
    validate_operation_status(body)
    return body


def test_cluster_create_is_an_lro_with_an_operation_status_as_recorded(local_service):
    base, _, _ = _workspace(local_service)
    status, headers, body = raw(local_service, 'PUT', base + '/clusters/c1', CLUSTER['cluster_create_request'])
    assert (status, body) == (CLUSTER['cluster_create_response']['status'], None)
    operation = _check_accepted(local_service, headers, CLUSTER['cluster_create_response']['headers'])
    theirs = CLUSTER['cluster_create_operation_status']['body']
    assert operation['status'] == theirs['status'] == 'Succeeded'
    assert set(operation) == set(theirs)  # properties.resourceId included, as recorded
    assert operation['id'].endswith('/operationresults/' + operation['name'])
    # The cluster answers the defaults Batch AI filled in, and never the account key.
    _, _, cluster = raw(local_service, 'GET', base + '/clusters/c1')
    recorded_props = CLUSTER['cluster_get']['body']['properties']
    for path in (('scaleSettings', 'manual'), ('nodeSetup', 'mountVolumes', 'azureFileShares', 0),
                 ('nodeSetup', 'mountVolumes', 'azureBlobFileSystems', 0)):
        mine, theirs = cluster['properties'], recorded_props
        for step in path:
            mine, theirs = mine[step], theirs[step]
        assert mine == theirs, path
    assert cluster['properties']['vmPriority'] == recorded_props['vmPriority']
    shared = _swagger_keys('ClusterProperties') - {'errors', 'subnet'}
    assert set(cluster['properties']) & shared == set(recorded_props) & shared


def test_job_create_and_get_have_the_recorded_shape(local_service):
    base, _, _ = _workspace(local_service)
    raw(local_service, 'PUT', base + '/experiments/experiment')
    request = json.loads(json.dumps(JOB['job_create_request']))
    request['properties']['cluster']['id'] = local_service.cluster_id
    status, headers, body = raw(local_service, 'PUT', base + '/experiments/experiment/jobs/job', request)
    assert (status, body) == (202, None)
    operation = _check_accepted(local_service, headers, JOB['job_create_response']['headers'])
    assert set(operation) == set(JOB['job_create_operation_status']['body'])
    _, _, job = raw(local_service, 'GET', base + '/experiments/experiment/jobs/job')
    theirs = JOB['job_get']['body']
    assert set(job) == set(theirs)
    swagger = _swagger_keys('JobProperties') - {'executionInfo'}
    assert set(job['properties']) & swagger == set(theirs['properties']) & swagger
    assert job['properties']['mountVolumes'] == theirs['properties']['mountVolumes']  # modes filled, keys gone
    assert job['properties']['schedulingPriority'] == theirs['properties']['schedulingPriority']
    assert job['properties']['toolType'] == theirs['properties']['toolType']
    validate('Job', job)


def test_deletes_and_terminate_are_lros_with_an_operation_status_too(local_service, client):
    rg, ws = local_service.resource_group, local_service.workspace
    base = ARM.format(local_service.subscription, rg, ws)
    experiment = 'lro-' + uuid.uuid4().hex[:6]
    raw(local_service, 'PUT', base + '/experiments/' + experiment)
    job = {'properties': {'cluster': {'id': local_service.cluster_id}, 'nodeCount': 1,
                          'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_TEMP',
                          'customToolkitSettings': {'commandLine': 'sleep 30'}}}
    job_path = base + '/experiments/{}/jobs/long'.format(experiment)
    raw(local_service, 'PUT', job_path, job)
    wait_state(client, local_service, experiment, 'long', states=('running',))
    for method, path in (('POST', job_path + '/terminate'), ('DELETE', job_path),
                         ('DELETE', base + '/experiments/' + experiment)):
        status, headers, _ = raw(local_service, method, path)
        assert status == 202, path
        lower = {k.lower(): v for k, v in headers.items()}
        recorded_forms = JOB['job_create_response']['headers']
        assert _operation_shape(lower['azure-asyncoperation']) == _operation_shape(
            recorded_forms['azure-asyncoperation'])
        assert lower['retry-after'] == '1'
        url = _path(lower['azure-asyncoperation'])
        for _ in range(200):  # the status resource goes from InProgress to Succeeded, with its end time
            _, _, operation = raw(local_service, 'GET', url, query='api-version=2018-05-01')
            validate_operation_status(operation)
            if operation['status'] == 'Succeeded':
                break
        assert operation['status'] == 'Succeeded' and operation['endTime'] >= operation['startTime']
    # The SDK follows Azure-AsyncOperation to the end of a delete.
    raw(local_service, 'PUT', base + '/experiments/' + experiment)
    client.experiments.begin_delete(rg, ws, experiment).result()
    assert raw(local_service, 'GET', base + '/experiments/' + experiment)[0] == 404


def test_an_operation_id_that_is_not_ours_is_404(local_service):
    for token in ('nope', 'W10', '!!'):
        path = '/subscriptions/{}/providers/Microsoft.BatchAI/locations/local/operationresults/{}'.format(
            local_service.subscription, token)
        status, _, body = raw(local_service, 'GET', path)
        assert (status, body['error']['code']) == (404, 'OperationNotFound')
