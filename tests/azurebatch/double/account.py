"""The Batch double's account (TEST CODE ONLY: there is no Azure Batch emulator): its pools, jobs and tasks, and the
thread that plays the Batch service: allocation towards the targets (and the resize errors a test injects),
autoscale sampling and evaluation on a fast Batch clock, start tasks, node removal, preemption and its recovery,
scheduling (runner.py). All state is guarded by one lock (`BatchAccount.lock`); the REST operations (api.py) read
and change it under that lock.
"""
import itertools
import os
import shutil
import signal
import threading
import time
import urllib.parse

from tests.azurebatch.double import formula as formulas
from tests.azurebatch.double.entities import BatchError, Node, Pool, iso, now
from tests.azurebatch.double.runner import TaskRunner, _exit_code, _kill_group

DEFAULT_BATCH_SPEED = 600.0  # Batch-clock seconds per real second: a 5-minute evaluation interval lasts 0.5 s

# What Account_ListSupportedImages answers unless a test sets account.supported_images: the shape the real service
# lists (imageReference, nodeAgentSKUId, osType, verificationType, capabilities, batchSupportEndOfLife): images with
# an end-of-life date (18.04, 20.04 and a 20.04 container image) and a current one without, so that image choice
# has something to refuse; a test sets account.supported_images for other cases (an end of life near today).
SUPPORTED_IMAGES = [
    {'imageReference': {'publisher': 'canonical', 'offer': 'ubuntuserver', 'sku': '18.04-lts', 'version': 'latest'},
     'verificationType': 'verified', 'nodeAgentSKUId': 'batch.node.ubuntu 18.04', 'osType': 'linux',
     'batchSupportEndOfLife': '2024-05-31T00:00:00Z'},
    {'imageReference': {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-focal', 'sku': '20_04-lts',
                        'version': 'latest'},
     'verificationType': 'verified', 'nodeAgentSKUId': 'batch.node.ubuntu 20.04', 'osType': 'linux',
     'batchSupportEndOfLife': '2025-04-23T00:00:00Z'},
    {'imageReference': {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy', 'sku': '22_04-lts',
                        'version': 'latest'},
     'verificationType': 'verified', 'nodeAgentSKUId': 'batch.node.ubuntu 22.04', 'osType': 'linux',
     'capabilities': []},
    {'imageReference': {'publisher': 'microsoft-azure-batch', 'offer': 'ubuntu-server-container', 'sku': '20-04-lts',
                        'version': 'latest'},
     'verificationType': 'verified', 'nodeAgentSKUId': 'batch.node.ubuntu 20.04', 'osType': 'linux',
     'capabilities': ['DockerCompatible', 'NvidiaTeslaDriverInstalled'],
     'batchSupportEndOfLife': '2025-04-23T00:00:00Z'},
    # Azure's Ubuntu HPC image (MPI libraries, NVIDIA drivers: Microsoft's "HPC VM images" page), which Batch
    # lists with the 22.04 node agent: what multi-node and GPU clusters get by default.
    {'imageReference': {'publisher': 'microsoft-dsvm', 'offer': 'ubuntu-hpc', 'sku': '2204', 'version': 'latest'},
     'verificationType': 'verified', 'nodeAgentSKUId': 'batch.node.ubuntu 22.04', 'osType': 'linux',
     'capabilities': ['DockerCompatible', 'NvidiaTeslaDriverInstalled']},
]


class BatchAccount(TaskRunner):
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
        self.upload_ca_file = None  # the CA bundle a loopback Blob service's certificate is trusted with
        # blobfuse.BlobfuseStandIn uploading the Blob mounts' folders to a Blob service (tests reading them), or None
        self.blobfuse = None
        self.events = []  # ('preempted'|'removed'|'requeued'|..., details) for the tests to read
        self.quotas = {'activeJobs': None, 'pools': None}
        self.supported_images = [dict(image) for image in SUPPORTED_IMAGES]  # Account_ListSupportedImages answers
        # True (the default): answer as the recorded real service does where it differs from the spec (spelling.py:
        # 'Success' for an added task, 'Spread', 'Zonal', 'UserError', vmSize lower-cased; 'False' and text/plain
        # for a task file; a pool's users without password). prism.derived_spec accepts those answers. False: the
        # spec's own spellings, for a test that compares the two.
        self.quirks = True
        self.resize_faults = []  # [{'pool', 'code', 'message', 'allowed', 'dedicated'}]
        # Storage as the nodes' mounts meet it: {storage account name: its key} (a mount with another key fails, as
        # Azure Files answers a wrong key: "mount error(13): Permission denied"), and the accounts whose mounts fail
        # whatever the key (shared key access disabled by policy, a firewall, port 445 blocked). Unset: any key works.
        self.storage_keys = {}
        self.storage_refusing = set()
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
        """($ActiveTasks, $RunningTasks) of the pool's jobs now; a multi-instance task counts its instances."""
        active = running = 0
        for job in self.jobs.values():
            if job.pool_id != pool_id or job.state not in ('active', 'terminating'):
                continue
            for task in job.tasks.values():
                active += task.instance_count if task.state == 'active' else 0
                running += task.instance_count if task.state in ('running', 'preparing') else 0
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
        node.errors = []
        node.set_state('starting')
        node.allocated = now()
        node.ready_at = time.monotonic() + self.node_start_seconds

    def _mount(self, node):
        """Mount the pool's storage on a node as Batch does before its start task: a mount that fails makes the
        node `unusable` with `errors` (Microsoft's virtual-file-mount.md, "Diagnose mount errors": the node's state
        is set to unusable and its ComputeNodeError says why; the error's display there is "Mount Configuration
        Error | An error was encountered while configuring specified mount(s)", with Message and
        MountConfigurationPath details). True when every mount worked."""
        for mount in node.pool.body.get('mountConfiguration') or []:
            conf = mount.get('azureFileShareConfiguration') or mount.get('azureBlobFileSystemConfiguration') or {}
            name = conf.get('accountName')
            expected = self.storage_keys.get(name)
            if name in self.storage_refusing or (expected is not None and conf.get('accountKey') != expected):
                node.errors = [{'code': 'MountConfigurationError',
                                'message': 'An error was encountered while configuring specified mount(s)',
                                'errorDetails': [{'name': 'Message', 'value': 'mount error(13): Permission denied'},
                                                 {'name': 'MountConfigurationPath',
                                                  'value': conf.get('relativeMountPath')}]}]
                node.set_state('unusable')
                node.pool.touch()
                return False
        return True

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
                if not self._mount(node):
                    continue
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

    def recover(self, node_id):
        """The node preempted with `recover=False` comes back (fresh) now, as it does preemption_recovery_seconds
        after a preemption: a test holds it gone until it has seen what a preemption shows, however slow its polls."""
        with self.lock:
            self._find_node(None, node_id).recovers_at = time.monotonic()

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
