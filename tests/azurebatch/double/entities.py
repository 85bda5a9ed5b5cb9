"""The Batch double's resources as the REST API shows them (TEST CODE ONLY): pools, nodes, jobs, tasks, their
states and JSON, Batch's error answer, and the time and duration formats Batch writes.

A node is a directory on this machine (Batch's node layout: shared/, startup/, fsmounts/,
workitems/<job>/job-1/<task>/) with `taskSlotsPerNode` slots and its own loopback address (127.0.1.N, so a
multi-instance task sees distinct hosts). What makes them change is account.py (Batch's part) and runner.py (the
tasks' processes).
"""
import datetime
import itertools
import os
import re
import time

API_VERSION = '2024-02-01.19.0'
MAX_DURATION = 'P10675199DT2H48M5.4775807S'  # Batch's "unlimited" (TimeSpan.MaxValue), as it answers it


class BatchError(Exception):
    """A Batch REST error answer: HTTP `status`, BatchError `code`, `message`, `values` [(key, value)]."""

    def __init__(self, status, code, message, values=(), headers=None):
        super().__init__('{} {}: {}'.format(status, code, message))
        self.status, self.code, self.message, self.values = status, code, message, list(values)
        self.headers = dict(headers or {})

    def body(self):
        body = {'odata.metadata': 'https://account.region.batch.azure.com/$metadata#Microsoft.Azure.Batch.Protocol.'
                                  'Entities.Container.errors/@Element',
                'code': self.code, 'message': {'lang': 'en-US', 'value': self.message}}
        if self.values:
            body['values'] = [{'key': k, 'value': v} for k, v in self.values]
        return body


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(moment):
    """A time as the real service writes it: seven fractional digits (100 ns ticks) with the trailing zeros
    trimmed, and no fraction at all when they are all zero (`...21.0096445Z`, `...09.26185Z`, `...00Z`: recorded,
    tests/azurebatch/recorded/). The clock here has microseconds; the seventh digit is derived from them, so that
    the double writes seven digits as often as Batch does and a moment always reads the same."""
    if not moment:
        return None
    ticks = '{:06d}{}'.format(moment.microsecond, moment.microsecond % 7 if moment.microsecond else 0).rstrip('0')
    return moment.strftime('%Y-%m-%dT%H:%M:%S') + ('.' + ticks if ticks else '') + 'Z'


def rfc1123(moment):
    return moment.strftime('%a, %d %b %Y %H:%M:%S GMT')


_DURATION = re.compile(r'P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$')


def duration_seconds(text):
    """Seconds of an ISO-8601 duration as Batch takes them (days, hours, minutes, seconds); None if unlimited."""
    if not text or text == MAX_DURATION:
        return None
    match = _DURATION.match(text)
    if not match:
        raise BatchError(400, 'InvalidPropertyValue', 'The duration {!r} is not an ISO-8601 duration.'.format(text))
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _etag():
    return '0x8DC{:013X}'.format(next(_ETAGS))


_ETAGS = itertools.count(int(time.time() * 1000))


def not_found(kind, what):
    return BatchError(404, '{}NotFound'.format(kind), 'The specified {} does not exist.'.format(what))


class Entity:
    """A Batch resource made from its add request's `body`: its id, and what every resource answers (url, eTag,
    lastModified, creationTime, state and its transitions)."""

    def __init__(self, body, state='active'):
        self.id, self.body = body['id'], body
        self.created = now()
        self.state = state
        self.state_time = self.created
        self.previous_state = None
        self.previous_state_time = None
        self.etag = _etag()
        self.modified = self.created

    def touch(self):
        self.etag = _etag()
        self.modified = now()

    def set_state(self, state):
        if state != self.state:
            self.previous_state, self.previous_state_time = self.state, self.state_time
            self.state, self.state_time = state, now()
        self.touch()

    def common(self, url):
        out = {'url': url, 'eTag': self.etag, 'lastModified': iso(self.modified), 'creationTime': iso(self.created),
               'state': self.state, 'stateTransitionTime': iso(self.state_time)}
        if self.previous_state:
            out.update(previousState=self.previous_state, previousStateTransitionTime=iso(self.previous_state_time))
        return out


class Node:
    """A compute node: a directory with `slots` task slots and a loopback address."""

    def __init__(self, pool, node_id, dedicated, address, root):
        self.pool, self.id, self.dedicated, self.address, self.root = pool, node_id, dedicated, address, root
        self.state = 'starting'
        self.state_time = now()
        self.allocated = now()
        self.running = {}  # (job id, task id, instance) -> slots used
        self.total_run = 0
        self.succeeded = 0
        self.start_task = None  # {'process', 'info'} while/after the pool's start task runs
        self.recovers_at = None  # a preempted node comes back (fresh) at this monotonic time
        self.leaving = None  # deallocation option while the node drains before removal
        self.errors = []  # ComputeNodeError JSON (code, message, errorDetails): why the node is unusable

    def set_state(self, state):
        if state != self.state:
            self.state, self.state_time = state, now()

    def dirs(self):
        return {name: os.path.join(self.root, name) for name in ('shared', 'startup', 'fsmounts', 'workitems')}

    def free_slots(self):
        return self.pool.slots - sum(self.running.values())

    def json(self, base):
        pool = self.pool
        out = {'id': self.id, 'url': '{}/pools/{}/nodes/{}'.format(base, pool.id, self.id), 'state': self.state,
               'schedulingState': 'enabled', 'stateTransitionTime': iso(self.state_time),
               'lastBootTime': iso(self.allocated), 'allocationTime': iso(self.allocated),
               'ipAddress': self.address, 'affinityId': 'TVM:{}'.format(self.id), 'vmSize': pool.body['vmSize'],
               'totalTasksRun': self.total_run, 'totalTasksSucceeded': self.succeeded,
               'runningTasksCount': len(self.running), 'runningTaskSlotsCount': sum(self.running.values()),
               'isDedicated': self.dedicated,
               'nodeAgentInfo': {'version': '1.11.0', 'lastUpdateTime': iso(self.allocated)}}
        if self.running:
            out['recentTasks'] = [{'taskUrl': '{}/jobs/{}/tasks/{}'.format(base, job, task), 'jobId': job,
                                   'taskId': task, 'taskState': 'running'}
                                  for (job, task, _instance) in self.running]
        if self.errors:
            out['errors'] = self.errors
        if pool.body.get('startTask'):
            out['startTask'] = pool.body['startTask']
            if self.start_task and self.start_task.get('info'):
                out['startTaskInfo'] = self.start_task['info']
        return out


def _without_passwords(body):
    out = dict(body)
    if out.get('userAccounts'):
        out['userAccounts'] = [{k: v for k, v in user.items() if k != 'password'} for user in out['userAccounts']]
    return out


class Pool(Entity):
    def __init__(self, body):
        super().__init__(body)
        self.slots = int(body.get('taskSlotsPerNode') or 1)
        self.alloc_state = 'steady'
        self.alloc_time = self.created
        self.target = {'dedicated': int(body.get('targetDedicatedNodes') or 0),
                       'lowPriority': int(body.get('targetLowPriorityNodes') or 0)}
        self.autoscale = bool(body.get('enableAutoScale'))
        self.formula = body.get('autoScaleFormula')
        self.interval = duration_seconds(body.get('autoScaleEvaluationInterval') or 'PT15M')
        self.deallocation = 'requeue'
        self.autoscale_run = None
        self.next_evaluation = 0.0  # Batch-clock seconds
        self.next_sample = 0.0
        self.samples = {'$PendingTasks': [], '$ActiveTasks': [], '$RunningTasks': []}
        self.resize_errors = []
        self.nodes = {}
        if self.autoscale or self.target['dedicated'] or self.target['lowPriority']:
            self.set_alloc('resizing')

    def set_alloc(self, state):
        if state != self.alloc_state:
            self.alloc_state, self.alloc_time = state, now()
            self.touch()

    def current(self, dedicated):
        return sum(1 for n in self.nodes.values() if n.dedicated == dedicated and n.leaving is None)

    def json(self, base, quirks=False):
        # The real service answers a pool's user accounts without their password (recorded), which the spec
        # requires: with quirks (the default). Mount keys are answered as given (nothing recorded says otherwise).
        out = _without_passwords(self.body) if quirks else dict(self.body)
        out.update(self.common('{}/pools/{}'.format(base, self.id)))
        out.update(allocationState=self.alloc_state, allocationStateTransitionTime=iso(self.alloc_time),
                   resizeTimeout=self.body.get('resizeTimeout', 'PT15M'), taskSlotsPerNode=self.slots,
                   currentDedicatedNodes=self.current(True), currentLowPriorityNodes=self.current(False),
                   targetDedicatedNodes=self.target['dedicated'], targetLowPriorityNodes=self.target['lowPriority'],
                   enableAutoScale=self.autoscale,
                   enableInterNodeCommunication=bool(self.body.get('enableInterNodeCommunication')),
                   taskSchedulingPolicy=self.body.get('taskSchedulingPolicy', {'nodeFillType': 'spread'}),
                   currentNodeCommunicationMode='simplified')
        if self.autoscale:
            out.update(autoScaleFormula=self.formula,
                       autoScaleEvaluationInterval=self.body.get('autoScaleEvaluationInterval', 'PT15M'))
            if self.autoscale_run:
                out['autoScaleRun'] = self.autoscale_run
        else:
            out.pop('autoScaleFormula', None)
            out.pop('autoScaleEvaluationInterval', None)
        if self.resize_errors:
            out['resizeErrors'] = self.resize_errors
        return out


class Job(Entity):
    def __init__(self, body):
        super().__init__(body)
        self.tasks = {}
        self.terminate_reason = None
        self.ended = None

    @property
    def pool_id(self):
        return (self.body.get('poolInfo') or {}).get('poolId')

    def json(self, base):
        out = dict(self.body)
        out.update(self.common('{}/jobs/{}'.format(base, self.id)))
        out.setdefault('priority', 0)
        out.setdefault('maxParallelTasks', -1)
        out.setdefault('allowTaskPreemption', False)
        out.setdefault('usesTaskDependencies', False)
        out.setdefault('onAllTasksComplete', 'noaction')
        out.setdefault('onTaskFailure', 'noaction')
        constraints = dict(out.get('constraints') or {})
        constraints.setdefault('maxWallClockTime', MAX_DURATION)
        constraints.setdefault('maxTaskRetryCount', 0)
        out['constraints'] = constraints
        info = {'startTime': iso(self.created), 'poolId': self.pool_id}
        if self.ended:
            info['endTime'] = iso(self.ended)
        if self.terminate_reason:
            info['terminateReason'] = self.terminate_reason
        out['executionInfo'] = info
        return out


class Task(Entity):
    def __init__(self, job, body):
        super().__init__(body)
        self.job = job
        self.instances = []  # [{'node', 'process', 'phase', 'exit', 'dir', 'started', 'ended'}] of this attempt
        self.retries = 0
        self.requeues = 0
        self.last_retry = None
        self.last_requeue = None
        self.started = None
        self.ended = None
        self.exit_code = None
        self.failure = None
        self.node_info = None
        self.deadline = None
        self.terminating = False

    @property
    def instance_count(self):
        return int((self.body.get('multiInstanceSettings') or {}).get('numberOfInstances') or 1)

    def max_retries(self):
        own = (self.body.get('constraints') or {}).get('maxTaskRetryCount')
        if own is None:
            own = (self.job.body.get('constraints') or {}).get('maxTaskRetryCount', 0)
        return int(own)

    def wall_clock(self):
        own = (self.body.get('constraints') or {}).get('maxWallClockTime')
        return duration_seconds(own)

    def json(self, base):
        out = dict(self.body)
        out.update(self.common('{}/jobs/{}/tasks/{}'.format(base, self.job.id, self.id)))
        constraints = dict(out.get('constraints') or {})
        constraints.setdefault('maxWallClockTime', MAX_DURATION)
        constraints.setdefault('retentionTime', 'P7D')
        constraints.setdefault('maxTaskRetryCount', self.max_retries())
        out['constraints'] = constraints
        out.setdefault('requiredSlots', 1)
        out.setdefault('userIdentity', {'autoUser': {'scope': 'pool', 'elevationLevel': 'nonadmin'}})
        info = {'retryCount': self.retries, 'requeueCount': self.requeues}
        if self.started:
            info['startTime'] = iso(self.started)
        if self.ended:
            info['endTime'] = iso(self.ended)
        if self.exit_code is not None:
            info['exitCode'] = self.exit_code
        if self.last_retry:
            info['lastRetryTime'] = iso(self.last_retry)
        if self.last_requeue:
            info['lastRequeueTime'] = iso(self.last_requeue)
        if self.state == 'completed':
            info['result'] = 'failure' if self.failure else 'success'
        if self.failure:
            info['failureInfo'] = self.failure
        out['executionInfo'] = info
        if self.node_info:
            out['nodeInfo'] = self.node_info
        return out
