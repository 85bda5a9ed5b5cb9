"""client.BatchApi's calls one by one, against the lifecycle double of the Batch data plane (TEST CODE:
tests/azurebatch/double/, answering as the recorded service does) through the real SDK: what each call answers when
the resource is there, when it is gone (a delete of what is gone is done, a get is None, a list is empty), and when
Batch refuses it (BatchCallError with Batch's code); the task files a poll reads (their sizes, a byte range); the
account's active jobs; and the error's words (Batch's code and message, never a SAS)."""
import time

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.schedulers.azurebatch.client import (POLL_SELECT, BatchApi, BatchCallError,
                                                                           _JitteredRetryAfter, error_code)
from azext_batchai_sweep.localservice.schedulers.azurebatch.tasks import MAX_ADD_BYTES, request_bytes

IMAGE = {'imageReference': {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy', 'sku': '22_04-lts',
                            'version': 'latest'}, 'nodeAgentSKUId': 'batch.node.ubuntu 22.04'}


@pytest.fixture(name='api')
def _api(double):
    credential = AzLoginCredential(source=lambda: (double.issue_token(), time.time() + 3600))
    retry = _JitteredRetryAfter(max_retries=2, base_delay=0.01, max_delay=0.02, sleep=lambda _: None,
                                random=lambda: 0.5)
    return BatchApi(double.endpoint, credential, retry=retry, connection_verify=double.ca_file)


def _pool(api, pool_id='p', nodes=0):
    return api.create_pool({'id': pool_id, 'vmSize': 'Standard_D2s_v3', 'targetDedicatedNodes': nodes,
                            'virtualMachineConfiguration': IMAGE})


def test_an_add_says_whether_it_was_new_and_a_get_of_what_is_missing_is_none(api):
    assert _pool(api) is True and _pool(api) is False
    assert api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}}) is True
    assert api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}}) is False
    assert api.get_pool('p')['vmSize'].lower() == 'standard_d2s_v3' and api.get_pool('none') is None
    assert api.get_job('j')['poolInfo'] == {'poolId': 'p'} and api.get_job('none') is None
    assert api.get_job('j', select=['id', 'state']) == {'id': 'j', 'state': 'active'}
    assert api.get_pool('p', select=['id']) == {'id': 'p'}
    assert api.calls['create_pool'] == 2 and api.calls['get_pool'] == 3


def test_a_delete_or_terminate_of_what_is_gone_is_done_and_other_refusals_raise(api):
    _pool(api)
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    api.terminate_task('j', 'none')
    api.delete_task('j', 'none')
    api.terminate_task('none', 'none')
    api.delete_task('none', 'none')
    api.delete_job('none')
    api.delete_pool('none')
    with pytest.raises(BatchCallError) as refused:
        api.resize_pool('none', {'targetDedicatedNodes': 1})
    assert (refused.value.status, refused.value.code) == (404, 'PoolNotFound')
    assert str(refused.value).startswith('resize_pool failed: PoolNotFound: ')
    with pytest.raises(BatchCallError) as refused:
        api.disable_autoscale('none')
    assert refused.value.code == 'PoolNotFound'
    api.delete_job('j')
    api.delete_pool('p')
    for gone in (api.get_job('j'), api.get_pool('p')):
        assert gone is None or gone['state'] == 'deleting'  # being deleted, or deleted already
    assert api.calls['delete_job'] == 2 and api.calls['delete_pool'] == 2


def test_pools_are_listed_by_their_id_prefix_whatever_it_holds(api):
    for pool_id in ('sweep-a', 'sweep-b', 'other'):
        _pool(api, pool_id)
    assert sorted(p['id'] for p in api.list_pools('sweep-')) == ['sweep-a', 'sweep-b']
    assert sorted(p['id'] for p in api.list_pools()) == ['other', 'sweep-a', 'sweep-b']
    assert api.list_pools("it's") == []  # a quote in the prefix is the OData literal's '', not its end
    listed = api.list_pools('other')[0]
    assert listed['vmSize'].lower() == 'standard_d2s_v3' and 'allocationState' in listed


def test_the_nodes_of_a_pool_and_of_one_that_is_gone(api, double):
    _pool(api, nodes=1)
    double.account.wait(lambda: [n.state for n in double.account.pools['p'].nodes.values()] == ['idle'])
    (node,) = api.list_nodes('p')
    assert node['state'] == 'idle' and node['id']
    assert api.list_nodes('none') == []


def _task_done(api, double, command):
    _pool(api, nodes=1)
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    assert api.add_tasks('j', [{'id': 't', 'commandLine': command}]) == {'t': None}
    double.account.wait(lambda: double.account.jobs['j'].tasks['t'].state == 'completed', 30)


def test_task_files_are_listed_with_their_sizes_and_read_by_range(api, double):
    _task_done(api, double, "/bin/bash -c 'printf \"hello world\" > out.txt; mkdir -p sub; printf ab > sub/x'")
    files = api.list_task_files('j', 't')
    assert files['wd/out.txt'] == 11 and files['wd/sub/x'] == 2 and files['stdout.txt'] == 0
    assert 'wd' not in files and 'wd/sub' not in files  # folders are no files
    assert api.read_task_file('j', 't', 'wd/out.txt', 6, 11) == b'world'
    assert api.read_task_file('j', 't', 'wd/out.txt', 0, 1) == b'h'
    assert api.read_task_file('j', 't', 'wd/out.txt', 5, 5) == b''
    assert api.read_task_file('j', 't', 'wd/none.txt', 0, 4) == b''
    assert api.list_task_files('j', 'none') == {} and api.list_task_files('none', 't') == {}
    assert api.calls['get_task_file'] == 3  # an empty range is no request


def test_tasks_are_listed_by_the_time_their_state_changed(api, double):
    _task_done(api, double, '/bin/true')
    assert [t['id'] for t in api.list_tasks('j')] == ['t']
    assert [t['id'] for t in api.list_tasks('j', since='2000-01-01T00:00:00.000Z')] == ['t']
    assert api.list_tasks('j', since='2999-01-01T00:00:00.000Z') == []
    assert api.list_tasks('none') == []


def test_the_accounts_active_jobs_are_counted(api):
    _pool(api)
    assert api.count_active_jobs() == 0
    for job_id in ('a', 'b'):
        api.create_job({'id': job_id, 'poolInfo': {'poolId': 'p'}})
    assert api.count_active_jobs() == 2
    api.delete_job('a')
    assert api.count_active_jobs() == 1


def test_a_task_too_large_for_any_request_is_refused_alone(api, double):
    _pool(api)
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    huge = {'id': 'huge', 'commandLine': '/bin/true',
            'environmentSettings': [{'name': 'V', 'value': 'x' * (MAX_ADD_BYTES + 1)}]}
    added = api.add_tasks('j', [huge, {'id': 'small', 'commandLine': '/bin/true'}])
    assert added['small'] is None
    code, message = added['huge']
    size = request_bytes({'value': [huge]})
    assert (code, message) == ('RequestTooLarge', 'The task is {} bytes, more than a Batch request may carry '
                                                  '({}).'.format(size, MAX_ADD_BYTES))
    with double.account.lock:
        assert list(double.account.jobs['j'].tasks) == ['small']


@pytest.mark.parametrize('status, code, message, expected', [
    (500, None, None, 'get_pool failed: HTTP 500'),
    (None, 'ServiceRequestError', None, 'get_pool failed: ServiceRequestError'),
    (403, 'AuthorizationFailure', 'not allowed', 'get_pool failed: AuthorizationFailure: not allowed'),
    (400, 'InvalidUri', 'bad https://a.blob/c?sv=1&sig=SECRET x', 'get_pool failed: InvalidUri: bad '
                                                                   'https://a.blob/c?<SAS removed> x'),
])
def test_a_failed_call_says_what_batch_said_without_a_sas(status, code, message, expected):
    error = BatchCallError('get_pool', status, code, message)
    assert str(error) == expected and (error.status, error.code) == (status, code)
    assert (error.message is None) == (message is None)  # no message from Batch: none, not an empty one
    assert 'SECRET' not in (error.message or '')


class _Model:
    def __init__(self, code, message):
        self.code, self.message = code, message


class _Value:
    value = 'in an object'


class _Failure(Exception):
    def __init__(self, model=None, answer=None, broken=False):
        super().__init__('failed')
        self.model = model
        if answer is not None or broken:
            def json():
                if broken:
                    raise ValueError('not JSON')
                return answer
            self.response = type('Response', (), {'json': staticmethod(json)})()


