"""client.BatchApi.add_tasks when Batch answers a task of a collection add with status servererror (the REST spec's
TaskAddResult: the add of that task failed on Batch's side and may be retried), against the lifecycle double through
the real SDK (TEST CODE: tests/azurebatch/double/). The double applies the add and its fault rule replaces the answer:
Batch's servererror leaves it unknown whether the task was added, so the retry must also take the TaskExists of
the task it added itself as success.

A task answered servererror is sent again, alone; one answered servererror every time fails with TaskAddFailed
after the retry budget; a clienterror is never retried."""
import json
import time

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.schedulers.azurebatch.client import BatchApi, _JitteredRetryAfter
from azext_batchai_sweep.localservice.schedulers.azurebatch.node_wrapper import TASK_VARIABLE

ADD = r'/jobs/j/addtaskcollection$'




@pytest.fixture
def api(double):  # pylint: disable=redefined-outer-name
    credential = AzLoginCredential(source=lambda: (double.issue_token(), time.time() + 3600))
    retry = _JitteredRetryAfter(max_retries=4, base_delay=0.01, max_delay=0.05, sleep=lambda _: None,
                                random=lambda: 0.5)
    made = BatchApi(double.endpoint, credential, retry=retry, connection_verify=double.ca_file)
    made.create_pool({'id': 'p', 'vmSize': 'Standard_D2s_v3', 'targetDedicatedNodes': 0,
                      'virtualMachineConfiguration': {
                          'imageReference': {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy',
                                             'sku': '22_04-lts', 'version': 'latest'},
                          'nodeAgentSKUId': 'batch.node.ubuntu 22.04'}})
    made.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    return made


def _result(task_id, status, code=None, message=None):
    """One TaskAddResult as the REST spec (2024-02-01.19.0) defines it."""
    if status == 'success':
        return {'status': 'success', 'taskId': task_id, 'eTag': '0x8D0000000000000',
                'lastModified': '2024-01-01T00:00:00Z', 'location': 'https://x/jobs/j/tasks/' + task_id}
    return {'status': status, 'taskId': task_id,
            'error': {'code': code, 'message': {'lang': 'en-US', 'value': message}}}


def _task(name, command='/bin/true'):
    """A task add body as the scheduler builds it: the job's identity (tasks.task_identity: its display name and its
    output path segment in the launch settings) is what a TaskExists answer is judged by."""
    launch = json.dumps({'props': {'jobOutputDirectoryPathSegment': 'sub/rg/ws/e/{}/uid-1'.format(name)}})
    return {'id': name, 'displayName': name, 'commandLine': command,
            'environmentSettings': [{'name': TASK_VARIABLE, 'value': launch}]}


SERVER_ERROR = ('ServerError', 'The server encountered an internal error. Please retry the request.')


def _adds(double):
    """The task ids of each collection add the double received, in order."""
    with double.lock:
        return [[task['id'] for task in r.body['value']] for r in double.requests
                if r.method == 'POST' and r.path.endswith('/addtaskcollection')]


def test_a_task_answered_servererror_is_sent_again_alone(double, api):  # pylint: disable=redefined-outer-name
    double.faults.answer(200, {'value': [_result('a', 'success'), _result('b', 'servererror', *SERVER_ERROR),
                                         _result('c', 'success')]}, method='POST', path=ADD)
    tasks = [_task(name, '/bin/echo ' + name) for name in 'abc']
    assert api.add_tasks('j', tasks) == {'a': None, 'b': None, 'c': None}
    assert _adds(double) == [['a', 'b', 'c'], ['b']]
    with double.account.lock:
        assert sorted(double.account.jobs['j'].tasks) == ['a', 'b', 'c']


# pylint: disable=redefined-outer-name
def test_a_task_answered_servererror_every_time_fails_after_the_retries(double, api):
    double.faults.answer(200, {'value': [_result('a', 'servererror', *SERVER_ERROR)]}, count=5, method='POST',
                         path=ADD)
    assert api.add_tasks('j', [_task('a')]) == {
        'a': ('TaskAddFailed', 'Batch kept answering a server error to the task add.')}
    assert _adds(double) == [['a']] * 5  # the first add and max_retries (4) more
    assert api.calls['add_task_collection'] == 5


def test_a_task_answered_servererror_then_added_counts_once(double, api):  # pylint: disable=redefined-outer-name
    double.faults.answer(200, {'value': [_result('a', 'servererror', *SERVER_ERROR)]}, count=2, method='POST',
                         path=ADD)
    assert api.add_tasks('j', [_task('a')]) == {'a': None}
    assert _adds(double) == [['a']] * 3


def test_a_clienterror_is_not_retried(double, api):  # pylint: disable=redefined-outer-name
    double.faults.answer(200, {'value': [_result('a', 'clienterror', 'InvalidPropertyValue', 'bad command')]},
                         method='POST', path=ADD)
    assert api.add_tasks('j', [_task('a')]) == {
        'a': ('InvalidPropertyValue', 'bad command')}
    assert _adds(double) == [['a']]
