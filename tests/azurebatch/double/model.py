"""The Batch double's account state and lifecycle (TEST CODE ONLY: there is no Azure Batch emulator).

Pools hold nodes; a node is a directory on this machine (Batch's node layout: shared/, startup/, fsmounts/,
workitems/<job>/job-1/<task>/) with `taskSlotsPerNode` slots and its own loopback address (127.0.1.N, so a
multi-instance task sees distinct hosts). Tasks run as local process groups, without a shell (Batch does not use
one), with the AZ_BATCH_* variables Batch sets. A background thread plays Batch's part: allocation towards the
targets (and the resize errors a test injects), autoscale sampling and evaluation on a fast Batch clock, start
tasks, scheduling, retries, output-file uploads, preemption recovery, node removal.

All state is guarded by one lock (`BatchAccount.lock`); HTTP handlers (server.py) call the `op_*` methods, which
return REST JSON or raise BatchError (the REST error: status, code, message, values).
"""
import datetime
import glob
import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse

from tests.azurebatch.double import formula as formulas

API_VERSION = '2024-02-01.19.0'
MAX_DURATION = 'P10675199DT2H48M5.4775807S'  # Batch's "unlimited" (TimeSpan.MaxValue), as it answers it
DEFAULT_BATCH_SPEED = 600.0  # Batch-clock seconds per real second: a 5-minute evaluation interval lasts 0.5 s
KILL_GRACE_SECONDS = 1.0


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
    return moment.strftime('%Y-%m-%dT%H:%M:%S.%f') + 'Z' if moment else None


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
    """What every Batch resource answers: url, eTag, lastModified, creationTime, state and its transitions."""

    def __init__(self, state):
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
        if pool.body.get('startTask'):
            out['startTask'] = pool.body['startTask']
            if self.start_task and self.start_task.get('info'):
                out['startTaskInfo'] = self.start_task['info']
        return out


class Pool(Entity):
    def __init__(self, body):
        super().__init__('active')
        self.id = body['id']
        self.body = body
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

    def json(self, base):
        out = dict(self.body)
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
        super().__init__('active')
        self.id = body['id']
        self.body = body
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
        super().__init__('active')
        self.job, self.id, self.body = job, body['id'], body
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


def _expand(text, env):
    return re.sub(r'\$(\w+)|\$\{(\w+)\}', lambda m: env.get(m.group(1) or m.group(2), m.group(0)), text)


