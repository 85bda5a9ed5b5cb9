"""No secret comes back or lies on disk in clear (issue 41, item 3; the digests: item 9).

A cluster and jobs created over the real HTTP API of a local service (processes scheduler) with every secret Batch AI
takes: the admin password, a setup task's secret value, the Application Insights instrumentation key and storage
account keys (cluster); `secrets` values, the container registry password and a job-level mount key (job). Then:

- `az batchai cluster show` and `az batchai job show` (the real az, with --debug: bodies logged whole) and the plain
  GETs and listings answer none of the values, as Batch AI documented;
- the job did receive its secret (it prints its SHA-256);
- no file of the data dir (service.db and its WAL, logs, job folders...) holds any of the values, in bytes, after the
  job ran and after the service stopped;
- a repeated PUT of the same job is 200, of the same job with another secret 409;
- a service restarted while a job with secrets waits fails that job, saying why (the secrets were never on disk).
"""
import hashlib
import os
import secrets
import time

import pytest
import requests

from tests.fixtures_az import service_env
from tests.fixtures_service import stop_service

pytestmark = [pytest.mark.service, pytest.mark.az]

API = '?api-version=2018-05-01'


def _url(svc, *segments):
    return '{}/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}/{}'.format(
        svc.endpoint.rstrip('/'), svc.subscription, svc.resource_group, svc.workspace, '/'.join(segments))


def _call(svc, method, url, body=None):
    return requests.request(method, url + API, json=body, headers={'Authorization': 'Bearer ' + svc.token},
                            timeout=30)


def _values():
    return {name: '{}-{}'.format(name, secrets.token_hex(12)) for name in (
        'adminPassword', 'setupSecret', 'instrumentationKey', 'clusterAccountKey', 'jobSecret', 'registryPassword',
        'jobAccountKey')}


def _cluster(values):
    return {'properties': {
        'vmSize': 'STANDARD_D1', 'scaleSettings': {'manual': {'targetNodeCount': 1}},
        'userAccountSettings': {'adminUserName': 'admin', 'adminUserPassword': values['adminPassword']},
        'nodeSetup': {
            'setupTask': {'commandLine': 'true', 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/setup',
                          'secrets': [{'name': 'SETUP_SECRET', 'value': values['setupSecret']}]},
            'performanceCountersSettings': {'azureApplicationInsightsReference': {
                'component': {'id': '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/g/providers/'
                                    'Microsoft.Insights/components/c'},
                'instrumentationKey': values['instrumentationKey']}},
            'mountVolumes': {'azureFileShares': [{
                'accountName': 'acct', 'azureFileUrl': 'https://acct.file.core.windows.net/share',
                'relativeMountPath': 'afs', 'credentials': {'accountKey': values['clusterAccountKey']}}]}}}}


def _job(svc, values, secret=None, mount=False, command='printf %s "$JOB_SECRET" | sha256sum'):
    props = {'cluster': {'id': svc.cluster_id}, 'nodeCount': 1,
             'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
             'secrets': [{'name': 'JOB_SECRET', 'value': secret or values['jobSecret']}],
             'containerSettings': {'imageSourceRegistry': {
                 'image': 'example/private:1', 'serverUrl': 'registry.example',
                 'credentials': {'username': 'u', 'password': values['registryPassword']}}},
             'customToolkitSettings': {'commandLine': command}}
    if mount:
        props['mountVolumes'] = {'azureFileShares': [{
            'accountName': 'acct', 'azureFileUrl': 'https://acct.file.core.windows.net/share',
            'relativeMountPath': 'afs', 'credentials': {'accountKey': values['jobAccountKey']}}]}
    return {'properties': props}


def _wait(svc, url, states=('succeeded', 'failed'), timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = _call(svc, 'GET', url).json()
        if body['properties'].get('executionState') in states:
            return body
        time.sleep(0.2)
    raise AssertionError('job not finished: {}'.format(body))


def _files_holding(data_dir, values):
    """{value name: [files of the data dir whose bytes hold it]}, only those found."""
    found = {}
    for root, _, files in os.walk(data_dir):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, 'rb') as f:
                data = f.read()
            for what, value in values.items():
                if value.encode() in data:
                    found.setdefault(what, []).append(os.path.relpath(path, data_dir))
    return found


