"""client.BatchApi against the lifecycle double of the Batch data plane (TEST CODE: tests/azurebatch/double/),
through the real SDK: 429/503 retried after Retry-After (plus jitter), an add whose answer was lost counted once
(TaskExists for the same task is success, for another task a failure), a token rejected at expiry asked again,
and one list call per poll whatever the number of tasks."""
import time

import pytest
from hypothesis import given, settings, strategies as st

from azext_batchai_sweep.localservice.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.azurebatch.client import BatchApi, BatchCallError, _JitteredRetryAfter
from tests.azurebatch.double import BatchDouble


@pytest.fixture
def double(tmp_path):
    made = BatchDouble(str(tmp_path / 'batch'))
    try:
        yield made
    finally:
        made.close()


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


def _task(task_id, command='/bin/true'):
    return {'id': task_id, 'commandLine': command}


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
    refused = api.add_tasks('j', [_task('a', '/bin/false'), _task('b')])  # another task of the same id
    assert refused['b'] is None and refused['a'][0] == 'TaskExists'


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
    from azext_batchai_sweep.localservice.azurebatch.mapping import AbMapMapping
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