def _kill_group(process, sig):
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class BatchAccount:
    """The account's pools, jobs and tasks, and the thread that plays the Batch service."""

    def __init__(self, root, account_name='testaccount', speed=DEFAULT_BATCH_SPEED, node_start_seconds=0.0,
                 preemption_recovery_seconds=0.5, tick_seconds=0.02):
        self.root = root
        self.account_name = account_name
        self.base_url = 'https://127.0.0.1'  # set by the server once it listens
        self.speed = speed
        self.node_start_seconds = node_start_seconds
        self.preemption_recovery_seconds = preemption_recovery_seconds
        self.tick_seconds = tick_seconds
        self.lock = threading.RLock()
        self.pools, self.jobs = {}, {}
        self.uploads = []  # (containerUrl without query, blob name, local file) of every outputFiles upload
        self.events = []  # ('preempted'|'removed'|'requeued'|..., details) for the tests to read
        self.quotas = {'activeJobs': None, 'pools': None}
        self.resize_faults = []  # [{'pool', 'code', 'message', 'allowed', 'dedicated'}]
        self._addresses = itertools.count(1)
        self._node_ids = itertools.count(1)
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name='batch-double', daemon=True)
        os.makedirs(root, exist_ok=True)

    # ---- the Batch clock and the service thread ---------------------------------------------------------------
    def batch_seconds(self):
        return (time.monotonic() - self._t0) * self.speed

    def start(self):
        self._thread.start()

    def close(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        with self.lock:
            for job in self.jobs.values():
                for task in job.tasks.values():
                    for instance in task.instances:
                        if instance.get('process') and instance['process'].poll() is None:
                            _kill_group(instance['process'], signal.SIGKILL)
                            instance['process'].wait()
            for pool in self.pools.values():
                for node in pool.nodes.values():
                    start = node.start_task or {}
                    if start.get('process') and start['process'].poll() is None:
                        _kill_group(start['process'], signal.SIGKILL)
                        start['process'].wait()

    def _loop(self):
        while not self._stop.wait(self.tick_seconds):
            with self.lock:
                try:
                    self.tick()
                except Exception as error:  # pylint: disable=broad-except
                    self.events.append(('double-error', repr(error)))

    def tick(self):
        """One round of Batch's work (also called directly by tests that want it now)."""
        clock = self.batch_seconds()
        for pool in list(self.pools.values()):
            if pool.state == 'deleting':
                self._delete_pool_step(pool)
                continue
            self._sample(pool, clock)
            if pool.autoscale and clock >= pool.next_evaluation:
                self._evaluate(pool, clock)
            self._allocate(pool)
            self._nodes_step(pool)
        for job in list(self.jobs.values()):
            self._job_step(job)
        self._schedule()

    # ---- pools ------------------------------------------------------------------------------------------------
    def pending(self, pool_id):
        active = running = 0
        for job in self.jobs.values():
            if job.pool_id != pool_id or job.state not in ('active', 'terminating'):
                continue
            for task in job.tasks.values():
                active += task.state == 'active'
                running += task.state in ('running', 'preparing')
        return active, running

    def _sample(self, pool, clock):
        while pool.next_sample <= clock:
            active, running = self.pending(pool.id)
            for name, value in (('$PendingTasks', active + running), ('$ActiveTasks', active),
                                ('$RunningTasks', running)):
                pool.samples[name] = (pool.samples[name] + [value])[-200:]
            pool.next_sample = (pool.next_sample or clock) + formulas.SAMPLE_SECONDS

    def metrics(self, pool):
        values = {name: list(samples) for name, samples in pool.samples.items()}
        values.update({'$CurrentDedicatedNodes': pool.current(True), '$CurrentLowPriorityNodes': pool.current(False),
                       '$TargetDedicatedNodes': pool.target['dedicated'],
                       '$TargetLowPriorityNodes': pool.target['lowPriority']})
        return values

    def run_formula(self, pool, text):
        """AutoScaleRun JSON of `text` on the pool's metrics now, and the evaluation (None on error)."""
        run = {'timestamp': iso(now())}
        try:
            result = formulas.evaluate(text, self.metrics(pool))
        except formulas.FormulaError as error:
            run['error'] = {'code': error.code, 'message': error.message}
            return run, None
        run['results'] = formulas.results_text(result['variables'])
        return run, result

    def _evaluate(self, pool, clock):
        pool.next_evaluation = clock + (pool.interval or 300)
        run, result = self.run_formula(pool, pool.formula)
        pool.autoscale_run = run
        pool.touch()
        if result:
            self._set_targets(pool, result['targetDedicated'], result['targetLowPriority'], result['deallocation'])

    def _set_targets(self, pool, dedicated, low_priority, deallocation='requeue'):
        pool.target = {'dedicated': int(dedicated), 'lowPriority': int(low_priority)}
        pool.deallocation = deallocation or 'requeue'
        pool.resize_errors = []
        pool.set_alloc('resizing')

    def _resize_fault(self, pool, dedicated):
        for fault in self.resize_faults:
            if fault['pool'] in (None, pool.id) and fault['dedicated'] in (None, dedicated):
                return fault
        return None

    def _allocate(self, pool):
        if pool.alloc_state != 'resizing':
            return
        for dedicated, key in ((True, 'dedicated'), (False, 'lowPriority')):
            want, have = pool.target[key], pool.current(dedicated)
            fault = self._resize_fault(pool, dedicated)
            if want > have and fault:
                allowed = max(have, fault['allowed'])
                if not any(e['code'] == fault['code'] for e in pool.resize_errors):
                    pool.resize_errors.append({'code': fault['code'], 'message': fault['message'],
                                               'values': fault.get('values', [])})
                want = allowed
            for _ in range(max(0, want - have)):
                self._add_node(pool, dedicated)
            if want < have:
                self._shrink(pool, dedicated, have - want, pool.deallocation)
        pool.set_alloc('steady')

    def _add_node(self, pool, dedicated):
        number = next(self._node_ids)
        node_id = 'tvmps_{:012x}_{}'.format(number, 'd' if dedicated else 'p')
        node = Node(pool, node_id, dedicated, '127.0.1.{}'.format(next(self._addresses) % 250 + 1),
                    os.path.join(self.root, 'nodes', pool.id, node_id))
        self._fresh_disk(node)
        pool.nodes[node_id] = node
        pool.touch()
        return node

    def _fresh_disk(self, node):
        shutil.rmtree(node.root, ignore_errors=True)
        for path in node.dirs().values():
            os.makedirs(path, exist_ok=True)
        for mount in node.pool.body.get('mountConfiguration') or []:
            source, relative = self.mount_source(mount)
            os.makedirs(source, exist_ok=True)
            link = os.path.join(node.root, 'fsmounts', relative)
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(source, link)
        node.start_task = None
        node.set_state('starting')
        node.allocated = now()
        node.ready_at = time.monotonic() + self.node_start_seconds

    def mount_source(self, mount):
        """(local directory standing for the share/container, relativeMountPath) of a mountConfiguration entry:
        every node of every pool sees the same directory for the same account and share, as with real storage."""
        if mount.get('azureFileShareConfiguration'):
            conf = mount['azureFileShareConfiguration']
            share = urllib.parse.urlparse(conf['azureFileUrl']).path.strip('/')
            return os.path.join(self.root, 'storage', conf['accountName'], 'files', share), conf['relativeMountPath']
        if mount.get('azureBlobFileSystemConfiguration'):
            conf = mount['azureBlobFileSystemConfiguration']
            return (os.path.join(self.root, 'storage', conf['accountName'], 'blobs', conf['containerName']),
                    conf['relativeMountPath'])
        kind = next(iter(mount), 'unknown')
        raise BatchError(400, 'InvalidPropertyValue', 'The Batch double mounts Azure Files and Blob containers only, '
                         'not {}.'.format(kind))

    def _shrink(self, pool, dedicated, count, option):
        """Remove `count` nodes of a kind: idle ones first; busy ones as the deallocation option says."""
        nodes = sorted((n for n in pool.nodes.values() if n.dedicated == dedicated and n.leaving is None),
                       key=lambda n: (bool(n.running), n.id))
        for node in nodes[:count]:
            self.remove_node(node, option)

    def remove_node(self, node, option='requeue'):
        """Batch removes a node: requeue/terminate its tasks now, or (taskcompletion, retaineddata) once they end."""
        node.leaving = option
        node.set_state('leavingpool')
        if option in ('requeue', 'terminate'):
            for key in list(node.running):
                task = self.jobs[key[0]].tasks.get(key[1]) if key[0] in self.jobs else None
                if task is None:
                    continue
                if option == 'requeue':
                    self._requeue(task, 'node removed from the pool')
                else:
                    self._end_attempt(task, kill=signal.SIGKILL, failure={
                        'category': 'servererror', 'code': 'TaskEnded',
                        'message': 'The node was removed from the pool and its tasks terminated.'})
        self._maybe_drop_node(node)

    def _maybe_drop_node(self, node):
        if node.leaving is not None and not node.running:
            shutil.rmtree(node.root, ignore_errors=True)  # the VM is gone, and its task files with it
            node.pool.nodes.pop(node.id, None)
            node.pool.touch()
            self.events.append(('removed', node.id))

    def _nodes_step(self, pool):
        for node in list(pool.nodes.values()):
            if node.state == 'preempted' and node.recovers_at and time.monotonic() >= node.recovers_at:
                node.recovers_at = None
                self._fresh_disk(node)
            if node.state == 'starting' and time.monotonic() >= getattr(node, 'ready_at', 0):
                self._start_task(node)
            if node.state == 'waitingforstarttask':
                self._start_task_step(node)
            self._maybe_drop_node(node)

    def _node_env(self, node):
        dirs = node.dirs()
        return {'AZ_BATCH_ACCOUNT_NAME': self.account_name, 'AZ_BATCH_ACCOUNT_URL': self.base_url,
                'AZ_BATCH_POOL_ID': node.pool.id, 'AZ_BATCH_NODE_ID': node.id,
                'AZ_BATCH_NODE_IS_DEDICATED': 'true' if node.dedicated else 'false',
                'AZ_BATCH_NODE_ROOT_DIR': node.root, 'AZ_BATCH_NODE_SHARED_DIR': dirs['shared'],
                'AZ_BATCH_NODE_STARTUP_DIR': dirs['startup'], 'AZ_BATCH_NODE_MOUNTS_DIR': dirs['fsmounts']}

    def _start_task(self, node):
        start = node.pool.body.get('startTask')
        if not start:
            node.set_state('idle')
            return
        env = self._node_env(node)
        env.update({'AZ_BATCH_TASK_DIR': os.path.join(node.root, 'startup'),
                    'AZ_BATCH_TASK_WORKING_DIR': os.path.join(node.root, 'startup', 'wd')})
        env.update({e['name']: e.get('value', '') for e in start.get('environmentSettings') or []})
        wd = env['AZ_BATCH_TASK_WORKING_DIR']
        os.makedirs(wd, exist_ok=True)
        info = {'state': 'running', 'startTime': iso(now()), 'retryCount': 0}
        process, failure = self._spawn(start['commandLine'], env, wd, env['AZ_BATCH_TASK_DIR'])
        node.start_task = {'process': process, 'info': info}
        if failure:
            info.update(state='completed', endTime=iso(now()), result='failure', failureInfo=failure)
            node.set_state('starttaskfailed' if start.get('waitForSuccess', True) else 'idle')
            return
        node.set_state('waitingforstarttask' if start.get('waitForSuccess', True) else 'idle')

    def _start_task_step(self, node):
        start = node.start_task
        code = start['process'].poll()
        if code is None:
            return
        info = start['info']
        info.update(state='completed', endTime=iso(now()), exitCode=_exit_code(code))
        if code:
            info.update(result='failure', failureInfo={
                'category': 'usererror', 'code': 'FailureExitCode',
                'message': 'The task exited with an exit code representing a failure'})
            node.set_state('starttaskfailed')
        else:
            info['result'] = 'success'
            node.set_state('idle')

    def _delete_pool_step(self, pool):
        for node in list(pool.nodes.values()):
            if node.leaving is None:
                self.remove_node(node, 'requeue')
        if not pool.nodes:
            self.pools.pop(pool.id, None)

    # ---- tasks: scheduling, processes, completion ---------------------------------------------------------------
    def _spawn(self, command_line, env, cwd, task_dir):
        """Start a command line as Batch does (no shell; its own process group); (process, failureInfo)."""
        try:
            argv = shlex.split(command_line)
        except ValueError as error:
            return None, {'category': 'usererror', 'code': 'CommandProgramNotFound', 'message': str(error)}
        full_env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'), 'LANG': 'C.UTF-8', 'HOME': cwd}
        full_env.update(env)
        out = open(os.path.join(task_dir, 'stdout.txt'), 'ab')  # pylint: disable=consider-using-with
        err = open(os.path.join(task_dir, 'stderr.txt'), 'ab')  # pylint: disable=consider-using-with
        try:
            process = subprocess.Popen(argv, cwd=cwd, env=full_env, stdout=out, stderr=err,  # pylint: disable=consider-using-with
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as error:
            return None, {'category': 'usererror', 'code': 'CommandProgramNotFound',
                          'message': 'The specified command program is not found: {}'.format(error.strerror)}
        finally:
            out.close()
            err.close()
        return process, None

    def _schedule(self):
        for job in sorted(self.jobs.values(), key=lambda j: (-int(j.body.get('priority') or 0), j.created)):
            if job.state != 'active':
                continue
            pool = self.pools.get(job.pool_id)
            if pool is None or pool.state != 'active':
                continue
            for task in job.tasks.values():
                if task.state != 'active':
                    continue
                needed, slots = task.instance_count, int(task.body.get('requiredSlots') or 1)
                if needed > 1:
                    slots = pool.slots  # a multi-instance subtask takes its whole node
                free = [n for n in sorted(pool.nodes.values(), key=lambda n: n.id)
                        if n.state in ('idle', 'running') and n.leaving is None and n.free_slots() >= slots]
                if len(free) < needed:
                    continue
                self._run(task, free[:needed], slots)

    def _task_env(self, task, node, nodes, instance):
        job = task.job
        env = self._node_env(node)
        task_dir = os.path.join(node.root, 'workitems', job.id, 'job-1', task.id)
        env.update({'AZ_BATCH_JOB_ID': job.id, 'AZ_BATCH_TASK_ID': task.id, 'AZ_BATCH_TASK_DIR': task_dir,
                    'AZ_BATCH_TASK_WORKING_DIR': os.path.join(task_dir, 'wd'),
                    'AZ_BATCH_CERTIFICATES_DIR': os.path.join(task_dir, 'certs'),
                    'AZ_BATCH_TASK_USER': '_azbatch', 'AZ_BATCH_TASK_USER_IDENTITY': 'PoolNonAdmin'})
        if task.instance_count > 1:
            addresses = [n.address for n in nodes]
            env.update({'AZ_BATCH_HOST_LIST': ','.join(addresses), 'AZ_BATCH_NODE_LIST': ';'.join(addresses),
                        'AZ_BATCH_MASTER_NODE': '{}:6000'.format(addresses[0]),
                        'AZ_BATCH_IS_CURRENT_NODE_MASTER': 'true' if instance == 0 else 'false',
                        'AZ_BATCH_TASK_SHARED_DIR': task_dir})
        for source in (job.body.get('commonEnvironmentSettings') or [], task.body.get('environmentSettings') or []):
            env.update({e['name']: e.get('value', '') for e in source})
        return env, task_dir

    def _run(self, task, nodes, slots):
        task.instances = []
        task.started = task.started or now()
        task.ended, task.exit_code, task.failure = None, None, None
        task.set_state('running')
        settings = task.body.get('multiInstanceSettings') or {}
        coordination = settings.get('coordinationCommandLine')
        for index, node in enumerate(nodes):
            env, task_dir = self._task_env(task, node, nodes, index)
            shutil.rmtree(task_dir, ignore_errors=True)  # a new attempt starts in a clean task directory
            os.makedirs(env['AZ_BATCH_TASK_WORKING_DIR'], exist_ok=True)
            node.running[(task.job.id, task.id, index)] = slots
            node.total_run += 1
            node.set_state('running')
            instance = {'node': node, 'env': env, 'dir': task_dir, 'started': now(), 'process': None,
                        'phase': 'coordination' if coordination else 'application'}
            task.instances.append(instance)
            if coordination or index == 0:
                self._start_instance(task, instance, coordination or task.body['commandLine'])
        primary = nodes[0]
        task.node_info = {'affinityId': 'TVM:{}'.format(primary.id), 'poolId': primary.pool.id,
                          'nodeId': primary.id, 'nodeUrl': '{}/pools/{}/nodes/{}'.format(
                              self.base_url, primary.pool.id, primary.id),
                          'taskRootDirectory': 'workitems/{}/job-1/{}'.format(task.job.id, task.id),
                          'taskRootDirectoryUrl': '{}/pools/{}/nodes/{}/files/workitems/{}/job-1/{}'.format(
                              self.base_url, primary.pool.id, primary.id, task.job.id, task.id)}
        wall = task.wall_clock()
        task.deadline = time.monotonic() + wall / self.speed if wall else None

    def _start_instance(self, task, instance, command_line):
        process, failure = self._spawn(command_line, instance['env'], instance['env']['AZ_BATCH_TASK_WORKING_DIR'],
                                       instance['dir'])
        instance['process'] = process
        if failure:
            instance['failure'] = failure

    def _job_step(self, job):
        for task in list(job.tasks.values()):
            if task.state == 'running':
                self._task_step(task)
        if job.state == 'terminating' and all(t.state == 'completed' for t in job.tasks.values()):
            job.ended = now()
            job.set_state('completed')
        if job.state == 'deleting' and all(not t.instances or t.state != 'running' for t in job.tasks.values()):
            for task in job.tasks.values():
                self._delete_task_files(task)
            self.jobs.pop(job.id, None)
        if (job.state == 'active' and job.body.get('onAllTasksComplete') == 'terminatejob' and job.tasks
                and all(t.state == 'completed' for t in job.tasks.values())):
            job.terminate_reason = 'AllTasksComplete'
            job.ended = now()
            job.set_state('completed')

    def _task_step(self, task):
        if task.deadline and time.monotonic() >= task.deadline:
            self._end_attempt(task, kill=signal.SIGKILL, failure={
                'category': 'usererror', 'code': 'TaskEnded',
                'message': 'The task was ended because it exceeded its maxWallClockTime constraint.'})
            return
        primary = task.instances[0]
        if primary.get('failure'):
            self._finish(task, None, primary['failure'])
            return
        if primary['phase'] == 'coordination':
            if all(i['process'] and i['process'].poll() is not None for i in task.instances):
                codes = [i['process'].returncode for i in task.instances]
                if any(codes):
                    self._finish(task, _exit_code(next(c for c in codes if c)), {
                        'category': 'usererror', 'code': 'FailureExitCode',
                        'message': 'The coordination command exited with an exit code representing a failure'})
                    return
                primary['phase'] = 'application'
                self._start_instance(task, primary, task.body['commandLine'])
            return
        code = primary['process'].poll() if primary['process'] else None
        if code is None:
            return
        self._finish(task, _exit_code(code), None if code == 0 else {
            'category': 'usererror', 'code': 'FailureExitCode',
            'message': 'The task exited with an exit code representing a failure'})

    def _release(self, task, kill):
        for instance in task.instances:
            process = instance.get('process')
            if process and process.poll() is None:
                _kill_group(process, kill)
                if kill == signal.SIGTERM:
                    try:
                        process.wait(timeout=KILL_GRACE_SECONDS)
                    except subprocess.TimeoutExpired:
                        _kill_group(process, signal.SIGKILL)
                process.wait()
            elif process:
                _kill_group(process, signal.SIGKILL)  # a multi-instance subtask's leftovers end with the task
            node = instance['node']
            node.running.pop((task.job.id, task.id, task.instances.index(instance)), None)
            if not node.running and node.state == 'running':
                node.set_state('idle')

    def _finish(self, task, exit_code, failure):
        """An attempt ended by itself: retry it (maxTaskRetryCount) or complete the task; upload outputFiles."""
        self._upload_outputs(task, failure is None)
        self._release(task, signal.SIGKILL)
        if failure is None:
            task.instances[0]['node'].succeeded += 1
        task.exit_code = exit_code
        if failure and failure.get('code') == 'FailureExitCode':
            limit = task.max_retries()
            if limit == -1 or task.retries < limit:
                task.retries += 1
                task.last_retry = now()
                task.set_state('active')  # Batch retries on a node it picks again
                return
        self._complete(task, failure)

    def _complete(self, task, failure):
        task.failure = failure
        task.ended = now()
        task.deadline = None
        task.set_state('completed')

    def _end_attempt(self, task, kill, failure):
        """End a running attempt from outside (terminate, wall clock, node removal): the task completes."""
        if task.state == 'running':
            self._upload_outputs(task, False)
            self._release(task, kill)
            code = task.instances[0]['process'].returncode if task.instances and task.instances[0]['process'] \
                else None
            task.exit_code = _exit_code(code) if code is not None else None
        self._complete(task, failure)

    def _requeue(self, task, reason):
        """Batch puts the task back in the queue (preemption, node removal with requeue): no upload, no retry."""
        self._release(task, signal.SIGKILL)
        task.requeues += 1
        task.last_requeue = now()
        task.node_info = None
        task.deadline = None
        task.set_state('active')
        self.events.append(('requeued', task.id, reason))

    def _upload_outputs(self, task, success):
        """outputFiles of the primary instance, as Batch uploads them when the task process exits."""
        primary = task.instances[0] if task.instances else None
        if primary is None:
            return
        for spec in task.body.get('outputFiles') or []:
            condition = ((spec.get('uploadOptions') or {}).get('uploadCondition') or 'tasksuccess').lower()
            if condition == 'tasksuccess' and not success or condition == 'taskfailure' and success:
                continue
            pattern = _expand(spec['filePattern'], primary['env'])
            if not os.path.isabs(pattern):
                pattern = os.path.join(primary['env']['AZ_BATCH_TASK_WORKING_DIR'], pattern)
            container = (spec.get('destination') or {}).get('container') or {}
            matches = [m for m in sorted(glob.glob(os.path.normpath(pattern), recursive=True)) if os.path.isfile(m)]
            wildcard = any(c in spec['filePattern'] for c in '*?[')
            for match in matches:
                prefix = container.get('path') or ''
                if wildcard or not prefix:
                    name = '/'.join(p for p in (prefix.rstrip('/'), os.path.basename(match)) if p)
                else:
                    name = prefix
                self._upload(container.get('containerUrl', ''), name, match)

    def _upload(self, container_url, name, path):
        parsed = urllib.parse.urlparse(container_url)
        plain = urllib.parse.urlunparse(parsed._replace(query=''))
        target = os.path.join(self.root, 'uploads', parsed.netloc.replace(':', '_'), parsed.path.strip('/'), name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(path, target)
        self.uploads.append((plain, name, target))

    def _delete_task_files(self, task):
        for pool in self.pools.values():
            for node in pool.nodes.values():
                shutil.rmtree(os.path.join(node.root, 'workitems', task.job.id, 'job-1', task.id), ignore_errors=True)

    # ---- what the tests do to the account -------------------------------------------------------------------------
    def preempt(self, task_id=None, node_id=None, recover=True):
        """Preempt the node running `task_id` (or `node_id`): its VM is gone (processes killed, disk lost), its
        tasks are requeued as Batch does; the node comes back fresh after preemption_recovery_seconds unless
        `recover` is False. Returns the node id."""
        with self.lock:
            node = self._find_node(task_id, node_id)
            for key in list(node.running):
                job = self.jobs.get(key[0])
                task = job.tasks.get(key[1]) if job else None
                if task is not None and task.state == 'running':
                    self._requeue(task, 'node {} preempted'.format(node.id))
            start = node.start_task or {}
            if start.get('process') and start['process'].poll() is None:
                _kill_group(start['process'], signal.SIGKILL)
            shutil.rmtree(node.root, ignore_errors=True)
            node.set_state('preempted')
            node.recovers_at = time.monotonic() + self.preemption_recovery_seconds if recover else None
            node.pool.touch()
            self.events.append(('preempted', node.id))
            return node.id

    def _find_node(self, task_id, node_id):
        for pool in self.pools.values():
            for node in pool.nodes.values():
                if node.id == node_id or any(key[1] == task_id for key in node.running):
                    return node
        raise KeyError('no node runs task {!r} / has id {!r}'.format(task_id, node_id))

    def node_of(self, job_id, task_id):
        """The Node a task's primary ran (or runs) on, or None."""
        with self.lock:
            task = self.jobs[job_id].tasks[task_id]
            if not task.node_info:
                return None
            pool = self.pools.get(task.node_info['poolId'])
            return pool.nodes.get(task.node_info['nodeId']) if pool else None

    def wait(self, predicate, timeout=10.0):
        """Wait until predicate() (called under the lock) is true; AssertionError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if predicate():
                    return
            time.sleep(0.02)
        raise AssertionError('the Batch double did not reach the awaited state in {} s'.format(timeout))


def _exit_code(returncode):
    """A process's exit code as a Linux node reports it (a signal N as 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode

