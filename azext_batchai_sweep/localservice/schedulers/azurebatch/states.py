"""Batch's task, node and pool states as Batch AI's job and cluster states (REST JSON of the data plane
2024-02-01.19.0: CloudTask, ComputeNode, CloudPool).

Batch task -> Batch AI job:
- `active` -> `queued` (also after a preempted node's task was requeued: `executionInfo.requeueCount` counts it);
- `preparing`, `running` -> `running`;
- `completed` with `result: success` -> `succeeded`, exit code 0;
- `completed`, stopped by the service (terminate, delete...) -> `failed` with the service's reason (REASONS);
- `completed`, ran past `constraints.maxWallClockTime` -> `failed`, `MaxWallClockTimeExceeded`;
- `completed`, the wrapper recorded `prep N` -> `failed`, `JobPreparationFailed`;
- `completed`, non-zero exit code (`FailureExitCode`) -> `failed`, `NonZeroExitCode`;
- `completed`, any other `failureInfo` (container image pull, resource files...) -> `failed`, Batch's code and
  message.

Pools: `resizeErrors` and the autoscale run's error become the cluster's `errors` (with the fix for a quota code);
nodes' states become `nodeStateCounts`; a start task that failed on a node, and an unusable node's `errors` (a storage
mount that failed), are errors of the cluster.
"""
import datetime
import re

from ...resources import parse_duration
from ..scheduler import REASONS
from .spelling import folded, parse_time, same

QUEUED = {'active'}
RUNNING = {'preparing', 'running'}
NODE_COUNTS = {
    'idle': 'idleNodeCount', 'running': 'runningNodeCount',
    'creating': 'preparingNodeCount', 'starting': 'preparingNodeCount', 'waitingforstarttask': 'preparingNodeCount',
    'rebooting': 'preparingNodeCount', 'reimaging': 'preparingNodeCount', 'upgradingos': 'preparingNodeCount',
    'unusable': 'unusableNodeCount', 'starttaskfailed': 'unusableNodeCount', 'offline': 'unusableNodeCount',
    'unknown': 'unusableNodeCount',
    'leavingpool': 'leavingNodeCount', 'preempted': 'leavingNodeCount',
}
QUOTA_CODES = {
    'AccountCoreQuotaReached': 'the Batch account\'s dedicated vCPU quota',
    'AccountLowPriorityCoreQuotaReached': 'the Batch account\'s Spot/low-priority vCPU quota',
    'AccountVMSeriesCoreQuotaReached': 'the Batch account\'s vCPU quota for this VM family',
    'AccountSpotCoreQuotaReached': 'the Batch account\'s Spot vCPU quota',
}
QUOTA_FIX = ' Request more (Batch account > Quotas > Request quota increase) or lower the cluster\'s node count.'


_SAS_QUERY = re.compile(r'\?[^\s"\'<>]*\bsig=[^\s"\'<>]*', re.IGNORECASE)


def redact_sas(text):
    """``text`` with the query of any URL holding a SAS signature (`sig=`) replaced by `?<SAS removed>`."""
    return _SAS_QUERY.sub('?<SAS removed>', text or '')


def _error(code, message):
    return {'code': code, 'message': message}


def attempts(task):
    """{'requeues': preemptions and other requeues by Batch, 'retries': Batch's retries} of a task."""
    info = task.get('executionInfo') or {}
    return {'requeues': int(info.get('requeueCount') or 0), 'retries': int(info.get('retryCount') or 0)}


def _timed_out(task):
    info = task.get('executionInfo') or {}
    limit = (task.get('constraints') or {}).get('maxWallClockTime')
    start, end = parse_time(info.get('startTime')), parse_time(info.get('endTime'))
    if not (limit and start and end):
        return False
    return end - start >= parse_duration(limit)


def outcome(task, reason=None, exit_record=None):
    """(executionState, exit code or None, errors) of a Batch task as a Batch AI job.

    `reason`: why the service itself stopped the task (a scheduler.REASONS key) or None; `exit_record`: the
    wrapper's ('prep'|'main', code) when the caller read it (node_wrapper.EXIT_FILE), else None.
    """
    state = folded(task.get('state'))
    if state in QUEUED:
        return 'queued', None, []
    if state in RUNNING:
        return 'running', None, []
    info = task.get('executionInfo') or {}
    code = info.get('exitCode')
    failure = info.get('failureInfo') or {}
    if reason:
        return 'failed', code, [_error(*REASONS[reason])]
    if same(info.get('result'), 'success') or (code == 0 and not failure):
        return 'succeeded', 0, []
    if code == 0 and 'upload' in str(failure.get('code', '')).lower():
        # The job succeeded; only Batch's upload of the task's own stdout/stderr copy failed (the service's one
        # outputFiles, storage/task_logs.py: e.g. its SAS ended, for a task longer than a user delegation key lives).
        return 'succeeded', 0, []
    if _timed_out(task) or 'wallclock' in str(failure.get('code', '')).lower():
        return 'failed', code, [_error(*REASONS['wallclock'])]
    if exit_record and exit_record[0] == 'prep':
        return 'failed', exit_record[1], [_error('JobPreparationFailed', 'jobPreparation.commandLine exited with '
                                                                           '{}.'.format(exit_record[1]))]
    if code not in (None, 0) and failure.get('code') in (None, 'FailureExitCode'):
        return 'failed', code, [_error('NonZeroExitCode', 'The job exited with code {}.'.format(code))]
    message = failure.get('message') or 'The Batch task failed.'
    details = ', '.join('{}={}'.format(d.get('name'), d.get('value')) for d in failure.get('details') or [])
    # (An upload failure may quote the task-log container's URL: its SAS is never stored or shown.)
    return 'failed', code, [_error(failure.get('code') or 'BatchTaskFailed',
                                   redact_sas(message + (' ({})'.format(details) if details else '')))]


def _pool_error(error):
    code = error.get('code') or 'ResizeError'
    message = error.get('message') or code
    if code in QUOTA_CODES:
        message = '{} ({} is used up).{}'.format(message.rstrip('.'), QUOTA_CODES[code], QUOTA_FIX)
    result = _error(code, message)
    values = [{'name': v.get('name'), 'value': v.get('value')} for v in error.get('values') or []]
    if values:
        result['details'] = values
    return result


# A node's errors that name its storage mount (Microsoft's virtual-file-mount.md: a mount that fails sets the node
# unusable, its ComputeNodeError says why): the causes to check, for the user.
MOUNT_FIX = (' The pool could not mount its storage: check the storage account key, that the account allows shared key '
             'access (allowSharedKeyAccess: Batch mounts with the key), its firewall (the pool\'s nodes must reach '
             'it) and, for Azure Files, outbound TCP port 445; then delete and create the cluster again (Batch mounts '
             'only when a pool is created).')


def _node_error(node, error):
    """A Batch AI cluster error for one of a node's `errors` (ComputeNodeError: code, message, errorDetails)."""
    code = error.get('code') or 'NodeUnusable'
    details = [{'name': d.get('name'), 'value': d.get('value')} for d in error.get('errorDetails') or []]
    words = ', '.join('{}: {}'.format(d['name'], d['value']) for d in details)
    message = 'Node {} is {} ({}: {}{}).'.format(node.get('id'), node.get('state') or 'unusable', code,
                                                  (error.get('message') or '').rstrip('.'),
                                                  '; ' + words if words else '')
    if 'mount' in (code + words).lower():
        message += MOUNT_FIX
    result = _error(code, message)
    if details:
        result['details'] = details
    return result


