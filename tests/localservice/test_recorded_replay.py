"""Replay of the real Batch AI answers we hold (tests/localservice/recorded/, excerpts of azure-cli's recorded batchai
tests): each recorded request is sent to a local service, in a workspace of the recorded name (in a resource group of
its own), and its answer compared with the recorded one, value by value, after replacing what differs by nature (ids' host and
subscription, times, generated GUIDs, etags) with placeholders. The differences that remain must each be listed in
LEGITIMATE (with its reason; docs/reliability.md lists them too): anything else fails."""
import fnmatch
import json
import os
import re
import tempfile
import time
import urllib.parse
import uuid

import pytest

from tests.localservice.conftest import raw
from tests.spec_conformance import load_spec, validate, validate_operation_status

pytestmark = pytest.mark.service

RECORDED = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'recorded')
RECORDED_SUBSCRIPTION = '00000000-0000-0000-0000-000000000000'
# The real subscription id the recordings leave in internal paths (resourceId, stdOutErrPathSuffix).
RECORDED_INTERNAL_SUBSCRIPTION = '0b1f6471-1bf0-4dda-aec3-cb9272f09590'
RECORDED_GROUP = 'clitest.rg000001'
ARM = '/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}'

# Differences that remain, by path in the answer (fnmatch patterns), and why.
LEGITIMATE = {
    'etag': "Batch AI's 2021 answers carry one on workspaces and clusters; the 2018-05-01 swagger defines none (and "
            'no conditional request), and every local answer must conform to it',
    'location': "a cluster's location: the recorded cluster GET carried its workspace's location; the swagger's "
                'Cluster (a ProxyResource) has none',
    'properties.virtualMachineConfiguration.imageReference.minVersion':
        "not in the 2018-05-01 swagger's ImageReference: every answer must conform to it",
    'properties.coreCountPerNode': 'not in the 2018-05-01 swagger (a later service field)',
    'properties.maxJobDurationSeconds': 'not in the 2018-05-01 swagger (a later service field)',
    'properties.cleanupNodeBeforeRun': 'not in the 2018-05-01 swagger (a later service field)',
    'properties.cleanupNodeAfterRun': 'not in the 2018-05-01 swagger (a later service field)',
    'properties.experimentName': 'not in the 2018-05-01 swagger (a later service field)',
    'properties.constraints.maxAttempts': 'not in the 2018-05-01 swagger (a later service field)',
}


def recorded(name):
    with open(os.path.join(RECORDED, name), encoding='utf-8') as f:
        return json.load(f)


_TIME = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$')
_GUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', re.IGNORECASE)


def _normal(value, names):
    """`value` with what differs by nature replaced: times, the ids' host, subscription, group and workspace names,
    generated GUIDs (operation names, path suffixes)."""
    if isinstance(value, dict):
        return {k: _normal(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v, names) for v in value]
    if not isinstance(value, str):
        return value
    if _TIME.match(value):
        return '<time>'
    text = re.sub(r'^https?://[^/]+', '<host>', value)
    for real, placeholder in names.items():
        text = text.replace(real, placeholder)
    return _GUID.sub('<guid>', text)


