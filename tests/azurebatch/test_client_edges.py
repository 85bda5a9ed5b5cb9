"""client.BatchApi where the other client tests do not go, against the lifecycle double of the Batch data plane
(TEST CODE: tests/azurebatch/double/) through the real SDK:

- the retry rules a BatchApi made without `retry=` uses (the scheduler makes it so): how often and how long it
  retries a server error;
- collection-add answers Batch's REST spec allows and the double never gives by itself (made with its `answer` fault
  rule): a failed task without an error code or message, a task the answer leaves out;
- the SDK layout without the generated operations the client calls (a private module of azure-batch: a later SDK
  may move them): each falls back to the SDK's public operation, which must send the same request."""
import datetime
import json
import random
import sys
import time

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import node_wrapper
from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.schedulers.azurebatch.client import BatchApi, BatchCallError, _JitteredRetryAfter

ADD = r'/jobs/j/addtaskcollection$'
POOL = {'id': 'p', 'vmSize': 'Standard_D2s_v3', 'targetDedicatedNodes': 0,
        'virtualMachineConfiguration': {
            'imageReference': {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy',
                               'sku': '22_04-lts', 'version': 'latest'},
            'nodeAgentSKUId': 'batch.node.ubuntu 22.04'}}


def _credential(double):
    return AzLoginCredential(source=lambda: (double.issue_token(), time.time() + 3600))


def _api(double):
    retry = _JitteredRetryAfter(max_retries=4, base_delay=0.01, max_delay=0.05, sleep=lambda _: None,
                                random=lambda: 0.5)
    made = BatchApi(double.endpoint, _credential(double), retry=retry, connection_verify=double.ca_file)
    made.create_pool(dict(POOL))
    made.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    return made


def _task(name):
    """A task add body as the scheduler builds it (its identity: display name and output path segment)."""
    launch = json.dumps({'props': {'jobOutputDirectoryPathSegment': 'sub/rg/ws/e/{}/uid-1'.format(name)}})
    return {'id': name, 'displayName': name, 'commandLine': '/bin/true',
            'environmentSettings': [{'name': node_wrapper.TASK_VARIABLE, 'value': launch}]}


def _adds(double):
    """The task ids of each collection add the double received, in order."""
    with double.lock:
        return [[task['id'] for task in r.body['value']] for r in double.requests
                if r.method == 'POST' and r.path.endswith('/addtaskcollection')]


# ---- the default retry rules ---------------------------------------------------------------------------------

@pytest.fixture
def default_api(double, monkeypatch):  # pylint: disable=redefined-outer-name
    """A BatchApi made as the scheduler makes it (no `retry=`), its jitter draws pinned at their top (1.0) and its
    sleeps recorded through the retry settings' sleep hook instead of slept."""
    monkeypatch.setattr(random, 'random', lambda: 1.0)
    made = BatchApi(double.endpoint, _credential(double), connection_verify=double.ca_file)
    made.sleeps = []
    monkeypatch.setattr(made._retry, 'sleep', made.sleeps.append)  # pylint: disable=protected-access
    made.create_pool(dict(POOL))
    return made


# 8 retries, backoff from 0.5 s doubling up to 20 s (full jitter: these are the ceilings, drawn at 1.0).
DEFAULT_SCHEDULE = [0.5, 1, 2, 4, 8, 16, 20, 20]


def test_by_default_a_server_error_is_retried_8_times_backing_off_from_half_a_second_to_20(double, default_api):
    double.faults.refuse(500, 'InternalServerError', 'Server encountered an internal error.', count=8,
                         method='GET', path=r'/pools/p$')
    assert default_api.get_pool('p')['id'] == 'p'  # the 9th try, the last allowed, is answered
    assert default_api.calls['get_pool'] == 9
    assert default_api.sleeps == DEFAULT_SCHEDULE


def test_by_default_a_server_error_fails_the_call_after_its_8_retries(double, default_api):
    double.faults.refuse(503, 'ServerBusy', 'The server is currently unable to receive requests.', count=20,
                         method='GET', path=r'/pools/p$')
    with pytest.raises(BatchCallError) as raised:
        default_api.get_pool('p')
    assert raised.value.status == 503 and raised.value.code == 'ServerBusy'
    assert default_api.calls['get_pool'] == 9
    assert default_api.sleeps == DEFAULT_SCHEDULE


def test_by_default_a_task_answered_servererror_is_added_again_8_times(double, default_api):
    default_api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    double.faults.answer(200, {'value': [{'status': 'servererror', 'taskId': 'a', 'error': {
        'code': 'ServerError', 'message': {'lang': 'en-US', 'value': 'Please retry the request.'}}}]},
        count=20, method='POST', path=ADD)
    assert default_api.add_tasks('j', [_task('a')]) == {
        'a': ('TaskAddFailed', 'Batch kept answering a server error to the task add.')}
    assert _adds(double) == [['a']] * 9


# ---- collection-add answers the double never gives by itself -----------------------------------------------------

@pytest.fixture
def api(double):  # pylint: disable=redefined-outer-name
    return _api(double)


def test_a_task_refused_without_an_error_code_or_message_fails_with_taskaddfailed(double, api):  # noqa: W0621
    """The spec's TaskAddResult has only status and taskId required: a clienterror may come without `error`. The job
    fails with a code of ours and no invented message, and it is not sent again."""
    double.faults.answer(200, {'value': [{'status': 'clienterror', 'taskId': 'a'}]}, method='POST', path=ADD)
    assert api.add_tasks('j', [_task('a')]) == {'a': ('TaskAddFailed', '')}
    assert _adds(double) == [['a']]