@pytest.mark.parametrize('exc, expected', [
    (_Failure(_Model('PoolNotFound', 'plain')), ('PoolNotFound', 'plain')),
    (_Failure(_Model('X', {'lang': 'en-US', 'value': 'in a dict'})), ('X', 'in a dict')),
    (_Failure(_Model('X', _Value())), ('X', 'in an object')),
    (_Failure(_Model('X', 42)), ('X', '42')),
    (_Failure(answer={'code': 'JobNotFound', 'message': {'lang': 'en-US', 'value': 'gone'}}), ('JobNotFound', 'gone')),
    (_Failure(answer=['not', 'a', 'dict']), (None, None)),
    (_Failure(broken=True), (None, None)),
    (ValueError('no answer'), (None, None)),
])
def test_batchs_error_code_and_message_are_read_from_any_answer(exc, expected):
    assert error_code(exc) == expected


def test_a_pool_list_carries_what_the_pool_watch_reads_and_nothing_else(api, double):
    """pool_watch and `local status` read sizes, node counts, targets, errors, autoscale and the owner's metadata;
    the rest of a pool (its VM configuration, start task...) never travels back."""
    double.faults.resize_error('AccountCoreQuotaReached', pool_id='p')
    api.create_pool({'id': 'p', 'vmSize': 'Standard_D2s_v3', 'targetDedicatedNodes': 1, 'targetLowPriorityNodes': 1,
                     'virtualMachineConfiguration': IMAGE, 'metadata': [{'name': 'owner', 'value': 'me'}]})
    double.account.wait(lambda: double.account.pools['p'].resize_errors, 30)
    (pool,) = api.list_pools('p')
    assert pool['resizeErrors'][0]['code'] == 'AccountCoreQuotaReached'
    api.enable_autoscale('p', {'autoScaleFormula': '$TargetDedicatedNodes = 0;', 'autoScaleEvaluationInterval': 'PT5M'})
    (pool,) = api.list_pools('p')
    wanted = {'id', 'vmSize', 'allocationState', 'currentDedicatedNodes', 'currentLowPriorityNodes',
              'targetDedicatedNodes', 'targetLowPriorityNodes', 'resizeErrors', 'enableAutoScale', 'autoScaleRun',
              'autoScaleEvaluationInterval', 'metadata'}
    assert set(pool) <= wanted
    assert {'id', 'vmSize', 'allocationState', 'currentDedicatedNodes', 'currentLowPriorityNodes',
            'targetDedicatedNodes', 'targetLowPriorityNodes', 'enableAutoScale', 'metadata'} <= set(pool)
    assert pool['enableAutoScale']
    assert pool['autoScaleEvaluationInterval'] == 'PT5M' and 'timestamp' in pool['autoScaleRun']
    assert pool['metadata'] == [{'name': 'owner', 'value': 'me'}]


def test_a_node_list_carries_its_state_start_task_and_errors_only(api, double):
    api.create_pool({'id': 'p', 'vmSize': 'Standard_D2s_v3', 'targetDedicatedNodes': 1,
                     'virtualMachineConfiguration': IMAGE,
                     'startTask': {'commandLine': '/bin/true', 'waitForSuccess': True}})
    double.account.wait(lambda: [n.state for n in double.account.pools['p'].nodes.values()] == ['idle'], 30)
    with double.account.lock:
        (node,) = double.account.pools['p'].nodes.values()
        node.errors = [{'code': 'MountConfigurationError', 'message': 'mount failed'}]  # as a failed mount sets it
    (listed,) = api.list_nodes('p')
    assert set(listed) == {'id', 'state', 'startTaskInfo', 'errors'}
    assert listed['errors'][0]['code'] == 'MountConfigurationError' and listed['startTaskInfo']['exitCode'] == 0


def test_the_accounts_images_are_listed(api):
    images = api.list_supported_images()
    assert images and all(i['nodeAgentSKUId'] and i['imageReference']['publisher'] for i in images)


