"""states.py: Batch task, node and pool states as Batch AI's job and cluster states."""
import datetime

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import pool_watch, states
from tests.azurebatch.batch_shapes import validate


def task(state, **info):
    """A task as Batch answers it (checked against the definition: the mapping reads Batch's own names)."""
    body = {'id': 't1', 'state': state, 'constraints': {'maxWallClockTime': 'PT1H'}}
    if info:
        body['executionInfo'] = dict({'retryCount': 0, 'requeueCount': 0}, **info)
    validate('CloudTask', body)
    return body


@pytest.mark.parametrize('state, expected', [('active', 'queued'), ('preparing', 'running'), ('running', 'running')])
def test_live_tasks(state, expected):
    assert states.outcome(task(state)) == (expected, None, [])


def test_a_requeued_task_is_queued_again_and_counted():
    requeued = task('active', requeueCount=2, retryCount=0, lastRequeueTime='2026-11-26T10:00:00Z')
    assert states.outcome(requeued)[0] == 'queued'
    assert states.attempts(requeued) == {'requeues': 2, 'retries': 0}


def test_success_and_non_zero_exit():
    assert states.outcome(task('completed', result='success', exitCode=0)) == ('succeeded', 0, [])
    failed = task('completed', result='failure', exitCode=3, startTime='2026-11-26T10:00:00Z',
                  endTime='2026-11-26T10:01:00Z',
                  failureInfo={'category': 'usererror', 'code': 'FailureExitCode', 'message': 'exit code 3'})
    assert states.outcome(failed) == ('failed', 3, [{'code': 'NonZeroExitCode',
                                                     'message': 'The job exited with code 3.'}])
    assert states.outcome(failed, exit_record=('prep', 3))[2][0]['code'] == 'JobPreparationFailed'


def test_the_wall_clock_and_the_service_own_reasons():
    timed_out = task('completed', result='failure', exitCode=-1, startTime='2026-11-26T10:00:00Z',
                     endTime='2026-11-26T11:00:01Z', failureInfo={'category': 'usererror', 'code': 'TaskEnded'})
    assert states.outcome(timed_out)[2][0]['code'] == 'MaxWallClockTimeExceeded'
    terminated = task('completed', result='failure', exitCode=137, startTime='2026-11-26T10:00:00Z',
                      endTime='2026-11-26T10:00:05Z', failureInfo={'category': 'usererror', 'code': 'TaskEnded'})
    assert states.outcome(terminated, reason='terminated')[2][0]['code'] == 'JobTerminated'


def test_other_batch_failures_keep_batch_code_and_details():
    pulled = task('completed', result='failure', failureInfo={
        'category': 'usererror', 'code': 'ContainerImagePullFailed', 'message': 'pull failed',
        'details': [{'name': 'Image', 'value': 'x:1'}]})
    assert states.outcome(pulled) == ('failed', None, [{'code': 'ContainerImagePullFailed',
                                                        'message': 'pull failed (Image=x:1)'}])


def test_pool_resize_errors_autoscale_errors_and_start_task_failures_are_cluster_errors():
    pool = {'allocationState': 'resizing', 'currentDedicatedNodes': 1, 'currentLowPriorityNodes': 1,
            'resizeErrors': [{'code': 'AccountVMSeriesCoreQuotaReached', 'message': 'Quota reached.',
                              'values': [{'name': 'Family', 'value': 'standardNCFamily'}]}],
            'autoScaleRun': {'timestamp': '2026-11-26T10:00:00Z', 'error': {'code': 'InvalidFormula',
                                                                             'message': 'bad'}}}
    nodes = [{'id': 'n1', 'state': 'starttaskfailed', 'startTaskInfo': {
        'state': 'completed', 'startTime': '2026-11-26T10:00:00Z', 'retryCount': 1, 'exitCode': 1,
        'failureInfo': {'category': 'usererror', 'code': 'FailureExitCode', 'message': 'exit 1'}}},
        {'id': 'n2', 'state': 'idle'},
        {'id': 'n3', 'state': 'preempted'}, {'id': 'n4', 'state': 'waitingforstarttask'}]
    validate('CloudPool', pool)
    for node in nodes:
        validate('ComputeNode', node)
    state = states.cluster_state(pool, nodes)
    assert state['allocationState'] == 'resizing' and state['currentNodeCount'] == 2
    assert state['nodeStateCounts'] == {'idleNodeCount': 1, 'leavingNodeCount': 1, 'preparingNodeCount': 1,
                                        'runningNodeCount': 0, 'unusableNodeCount': 1}
    codes = [e['code'] for e in state['errors']]
    assert codes == ['AccountVMSeriesCoreQuotaReached', 'InvalidFormula', 'SetupTaskFailed']
    assert 'quota increase' in state['errors'][0]['message']
    assert state['errors'][0]['details'] == [{'name': 'Family', 'value': 'standardNCFamily'}]
    assert states.cannot_grow(pool)['code'] == 'AccountVMSeriesCoreQuotaReached'
    assert states.cannot_grow({'allocationState': 'steady'}) is None


def test_next_autoscale_evaluation():
    pool = {'enableAutoScale': True, 'autoScaleEvaluationInterval': 'PT5M',
            'autoScaleRun': {'timestamp': '2026-11-26T10:00:00Z'}}
    assert states.next_evaluation(pool) == datetime.datetime(2026, 11, 26, 10, 5, tzinfo=datetime.timezone.utc)
    assert states.next_evaluation({'enableAutoScale': False}) is None


# ---- a pool that got some of its nodes (tests/azurebatch/recorded/gpu_pools: Azure PowerShell's
# PoolTests/TestResizeAndStopResizePool, a steady pool keeping its last resize's error) --------------------------

