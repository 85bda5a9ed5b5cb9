"""The Azure Batch scheduler: Batch AI clusters are Batch pools, Batch AI jobs are Batch tasks.

One Batch job per cluster (Batch accounts allow only 100-300 active jobs; a cluster is what holds nodes), created
with the cluster's pool and deleted with it. Each Batch AI job is one task of it, whose id is a function of the
job (names.task_id): the id is stored (`sched_id` = '<batch job>/<task>') before the task is added, so a service
killed at any point finds its tasks again at its next start, and an add repeated after a crash (or a timed-out add
that Batch applied) answers TaskExists, which counts as success when the task is the same (client.py): a task is
never created twice.

One background thread: it adds the store's queued jobs (Batch AI order: priority, then submission) in chunks of a
collection add, then polls: one list call per Batch job per pass, filtered to the tasks whose state changed since
the previous poll (`$filter=stateTransitionTime ge ...`, `$select` of the fields read), whatever the number of tasks.
A task back in `active` after running (its low-priority/spot node was preempted and Batch requeued it) is shown
queued again, and its requeues are counted (in the log, and in `local status`).

Outputs: while a task runs, and once more before its end is recorded, the files it wrote in its task directory
(Batch's stdout.txt/stderr.txt, the output directories) are mirrored into the job's folders of the data dir with
Range reads (`ocp-range`) of only the bytes not read yet, so listOutputFiles, `job file stream/list`, `sweep status
--tail`, metrics and the report read them through the service's API exactly as on the other schedulers. The
directories on the pool's mounted Azure file share or Blob container (`$AZ_BATCHAI_MOUNT_ROOT/...`, Batch AI's
recipes) are read from the storage itself, the same way (storage/: share_reader.py, blob_reader.py). Batch's own
stdout/stderr of each task are also uploaded by Batch at its completion (the task's outputFiles, a write-only SAS
of the cluster storage's task-log container: storage/task_logs.py), and read from there when the task file API no longer
has them (the node is gone).

Killing or stopping the service touches no task: they run on, and the next start re-attaches to them.
"""
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field

from ...errors import ArmError, bad_request
from ...layout import JobLayout
from ...resources import iso
from ...data.stored_spec import job_spec
from ..scheduler import SubmittingScheduler, error
from ...data.store import resource_key
from .client import MAX_TASKS_PER_ADD, BatchCallError
from .storage.rest import copy_new_bytes

logger = logging.getLogger(__name__)

POLL_SECONDS = 5.0
FILES_SECONDS = 5.0  # a running task's files are mirrored at most this often
POOLS_SECONDS = 15.0  # the pools' node counts and allocation states are read this often, and after each change
SUBMIT_BATCH = 500  # queued jobs taken from the store per pass (added in chunks of at most 100)
# A poll asks for the tasks changed since the previous poll began, less this margin (the clocks of this machine
# and of Batch differ; a task seen twice costs nothing).
CLOCK_MARGIN_SECONDS = 120
# How long a job may wait on a pool that cannot grow (a quota or allocation resize error, a failing autoscale
# formula) before it fails with Batch's error: never queued for ever (issue 31 rule 1), yet long enough for an
# autoscale evaluation (5 minutes) and a retried allocation.
UNRUNNABLE_SECONDS = 20 * 60
# The statuses of a task add Batch refused as a request (400 TooManyTasks, InvalidRequestBody...; 413
# RequestBodyTooLarge): never added by sending it again.
REFUSED_WHOLE = (400, 413)
_NOT_OURS = ('Azure Batch already has a {what} {id}, {who}: this service never adopts or deletes what another '
             'made (two services on one Batch account with the same --pool-prefix, or a data dir lost with its '
             'clusters). Start this service with its own --pool-prefix, or give the cluster another name; if '
             'that {what} is abandoned, delete it: az batch {delete} {id}.')


@dataclass
class _Task:
    """A job handed to Batch (its task added, or about to be) whose end is not recorded yet."""
    batch_job: str
    task_id: str
    cluster: str
    nodes: int
    layout: object = None  # layout.JobLayout: where its outputs are mirrored
    running: bool = False
    confirmed: bool = False  # Batch has answered with it (an add, or a list)
    reason: str = None
    requeues: int = 0
    offsets: dict = field(default_factory=dict)  # file -> (its identity, bytes already mirrored): copy_new_bytes
    files_at: float = 0.0
    queued_at: float = field(default_factory=time.monotonic)  # since when it waits for a node (monotonic)
    done: threading.Event = field(default_factory=threading.Event)


