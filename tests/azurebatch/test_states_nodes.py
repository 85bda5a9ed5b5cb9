"""states.py's cluster side, rule by rule: every Batch node state of the spec counts in one Batch AI node count and
is usable or not, a pool's errors keep Batch's code (or a named default) with the fix for a quota, one cluster
error per code, and a cluster is `steady` only when its pool is.

Node states are the spec's enum (tests/specs/batch-2024-02-01.19.0, ComputeNodeState); the expected table is Batch
AI's meaning of its counts (idle, running, preparing, unusable, leaving), written here, not read from the code.
"""
import datetime
import json

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import states
from tests.azurebatch.batch_shapes import SPEC_FILE, validate

# Batch AI's node counts (NodeStateCounts) for each Batch node state.
COUNTED_AS = {
    'idle': 'idleNodeCount', 'running': 'runningNodeCount',
    'creating': 'preparingNodeCount', 'starting': 'preparingNodeCount', 'waitingforstarttask': 'preparingNodeCount',
    'rebooting': 'preparingNodeCount', 'reimaging': 'preparingNodeCount', 'upgradingos': 'preparingNodeCount',
    'unusable': 'unusableNodeCount', 'starttaskfailed': 'unusableNodeCount', 'offline': 'unusableNodeCount',
    'unknown': 'unusableNodeCount', 'leavingpool': 'leavingNodeCount', 'preempted': 'leavingNodeCount',
}
# The states of a node that runs, or will soon run, a task once it is ready.
USABLE = {'idle', 'running', 'creating', 'starting', 'waitingforstarttask', 'rebooting', 'reimaging', 'upgradingos'}
COUNTS = ('idleNodeCount', 'leavingNodeCount', 'preparingNodeCount', 'runningNodeCount', 'unusableNodeCount')


def _spec_node_states():
    with open(SPEC_FILE, encoding='utf-8') as f:
        return json.load(f)['definitions']['ComputeNode']['properties']['state']['enum']


def test_the_table_covers_every_node_state_of_the_spec():
    assert set(_spec_node_states()) == set(COUNTED_AS)


@pytest.mark.parametrize('node_state', sorted(COUNTED_AS))
def test_each_node_state_counts_in_its_batch_ai_count(node_state):
    node = {'id': 'n1', 'state': node_state}
    validate('ComputeNode', node)
    for spelled in (node_state, node_state.capitalize()):  # the SDK passes the service's capitals on
        counts = states.cluster_state({'allocationState': 'steady'}, [{'id': 'n1', 'state': spelled}])[
            'nodeStateCounts']
        assert counts == {name: int(name == COUNTED_AS[node_state]) for name in COUNTS}


def test_a_node_state_the_spec_lacks_counts_as_unusable_and_the_counts_add_up():
    nodes = [{'id': str(i), 'state': s} for i, s in enumerate(['idle', 'idle', 'running', 'deallocated', None])]
    counts = states.cluster_state({'allocationState': 'steady'}, nodes)['nodeStateCounts']
    assert counts == {'idleNodeCount': 2, 'leavingNodeCount': 0, 'preparingNodeCount': 0, 'runningNodeCount': 1,
                      'unusableNodeCount': 2}


@pytest.mark.parametrize('node_state', sorted(COUNTED_AS))
def test_a_job_waits_only_on_a_node_that_can_run_it(node_state):
    nodes = [{'id': 'n1', 'state': node_state.upper()}]
    assert states.usable_nodes({}, nodes) == int(node_state in USABLE)
    broken = {'resizeErrors': [{'code': 'ResizeStopped', 'message': 'stopped'}]}
    problem = states.cannot_grow(broken, nodes, needed=1)
    assert (problem is None) == (node_state in USABLE)


def test_a_job_needs_as_many_usable_nodes_as_it_has_nodes():
    broken = {'resizeErrors': [{'code': 'ResizeStopped', 'message': 'stopped'}]}
    nodes = [{'id': 'a', 'state': 'idle'}, {'id': 'b', 'state': 'running'}, {'id': 'c', 'state': 'unusable'}]
    assert states.usable_nodes(broken, nodes) == 2 and states.usable_nodes(broken) == 0
    assert states.cannot_grow(broken, nodes, needed=2) is None
    assert states.cannot_grow(broken, nodes, needed=3)['code'] == 'ResizeStopped'
    assert states.cannot_grow(broken, nodes, needed=0) is None and states.cannot_grow(broken, nodes, None) is None
    assert states.cannot_grow(broken, [], needed=None)['code'] == 'ResizeStopped'  # no node: even a 1-node job
    for needed in (None, 0, 1):  # a job without a node count needs one node
        assert states.cannot_grow(broken, nodes[1:], needed=needed) is None


@pytest.mark.parametrize('pool_state, expected', [('steady', 'steady'), ('Steady', 'steady'),
                                                  ('resizing', 'resizing'), ('stopping', 'resizing')])