def test_no_secret_in_get_bodies_nor_in_the_data_dir(az, service_factory):
    svc = service_factory(name='atrest', slots=2)
    values = _values()
    cluster_url = _url(svc, 'clusters', 'secretive')
    created = _call(svc, 'PUT', cluster_url, _cluster(values))
    assert created.status_code in (200, 201, 202), created.text
    experiment = _url(svc, 'experiments', 'vault')
    assert _call(svc, 'PUT', experiment, {}).status_code in (200, 201, 202)
    job_url = experiment + '/jobs/j1'
    sent = _job(svc, values, mount=False)
    assert _call(svc, 'PUT', job_url, sent).status_code in (200, 201, 202)
    mounted_url = experiment + '/jobs/j2'
    assert _call(svc, 'PUT', mounted_url, _job(svc, values, mount=True, command='true')).status_code in (200, 201, 202)
    # The same job again: the same (200); another secret value: another job (409).
    assert _call(svc, 'PUT', job_url, sent).status_code == 200
    assert _call(svc, 'PUT', job_url, _job(svc, values, secret='other')).status_code == 409

    done = _wait(svc, job_url)
    assert done['properties']['executionState'] == 'succeeded', done
    _wait(svc, mounted_url)
    env = service_env(svc)
    common = ['-g', svc.resource_group, '-w', svc.workspace]
    shows = [az('batchai', 'cluster', 'show', *common, '-n', 'secretive', '--debug', env=env),
             az('batchai', 'job', 'show', *common, '-e', 'vault', '-n', 'j1', '--debug', env=env),
             az('batchai', 'job', 'show', *common, '-e', 'vault', '-n', 'j2', '--debug', env=env)]
    for shown in shows:
        assert shown.exit_code == 0, shown.stderr[-2000:]
    assert shows[0].json()['name'] == 'secretive' and shows[1].json()['name'] == 'j1'
    answers = [_call(svc, 'GET', url).text for url in (cluster_url, job_url, mounted_url, _url(svc, 'clusters'),
                                                        experiment + '/jobs')]
    texts = {'answer {}'.format(i): text for i, text in enumerate(answers)}
    texts.update({'show {} stdout'.format(i): s.stdout for i, s in enumerate(shows)})
    texts.update({'show {} --debug stderr'.format(i): s.stderr for i, s in enumerate(shows)})
    leaks = {what: [where for where, text in texts.items() if value in text] for what, value in values.items()}
    assert {what: where for what, where in leaks.items() if where} == {}
    credentials = shows[1].json()['containerSettings']['imageSourceRegistry']['credentials']
    assert credentials['username'] == 'u' and credentials.get('password') is None
    # The job got its secret.
    stdout = _job_stdout(svc, job_url)
    assert hashlib.sha256(values['jobSecret'].encode()).hexdigest() in stdout

    assert _files_holding(svc.data_dir, values) == {}
    stop_service(svc)
    assert _files_holding(svc.data_dir, values) == {}


def _job_stdout(svc, job_url):
    response = requests.post(job_url + '/listOutputFiles?api-version=2018-05-01&outputdirectoryid=stdouterr',
                             headers={'Authorization': 'Bearer ' + svc.token}, timeout=30)
    assert response.status_code == 200, response.text
    link = next(item['downloadUrl'] for item in response.json()['value'] if item['name'].endswith(
        'stdout.txt'))
    return requests.get(link, timeout=30).text


def test_a_restarted_service_fails_a_waiting_job_with_secrets_saying_why(service_factory):
    svc = service_factory(name='restart', slots=1)
    values = _values()
    experiment = _url(svc, 'experiments', 'vault')
    assert _call(svc, 'PUT', experiment, {}).status_code in (200, 201, 202)
    busy = _job(svc, values, command='sleep 30')
    assert _call(svc, 'PUT', experiment + '/jobs/busy', busy).status_code in (200, 201, 202)
    _wait(svc, experiment + '/jobs/busy', states=('running',))
    assert _call(svc, 'PUT', experiment + '/jobs/waiting', _job(svc, values)).status_code in (200, 201, 202)
    svc = service_factory.restart(svc)
    done = _wait(svc, _url(svc, 'experiments', 'vault', 'jobs', 'waiting'))
    assert done['properties']['executionState'] == 'failed'
    errors = done['properties']['executionInfo']['errors']
    assert errors[0]['code'] == 'SecretsNotKept' and 'never on disk' in errors[0]['message'], errors
    assert _files_holding(svc.data_dir, values) == {}
