"""task_logs.py: the task-log container of a cluster's storage and the write-only user delegation SAS that Batch
uploads the task's own stdout/stderr with (issue 31 rule 3), against Azurite's Blob service over HTTPS with OAuth
(tests/fixtures_azurite.azurite_oauth: bearer tokens, Get User Delegation Key, and its checks of a user delegation
SAS). The one thing given that a user's service would not have: the storage token (a JWT Azurite accepts, TEST
CODE) instead of az's, and Azurite's endpoint instead of `<account>.blob.core.windows.net` (no network here)."""
import datetime
import logging
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import states, tasks
from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.mounts import blob_endpoint, logs_account
from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.task_logs import (CONTAINER, KEY_LIFETIME_SECONDS,
                                                                               QUEUE_MARGIN_SECONDS, TaskLogs)
from tests.azurebatch.tls_ca import TestCA
from tests.fixtures_azurite import azurite_oauth

DAY = 24 * 3600


def _cluster(account='devstoreaccount1', *others):
    return {'nodeSetup': {'mountVolumes': {'azureFileShares': [
        {'accountName': a, 'azureFileUrl': 'https://{}.file.core.windows.net/s'.format(a), 'relativeMountPath': a}
        for a in (account, *others)]}}}


@pytest.fixture(scope='module')
def storage(tmp_path_factory):
    ca = TestCA(str(tmp_path_factory.mktemp('tls')))
    with azurite_oauth(ca) as blob:
        yield blob


class Clock:
    def __init__(self):
        self.now = time.time()

    def __call__(self):
        return self.now


def _logs(storage, clock=time.time, token=None):
    token = token or storage.token()
    return TaskLogs(credential=AzLoginCredential(source=lambda: (token, time.time() + 3600)),
                    endpoint=lambda account, props: storage.blob_endpoint, connection_verify=storage.ca_file,
                    clock=clock)


def _http(storage, method, url, data=None):
    request = urllib.request.Request(url, data=data, method=method, headers={
        'x-ms-blob-type': 'BlockBlob', 'x-ms-version': '2021-08-06'})
    try:
        with urllib.request.urlopen(request, timeout=10,  # noqa: S310 (loopback Azurite)
                                    context=ssl.create_default_context(cafile=storage.ca_file)) as answer:
            return answer.status
    except urllib.error.HTTPError as ex:
        return ex.code


def _expiry(sas, field):
    return datetime.datetime.strptime(urllib.parse.parse_qs(sas)[field][0], '%Y-%m-%dT%H:%M:%SZ').replace(
        tzinfo=datetime.timezone.utc).timestamp()


def test_the_sas_allows_create_and_write_only_over_https_until_the_wall_clock_ends(storage):
    clock = Clock()
    url = _logs(storage, clock).container_url(_cluster(), 3600)
    base, sas = url.split('?', 1)
    assert base == storage.blob_endpoint + '/' + CONTAINER
    fields = urllib.parse.parse_qs(sas)
    assert (fields['sp'], fields['spr'], fields['sr']) == (['cw'], ['https'], ['c'])
    assert 'skoid' in fields and 'sig' in fields  # signed with a user delegation key, not an account key
    assert abs(_expiry(sas, 'se') - (clock.now + 3600 + QUEUE_MARGIN_SECONDS)) <= 1
    assert _expiry(sas, 'se') <= _expiry(sas, 'ske')  # never past its key
    # What Batch's node agent does with it: a Put Blob is accepted...
    blob = base + '/t1/stdout.txt?' + sas
    assert _http(storage, 'PUT', blob, b'hello\n') == 201
    # ...and nothing else: no read, no list, no delete (Azurite checks the SAS as Azure Storage does).
    assert _http(storage, 'GET', blob) == 403
    assert _http(storage, 'GET', base + '?restype=container&comp=list&' + sas) == 403
    assert _http(storage, 'DELETE', blob) == 403
    assert _http(storage, 'PUT', blob.replace('sig=', 'sig=x'), b'forged') == 403


def test_read_back_with_the_token_and_a_missing_blob_is_none(storage):
    logs = _logs(storage)
    url = logs.container_url(_cluster(), 60)
    base, sas = url.split('?', 1)
    assert _http(storage, 'PUT', base + '/t2/stderr.txt?' + sas, b'pull failed\n') == 201
    assert logs.read(_cluster(), 't2/stderr.txt') == b'pull failed\n'
    assert logs.read(_cluster(), 't2/stdout.txt') is None
    assert logs.read({}, 't2/stderr.txt') is None  # a cluster without storage has no task logs


def test_a_second_submission_reuses_the_container_and_the_key(storage):
    clock = Clock()
    logs = _logs(storage, clock)
    first = logs.container_url(_cluster(), 60)
    clock.now += 600
    second = logs.container_url(_cluster(), 60)
    assert first.split('?')[0] == second.split('?')[0] and logs.keys_asked == 1
    # Another service run (a restart): the container exists already, which is no failure.
    assert _logs(storage).container_url(_cluster(), 60).split('?')[0] == first.split('?')[0]


