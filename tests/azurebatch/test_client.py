"""client.BatchApi against the lifecycle double of the Batch data plane (TEST CODE: tests/azurebatch/double/),
through the real SDK: 429/503 retried after Retry-After (plus jitter), an add whose answer was lost counted once
(TaskExists for the same task is success, for another task a failure), a token rejected at expiry asked again,
and one list call per poll whatever the number of tasks."""
import json
import time

import pytest
from hypothesis import given, settings, strategies as st

from azext_batchai_sweep.localservice.schedulers.azurebatch import node_wrapper
from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.schedulers.azurebatch.client import BatchApi, BatchCallError, _JitteredRetryAfter




def _api(double, sleeps, source=None, **options):
    credential = AzLoginCredential(source=source or (lambda: (double.issue_token(), time.time() + 3600)))
    retry = _JitteredRetryAfter(max_retries=4, base_delay=0.01, max_delay=0.05, sleep=sleeps.append,
                                random=lambda: 0.5)
    return BatchApi(double.endpoint, credential, retry=retry, connection_verify=double.ca_file, **options)


def _pool_and_job(api):
    api.create_pool({'id': 'p', 'vmSize': 'Standard_D2s_v3', 'targetDedicatedNodes': 0,
                     'virtualMachineConfiguration': {
                         'imageReference': {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy',
                                            'sku': '22_04-lts', 'version': 'latest'},
                         'nodeAgentSKUId': 'batch.node.ubuntu 22.04'}})
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})


def _task(task_id, command='/bin/true', job=None):
    """A task body as tasks.task_body makes it, as far as its identity goes: the Batch AI job's name as its display
    name and its launch settings (with the job's output path segment, which holds the job's uid) in its
    environment. ``job``: that segment (default: one per task id)."""
    job = job or 'sub/rg/ws/exp/{}/uid-1'.format(task_id)
    spec = json.dumps({'name': job.split('/')[-2], 'props': {'jobOutputDirectoryPathSegment': job}})
    return {'id': task_id, 'commandLine': command, 'displayName': job.split('/')[-2],
            'environmentSettings': [{'name': node_wrapper.TASK_VARIABLE, 'value': spec}]}


def test_throttling_is_retried_after_retry_after_with_jitter(double):  # pylint: disable=redefined-outer-name
    sleeps = []
    api = _api(double, sleeps)
    _pool_and_job(api)
    double.faults.throttle(count=2, retry_after=7, status=429, method='POST', path='addtaskcollection')
    assert api.add_tasks('j', [_task('a')]) == {'a': None}
    assert sleeps == [7 + 0.5 * 1.75, 7 + 0.5 * 1.75]  # Retry-After, plus up to a quarter of it as jitter
    assert api.calls['add_task_collection'] == 3
    double.faults.throttle(count=1, retry_after=2, status=503, method='GET', path='/jobs/j/tasks')
    assert [t['id'] for t in api.list_tasks('j')] == ['a']
    assert sleeps[-1] == 2 + 0.5 * 0.5


def test_an_add_whose_answer_was_lost_is_counted_once(double):  # pylint: disable=redefined-outer-name
    sleeps = []
    api = _api(double, sleeps, connection_timeout=2, read_timeout=1)
    _pool_and_job(api)
    double.faults.time_out_after_apply(count=1, method='POST', path='addtaskcollection', seconds=3.0)
    assert api.add_tasks('j', [_task('a')]) == {'a': None}  # the retry's TaskExists for the same task: success
    with double.account.lock:
        assert list(double.account.jobs['j'].tasks) == ['a']
    refused = api.add_tasks('j', [_task('a', job='sub/rg/ws/exp/other/uid-2'), _task('b')])  # another job, same id
    assert refused['b'] is None and refused['a'][0] == 'TaskExists'