@pytest.mark.parametrize('call, method, path, what', [
    (lambda api: api.list_nodes('p'), 'GET', '^/pools/p/nodes', 'list_nodes'),
    (lambda api: api.list_pools('p'), 'GET', '^/pools$', 'list_pools'),
    (lambda api: api.get_job('j'), 'GET', '^/jobs/j$', 'get_job'),
    (lambda api: api.get_pool('p'), 'GET', '^/pools/p$', 'get_pool'),
    (lambda api: api.delete_job('j'), 'DELETE', '^/jobs/j$', 'delete_job'),
    (lambda api: api.list_tasks('j'), 'GET', '^/jobs/j/tasks$', 'list_tasks'),
    (lambda api: api.resize_pool('p', {'targetDedicatedNodes': 0}), 'POST', '/resize$', 'resize_pool'),
    (lambda api: api.delete_pool('p'), 'DELETE', '^/pools/p$', 'delete_pool'),
    (lambda api: api.terminate_task('j', 't'), 'POST', '/tasks/t/terminate$', 'terminate_task'),
    (lambda api: api.delete_task('j', 't'), 'DELETE', '/tasks/t$', 'delete_task'),
    (lambda api: api.list_task_files('j', 't'), 'GET', '/tasks/t/files$', 'list_task_files'),
    (lambda api: api.read_task_file('j', 't', 'stdout.txt', 0, 1), 'GET', '/files/stdout.txt$', 'get_task_file'),
    (lambda api: api.list_supported_images(), 'GET', '^/supportedimages', 'list_supported_images'),
    (lambda api: api.enable_autoscale('p', {'autoScaleFormula': '$TargetDedicatedNodes = 0;',
                                            'autoScaleEvaluationInterval': 'PT5M'}),
     'POST', '/enableautoscale$', 'enable_pool_auto_scale'),
    (lambda api: api.disable_autoscale('p'), 'POST', '/disableautoscale$', 'disable_pool_auto_scale'),
])
def test_each_request_is_retried_by_the_services_rules_and_counted_under_its_operation(api, double, call, method,
                                                                                        path, what):
    """The SDK's own retry is off: a throttled request is retried by the service's rules (its sleeps, its count),
    and `local status` counts every request sent, by operation."""
    _task_done(api, double, '/bin/true')
    before = dict(api.calls)
    double.faults.throttle(count=1, retry_after=0, status=503, method=method, path=path)
    call(api)
    sent = {key: count - before.get(key, 0) for key, count in api.calls.items() if count != before.get(key, 0)}
    assert sent == {what: 2}


@pytest.fixture(name='other_sdk_layout')
def _other_sdk_layout(monkeypatch):
    """An SDK without the generated operations class the client calls first (another azure-batch layout): its
    import fails, and the client falls back on the SDK's public operations."""
    from azure.batch._operations import _operations  # pylint: disable=import-outside-toplevel
    monkeypatch.delattr(_operations, 'BatchClientOperationsMixin')
    with pytest.raises(ImportError):  # what the client's first try meets
        from azure.batch._operations._operations import BatchClientOperationsMixin  # noqa: F401 pylint: disable=W0611


def test_with_another_sdk_layout_autoscale_still_reaches_batch(api, double, other_sdk_layout):  # noqa: W0613
    _pool(api)
    api.enable_autoscale('p', {'autoScaleFormula': '$TargetDedicatedNodes = 0;', 'autoScaleEvaluationInterval': 'PT7M'})
    (sent,) = [r for r in double.requests if r.method == 'POST' and r.path.endswith('/enableautoscale')]
    assert sent.body['autoScaleFormula'] == '$TargetDedicatedNodes = 0;'
    from azext_batchai_sweep.localservice.resources import parse_duration
    assert parse_duration(sent.body['autoScaleEvaluationInterval']).total_seconds() == 420
    pool = api.get_pool('p')
    assert pool['enableAutoScale'] and pool['autoScaleFormula'] == '$TargetDedicatedNodes = 0;'
    api.enable_autoscale('p', {'autoScaleFormula': '$TargetDedicatedNodes = 1;'})  # no interval: Batch's own
    assert 'autoScaleEvaluationInterval' not in double.requests[-1].body


def test_with_another_sdk_layout_tasks_are_still_added(api, double, other_sdk_layout):  # noqa: W0613
    _pool(api)
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    assert api.add_tasks('j', [{'id': 'a', 'commandLine': '/bin/true'}, {'id': 'b', 'commandLine': '/bin/true'}]) == {
        'a': None, 'b': None}
    with double.account.lock:
        assert sorted(double.account.jobs['j'].tasks) == ['a', 'b']