def _stopped_pool(current=0, target=1):
    from tests.azurebatch.gpu_recorded import recorded
    pool = recorded('pool get after a stopped resize')['response']
    assert pool['allocationState'] == 'steady' and pool['resizeErrors'][0]['code'] == 'ResizeStopped'
    # recorded with 0 of 1 node; a partial allocation (some nodes, short of the target) is the same answer with
    # other counts (not recorded: the counts changed here, the error and state as recorded)
    pool.update(currentDedicatedNodes=current, targetDedicatedNodes=target)
    return pool


def _nodes(*node_states):
    return [{'id': 'tvmps_{}'.format(i), 'state': s} for i, s in enumerate(node_states)]


def test_the_recorded_stopped_pool_without_a_node_cannot_grow():
    pool = _stopped_pool()
    assert states.cannot_grow(pool)['code'] == 'ResizeStopped'
    assert states.cluster_state(pool)['errors'][0]['code'] == 'ResizeStopped'


@pytest.mark.parametrize('node_states, needed, grows', [
    (('idle',), 1, True), (('running', 'running'), 1, True), (('running', 'creating'), 2, True),
    (('running',), 2, False), (('unusable', 'starttaskfailed'), 1, False), (('idle', 'preempted'), 2, False),
    (('Running', 'Idle'), 2, True),
])
def test_a_partial_allocation_works_through_its_queue(node_states, needed, grows):
    """Issue 48 item 2 (fails on the old code, where any resize error made the pool 'cannot grow' and every job
    queued behind the running ones failed after the bounded wait): only a pool with fewer usable nodes than the
    job needs cannot run it; `cluster show` has the error either way."""
    pool = _stopped_pool(current=len(node_states), target=8)
    nodes = _nodes(*node_states)
    problem = states.cannot_grow(pool, nodes, needed)
    assert (problem is None) == grows
    if not grows:
        assert problem['code'] == 'ResizeStopped'
    assert 'ResizeStopped' in [e['code'] for e in states.cluster_state(pool, nodes)['errors']]


def test_before_its_first_autoscale_run_a_pool_is_evaluated_at_once():
    """Issue 48 item 5 (fails on the old code: no next evaluation at all). Recorded: the pool right after enable
    autoscale answers no autoScaleRun (Azure PowerShell's PoolTests/TestAutoScaleActions)."""
    from tests.azurebatch.gpu_recorded import recorded
    pool = recorded('pool list right after enable autoscale (no autoScaleRun yet)')['response']['value'][0]
    assert pool['enableAutoScale'] and 'autoScaleRun' not in pool
    now = datetime.datetime(2024, 3, 21, 23, 32, 21, tzinfo=datetime.timezone.utc)
    assert states.next_evaluation(pool, now) == now
    ran = dict(pool, autoScaleRun={'timestamp': '2024-03-21T23:32:21.0096445Z'})
    assert states.next_evaluation(ran, now) == datetime.datetime(2024, 3, 21, 23, 40, 21, 9644,
                                                                 tzinfo=datetime.timezone.utc)


# A node whose storage mount failed, as Microsoft documents it (virtual-file-mount.md, "Diagnose mount errors": the
# node's state is set to unusable, its ComputeNodeError says why; shown there as "Mount Configuration Error | An
# error was encountered while configuring specified mount(s)" with Message and MountConfigurationPath). No public
# recording holds one: the shape is the spec's ComputeNode.errors (validated below), the words the page's.
MOUNT_FAILED = {'id': 'tvmps_1_d', 'state': 'unusable', 'errors': [{
    'code': 'MountConfigurationError', 'message': 'An error was encountered while configuring specified mount(s)',
    'errorDetails': [{'name': 'Message', 'value': 'mount error(13): Permission denied'},
                     {'name': 'MountConfigurationPath', 'value': 'afs'}]}]}


def test_an_unusable_node_with_errors_is_a_cluster_error_naming_the_mount_causes():
    validate('ComputeNode', MOUNT_FAILED)
    state = states.cluster_state({'allocationState': 'steady', 'currentDedicatedNodes': 1}, [MOUNT_FAILED])
    (error,) = state['errors']
    assert error['code'] == 'MountConfigurationError' and state['nodeStateCounts']['unusableNodeCount'] == 1
    assert 'Node tvmps_1_d is unusable' in error['message'] and 'Permission denied' in error['message']
    assert 'allowSharedKeyAccess' in error['message'] and 'port 445' in error['message']
    assert error['details'] == MOUNT_FAILED['errors'][0]['errorDetails']


def test_every_node_unusable_with_errors_is_a_pool_that_cannot_grow_like_start_task_failures():
    setup_failed = {'id': 'n2', 'state': 'starttaskfailed', 'startTaskInfo': {
        'state': 'completed', 'exitCode': 3, 'failureInfo': {'category': 'usererror', 'code': 'FailureExitCode'}}}
    pool = {'allocationState': 'steady', 'currentDedicatedNodes': 2}
    assert states.cannot_grow(pool, [MOUNT_FAILED])['code'] == 'MountConfigurationError'
    assert states.cannot_grow(pool, [MOUNT_FAILED, setup_failed])['code'] == 'MountConfigurationError'
    # one node can still run the job, or the unusable node says nothing (Batch may recover it): wait on
    assert states.cannot_grow(pool, [MOUNT_FAILED, {'id': 'n3', 'state': 'idle'}]) is None
    assert states.cannot_grow(pool, [{'id': 'n4', 'state': 'unusable'}]) is None
    assert 'cannot grow (MountConfigurationError)' in pool_watch.waiting_note(pool, [MOUNT_FAILED])