def cluster_errors(pool, nodes=()):
    """Batch AI cluster errors of a pool: its resize errors, its autoscale run's error, the start-task failures
    of its nodes and the errors of its unusable nodes (a failed mount...), one per code."""
    errors = [_pool_error(e) for e in pool.get('resizeErrors') or []]
    autoscale_error = (pool.get('autoScaleRun') or {}).get('error')
    if autoscale_error:
        errors.append(_pool_error(autoscale_error))
    seen = set()
    for node in nodes or []:
        for error in node.get('errors') or []:
            if (error.get('code') or 'NodeUnusable') not in seen:
                seen.add(error.get('code') or 'NodeUnusable')
                errors.append(_node_error(node, error))
        failure = ((node.get('startTaskInfo') or {}).get('failureInfo')) or {}
        if same(node.get('state'), 'starttaskfailed') or failure:
            code = failure.get('code') or 'StartTaskFailed'
            if code not in seen:
                seen.add(code)
                errors.append(_error('SetupTaskFailed', 'nodeSetup.setupTask failed on node {} ({}: {}); its output '
                                     'is in the setup task\'s stdOutErrPathPrefix.'.format(
                                         node.get('id'), code, failure.get('message') or 'exit code {}'.format(
                                             (node.get('startTaskInfo') or {}).get('exitCode')))))
    return errors


def cluster_state(pool, nodes=()):
    """The Batch AI cluster properties that come from Batch: allocationState, currentNodeCount, nodeStateCounts,
    errors."""
    counts = {name: 0 for name in sorted(set(NODE_COUNTS.values()))}
    for node in nodes or []:
        counts[NODE_COUNTS.get(folded(node.get('state')), 'unusableNodeCount')] += 1
    current = int(pool.get('currentDedicatedNodes') or 0) + int(pool.get('currentLowPriorityNodes') or 0)
    return {'allocationState': 'steady' if same(pool.get('allocationState'), 'steady') else 'resizing',
            'currentNodeCount': current, 'nodeStateCounts': counts, 'errors': cluster_errors(pool, nodes)}


# Node states that run (or will soon run) a task: a node in any other state (unusable, start task failed, offline,
# unknown, leaving, preempted) gives a waiting job nothing.
USABLE_NODE_STATES = {'idle', 'running', 'creating', 'starting', 'waitingforstarttask', 'rebooting', 'reimaging',
                      'upgradingos'}


def usable_nodes(pool, nodes=()):
    """How many nodes of the pool can run a task: its listed nodes in a usable state (node states are compared
    case-insensitively), or, when none is listed, none."""
    return sum(1 for n in nodes or [] if folded(n.get('state')) in USABLE_NODE_STATES)


def cannot_grow(pool, nodes=(), needed=1):
    """The error why a pool cannot run a job of `needed` nodes, or None: the pool has an error (a quota or
    allocation resize error, its autoscale formula failing, a node's failed start task: Batch keeps such nodes,
    unusable, and adds no other) and fewer usable nodes than the job needs. A pool that got some of its nodes keeps
    its last resize's `resizeErrors` while it works (a partial allocation, common for GPU and Spot sizes): its
    jobs run in turn on the nodes it has, and are not failed (its error shows in `cluster show` all the same). A
    job queued on a pool that cannot grow longer than the service's bounded wait fails with the error."""
    errors = cluster_errors(pool, nodes)
    if not errors or usable_nodes(pool, nodes) >= max(1, int(needed or 1)):
        return None
    return errors[0]


def next_evaluation(pool, now=None):
    """When Batch next evaluates the pool's autoscale formula (its last run + the interval), or None for a pool
    without autoscale. Before its first run (a pool just made or enabled answers no `autoScaleRun`, as recorded)
    the first evaluation is due at once: Batch evaluates a formula when autoscale is enabled; `now` then (UTC)."""
    if not pool.get('enableAutoScale'):
        return None
    run = pool.get('autoScaleRun')
    if not run:
        return now or datetime.datetime.now(datetime.timezone.utc)
    last = parse_time(run.get('timestamp'))
    interval = pool.get('autoScaleEvaluationInterval')
    if not (last and interval):
        return None
    return last + parse_duration(interval)