def test_a_cluster_is_steady_only_when_its_pool_is(pool_state, expected):
    pool = {'allocationState': pool_state, 'currentDedicatedNodes': 2, 'currentLowPriorityNodes': 3}
    validate('CloudPool', dict(pool, allocationState=pool_state.lower()))
    state = states.cluster_state(pool)
    assert state['allocationState'] == expected and state['currentNodeCount'] == 5
    assert state['nodeStateCounts'] == dict.fromkeys(COUNTS, 0) and state['errors'] == []
    assert states.cluster_state({})['currentNodeCount'] == 0


@pytest.mark.parametrize('code, words', [
    ('AccountCoreQuotaReached', "the Batch account's dedicated vCPU quota"),
    ('AccountLowPriorityCoreQuotaReached', "the Batch account's Spot/low-priority vCPU quota"),
    ('AccountVMSeriesCoreQuotaReached', "the Batch account's vCPU quota for this VM family"),
    ('AccountSpotCoreQuotaReached', "the Batch account's Spot vCPU quota"),
])
def test_a_quota_error_says_which_quota_and_how_to_get_more(code, words):
    pool = {'resizeErrors': [{'code': code, 'message': 'The quota was reached for NDX.'}]}
    (error,) = states.cluster_state(pool)['errors']
    assert error == {'code': code, 'message': 'The quota was reached for NDX ({} is used up). Request more '
                                              '(Batch account > Quotas > Request quota increase) or lower the '
                                              'cluster\'s node count.'.format(words)}


def test_a_pool_error_keeps_batch_code_and_message_or_names_a_default():
    pool = {'resizeErrors': [{'code': 'AllocationFailed', 'message': 'No capacity.'},
                             {'message': 'no code'}, {'code': 'OnlyACode'}],
            'autoScaleRun': {'timestamp': '2026-11-26T10:00:00Z', 'error': {'code': 'InvalidFormula',
                                                                             'message': 'bad'}}}
    assert states.cluster_state(pool)['errors'] == [
        {'code': 'AllocationFailed', 'message': 'No capacity.'},  # no quota: the message as Batch wrote it
        {'code': 'ResizeError', 'message': 'no code'}, {'code': 'OnlyACode', 'message': 'OnlyACode'},
        {'code': 'InvalidFormula', 'message': 'bad'}]
    assert states.cluster_state({'autoScaleRun': {'timestamp': '2026-11-26T10:00:00Z'}})['errors'] == []


def test_one_cluster_error_per_code_across_the_nodes():
    mount = {'code': 'MountConfigurationError', 'message': 'mount failed.'}
    nodes = [{'id': 'n1', 'state': 'unusable', 'errors': [mount]},
             {'id': 'n2', 'state': 'unusable', 'errors': [mount, {'message': 'no code'}]},
             {'id': 'n3', 'state': 'unusable', 'errors': [{'code': 'DiskFull'}, {'message': 'again no code'}]},
             {'id': 'n4', 'state': 'starttaskfailed', 'startTaskInfo': {'exitCode': 3}},
             {'id': 'n5', 'state': 'starttaskfailed', 'startTaskInfo': {'exitCode': 4}},
             {'id': 'n6', 'state': 'idle', 'startTaskInfo': {'exitCode': 5, 'failureInfo': {
                 'code': 'FailureExitCode', 'message': 'exit 5'}}}]
    errors = states.cluster_errors({}, nodes)
    assert [e['code'] for e in errors] == ['MountConfigurationError', 'NodeUnusable', 'DiskFull', 'SetupTaskFailed',
                                           'SetupTaskFailed']
    assert errors[0]['message'].startswith('Node n1 is unusable (MountConfigurationError: mount failed).')
    assert errors[1]['message'] == 'Node n2 is unusable (NodeUnusable: no code).'
    assert errors[2]['message'] == 'Node n3 is unusable (DiskFull: ).' and 'details' not in errors[2]
    # a start task that failed: on the first node of each failure code, with its exit code when Batch gives no words
    assert errors[3]['message'] == ("nodeSetup.setupTask failed on node n4 (StartTaskFailed: exit code 3); its output "
                                    "is in the setup task's stdOutErrPathPrefix.")
    assert errors[4]['message'].startswith('nodeSetup.setupTask failed on node n6 (FailureExitCode: exit 5)')


def test_a_node_error_names_its_details_and_only_a_mount_the_mount_causes():
    node = {'id': 'n1', 'errors': [{'code': 'Other', 'message': 'x', 'errorDetails': [
        {'name': 'Reason', 'value': 'why'}, {'name': 'Path', 'value': '/p'}]}]}
    (error,) = states.cluster_errors({}, [node])
    assert error == {'code': 'Other', 'message': 'Node n1 is unusable (Other: x; Reason: why, Path: /p).',
                     'details': [{'name': 'Reason', 'value': 'why'}, {'name': 'Path', 'value': '/p'}]}
    by_detail = {'id': 'n2', 'state': 'unusable', 'errors': [{'code': 'Other', 'errorDetails': [
        {'name': 'MountConfigurationPath', 'value': 'afs'}]}]}
    assert 'allowSharedKeyAccess' in states.cluster_errors({}, [by_detail])[0]['message']