def test_a_task_longer_than_a_key_lives_gets_a_sas_until_the_key_ends_and_a_new_key_hourly(storage):
    clock = Clock()
    logs = _logs(storage, clock)
    wall = 150 * DAY  # Batch AI's default maxWallClockTime
    sas = logs.container_url(_cluster(), wall).split('?', 1)[1]
    assert abs(_expiry(sas, 'se') - (clock.now + KEY_LIFETIME_SECONDS)) <= 1  # capped at the key's 7 days
    assert _expiry(sas, 'ske') - clock.now <= 7 * DAY
    clock.now += 1800
    logs.container_url(_cluster(), wall)
    assert logs.keys_asked == 1  # within the hour: the same key
    clock.now += 1800
    later = logs.container_url(_cluster(), wall).split('?', 1)[1]
    assert logs.keys_asked == 2 and _expiry(later, 'se') > _expiry(sas, 'se')


def test_a_refused_key_means_no_output_files_for_a_while_and_one_warning_without_secrets(storage, caplog):
    caplog.set_level(logging.DEBUG)
    clock = Clock()
    expired = storage.token(lifetime=-120)  # Azurite refuses it (401)
    logs = _logs(storage, clock, token=expired)
    assert logs.container_url(_cluster(), 60) is None
    assert logs.container_url(_cluster(), 60) is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and 'devstoreaccount1' in warnings[0] and 'outputFiles' in warnings[0], warnings
    assert 'Storage Blob Data Contributor' in warnings[0] and 'az role assignment create' in warnings[0]
    assert expired not in caplog.text


def test_the_task_body_carries_the_sas_url_as_output_files_and_the_size_check_counts_it():
    url = 'https://a.blob.core.windows.net/{}?sp=cw&sig=abc'.format(CONTAINER)
    props = {'customToolkitSettings': {'commandLine': 'true'}}
    body = tasks.task_body('t9', {'name': 'j', 'properties': dict(props, jobOutputDirectoryPathSegment='s')},
                           'customToolkitSettings', {'vmSize': 'Standard_D2s_v3'}, props,
                           output_container_url=url, payload=b'')
    assert [(o['filePattern'], o['destination']['container'], o['uploadOptions']) for o in body['outputFiles']] == [
        ('../stdout.txt', {'containerUrl': url, 'path': 't9/stdout.txt'}, {'uploadCondition': 'taskcompletion'}),
        ('../stderr.txt', {'containerUrl': url, 'path': 't9/stderr.txt'}, {'uploadCondition': 'taskcompletion'})]
    assert url not in body['environmentSettings'][1]['value']  # never in the job's environment


def test_the_logs_account_and_its_blob_endpoint():
    assert logs_account(_cluster('zeta', 'alpha')) == 'alpha'
    assert logs_account({'vmSize': 'x'}) is None
    assert blob_endpoint('alpha', _cluster('alpha')) == 'https://alpha.blob.core.windows.net'
    china = {'nodeSetup': {'mountVolumes': {'azureFileShares': [
        {'accountName': 'cn', 'azureFileUrl': 'https://cn.file.core.chinacloudapi.cn/s', 'relativeMountPath': 'a'}]}}}
    assert blob_endpoint('cn', china) == 'https://cn.blob.core.chinacloudapi.cn'
    blob_only = {'nodeSetup': {'mountVolumes': {'azureBlobFileSystems': [
        {'accountName': 'b', 'containerName': 'c', 'relativeMountPath': 'b'}]}}}
    assert logs_account(blob_only) == 'b' and blob_endpoint('b', blob_only) == 'https://b.blob.core.windows.net'


@pytest.mark.parametrize('failure, expected', [
    # Only the copy of the task's own logs failed (e.g. its SAS ended): the job itself succeeded.
    ({'category': 'usererror', 'code': 'FileUploadFailed', 'message': 'upload to https://a.blob.core.windows.net/'
      'c/t/stdout.txt?sv=1&sig=SECRET failed'}, ('succeeded', 0, [])),
])
def test_a_failed_log_upload_is_not_the_jobs_failure(failure, expected):
    task = {'state': 'completed', 'executionInfo': {'result': 'failure', 'exitCode': 0, 'failureInfo': failure}}
    assert states.outcome(task) == expected


def test_a_sas_quoted_by_batch_never_reaches_a_stored_error():
    task = {'state': 'completed', 'executionInfo': {'result': 'failure', 'exitCode': 1, 'failureInfo': {
        'category': 'usererror', 'code': 'FileUploadFailed',
        'message': 'upload to https://a.blob.core.windows.net/c/t/stdout.txt?sv=1&sig=SECRET%3D failed',
        'details': [{'name': 'Url', 'value': 'https://a.blob.core.windows.net/c?sp=cw&sig=SECRET'}]}}}
    _, _, errors = states.outcome(task)
    assert 'SECRET' not in str(errors) and '?<SAS removed>' in errors[0]['message'], errors
    from azext_batchai_sweep.localservice.schedulers.azurebatch.client import BatchCallError
    assert 'SECRET' not in str(BatchCallError('add', 400, 'InvalidPropertyValue', 'containerUrl x?sig=SECRET'))