def test_task_exists_is_the_same_task_when_it_runs_the_same_job_whatever_its_command_line(double):  # noqa: W0621
    """Every task's command line is the same wrapper: the job it runs (its display name and output path segment,
    which holds the job's uid) decides whether a TaskExists answer is our own earlier add."""
    api = _api(double, [])
    _pool_and_job(api)
    assert api.add_tasks('j', [_task('a'), _task('c')]) == {'a': None, 'c': None}
    # the same job added again by a newer service whose wrapper's command line changed: a success
    assert api.add_tasks('j', [_task('a', command='/bin/bash -c new-wrapper')]) == {'a': None}
    # another incarnation of the job (deleted and created again: a new uid), the same command line: refused
    again = api.add_tasks('j', [_task('c', job='sub/rg/ws/exp/c/uid-2')])
    assert again['c'][0] == 'TaskExists' and 'another job' in again['c'][1]
    # a task someone else put there under the id, without the service's launch settings: refused
    double.client().create_task('j', {'id': 'x', 'commandLine': '/bin/true'})
    assert api.add_tasks('j', [_task('x')])['x'][0] == 'TaskExists'
    with double.account.lock:
        assert sorted(double.account.jobs['j'].tasks) == ['a', 'c', 'x']


def test_a_token_rejected_at_expiry_is_asked_again(double):  # pylint: disable=redefined-outer-name
    sleeps = []
    asked = []

    def source():
        asked.append(1)
        return double.issue_token(), time.time() + 3600
    api = _api(double, sleeps, source=source)
    _pool_and_job(api)
    assert len(asked) == 1
    double.expire_tokens()  # Batch rejects the token before the expiry the login gave (revoked, clock skew)
    assert api.list_tasks('j') == []
    assert len(asked) == 2


def test_errors_name_batch_code_and_never_the_token(double):  # pylint: disable=redefined-outer-name
    api = _api(double, [])
    with pytest.raises(BatchCallError) as raised:
        api.add_tasks('no-such-job', [_task('a')])
    assert raised.value.code == 'JobNotFound' and 'JobNotFound' in str(raised.value)
    assert 'batch-double-token' not in str(raised.value) + repr(api._credential)  # pylint: disable=protected-access


def test_one_list_call_per_poll_whatever_the_number_of_tasks(double):  # pylint: disable=redefined-outer-name
    api = _api(double, [])
    _pool_and_job(api)
    assert set(api.add_tasks('j', [_task('t{}'.format(i)) for i in range(100)]).values()) == {None}
    before = double.count('GET', '^/jobs/j/tasks')
    listed = api.list_tasks('j', since='2000-01-01T00:00:00.000Z')
    assert len(listed) == 100 and double.count('GET', '^/jobs/j/tasks') == before + 1
    (request,) = [r for r in double.requests if r.method == 'GET' and r.path == '/jobs/j/tasks'][-1:]
    assert 'stateTransitionTime ge' in request.query.get('$filter', '') and request.query.get('$select')


class _Answer(Exception):
    """A failed call's exception as azure-core raises it: its response's headers (no call is made)."""

    def __init__(self, headers):
        super().__init__('throttled')
        self.response = type('Response', (), {'headers': headers})()


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0, max_value=400, allow_nan=False), st.floats(min_value=0, max_value=0.999999),
       st.integers(min_value=0, max_value=8), st.sampled_from(['Retry-After', 'retry-after-ms']))
def test_retry_after_is_honoured_with_at_most_a_quarter_more_as_jitter(retry_after, draw, attempt, header):
    """The delay after a 429/503 is never shorter than Batch asked (capped at the settings' most), and its jitter
    is at most a quarter of it and at most 5 s, so that throttled services spread out without waiting long."""
    retry = _JitteredRetryAfter(max_retries=8, base_delay=0.5, max_delay=20.0, random=lambda: draw)
    value = str(retry_after * 1000) if header == 'retry-after-ms' else str(retry_after)
    asked = min(float(value) / (1000 if header == 'retry-after-ms' else 1), retry.max_retry_after)
    delay = retry.backoff(attempt, _Answer({header: value}))
    assert asked <= delay <= asked + min(5.0, asked * 0.25) + 1e-9
    assert delay == pytest.approx(asked + draw * min(5.0, asked * 0.25))


@settings(max_examples=100, deadline=None)
@given(st.floats(min_value=0, max_value=0.999999), st.integers(min_value=0, max_value=12))
def test_without_retry_after_the_backoff_is_full_jitter_under_its_cap(draw, attempt):
    retry = _JitteredRetryAfter(max_retries=8, base_delay=0.5, max_delay=20.0, random=lambda: draw)
    delay = retry.backoff(attempt, _Answer({}))
    assert 0 <= delay <= min(20.0, 0.5 * 2 ** attempt)