def test_the_next_autoscale_evaluation_needs_the_last_run_and_the_interval():
    now = datetime.datetime(2026, 11, 26, 9, 0, tzinfo=datetime.timezone.utc)
    assert states.next_evaluation({'enableAutoScale': True, 'autoScaleRun': {'timestamp': '2026-11-26T10:00:00Z'}},
                                  now) is None
    assert states.next_evaluation({'enableAutoScale': True, 'autoScaleEvaluationInterval': 'PT5M',
                                   'autoScaleRun': {'error': {'code': 'x'}}}, now) is None
    before = datetime.datetime.now(datetime.timezone.utc)
    assert before <= states.next_evaluation({'enableAutoScale': True}) <= datetime.datetime.now(
        datetime.timezone.utc)


@pytest.mark.parametrize('info, expected', [
    ({}, {'requeues': 0, 'retries': 0}), ({'requeueCount': 1, 'retryCount': 3}, {'requeues': 1, 'retries': 3}),
    ({'requeueCount': None, 'retryCount': 2}, {'requeues': 0, 'retries': 2}),
])
def test_attempts_count_batch_requeues_and_retries_apart(info, expected):
    assert states.attempts({'id': 't', 'executionInfo': info}) == expected
    assert states.attempts({'id': 't'}) == {'requeues': 0, 'retries': 0}


def test_a_task_without_a_wall_clock_limit_or_times_never_timed_out():
    def task(**fields):
        body = {'id': 't1', 'state': 'completed', 'executionInfo': {
            'retryCount': 0, 'requeueCount': 0, 'exitCode': -1, 'result': 'failure',
            'failureInfo': {'category': 'usererror', 'code': 'TaskEnded', 'message': 'ended'}}}
        body['executionInfo'].update(fields.pop('info', {}))
        body.update(fields)
        return body
    long_run = {'startTime': '2026-11-26T10:00:00Z', 'endTime': '2026-11-28T10:00:00Z'}
    assert states.outcome(task(info=long_run))[2][0]['code'] == 'TaskEnded'
    assert states.outcome(task(constraints={'maxWallClockTime': 'PT1M'}, info={
        'startTime': '2026-11-26T10:00:00Z'}))[2][0]['code'] == 'TaskEnded'
    assert states.outcome(task(constraints={'maxWallClockTime': 'PT1M'}, info=long_run))[2][0]['code'] == (
        'MaxWallClockTimeExceeded')
    # Batch's own word for it, without the times: the service's error (its words), whatever Batch's case
    for batch_code in ('MaxWallClockTimeExceeded', 'TASKWALLCLOCKLIMIT'):
        assert states.outcome(task(info={'failureInfo': {'code': batch_code, 'message': 'Batch words'}})) == (
            'failed', -1, [{'code': 'MaxWallClockTimeExceeded',
                            'message': 'The job ran longer than its constraints.maxWallClockTime.'}])


def test_a_failed_job_preparation_says_its_exit_code():
    task = {'id': 't1', 'state': 'completed', 'executionInfo': {
        'retryCount': 0, 'requeueCount': 0, 'exitCode': 7, 'result': 'failure',
        'failureInfo': {'category': 'usererror', 'code': 'FailureExitCode', 'message': 'exit 7'}}}
    assert states.outcome(task, exit_record=('prep', 7)) == (
        'failed', 7, [{'code': 'JobPreparationFailed', 'message': 'jobPreparation.commandLine exited with 7.'}])



def test_a_node_error_says_the_nodes_state_and_batchs_sentence_once():
    node = {'id': 'n7', 'state': 'offline', 'errors': [{'code': 'DiskError', 'message': 'No space on /dev/sdX.'}]}
    (error,) = states.cluster_errors({}, [node])
    assert error['message'] == 'Node n7 is offline (DiskError: No space on /dev/sdX).'


@pytest.mark.parametrize('text, expected', [
    ('see https://acct.blob.core.windows.net/logs/t1?sv=2021&se=x&sig=abc%3D&sp=cw now',
     'see https://acct.blob.core.windows.net/logs/t1?<SAS removed> now'),
    ('no query https://a/b and ?x=1', 'no query https://a/b and ?x=1'),
    ('', ''), (None, ''),
])
def test_a_sas_in_batchs_words_is_replaced_by_a_mark(text, expected):
    assert states.redact_sas(text) == expected


def test_batchs_failure_details_are_all_named_in_the_jobs_error():
    task = {'id': 't1', 'state': 'completed', 'executionInfo': {
        'retryCount': 0, 'requeueCount': 0, 'result': 'failure', 'failureInfo': {
            'category': 'usererror', 'code': 'ResourceFileDownloadFailed', 'message': 'could not download',
            'details': [{'name': 'FilePath', 'value': 'a.py'}, {'name': 'HttpStatusCode', 'value': '403'}]}}}
    assert states.outcome(task)[2] == [{'code': 'ResourceFileDownloadFailed',
                                        'message': 'could not download (FilePath=a.py, HttpStatusCode=403)'}]