class AzureBatchScheduler(SubmittingScheduler):
    """`api`: client.BatchApi; `account`: what `local status` shows of the Batch account (name, resourceGroup,
    endpoint, poolAllocationMode...); `mapping`: the Batch AI <-> Batch mapping (mapping.AbMapMapping by default)."""

    name = 'azure-batch'
    has_default_cluster = False
    # storage.roles.StorageRoleCheck (set by connect.py): az's data role on a new cluster's storage; None: unchecked
    storage_check = None

    def __init__(self, store, data_dir, api, account=None, mapping=None, pool_prefix='batchai', facts=None,
                 poll_seconds=POLL_SECONDS, pools_seconds=POOLS_SECONDS, files_seconds=FILES_SECONDS,
                 unrunnable_seconds=UNRUNNABLE_SECONDS, shares=None, task_logs=None, owner=None):
        super().__init__(store, data_dir)
        from . import ownership  # pylint: disable=import-outside-toplevel
        self.api = api
        # what this service writes in the metadata of the pools and jobs it makes (ownership.py): it adopts and
        # deletes no other
        self.owner = owner or ownership.service_owner(data_dir)
        self.account = dict(account or {})
        if mapping is None:
            from .mapping import AbMapMapping  # pylint: disable=import-outside-toplevel
            mapping = AbMapMapping()
        self.mapping = mapping
        # preflight.AccountFacts: the region's VM sizes and the quotas cluster create checks (None: not checked)
        self.facts = facts
        self.pool_prefix = pool_prefix
        self.loop_seconds = poll_seconds
        self.pools_seconds = pools_seconds
        self.files_seconds = files_seconds
        self.unrunnable_seconds = unrunnable_seconds
        # storage.share_reader.ShareMirror: the job directories on the pool's mounted file share or container
        # (None: not read)
        self.shares = shares
        # storage.task_logs.TaskLogs: Batch's own stdout/stderr of each task uploaded by Batch (outputFiles) to the
        # cluster storage's task-log container, and read back from there (None: no outputFiles)
        self.task_logs = task_logs
        self.poll_count = 0
        self.requeues = 0
        self._since = {}  # Batch job -> ISO time its next poll's filter starts at (absent: a full list)
        self._jobs_made = set()  # Batch jobs known to exist
        self._pools = {}  # cluster key -> (the pool's JSON, its nodes' JSON) as last read
        self._pools_at = 0.0
        self._pools_stale = True  # a pool was made or changed, or a task started or ended: read the pools again
        self._requeue_counts = {}  # job key -> Batch's requeues of its task (shown by job_notes, after its end too)
        self._waiting_logged = {}  # cluster key -> the waiting note last logged for its queued jobs

    # ---- identities ------------------------------------------------------------------------------------------

    def _ids(self, cluster_key):
        """(pool id, Batch job id) of a cluster (its key: sub/rg/workspace/clusters/name)."""
        subscription, group, workspace, _, cluster = cluster_key.split('/')
        return (self.mapping.pool_id(self.pool_prefix, workspace, cluster, subscription, group),
                self.mapping.batch_job_id(self.pool_prefix, workspace, cluster, subscription, group))

    def _foreign(self, resource):
        """Who made a pool or job found under one of our ids when not this service (ownership.foreign), or None."""
        from . import ownership  # pylint: disable=import-outside-toplevel
        return ownership.foreign(resource, self.owner) if resource is not None else None

    def _owned_metadata(self, cluster_id):
        from . import ownership  # pylint: disable=import-outside-toplevel
        return ownership.metadata(self.owner, cluster_id)

    def describe(self):
        info = {'scheduler': self.name, 'poolPrefix': self.pool_prefix}
        for key in ('batchAccount', 'batchEndpoint', 'batchResourceGroup', 'poolAllocationMode'):
            if self.account.get(key) is not None:
                info[key] = self.account[key]
        return info

    # ---- cluster hooks ---------------------------------------------------------------------------------------

    def check_cluster(self, key, body, spec):
        """What Batch cannot make (the mapping's refusals), then issue 31's checks before spending
        (preflight.check_cluster_create: the VM size offered in the region and current, the priority available, the
        vCPU quota covering the maximum node count with the account's other pools, the pool and job quotas)."""
        problem = self.mapping.check_pool(body, self.account, spec)
        if problem:
            raise bad_request('UnsupportedOnAzureBatch', problem)
        from . import preflight  # pylint: disable=import-outside-toplevel
        from .errors import Refusal  # pylint: disable=import-outside-toplevel
        if self.storage_check is not None:
            try:
                self.storage_check((spec or {}).get('properties') or body['properties'])
            except Refusal as ex:
                raise bad_request(ex.code, ex.reason) from None
        if self.facts is None:
            return
        try:
            plan = preflight.check_cluster_create(self.facts, (spec or {}).get('properties') or body['properties'],
                                                  pools=self.api.list_pools(), active_jobs=self._active_jobs())
        except Refusal as ex:
            raise bad_request(ex.code, ex.reason) from None
        except BatchCallError as ex:
            raise ArmError(503, 'AzureBatchUnavailable', 'Azure Batch did not answer: {}'.format(ex)) from None
        for warning in plan.warnings:
            logger.warning('cluster %s: %s', key, warning)

    def _active_jobs(self):
        """The account's active jobs, when its quota is known (each cluster adds one: refused before its pool is
        made when the quota is used up, rather than by Batch after); None: not counted."""
        if (self.facts.account or {}).get('activeJobAndJobScheduleQuota') is None:
            return None
        return self.api.count_active_jobs()

    def check_job(self, props, toolkit, cluster_body):
        problem = self.mapping.check_job(props, toolkit, cluster_body)
        if problem:
            raise bad_request('UnsupportedOnAzureBatch', problem)

    def create_cluster(self, key, body, spec):
        from .errors import Refusal  # pylint: disable=import-outside-toplevel
        pool_id, job_id = self._ids(key)
        try:
            pool = self.mapping.pool_body(pool_id, body, spec, self.account)
        except Refusal as ex:
            raise bad_request(ex.code, ex.reason) from None
        pool['metadata'] = self._owned_metadata(body.get('id') or key)
        job = dict(self.mapping.job_body(job_id, pool_id), metadata=self._owned_metadata(body.get('id') or key))
        try:
            made = self.api.create_pool(pool)
            # PoolExists: ours only when this service made it (a create whose first try Batch applied)
            who = None if made else self._foreign(self.api.get_pool(pool_id, select=['id', 'metadata']))
        except BatchCallError as ex:
            raise ArmError(400 if ex.status and 400 <= ex.status < 500 else 503, 'AzureBatchRefused',
                           'Azure Batch refused the pool of cluster {}: {}'.format(body['name'], ex)) from None
        if who:
            raise ArmError(409, 'AzureBatchPoolNotOurs', _NOT_OURS.format(what='pool', id=pool_id, who=who,
                                                                          delete='pool delete --pool-id'))
        try:
            made_job = self.api.create_job(job)
            who = None if made_job else self._foreign(self.api.get_job(job_id, select=['id', 'metadata']))
        except BatchCallError as ex:
            # No cluster is stored without its Batch job: its pool goes too, or it would hold nodes nobody sees.
            self._call_quietly(self.api.delete_pool, pool_id)
            raise ArmError(400 if ex.status and 400 <= ex.status < 500 else 503, 'AzureBatchRefused',
                           'Azure Batch refused the Batch job of cluster {} ({}); its pool was deleted.'.format(
                               body['name'], ex)) from None
        if who:
            self._call_quietly(self.api.delete_pool, pool_id)  # the pool is ours (checked above)
            raise ArmError(409, 'AzureBatchPoolNotOurs', _NOT_OURS.format(what='Batch job', id=job_id, who=who,
                                                                          delete='job delete --job-id'))
        self._jobs_made.add(job_id)
        self._pools_stale = True  # read the new pool at the next pass
        logger.info('cluster %s is Batch pool %s (Batch job %s)', key, pool_id, job_id)

    def resize_cluster(self, key, body, scale_settings):
        """New scale settings on the pool: a manual count (autoscale turned off first when it was on), or a new
        autoscale formula."""
        from .errors import Refusal  # pylint: disable=import-outside-toplevel
        pool_id, _ = self._ids(key)
        try:
            autoscale, request = self.mapping.scale_request(body['properties'], self.account)
        except Refusal as ex:
            raise bad_request(ex.code, ex.reason) from None
        try:
            if autoscale:
                self.api.enable_autoscale(pool_id, request)
            else:
                pool = self.api.get_pool(pool_id, select=['id', 'enableAutoScale']) or {}
                if pool.get('enableAutoScale'):
                    self.api.disable_autoscale(pool_id)
                self.api.resize_pool(pool_id, request)
        except BatchCallError as ex:
            raise ArmError(400 if ex.status and 400 <= ex.status < 500 else 503, 'AzureBatchRefused',
                           'Azure Batch refused the new scale of pool {}: {}'.format(pool_id, ex)) from None
        self._pools_stale = True  # read it again at the next pass
        logger.info('cluster %s: pool %s %s', key, pool_id, 'autoscale formula set' if autoscale else
                    'resized to {}'.format(request))

    def usages(self, clusters):
        """Usages_List on Azure Batch: the account's quotas (pools, dedicated and low-priority vCPUs, as
        quota.py reads them) and what the account's pools hold or grow to (preflight.cores_in_use), whatever
        location is asked: the account's region is the one there is."""
        from .preflight import cores_in_use  # pylint: disable=import-outside-toplevel
        account = (self.facts.account if self.facts is not None else None) or self.account
        try:
            pools = self.api.list_pools()
            used = cores_in_use(pools, self.facts.vm_skus if self.facts is not None else [], None)
        except BatchCallError as ex:
            raise ArmError(503, 'AzureBatchUnavailable', 'Azure Batch did not answer: {}'.format(ex)) from None
        return [('Clusters', 'Clusters', len(pools), int(account.get('poolQuota') or 0)),
                ('Total Cluster Dedicated Regional vCPUs', 'Total Cluster Dedicated Regional vCPUs',
                 used['dedicated'], int(account.get('dedicatedCoreQuota') or 0)),
                ('Total Cluster LowPriority Regional vCPUs', 'Total Cluster Low Priority Regional vCPUs',
                 used['lowPriority'], int(account.get('lowPriorityCoreQuota') or 0))]

    def delete_cluster(self, key, body):
        """Delete the cluster's Batch job (its tasks go with it) and pool: only those this service made."""
        pool_id, job_id = self._ids(key)
        for what, get, delete, batch_id, select in (
                ('Batch job', self.api.get_job, self.api.delete_job, job_id, ['id', 'metadata']),
                ('pool', self.api.get_pool, self.api.delete_pool, pool_id, ['id', 'metadata'])):
            found = get(batch_id, select=select)
            who = self._foreign(found)
            if who:
                logger.warning('cluster %s: %s %s is left alone: %s', key, what, batch_id, who)
            elif found is not None:
                delete(batch_id)
        self._jobs_made.discard(job_id)
        with self._lock:
            self._pools.pop(key, None)
        logger.info('deleted Batch pool %s and Batch job %s of cluster %s', pool_id, job_id, key)

    def cluster_view(self, key, props):
        """The pool's state as last read (every POOLS_SECONDS, and after a change): node count and states, allocation state, resize
        and start-task errors."""
        with self._lock:
            pool, nodes = self._pools.get(key, (None, []))
        if pool is None:  # not read yet (or gone): no node
            props.update(currentNodeCount=0, nodeStateCounts={
                'idleNodeCount': 0, 'runningNodeCount': 0, 'preparingNodeCount': 0, 'unusableNodeCount': 0,
                'leavingNodeCount': 0})
            return
        state = self.mapping.cluster_state(pool, nodes)
        errors = state.pop('errors', None)
        props.update(state)
        if errors:
            props['errors'] = errors

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def recover(self):
        """Re-attach to the tasks added before an unclean exit (they ran on, and may have ended)."""
        for row in self._store.in_states(('queued', 'running', 'terminating', 'deleting')):
            if not row['sched_id']:
                continue  # never handed to Batch: it is added at the first pass
            batch_job, task_id = row['sched_id'].split('/', 1)
            if row['state'] == 'deleting':
                self._call_quietly(self.api.delete_task, batch_job, task_id)
                continue
            full = self._store.get(row['key'])
            task = _Task(batch_job=batch_job, task_id=task_id, cluster=row['cluster'], nodes=full['node_count'],
                         layout=JobLayout(self._data_dir, json.loads(full['body']), row['cluster']),
                         running=row['state'] in ('running', 'terminating'),
                         reason='terminated' if row['state'] == 'terminating' else None)
            self._held[row['key']] = task
            logger.info('re-attached job %s to Batch task %s/%s (%s)', row['key'], batch_job, task_id, row['state'])
        for row in self._store.in_states(('deleting',), kind=None):
            full = self._store.get(row['key'])
            if full is not None and full['kind'] == 'cluster':  # killed while deleting it: its pool goes now
                try:
                    self.delete_cluster(row['key'], json.loads(full['body']))
                except BatchCallError as ex:
                    logger.warning('deleting the pool of cluster %s failed: %s', row['key'], ex)
            self._store.delete_tree(row['key'])

    def stop(self, timeout=10.0):
        """Stop adding and polling. Batch tasks run on: the next start re-attaches to them."""
        self._stop_loop(timeout)
        logger.info('Batch calls made: %s; %d polls, %d requeues', ', '.join(
            '{} {}'.format(k, v) for k, v in sorted(self.api.calls.items())), self.poll_count, self.requeues)

    # ---- queries and control from the API ---------------------------------------------------------------------

    def kill(self, key, reason, state=None):
        task = self._mark_killed(key, reason, state)
        if task is None:
            return False
        if reason == 'deleted':
            # Its record goes: the task goes too (deleting a running task ends it), and nothing is left to follow.
            self._call_quietly(self.api.delete_task, task.batch_job, task.task_id)
            self._forget(key, task)
        else:
            self._call_quietly(self.api.terminate_task, task.batch_job, task.task_id)
        self._wake.set()
        return True

    def fail_queued(self, key, reason):
        queued, task = self._unqueue(key, reason)
        if not queued:
            return False
        if task is not None:  # added, not running yet: it must never start
            self._call_quietly(self.api.delete_task if reason == 'cluster' else self.api.terminate_task,
                               task.batch_job, task.task_id)
            task.done.set()
        return True

    # ---- the loop --------------------------------------------------------------------------------------------

    def _pass(self):
        self._submit_queued()
        self._poll()
        self._mirror_running()
        if self._pools_stale or time.monotonic() - self._pools_at >= self.pools_seconds:
            self._pools_stale = False
            self._pools_at = time.monotonic()
            self._read_pools()

    def _submit_queued(self):
        rows = self._store.unsubmitted(SUBMIT_BATCH)
        by_job = {}
        for row in rows:
            if self._stopping:
                return
            ready = self._ready(row['key'])
            if ready is not None:
                by_job.setdefault(ready[0].batch_job, []).append(ready)
        for batch_job, ready in by_job.items():
            self._ensure_job(batch_job, ready[0][0].cluster)
            for chunk in self._chunks(ready):
                self._add(batch_job, chunk)

    def _chunks(self, ready):
        """The ready tasks in the mapping's chunks for collection adds; a task too large for any add fails its job
        (with the mapping's reason), the others go on."""
        from .errors import Refusal  # pylint: disable=import-outside-toplevel
        try:
            by_id = {body['id']: (task, body, key) for task, body, key in ready}
            return [[by_id[body['id']] for body in chunk]
                    for chunk in self.mapping.chunks([body for _, body, _ in ready], MAX_TASKS_PER_ADD)]
        except Refusal:
            if len(ready) == 1:
                task, body, key = ready[0]
                try:
                    list(self.mapping.chunks([body], MAX_TASKS_PER_ADD))
                except Refusal as ex:
                    self._fail_held(key, task, 'UnsupportedOnAzureBatch', ex.reason)
                    return []
            return [chunk for one in ready for chunk in self._chunks([one])]

    def _ready(self, key):
        """(task, task body, job key) of a queued job, its id stored; None when it is gone or failed here."""
        row = self._store.get(key)
        if row is None or row['state'] != 'queued' or row['sched_id']:
            return None
        try:
            spec = job_spec(row)  # its secret values, sealed in service.db (stored_spec.py)
            cluster_row = self._store.get(row['cluster'])
            cluster_body = json.loads(cluster_row['body'])
            toolkit, layout = self._prepare_job(key, row, spec, cluster_body)
            _, batch_job = self._ids(row['cluster'])
            task_id = self.mapping.task_id(key, layout.uid)
            body = self.mapping.task_body(task_id, json.loads(row['body']), spec, toolkit, cluster_body, layout,
                                          output_container_url=self._logs_url(cluster_body, spec),
                                          code_url=self._code_url(cluster_body, spec))
        except Exception as ex:  # pylint: disable=broad-except
            logger.exception('job %s could not be made a Batch task', key)
            self._fail_unsubmitted(key, 'JobStartFailed', str(ex))
            return None
        with self._lock:
            row = self._store.get(key)
            if row is None or row['state'] != 'queued':
                return None
            # Stored before the add: a service killed from here on finds the task by this id, and never adds twice.
            self._store.update(key, sched_id='{}/{}'.format(batch_job, task_id))
            task = _Task(batch_job=batch_job, task_id=task_id, cluster=row['cluster'], nodes=row['node_count'],
                         layout=layout)
            self._held[key] = task
        return task, body, key

    def _ensure_job(self, batch_job, cluster_key):
        if batch_job in self._jobs_made:
            return
        pool_id, _ = self._ids(cluster_key)
        row = self._store.get(cluster_key)
        cluster_id = (json.loads(row['body']).get('id') if row is not None else None) or cluster_key
        self._call_quietly(self.api.create_job, dict(self.mapping.job_body(batch_job, pool_id),
                                                     metadata=self._owned_metadata(cluster_id)))
        self._jobs_made.add(batch_job)

    def _add(self, batch_job, ready):
        try:
            results = self.api.add_tasks(batch_job, [body for _, body, _ in ready])
        except BatchCallError as ex:
            if ex.status in REFUSED_WHOLE:
                # Batch refused the request itself (its form or size): sent again it would be refused again, every
                # poll for ever. Its jobs fail with Batch's reason.
                for task, _, key in ready:
                    self._fail_held(key, task, 'AzureBatchTaskAddFailed', 'Azure Batch refused the task add: {}'
                                    .format(ex))
                return
            # Nothing is known of this add: each task stays followed, unconfirmed; the next full poll adds again
            # those Batch does not have.
            logger.warning('adding %d tasks to Batch job %s failed: %s', len(ready), batch_job, ex)
            self._since.pop(batch_job, None)
            return
        for task, _, key in ready:
            outcome = results.get(task.task_id)
            if outcome is None and task.task_id in results:
                task.confirmed = True
                continue
            code, message = outcome or ('TaskAddFailed', 'Batch did not answer for the task.')
            self._fail_held(key, task, 'AzureBatchTaskAddFailed', 'Azure Batch refused the task: {}{}'.format(
                code, ': ' + message if message else ''))
        self._wake.set()

    def _fail_held(self, key, task, code, message):
        with self._lock:
            if self._held.get(key) is task:
                del self._held[key]
                self._record_end(key, 'failed', None, [{'code': code, 'message': message}])
        task.done.set()

    def _poll(self):
        with self._lock:
            held = dict(self._held)
        by_job = {}
        for key, task in held.items():
            by_job.setdefault(task.batch_job, {})[task.task_id] = (key, task)
        for batch_job, tasks in by_job.items():
            since = self._since.get(batch_job)
            started = time.time()
            try:
                listed = self.api.list_tasks(batch_job, since)
            except BatchCallError as ex:
                logger.warning('polling Batch job %s failed: %s', batch_job, ex)
                continue
            self.poll_count += 1
            seen = set()
            for answer in listed:
                entry = tasks.get(answer.get('id'))
                if entry is not None:
                    seen.add(answer['id'])
                    self._update(entry[0], entry[1], answer)
            if since is None:  # a full list: what it lacks, Batch does not have
                self._missing([tasks[t] for t in tasks if t not in seen])
            self._since[batch_job] = iso(_utc(started - CLOCK_MARGIN_SECONDS))

    def _missing(self, entries):
        """Tasks a full list does not show: added again when Batch never got them (a crash between storing the id
        and the add), failed when they ran (deleted at Batch by someone else)."""
        again = {}
        for key, task in entries:
            if task.running or task.confirmed:
                with self._lock:
                    if self._held.get(key) is not task:
                        continue
                    del self._held[key]
                    self._record_end(key, 'failed', None, [{'code': 'AzureBatchTaskLost', 'message': (
                        'The Batch task {}/{} is gone (deleted at Batch, not through the service).'.format(
                            task.batch_job, task.task_id))}])
                task.done.set()
                continue
            row = self._store.get(key)
            if row is None:
                continue
            spec = job_spec(row)  # its secret values, sealed in service.db (stored_spec.py)
            cluster_body = json.loads(self._store.get(row['cluster'])['body'])
            toolkit = _toolkit(spec)
            body = self.mapping.task_body(task.task_id, json.loads(row['body']), spec, toolkit, cluster_body,
                                          task.layout, output_container_url=self._logs_url(cluster_body, spec),
                                          code_url=self._code_url(cluster_body, spec, key))
            again.setdefault(task.batch_job, []).append((task, body, key))
        for batch_job, ready in again.items():  # (as many adds as Batch's limits need, as at the first add)
            self._ensure_job(batch_job, ready[0][0].cluster)
            for chunk in self._chunks(ready):
                self._add(batch_job, chunk)

    def _update(self, key, task, answer):
        task.confirmed = True
        state, exit_code, errors = self.mapping.task_outcome(answer)
        if state not in ('queued', 'running'):
            # Its outputs are all read before its end is recorded; the wrapper's record of which step ended it too.
            files = self._mirror(task)
            self._read_task_logs(task, files)
            exit_file = self.mapping.exit_file()
            if exit_file and exit_file in files:
                text = self.api.read_task_file(task.batch_job, task.task_id, exit_file, 0, files[exit_file])
                state, exit_code, errors = self.mapping.task_outcome(answer, text.decode('ascii', 'replace'))
        requeues = int((answer.get('executionInfo') or {}).get('requeueCount') or 0)
        if requeues > task.requeues:
            self.requeues += requeues - task.requeues
            logger.info('job %s: Batch requeued task %s (its node was preempted; %d requeue(s))', key,
                        task.task_id, requeues)
            task.requeues = requeues
            with self._lock:
                self._requeue_counts[key] = requeues
            # The new attempt starts from scratch (the wrapper cleans its outputs on the node): so do its copies.
            task.offsets = {}
            _empty_local_outputs(task.layout)
        if state == 'queued':
            if task.running:  # back in the queue (preempted): shown queued again
                with self._lock:
                    if self._held.get(key) is task and task.reason is None:
                        task.running = False
                        task.queued_at = time.monotonic()
                        self._record_state(key, 'queued')
            return
        if state == 'running':
            if not task.running:
                with self._lock:
                    row = self._store.get(key)
                    if self._held.get(key) is task and row is not None and row['state'] == 'queued':
                        task.running = True
                        self._record_state(key, 'running', started=True)
                        self._pools_stale = True  # its node is busy now
            return
        self._finish(key, task, state, exit_code, errors)

    def _finish(self, key, task, state, exit_code, errors):
        with self._lock:
            if self._held.get(key) is not task:
                return
            del self._held[key]
            if task.reason is not None and task.reason != 'deleted':
                state, errors = 'failed', [error(task.reason)]
            if task.reason != 'deleted':
                self._record_end(key, state, exit_code, errors)
        self._pools_stale = True  # its node is free now
        task.done.set()
        self._wake.set()

    # ---- outputs ---------------------------------------------------------------------------------------------

    def _mirror_running(self):
        now = time.monotonic()
        with self._lock:
            running = [t for t in self._held.values() if t.running and now - t.files_at >= self.files_seconds]
        for task in running:
            if self._stopping:
                return
            task.files_at = now
            self._mirror(task)

    def _mirror(self, task):
        """Copy what is new of the task's files into its job's folders (reading only the bytes not read yet);
        {task file: size} as listed."""
        files = {}
        if task.layout is None:
            return files
        self._mirror_shares(task)
        try:
            files = self.api.list_task_files(task.batch_job, task.task_id)
            for remote, size in sorted(files.items()):
                local = self.mapping.local_path(remote, task.layout)
                if local is None:
                    continue
                # a task file has no identity to keep: one that shrank (a new attempt rewrote it) starts again
                copy_new_bytes(task.offsets, remote, None, size, local, lambda start, end, remote=remote:
                               self.api.read_task_file(task.batch_job, task.task_id, remote, start, end))
        except (BatchCallError, OSError) as ex:
            logger.warning('reading the files of Batch task %s/%s failed: %s', task.batch_job, task.task_id, ex)
        return files

    def _logs_url(self, cluster_body, spec):
        """The task-log container's write-only SAS URL for a task of the cluster (task_logs.py), or None."""
        if self.task_logs is None:
            return None
        from ...resources import job_wall_clock  # pylint: disable=import-outside-toplevel
        return self.task_logs.container_url(cluster_body.get('properties') or {},
                                            job_wall_clock(spec).total_seconds())

    def _code_url(self, cluster_body, spec, readding=None):
        """A read-only URL of the job's code snapshot in the cluster's storage (code_files.py), or None for a job
        without one. Raises when the job cannot get it, but for a task added again (``readding``: its job's key),
        which goes without (its preparation then fails saying it cannot unpack the snapshot)."""
        from . import code_files  # pylint: disable=import-outside-toplevel
        if code_files.code_mount(spec) is None:
            return None
        if readding is not None:
            try:
                return self._code_url(cluster_body, spec)
            except Exception as ex:  # pylint: disable=broad-except
                logger.warning('job %s: %s', readding, ex)
                return None
        archive = code_files.local_archive(self._data_dir, spec)
        if not os.path.isfile(archive):
            raise FileNotFoundError('the code snapshot {} is not in the service\'s share {} (upload it with the '
                                    'sweep\'s --code)'.format(code_files.archive_name(spec), code_files.CODE_SHARE))
        if self.task_logs is None:
            raise LookupError('the code snapshot reaches a Batch task through the cluster\'s storage, which this '
                              'service does not write to')
        from ...resources import job_wall_clock  # pylint: disable=import-outside-toplevel
        try:
            return self.task_logs.readable_url(cluster_body.get('properties') or {},
                                               code_files.BLOB_PREFIX + code_files.archive_name(spec), archive,
                                               job_wall_clock(spec).total_seconds())
        except LookupError:
            raise
        except Exception as ex:  # pylint: disable=broad-except
            # (the storage's words by kind and status only: a SAS or key never goes into the job's errors)
            from .storage.task_logs import failure_words  # pylint: disable=import-outside-toplevel
            raise RuntimeError('the code snapshot could not be copied to the cluster\'s storage ({})'.format(
                failure_words(ex))) from None

    def _read_task_logs(self, task, files):
        """Batch's own stdout/stderr of an ended task that the task file API no longer serves (its node is gone,
        or never ran the task), read from the copies Batch uploaded at its completion (outputFiles)."""
        from .mapping import BATCH_STREAMS  # pylint: disable=import-outside-toplevel
        missing = [remote for remote in BATCH_STREAMS if remote not in files]
        if self.task_logs is None or task.layout is None or not missing:
            return
        row = self._store.get(task.cluster)
        cluster_props = (json.loads(row['body']) if row is not None else {}).get('properties') or {}
        for remote in missing:
            data = self.task_logs.read(cluster_props, '{}/{}'.format(task.task_id, remote))
            local = self.mapping.local_path(remote, task.layout)
            if data is None or local is None:
                continue
            try:
                os.makedirs(os.path.dirname(local), exist_ok=True)
                with open(local, 'wb') as f:
                    f.write(data)
            except OSError as ex:
                logger.warning('writing %s failed: %s', local, ex)

    def _mirror_shares(self, task):
        """Copy what is new of the job's directories on the pool's mounted file share or Blob container
        (storage/share_reader.py): read from the storage, so they stay readable when the node is gone."""
        if self.shares is None:
            return
        row = self._store.get(task.cluster)
        folders = self.shares.folders(task.layout, json.loads(row['body']) if row is not None else None)
        if folders:
            self.shares.mirror(folders, task.layout, task.offsets)

    def _read_pools(self):
        try:
            listed = self.api.list_pools(self.pool_prefix)
        except BatchCallError as ex:
            logger.warning('listing the Batch pools failed: %s', ex)
            return
        # (a pool under one of our ids that another service made is none of our clusters' nodes)
        by_id = {p.get('id'): p for p in listed if not self._foreign(p)}
        clusters = [r['key'] for r in self._store.in_states(('deleting',), kind='cluster')]
        pools = {}
        for key in self._cluster_keys():
            pool = by_id.get(self._ids(key)[0])
            if pool is not None and key not in clusters:
                try:  # one list per pool: the node states and start-task failures of its nodes
                    nodes = self.api.list_nodes(pool['id']) if pool.get('currentDedicatedNodes') or pool.get(
                        'currentLowPriorityNodes') else []
                except BatchCallError as ex:
                    logger.warning('listing the nodes of pool %s failed: %s', pool['id'], ex)
                    nodes = []
                pools[key] = (pool, nodes)
        with self._lock:
            self._pools = pools
        self._watch_pools(pools)
        self._fail_unrunnable(pools)

    def _fail_unrunnable(self, pools):
        """Fail the jobs that waited longer than unrunnable_seconds on a pool that cannot grow, with Batch's error
        (their tasks are deleted: they must not start later, when nobody expects them)."""
        now = time.monotonic()
        for cluster, (pool, nodes) in pools.items():
            with self._lock:
                stuck = [(k, t) for k, t in self._held.items() if t.cluster == cluster and not t.running
                         and t.reason is None and now - t.queued_at >= self.unrunnable_seconds]
            for key, task in stuck:
                problem = self.mapping.cannot_grow(pool, nodes, task.nodes)
                if problem is None:  # the pool has nodes enough for this job: it runs in turn
                    continue
                self._call_quietly(self.api.delete_task, task.batch_job, task.task_id)
                waited = int(now - task.queued_at)
                self._fail_held(key, task, problem['code'], '{} The job waited {} s for a node of pool {} and was '
                                'removed from Batch.'.format(problem['message'].rstrip(), waited, pool.get('id')))

    def _watch_pools(self, pools):
        """Record the pools as read in the data dir (`local status`/`local stop` list them when the service is not
        running), and log once per change why each cluster's queued jobs wait (pool_watch.waiting_note)."""
        from . import pool_watch  # pylint: disable=import-outside-toplevel
        try:
            pool_watch.write_last_pools(self._data_dir, [pool_watch.pool_row(key, pool)
                                                         for key, (pool, _) in sorted(pools.items())])
        except OSError as ex:
            logger.warning('recording the pools in %s failed: %s', self._data_dir, ex)
        with self._lock:
            waiting = {}  # cluster -> the most nodes a job queued on it needs
            for t in self._held.values():
                if not t.running and t.reason is None:
                    waiting[t.cluster] = max(waiting.get(t.cluster, 1), t.nodes or 1)
        for cluster in sorted(waiting):
            pool, nodes = pools.get(cluster, (None, []))
            note = pool_watch.waiting_note(pool, nodes, needed=waiting[cluster])
            if self._waiting_logged.get(cluster) != note:
                self._waiting_logged[cluster] = note
                logger.info('cluster %s: its queued jobs are %s', cluster, note)

    def job_notes(self, parent):
        """{job name: {'waiting': why it waits (pool_watch.waiting_note), 'requeues': Batch's requeues of its task}}
        of the jobs under `parent` (an experiment's key) that wait or were requeued: the local view's answer
        (Batch AI's job has no field for either)."""
        from . import pool_watch  # pylint: disable=import-outside-toplevel
        prefix = parent + '/'
        notes = {}
        with self._lock:
            for key, count in self._requeue_counts.items():
                if key.startswith(prefix) and count:
                    notes.setdefault(key.rsplit('/', 1)[-1], {})['requeues'] = count
            waiting = [(k, t.cluster, t.nodes) for k, t in self._held.items()
                       if k.startswith(prefix) and not t.running and t.reason is None]
            pools = dict(self._pools)
        for key, cluster, needed in waiting:
            pool, nodes = pools.get(cluster, (None, []))
            notes.setdefault(key.rsplit('/', 1)[-1], {})['waiting'] = pool_watch.waiting_note(pool, nodes,
                                                                                               needed=needed or 1)
        return notes

    def _cluster_keys(self):
        """Keys of every cluster of the store (a cluster is a pool of this service)."""
        keys = []
        for _, text in self._store.page_by_prefix('cluster', '', 0, 1000000):
            parts = [p for p in json.loads(text)['id'].split('/') if p]
            keys.append(resource_key(parts[1], parts[3], parts[7], 'clusters', parts[9]))
        return keys

    # ---- helpers ---------------------------------------------------------------------------------------------

    def _forget(self, key, task):
        with self._lock:
            if self._held.get(key) is task:
                del self._held[key]
        task.done.set()

    def _call_quietly(self, fn, *args):
        try:
            fn(*args)
        except BatchCallError as ex:
            logger.warning('%s', ex)

    def _fail_unsubmitted(self, key, code, message):
        with self._lock:
            row = self._store.get(key)
            if row is not None and row['state'] == 'queued':
                self._record_end(key, 'failed', None, [{'code': code, 'message': message}])


def _empty_local_outputs(layout):
    """Empty the job's stdouterr and output directories in the data dir (a requeued attempt's outputs replace the
    last attempt's, never add to them). They are this job incarnation's own (its uid is in their path)."""
    import shutil  # pylint: disable=import-outside-toplevel
    if layout is None:
        return
    for path in [layout.stdouterr_dir, *layout.outputs.values()]:
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path, exist_ok=True)


def _toolkit(spec):
    from ...resources import TOOLKITS  # pylint: disable=import-outside-toplevel
    return next(k for k in TOOLKITS if spec.get(k) is not None)


def _utc(seconds):
    import datetime  # pylint: disable=import-outside-toplevel
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)