def test_the_autoscale_interval_goes_as_the_recordings_write_it(double):  # pylint: disable=redefined-outer-name
    """Issue 48 item 5 (fails on the old code, which sent the SDK's `PT05M00S`): the scheduler's own request for new
    autoscale settings (mapping.scale_request) reaches Batch with the interval in the recorded short form
    (Azure PowerShell's PoolTests/TestAutoScaleActions: `PT8M`) and the recorded field names."""
    import re
    from azext_batchai_sweep.localservice.schedulers.azurebatch.mapping import AbMapMapping
    from tests.azurebatch.gpu_recorded import recorded
    api = _api(double, [])
    _pool_and_job(api)
    props = {'vmSize': 'Standard_D2s_v3', 'scaleSettings': {'autoScale': {'minimumNodeCount': 0,
                                                                          'maximumNodeCount': 2}}}
    autoscale, body = AbMapMapping.scale_request(props, {'poolAllocationMode': 'BatchService'})
    assert autoscale
    api.enable_autoscale('p', body)
    sent = [r for r in double.requests if r.method == 'POST' and r.path.endswith('/enableautoscale')]
    assert len(sent) == 1
    recorded_body = recorded('enable autoscale')['request']
    assert set(sent[0].body) == set(recorded_body)
    assert sent[0].body['autoScaleEvaluationInterval'] == 'PT5M'
    assert re.fullmatch(r'PT\d+M', recorded_body['autoScaleEvaluationInterval'])
    assert api.get_pool('p')['autoScaleEvaluationInterval'] == 'PT5M'


def _adds(double, job='j'):
    return [r for r in double.requests if r.method == 'POST' and r.path == '/jobs/{}/addtaskcollection'.format(job)]


def test_no_request_carries_more_than_100_tasks_whatever_the_caller_hands_over(double):  # pylint: disable=W0621
    """Batch refuses a collection of more than 100 tasks whole (TooManyTasks): add_tasks splits what any caller
    gives it (the scheduler's re-add of missing tasks after a restart handed over all of them at once)."""
    api = _api(double, [])
    _pool_and_job(api)
    added = api.add_tasks('j', [_task('t{}'.format(i)) for i in range(250)])
    assert set(added) == {'t{}'.format(i) for i in range(250)} and set(added.values()) == {None}
    assert [len(r.body['value']) for r in _adds(double)] == [100, 100, 50]
    with double.account.lock:
        assert len(double.account.jobs['j'].tasks) == 250


def test_request_size_is_measured_on_the_bytes_the_sdk_sends(double):  # pylint: disable=redefined-outer-name
    """The SDK sends json.dumps's defaults (', ' and ': '): 4 tasks of 9,500 small environment variables each are
    0.95 MB as compact JSON (one request by that count) but 1.1 MB as sent, which Batch refuses
    (RequestBodyTooLarge, the double's 1 MiB): chunks are cut on what is sent, and the measure is the wire's."""
    from azext_batchai_sweep.localservice.schedulers.azurebatch import tasks
    api = _api(double, [])
    _pool_and_job(api)
    variables = [{'name': 'V{}'.format(i % 10), 'value': 'b'} for i in range(9500)]
    bodies = [dict(_task('a{}'.format(i)), environmentSettings=variables) for i in range(4)]
    compact = len(json.dumps({'value': bodies}, separators=(',', ':')))
    assert compact < tasks.MAX_ADD_BYTES < 1024 * 1024 < len(json.dumps({'value': bodies}))
    for chunk in tasks.chunks(bodies):  # as the scheduler cuts them
        assert set(api.add_tasks('j', chunk).values()) == {None}
    assert set(api.add_tasks('j', [dict(_task('b'), environmentSettings=[{'name': 'V', 'value': '\u00e9'}])])
               .values()) == {None}
    sent = _adds(double)
    assert len(sent) == 3 and all(r.status == 200 for r in sent)
    for request in sent:  # the measure is the bytes on the wire, to the byte
        assert request.length == tasks.request_bytes(request.body) <= tasks.MAX_ADD_BYTES