def test_a_task_refused_with_a_message_and_no_code_keeps_its_message(double, api):  # noqa: W0621
    double.faults.answer(200, {'value': [
        {'status': 'clienterror', 'taskId': 'a', 'error': {'message': {'lang': 'en-US', 'value': 'bad task'}}},
        {'status': 'clienterror', 'taskId': 'b', 'error': {'code': 'InvalidPropertyValue'}}]},
        method='POST', path=ADD)
    assert api.add_tasks('j', [_task('a'), _task('b')]) == {'a': ('TaskAddFailed', 'bad task'),
                                                            'b': ('InvalidPropertyValue', '')}
    assert _adds(double) == [['a', 'b']]


def test_a_task_the_answer_leaves_out_is_sent_again_alone(double, api):  # pylint: disable=redefined-outer-name
    """The double applies the whole add and answers for `a` and `b` only: `c`, unanswered, is sent again (its
    TaskExists then, for the same job, is success); `b`'s server error is sent again with it, and `a` never again."""
    double.faults.answer(200, {'value': [
        {'status': 'success', 'taskId': 'a'},
        {'status': 'servererror', 'taskId': 'b', 'error': {'code': 'ServerError'}}]}, method='POST', path=ADD)
    assert api.add_tasks('j', [_task('a'), _task('b'), _task('c')]) == {'a': None, 'b': None, 'c': None}
    assert _adds(double) == [['a', 'b', 'c'], ['b', 'c']]
    with double.account.lock:
        assert sorted(double.account.jobs['j'].tasks) == ['a', 'b', 'c']


# ---- the SDK's public operations, where the generated ones are missing ------------------------------------------

@pytest.fixture
def public_only(monkeypatch):
    """azure-batch without the generated operations the client imports from its private module (the names a later
    SDK may move or rename): the client must fall back to the public operations."""
    import azure.batch  # pylint: disable=import-outside-toplevel,unused-import
    # The SDK's classes, loaded already, keep the module they were made from; a new import of it fails.
    monkeypatch.setitem(sys.modules, 'azure.batch._operations._operations', None)


def test_without_the_generated_operations_tasks_are_added_and_listed_by_the_public_ones(double, api, public_only):
    # pylint: disable=redefined-outer-name,unused-argument
    assert api.add_tasks('j', [_task('a'), _task('b')]) == {'a': None, 'b': None}
    assert [sorted(ids) for ids in _adds(double)] == [['a', 'b']]  # one request (the SDK's own order)
    with double.account.lock:
        assert sorted(double.account.jobs['j'].tasks) == ['a', 'b']
    double.faults.throttle(count=1, retry_after=0, status=503, method='GET', path=r'/jobs/j/tasks$')
    listed = api.list_tasks('j')
    assert api.calls['list_tasks'] == 2  # the 503 retried by the client's rules, not inside the SDK
    assert sorted(t['id'] for t in listed) == ['a', 'b']
    assert all(t['state'] == 'active' for t in listed)
    lists = [r for r in double.requests if r.method == 'GET' and r.path == '/jobs/j/tasks']
    assert lists and all(r.query.get('$select') == ','.join(
        ['id', 'state', 'stateTransitionTime', 'previousState', 'executionInfo', 'nodeInfo', 'constraints'])
        for r in lists)


@pytest.mark.parametrize('status', [429])
def test_without_the_generated_operations_a_refused_add_is_retried_by_the_clients_rules(double, api, public_only,
                                                                                        status):
    """The public add gives up on a throttled request with one CreateTasksError for the whole add (a server error it
    sends again itself): the client raises the request's own error, which its rules retry (the SDK's own retry
    policy is off, as for every request)."""
    # pylint: disable=redefined-outer-name,unused-argument
    double.faults.throttle(count=1, retry_after=0, status=status, method='POST', path=ADD)
    assert api.add_tasks('j', [_task('a'), _task('b')]) == {'a': None, 'b': None}
    assert api.calls['add_task_collection'] == 2  # retried by the client's rules, not inside the SDK
    with double.account.lock:
        assert sorted(double.account.jobs['j'].tasks) == ['a', 'b']


def test_without_the_generated_operations_autoscale_goes_by_the_public_one(double, api, public_only):
    # pylint: disable=redefined-outer-name,unused-argument
    formula = '$TargetDedicatedNodes = 2;'
    double.faults.throttle(count=1, retry_after=0, status=503, method='POST', path=r'/enableautoscale$')
    api.enable_autoscale('p', {'autoScaleFormula': formula, 'autoScaleEvaluationInterval': 'PT8M'})
    assert api.calls['enable_pool_auto_scale'] == 2  # the 503 retried by the client's rules, not inside the SDK
    pool = api.get_pool('p')
    assert pool['enableAutoScale'] is True and pool['autoScaleFormula'] == formula
    assert pool['autoScaleEvaluationInterval'] in ('PT8M', 'PT08M00S')
    with double.account.lock:
        assert double.account.pools['p'].interval == datetime.timedelta(minutes=8).total_seconds()
    api.enable_autoscale('p', {'autoScaleFormula': '$TargetDedicatedNodes = 1;'})  # the interval kept
    pool = api.get_pool('p')
    assert pool['autoScaleFormula'] == '$TargetDedicatedNodes = 1;'
    with double.account.lock:
        assert double.account.pools['p'].interval == 8 * 60