@pytest.mark.parametrize('call, method, path, status, code', [
    (lambda api: api.delete_pool('p'), 'DELETE', '^/pools/p$', 409, 'PoolBeingDeleted'),
    (lambda api: api.delete_job('j'), 'DELETE', '^/jobs/j$', 409, 'JobBeingDeleted'),
    (lambda api: api.terminate_task('j', 't'), 'POST', '/terminate$', 409, 'TaskCompleted'),
    (lambda api: api.list_task_files('j', 't'), 'GET', '/files$', 500, 'OperationTimedOut'),
    (lambda api: api.list_task_files('j', 't'), 'GET', '/files$', 400, 'TaskFilesUnavailable'),
    (lambda api: api.list_task_files('j', 't'), 'GET', '/files$', 400, 'NodeNotReady'),
    (lambda api: api.read_task_file('j', 't', 'stdout.txt', 0, 4), 'GET', '/files/stdout.txt$', 409, 'NodeNotFound'),
    (lambda api: api.read_task_file('none', 't', 'stdout.txt', 0, 4), 'GET', '/files/stdout.txt$', 404,
     'JobNotFound'),
])
def test_an_end_batch_reached_already_is_no_error(api, double, call, method, path, status, code):
    """Batch's codes for "gone already" or "not yet" come with other statuses than 404 (a pool or job being
    deleted, a task completed, a task's files not readable yet): the call is done, or has nothing, not failed."""
    _pool(api)
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    api.add_tasks('j', [{'id': 't', 'commandLine': '/bin/true'}])
    double.faults.refuse(status, code, 'as Batch says it', count=10, method=method, path=path)
    assert call(api) in (None, {}, b'')


def test_a_terminated_task_ends_and_a_deleted_one_is_gone(api, double):
    _pool(api, nodes=1)
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    api.add_tasks('j', [{'id': 'long', 'commandLine': '/bin/sleep 60'}, {'id': 'other', 'commandLine': '/bin/true'}])
    double.account.wait(lambda: double.account.jobs['j'].tasks['long'].state == 'running', 30)
    api.terminate_task('j', 'long')
    assert [t['state'] for t in api.list_tasks('j') if t['id'] == 'long'] == ['completed']
    api.delete_task('j', 'long')
    assert [t['id'] for t in api.list_tasks('j')] == ['other']


def test_a_resize_sets_the_pools_target(api):
    _pool(api)
    api.resize_pool('p', {'targetDedicatedNodes': 2, 'targetLowPriorityNodes': 1})
    pool = api.get_pool('p')
    assert (pool['targetDedicatedNodes'], pool['targetLowPriorityNodes']) == (2, 1)


def test_a_large_task_file_is_read_whole_and_exactly(api, double):
    _task_done(api, double, "/bin/bash -c 'seq 1 30000 > big.txt'")
    expected = ''.join('{}\n'.format(i) for i in range(1, 30001)).encode()
    assert api.list_task_files('j', 't')['wd/big.txt'] == len(expected)
    assert api.read_task_file('j', 't', 'wd/big.txt', 0, len(expected)) == expected
    assert api.read_task_file('j', 't', 'wd/big.txt', 100000, len(expected)) == expected[100000:]


def test_a_task_of_exactly_the_request_limit_is_sent(api, double):
    _pool(api)
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    body = {'id': 'edge', 'commandLine': '/bin/true', 'environmentSettings': [{'name': 'V', 'value': ''}]}
    body['environmentSettings'][0]['value'] = 'x' * (MAX_ADD_BYTES - request_bytes({'value': [body]}))
    assert request_bytes({'value': [body]}) == MAX_ADD_BYTES
    assert api.add_tasks('j', [body]) == {'edge': None}


def test_the_files_of_a_task_not_started_yet_are_none(api):
    _pool(api)  # no node: the task waits, and Batch answers 409 TaskNotScheduled for its files
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    api.add_tasks('j', [{'id': 't', 'commandLine': '/bin/true'}])
    assert api.list_task_files('j', 't') == {}


def test_a_task_there_of_another_job_is_named_in_the_refusal(api, double):
    """TaskExists for a task someone else added: the refusal names the Batch job, the task and what is there, from
    one get of the fields that identify a task."""
    _pool(api)
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    double.client().create_task('j', {'id': 'x', 'commandLine': '/bin/true', 'displayName': 'theirs'})
    double.client().create_task('j', {'id': 'y', 'commandLine': '/bin/true'})
    ours = {'id': 'x', 'commandLine': '/bin/true', 'displayName': 'ours'}
    assert api.add_tasks('j', [ours, dict(ours, id='y')]) == {
        'x': ('TaskExists', 'Batch job j already has a task x of another job (theirs).'),
        'y': ('TaskExists', 'Batch job j already has a task y of another job (not made by this service).')}
    gets = [r for r in double.requests if r.method == 'GET' and r.path.startswith('/jobs/j/tasks/')]
    assert len(gets) == 2 and api.calls['get_task'] == 2
    assert all(set(r.query['$select'].split(',')) == {'id', 'displayName', 'environmentSettings'} for r in gets)