def _differences(mine, theirs, path=''):
    """Paths where the two answers differ (a key only in one, or another value)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        out = []
        for key in sorted(set(mine) | set(theirs)):
            where = path + '.' + key if path else key
            if key not in mine or key not in theirs:
                out.append(where)
            else:
                out += _differences(mine[key], theirs[key], where)
        return out
    if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
        return [d for index, (a, b) in enumerate(zip(mine, theirs))
                for d in _differences(a, b, '{}[{}]'.format(path, index))]
    return [] if mine == theirs else [path]


def _unexplained(differences):
    return [d for d in differences if not any(fnmatch.fnmatchcase(d, p) or d.startswith(p + '.') for p in LEGITIMATE)]


class Replay:
    def __init__(self, service):
        self.service = service
        self.workspace = 'workspace'  # the recorded name; a fresh resource group keeps runs apart
        self.group = 'clitest.rg' + uuid.uuid4().hex[:6]
        self.base = ARM.format(service.subscription, self.group, self.workspace)
        self.names = {service.subscription: '<sub>', RECORDED_SUBSCRIPTION: '<sub>',
                      RECORDED_INTERNAL_SUBSCRIPTION: '<sub>', self.group: '<rg>', RECORDED_GROUP: '<rg>'}
        self.results = []  # (interaction, differences, its own legitimate ones)

    def compare(self, interaction, status, body, answer, allowed=None):
        """Record the differences of one interaction; `allowed`: this interaction's own legitimate ones (path:
        reason)."""
        if interaction.endswith('operation status'):  # operation ids are generated: the same placeholder
            self.names.update({body['name']: '<operation>', answer['body']['name']: '<operation>'})
        differences = _differences(_normal(body, self.names), _normal(answer['body'], self.names))
        if status != answer['status']:
            differences.insert(0, 'status {} (recorded {})'.format(status, answer['status']))
        self.results.append((interaction, differences, allowed or {}))
        return differences

    def check(self):
        """Every difference left is a LEGITIMATE one; prints the interactions and what differed (figures)."""
        unexplained = {name: [d for d in _unexplained(differences) if d not in allowed]
                       for name, differences, allowed in self.results}
        unexplained = {name: paths for name, paths in unexplained.items() if paths}
        matched = sum(1 for _, differences, _ in self.results if not differences)
        print('\nREPLAY {} of {} interactions identical, the others differ only in {}'.format(
            matched, len(self.results), sorted({p for _, d, _ in self.results for p in d})))
        assert not unexplained, unexplained

    def request(self, method, path, body=None):
        return raw(self.service, method, path, body)


def _operation_status(replay, headers):
    lower = {k.lower(): v for k, v in headers.items()}
    path = urllib.parse.urlsplit(lower['azure-asyncoperation']).path
    status, _, body = replay.request('GET', path)
    validate_operation_status(body)
    return status, body


@pytest.fixture
def replay(local_service):
    r = Replay(local_service)
    status, _, body = r.request('PUT', r.base, recorded('job_level_mounting.json')['workspace_create_request'])
    r.compare('workspace create', status, body, recorded('job_level_mounting.json')['workspace_create_response'])
    return r


@pytest.mark.parametrize('recording', ['cluster_with_auto_storage.json', 'cluster_with_setup_command.json'])
def test_a_cluster_create_replayed_answers_as_recorded(replay, recording):
    """The create (202), its operation status once over (with the created resource's internal id) and the cluster
    GET: every value Batch AI filled in (the default image or the version of the given one, the setup task's output
    suffix, scale and mount defaults, node counts) is the recorded one."""
    rec = recorded(recording)
    if 'workspace_get' in rec:
        status, _, workspace = replay.request('GET', replay.base)
        validate('Workspace', workspace)
        replay.compare('workspace get', status, workspace, rec['workspace_get'])
    path = replay.base + '/clusters/cluster'
    status, headers, body = replay.request('PUT', path, rec['cluster_create_request'])
    assert (status, body) == (202, None)
    status, operation = _operation_status(replay, headers)
    replay.compare('cluster create: operation status', status, operation, rec['cluster_create_operation_status'])
    status, _, cluster = replay.request('GET', path)
    validate('Cluster', cluster)
    replay.compare('cluster get', status, cluster, rec['cluster_get'])
    suffix = cluster['properties'].get('nodeSetup', {}).get('setupTask', {}).get('stdOutErrPathSuffix')
    if 'setupTask' in rec['cluster_create_request']['properties']['nodeSetup']:
        assert suffix.startswith('{}/{}/workspaces/workspace/clusters/cluster/'.format(
            replay.service.subscription, replay.group))
    replay.check()


def test_a_job_create_replayed_answers_as_recorded(replay):
    rec = recorded('job_level_mounting.json')
    replay.request('PUT', replay.base + '/experiments/experiment')
    request = json.loads(json.dumps(rec['job_create_request']))
    request['properties']['cluster']['id'] = replay.service.cluster_id  # the local cluster that runs it
    path = replay.base + '/experiments/experiment/jobs/job'
    status, headers, body = replay.request('PUT', path, request)
    assert (status, body) == (202, None)
    status, operation = _operation_status(replay, headers)
    replay.compare('job create: operation status', status, operation, rec['job_create_operation_status'])
    status, _, job = replay.request('GET', path)
    validate('Job', job)
    theirs = json.loads(json.dumps(rec['job_get']))
    theirs['body']['properties']['cluster']['id'] = replay.service.cluster_id
    for key in ('executionState', 'executionStateTransitionTime'):  # queued there; here it may have started
        job['properties'].pop(key, None)
        theirs['body']['properties'].pop(key, None)
    replay.compare('job get', status, job, theirs, allowed={
        'properties.executionInfo': 'the recorded job was still queued; a local job starts at once when a slot is '
                                    'free'})
    for name, answer in (('job get missing', rec['job_get_missing']),):
        status, _, body = replay.request('GET', replay.base + '/experiments/experiment/jobs/nope')
        answer = json.loads(json.dumps(answer).replace('job job', 'job nope'))
        replay.compare(name, status, body, answer)
    status, _, body = replay.request('GET', replay.base + '/clusters/nope')
    replay.compare('cluster get missing', status, body, rec['cluster_get_missing'])
    replay.check()


def _settable(answer, kind):
    """A create request made of the settable properties of a recorded answer (the recording's own request is not
    kept): the swagger's create parameters, minus what the service fills in."""
    spec = load_spec()['definitions']['{}BaseProperties'.format(kind)]['properties']
    return {'properties': {k: json.loads(json.dumps(v)) for k, v in answer['properties'].items() if k in spec}}


def _wait_for(replay, path, states, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        status, _, body = replay.request('GET', path)
        if body['properties']['executionState'] in states or time.monotonic() > deadline:
            return status, body
        time.sleep(0.1)


def test_an_auto_scale_cluster_and_its_finished_job_answer_as_recorded(replay):
    rec = recorded('auto_scale.json')
    cluster_path = replay.base + '/clusters/cluster'
    request = _settable(rec['cluster_get']['body'], 'Cluster')
    del request['properties']['scaleSettings']['autoScale']['initialNodeCount']  # filled in by the service
    del request['properties']['virtualMachineConfiguration']  # the default image, which changed since 2020
    request['properties']['userAccountSettings']['adminUserPassword'] = 'not-a-real-password'
    for share in request['properties']['nodeSetup']['mountVolumes']['azureFileShares']:
        share['credentials'] = {'accountKey': 'veryFakedStorageAccountKey=='}
    assert replay.request('PUT', cluster_path, request)[0] == 202
    status, _, cluster = replay.request('GET', cluster_path)
    validate('Cluster', cluster)
    replay.compare('auto-scale cluster get', status, cluster, rec['cluster_get'], allowed={
        'properties.virtualMachineConfiguration.imageReference.offer': 'the default image changed between the '
        'recordings (2020-11: azureml/runtime, 2021-06: amlcompute/runtime-gen1-ubuntu18); the newest is answered',
        'properties.virtualMachineConfiguration.imageReference.sku': 'the same'})
    job_path = replay.base + '/experiments/experiment/jobs/job'
    status, _, experiment = replay.request('PUT', replay.base + '/experiments/experiment')
    validate('Experiment', experiment)
    replay.compare('experiment create', status, experiment, rec['experiment_create_response'])
    job_request = _settable(rec['job_get_succeeded']['body'], 'Job')
    job_request['properties']['cluster']['id'] = cluster['id']
    del job_request['properties']['constraints']  # filled in by the service (maxWallClockTime P150D)
    assert replay.request('PUT', job_path, job_request)[0] == 202
    status, job = _wait_for(replay, job_path, ('succeeded', 'failed'))
    validate('Job', job)
    replay.compare('job get once succeeded', status, job, rec['job_get_succeeded'], allowed={
        'properties.executionInfo.totalJobNodeHours': 'not in the 2018-05-01 swagger (a later service field)'})
    replay.check()


def test_a_finished_job_and_its_output_files_answer_as_recorded(replay):
    """The second job of the job-level mounting scenario (the same request, on the local cluster) once succeeded, and
    listOutputFiles of its stdouterr and OUTPUT directories: the same files with the same sizes and keys."""
    rec = recorded('job_level_mounting.json')
    replay.request('PUT', replay.base + '/experiments/experiment')
    request = json.loads(json.dumps(rec['job_create_request']))
    request['properties']['cluster']['id'] = replay.service.cluster_id
    path = replay.base + '/experiments/experiment/jobs/job2'
    assert replay.request('PUT', path, request)[0] == 202
    status, job = _wait_for(replay, path, ('succeeded', 'failed'))
    validate('Job', job)
    theirs = json.loads(json.dumps(rec['job2_get_succeeded']))
    theirs['body']['properties']['cluster']['id'] = replay.service.cluster_id
    replay.compare('job get once succeeded', status, job, theirs, allowed={
        'properties.executionInfo.totalJobNodeHours': 'not in the 2018-05-01 swagger (a later service field)',
        'properties.vmSize': 'not in the 2018-05-01 swagger (a later service field)'})
    for directory, key in (('stdouterr', 'job2_list_output_files_stdouterr'),
                           ('OUTPUT', 'job2_list_output_files_output')):
        status, _, files = raw(replay.service, 'POST', path + '/listOutputFiles', query=(
            'api-version=2018-05-01&outputdirectoryid={}&directory=.&linkexpiryinminutes=60&maxresults=1000'.format(
                directory)))
        validate('FileListResult', files)
        recorded_files = json.loads(json.dumps(rec[key]))
        by_name = {f['name']: f for f in recorded_files['body']['value']}
        agent_files = sorted(set(by_name) - {f['name'] for f in files['value']})
        allowed = {'value': 'the files of the Batch AI node agent ({}) are not written locally: no VMs, no '
                            'agent'.format(', '.join(agent_files))} if agent_files else None
        for entry in files['value'] + recorded_files['body']['value']:  # links of their own: to the service here
            entry['downloadUrl'] = '<link>' if entry.get('downloadUrl') else entry.get('downloadUrl')
        replay.compare('listOutputFiles ' + directory, status, files, recorded_files, allowed=allowed)
        # The files both have: the same keys, type, size and a link.
        for entry in files['value']:
            mine, theirs = entry, by_name[entry['name']]
            replay.compare('listOutputFiles {}: {}'.format(directory, entry['name']), 200, mine,
                           {'status': 200, 'body': theirs}, allowed={
                               'properties.contentLength': 'stderr.txt: Batch AI wrote its container runtime\'s '
                                                           'messages there'} if entry['name'] == 'stderr.txt' else None)
    replay.check()


def test_an_operation_under_way_answers_as_recorded_in_progress(replay):
    """An operation still under way (the terminate of a job that ignores SIGTERM: the service waits its kill grace)
    answers as Batch AI's cluster create did while it allocated: InProgress, no endTime, no properties."""
    rec = recorded('cluster_with_setup_command.json')
    replay.request('PUT', replay.base + '/experiments/experiment')
    path = replay.base + '/experiments/experiment/jobs/stubborn'
    ready = os.path.join(tempfile.mkdtemp(), 'trap-set')
    replay.request('PUT', path, {'properties': {
        'cluster': {'id': replay.service.cluster_id}, 'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_TEMP',
        'customToolkitSettings': {'commandLine': "trap '' TERM; touch {}; sleep 30".format(ready)}}})
    _wait_for(replay, path, ('running',))
    # Running is not enough: until the shell has set its trap, the terminate's SIGTERM would end it at once.
    deadline = time.monotonic() + 30
    while not os.path.exists(ready):
        assert time.monotonic() < deadline, 'the job never set its trap'
        time.sleep(0.05)
    status, headers, _ = replay.request('POST', path + '/terminate')
    assert status == 202
    status, operation = _operation_status(replay, headers)
    replay.compare('terminate under way: operation status', status, operation,
                   rec['cluster_create_operation_status_in_progress'])
    replay.check()


def _stubborn_job(replay, name, cluster_id):
    """A running job that ignores SIGTERM (a delete or terminate then waits its kill grace), once its trap is set."""
    replay.request('PUT', replay.base + '/experiments/experiment')
    path = replay.base + '/experiments/experiment/jobs/' + name
    ready = os.path.join(tempfile.mkdtemp(), 'trap-set')
    status, _, _ = replay.request('PUT', path, {'properties': {
        'cluster': {'id': cluster_id}, 'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_TEMP',
        'customToolkitSettings': {'commandLine': "trap '' TERM; touch {}; sleep 30".format(ready)}}})
    assert status == 202
    _wait_for(replay, path, ('running',))
    deadline = time.monotonic() + 30
    while not os.path.exists(ready):
        assert time.monotonic() < deadline, 'the job never set its trap'
        time.sleep(0.05)
    return path


@pytest.mark.parametrize('what', ['job', 'cluster'])
def test_a_delete_is_polled_as_recorded_in_progress_then_succeeded(replay, what):
    """A delete (a job's, or a cluster's with a job running on it) answers 202 with Azure-AsyncOperation, Location
    and Retry-After; its status resource answers as Batch AI's did while an operation ran (InProgress, no endTime,
    Retry-After) and once it ended (Succeeded, endTime); its Location answers 202 while it runs, then 200."""
    rec = recorded('cluster_with_setup_command.json')
    cluster_path = replay.base + '/clusters/deleted'
    status, _, _ = replay.request('PUT', cluster_path, {'properties': {
        'vmSize': 'STANDARD_D1', 'scaleSettings': {'manual': {'targetNodeCount': 1}},
        'userAccountSettings': {'adminUserName': 'batchai', 'adminUserPassword': 'not-a-real-password'}}})
    assert status == 202
    cluster_id = replay.request('GET', cluster_path)[2]['id']
    job_path = _stubborn_job(replay, 'stubborn-' + what, cluster_id)
    status, headers, body = replay.request('DELETE', job_path if what == 'job' else cluster_path)
    assert (status, body) == (202, None)
    lower = {k.lower(): v for k, v in headers.items()}
    assert lower['retry-after'] == '1'
    assert '/operationstatuses/' in lower['location'] and '/operationresults/' in lower['azure-asyncoperation']
    status, operation = _operation_status(replay, headers)
    replay.compare('{} delete under way: operation status'.format(what), status, operation,
                   rec['cluster_create_operation_status_in_progress'])
    polled = raw_status(replay, lower['azure-asyncoperation'])
    assert polled[1].get('Retry-After') == '1'
    assert raw_status(replay, lower['location'])[0] == 202
    deadline = time.monotonic() + 30
    while operation['status'] == 'InProgress':
        assert time.monotonic() < deadline, operation
        time.sleep(0.2)
        status, operation = _operation_status(replay, headers)
    ended = json.loads(json.dumps(rec['cluster_create_operation_status']))
    replay.compare('{} delete ended: operation status'.format(what), status, operation, ended, allowed={
        'properties': "the recorded Succeeded status is a create's, which names the resource it made; a delete "
                      'makes none'})
    assert operation['endTime'] >= operation['startTime']
    assert raw_status(replay, lower['location'])[0] == 200
    assert replay.request('GET', job_path if what == 'job' else cluster_path)[0] == 404  # gone once Succeeded
    replay.check()


def raw_status(replay, url):
    """(status, headers) of a GET of an operation URL the service gave."""
    parts = urllib.parse.urlsplit(url)
    status, headers, _ = raw(replay.service, 'GET', parts.path, query=parts.query)
    return status, headers