def test_a_task_list_longer_than_a_page_is_read_to_its_last_page(api, double):
    """Batch answers at most 1,000 tasks a page and an odata.nextLink to the next (the double pages as Batch does):
    a poll of a job holding more must see every task, once, with the fields it asked for."""
    _pool(api)
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    ids = ['t{:04d}'.format(i) for i in range(2105)]
    added = api.add_tasks('j', [{'id': task_id, 'commandLine': '/bin/true'} for task_id in ids])
    assert set(added.values()) == {None}
    listed = api.list_tasks('j')
    assert sorted(t['id'] for t in listed) == ids
    assert all(set(t) <= set(POLL_SELECT) and t['state'] == 'active' for t in listed)
    assert api.list_tasks('j', since='2999-01-01T00:00:00.000Z') == []


def test_after_a_rejected_token_only_that_401_is_retried(api, double):
    """The first 401 of a call asks az for a new token and is tried again; the answer to that try is retried only by
    the usual rules (a 404 is not retried at all)."""
    _pool(api)
    double.expire_tokens()
    with pytest.raises(BatchCallError) as refused:
        api.resize_pool('none', {'targetDedicatedNodes': 1})
    assert (refused.value.status, refused.value.code) == (404, 'PoolNotFound')
    assert api.calls['resize_pool'] == 2, 'the 401, then the 404 once'


def test_a_call_that_gets_no_answer_is_retried_and_named_by_its_error(double):
    """No answer at all (nothing listens): retried as a dropped connection, then a BatchCallError without a status
    whose code is the error's class."""
    import socket  # pylint: disable=import-outside-toplevel
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    sleeps = []
    retry = _JitteredRetryAfter(max_retries=2, base_delay=0.01, max_delay=0.02, sleep=sleeps.append,
                                random=lambda: 0.5)
    api = BatchApi('https://127.0.0.1:{}'.format(port), AzLoginCredential(
        source=lambda: (double.issue_token(), time.time() + 3600)), retry=retry, connection_verify=double.ca_file)
    with pytest.raises(BatchCallError) as failed:
        api.get_pool('p')
    assert failed.value.status is None and failed.value.code == 'ServiceRequestError'
    assert str(failed.value).startswith('get_pool failed: ServiceRequestError')
    assert api.calls['get_pool'] == 3 and len(sleeps) == 2


def test_each_retry_is_logged_with_the_operation_it_retries(api, double, caplog):
    _pool(api)
    double.faults.throttle(count=1, retry_after=1, status=503, method='GET', path='/pools/p')
    with caplog.at_level('DEBUG', logger='azext_batchai_sweep.core.service.retry'):
        assert api.get_pool('p')['id'] == 'p'
    retries = [r.getMessage() for r in caplog.records if r.name == 'azext_batchai_sweep.core.service.retry']
    assert len(retries) == 1 and retries[0].startswith('get_pool failed (HttpResponseError, status 503); retry 1 in ')


def test_a_create_is_retried_by_the_service_alone_never_by_the_sdk_as_well(api, double):
    """Each try is one request, counted and waited for by the service's retry (the SDK's own retry is off: it would
    retry unseen, and an add whose answer was lost must be counted)."""
    double.faults.throttle(count=1, retry_after=1, status=503, method='POST', path='/pools')
    assert _pool(api) is True
    assert api.calls['create_pool'] == 2
    assert len([r for r in double.requests if r.method == 'POST' and r.path == '/pools']) == 2
    double.faults.throttle(count=1, retry_after=1, status=503, method='POST', path='/jobs')
    assert api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}}) is True
    assert api.calls['create_job'] == 2
    assert len([r for r in double.requests if r.method == 'POST' and r.path == '/jobs']) == 2


def test_the_get_of_a_task_already_there_is_retried_by_the_service_alone(api, double):
    """TaskExists makes the client read the task there (is it ours?): that get, throttled, is retried by the
    service's rules, one request a try, never by the SDK as well."""
    _pool(api)
    api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    double.client().create_task('j', {'id': 'x', 'commandLine': '/bin/true', 'displayName': 'theirs'})
    double.faults.throttle(count=1, retry_after=1, status=503, method='GET', path='/jobs/j/tasks/x')
    refused = api.add_tasks('j', [{'id': 'x', 'commandLine': '/bin/true', 'displayName': 'ours'}])
    assert refused == {'x': ('TaskExists', 'Batch job j already has a task x of another job (theirs).')}
    gets = [r for r in double.requests if r.method == 'GET' and r.path == '/jobs/j/tasks/x']
    assert api.calls['get_task'] == 2 == len(gets)
