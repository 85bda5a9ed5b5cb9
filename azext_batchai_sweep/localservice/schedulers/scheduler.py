"""The one small interface between the ARM layer and whatever runs the jobs.

The ARM routes (arm_api.py) only ever talk to a `Scheduler`: they store a job as `queued` and `wake()` it (submit);
they read what it runs (`used_slots`, `is_running`: poll); they `kill()` or `fail_queued()` a job (terminate); and
the service calls `recover()` once at start (re-attach). Each implementation records the job's execution state and
outcome in the store itself. Three exist, one sub-package each beside this module:

- `processes.runner.Runner` (`--scheduler processes`, the default): jobs are process groups on this machine;
- `slurm.scheduler.SlurmScheduler` (`--scheduler slurm`): jobs are Slurm batch jobs (sbatch, squeue, scancel);
- `azurebatch.scheduler.AzureBatchScheduler` (`--scheduler azure-batch`): jobs are Azure Batch tasks, clusters are
  Batch pools.

A scheduler whose clusters have resources of their own (Azure Batch's pools) also gets the cluster hooks
(`check_cluster`, `create_cluster`, `resize_cluster`, `delete_cluster`, `cluster_view`); the others keep their
defaults (a cluster is a share of the service's own nodes: nothing to make, its node counts from its scale settings
and the jobs it runs), so the ARM layer calls every scheduler the same way.

A cluster's scale settings (at create, or changed by Batch AI's cluster update: `az batchai cluster resize`,
`auto-scale`) say how many nodes it may hold at once (`cluster_capacity`): a manual cluster its targetNodeCount, an
auto-scale one its maximumNodeCount, either within `node_limit`, the most this scheduler has (the processes
scheduler: this machine's CPUs, or more given as --slots; Slurm: the partition's nodes). 0 keeps its queued jobs
waiting. `cluster show` answers, as Batch AI did, currentNodeCount (manual: the target; auto-scale: the nodes its jobs
hold, at least its minimum) and allocationState `resizing` while running jobs still hold more nodes than the new size
(stopped, or let finish, as its nodeDeallocationOption says; nothing new starts), then `steady`; a size over
`node_limit` is answered in the cluster's `errors` (docs/cluster-scaling.md).

All three are a `HeldJobsScheduler`: one background thread making passes, and the jobs holding resources kept in
memory under one lock; that part, how a job is laid out before it starts, and how a state change or a job's end is
written into its body, they share (Slurm's and Azure Batch's through `SubmittingScheduler`, which submits to a
system of their own and polls it).
"""
import abc
import json
import logging
import threading
import time

from ..layout import JobLayout
from ..resources import TOOLKITS, cluster_slots, iso, utcnow

logger = logging.getLogger(__name__)

# Why a job ended without its own exit code deciding: executionInfo.errors[].code and message.
REASONS = {
    'terminated': ('JobTerminated', 'The job was terminated by the user.'),
    'deleted': ('JobDeleted', 'The job was deleted while it was running.'),
    'wallclock': ('MaxWallClockTimeExceeded', 'The job ran longer than its constraints.maxWallClockTime.'),
    'stopped': ('ServiceStopped', 'The local Batch AI service was stopped while the job was running.'),
    'crashed': ('ServiceInterrupted', 'The local Batch AI service died while the job was running; '
                                      'the job was marked failed and its processes killed at the next start.'),
    'cluster': ('ClusterDeleted', 'The cluster of the job was deleted.'),
    'resized': ('ClusterResized', 'The job was terminated: its cluster was resized to fewer nodes than its running '
                                  'jobs held (nodeDeallocationOption terminate).'),
}
# Not an end: a job stopped so that its cluster can shrink (nodeDeallocationOption requeue) goes back to the queue.
REQUEUED = 'requeued'


def error(reason):
    code, message = REASONS[reason]
    return {'code': code, 'message': message}


class Scheduler(abc.ABC):
    """What the ARM layer needs of a scheduler. Job keys are store keys; `reason` is a key of REASONS."""

    name = None

    def describe(self):
        """What `local status` shows of the scheduler (service.json): at least {'scheduler': name}."""
        return {'scheduler': self.name}

    def check_job(self, props, toolkit, cluster_body):
        """Refuse (raise an ArmError 400) a job create this scheduler cannot run; called before it is stored."""

    @abc.abstractmethod
    def recover(self):
        """Once at start, before serving: re-attach to (or clean up after) the jobs of an unclean exit."""

    @abc.abstractmethod
    def start(self):
        """Start scheduling in the background."""

    @abc.abstractmethod
    def stop(self, timeout=10.0):
        """Stop scheduling (at service shutdown)."""

    @abc.abstractmethod
    def wake(self):
        """A job was queued or resources were freed: look at the queues soon (never blocks the request)."""

    @abc.abstractmethod
    def used_slots(self, cluster):
        """Nodes of `cluster` held by running jobs (the cluster's nodeStateCounts)."""

    @abc.abstractmethod
    def is_running(self, key):
        """Whether the job holds resources (its end is not recorded yet)."""

    @abc.abstractmethod
    def running_below(self, prefix):
        """Keys of the jobs holding resources at or below a resource key (for deletes)."""

    @abc.abstractmethod
    def kill(self, key, reason, state=None):
        """Stop a job holding resources, recording `state` (e.g. 'terminating') at once; False if none."""

    @abc.abstractmethod
    def fail_queued(self, key, reason):
        """Move a job that holds no resources from queued to failed; False if it is not queued."""

    @abc.abstractmethod
    def wait_for(self, keys, timeout):
        """Wait until the given jobs hold no resources (or `timeout` seconds passed)."""

    @abc.abstractmethod
    def locked(self):
        """A lock under which no job changes between queued and running (for atomic bulk changes)."""

    # ---- cluster hooks: no-ops for schedulers whose clusters are the service's own nodes -----------------------

    # Whether the service makes its default cluster ('local', --slots nodes) at start: not where a cluster must be
    # made somewhere first (a Batch pool).
    has_default_cluster = True
    # The most nodes one cluster may hold at once here (None: no limit of the service's own, as on Azure Batch, where
    # the account's quotas and the pool decide). Set by the service when it makes the scheduler.
    node_limit = None
    # What the limit is, for the messages that name it.
    node_limit_source = None

    def cluster_capacity(self, props):
        """Nodes a cluster may hold at once: its scale settings' size (manual target, auto-scale maximum) within
        `node_limit`."""
        size = cluster_slots(props)
        return size if self.node_limit is None else min(size, self.node_limit)

    def node_ceiling(self, props):
        """The most nodes a job of the cluster may need (more: refused at create, it could never run): the cluster's
        size; a cluster scaled to 0 takes jobs of up to `node_limit` nodes, which wait for a resize (as a Batch AI
        cluster at 0 nodes kept its jobs queued)."""
        size = cluster_slots(props)
        if self.node_limit is None:
            return size
        return self.node_limit if size == 0 else min(size, self.node_limit)

    def check_cluster(self, key, body, spec):
        """Refuse (raise an ArmError 400) a cluster create this scheduler cannot make; called before it is stored.
        `body`: the cluster resource as it will be stored (resources.cluster_body); `spec`: the create request."""

    def create_cluster(self, key, body, spec):
        """Make the backing resources of a cluster just stored (`spec`: the create request, with its secrets); an
        ArmError refuses the create (the ARM layer then removes the stored cluster)."""

    def resize_cluster(self, key, body, scale_settings):
        """Apply new scale settings to a cluster's backing resources (Batch AI's cluster update: resize,
        auto-scale). Here a cluster is a share of the service's own nodes: the new size holds from the next pass
        (`cluster_capacity`), which starts the queued jobs a larger one lets run. A manual size below what running
        jobs hold frees nodes as its nodeDeallocationOption says (the swagger's DeallocationOption): requeue (the
        default) stops the most recently started jobs until the others fit and queues them again, terminate stops
        them for good (failed, ClusterResized), waitforjobcompletion lets them finish; an auto-scale cluster, as
        Batch AI's, only ever gives up idle nodes."""
        manual = body['properties']['scaleSettings'].get('manual')
        if manual and manual.get('nodeDeallocationOption', 'requeue') != 'waitforjobcompletion':
            self.release_nodes(key, self.cluster_capacity(body['properties']),
                               requeue=manual.get('nodeDeallocationOption', 'requeue') == 'requeue')
        self.wake()

    def release_nodes(self, cluster, capacity, requeue):
        """Stop the cluster's most recently started jobs until the others hold at most `capacity` nodes: queued
        again (`requeue`), or failed (ClusterResized)."""

    def delete_cluster(self, key, body):
        """Release a cluster's backing resources, once its jobs have ended (called before its record goes)."""

    def cluster_view(self, key, props):
        """Update a cluster's properties as answered with its live state. Here: node state counts (nodes held by
        running jobs, the rest idle), currentNodeCount (manual: its size, auto-scale: the nodes its jobs hold, at
        least its minimum; never fewer than its jobs hold), allocationState (`resizing` while its jobs hold more
        nodes than its size, then `steady`, the change recorded when first seen) and `errors` (a size over
        `node_limit`). A scheduler with real nodes (Azure Batch) sets them from those."""
        used = self.used_slots(key)
        capacity = self.cluster_capacity(props)
        auto = (props.get('scaleSettings') or {}).get('autoScale')
        if auto:
            current = max(used, min(int(auto.get('minimumNodeCount') or 0), capacity))
        else:
            current = max(used, capacity)
        state = 'resizing' if used > capacity else 'steady'
        if props.get('allocationState') != state:
            now = iso(utcnow())
            props.update(allocationState=state, allocationStateTransitionTime=now)

            def record(body):
                body['properties'].update(allocationState=state, allocationStateTransitionTime=now)
            try:
                self._store.update(key, record)
            except Exception:  # pylint: disable=broad-except
                # Only the transition time is lost (a full disk): the answer is right, the next view writes it.
                logger.warning('could not record the allocation state of cluster %s', key)
        props['currentNodeCount'] = current
        props['nodeStateCounts'] = {
            'idleNodeCount': max(0, current - used), 'runningNodeCount': used, 'preparingNodeCount': 0,
            'unusableNodeCount': 0, 'leavingNodeCount': 0}
        size = cluster_slots(props)
        if self.node_limit is not None and size > self.node_limit:
            props['errors'] = [{'code': 'NodeLimitReached', 'message': (
                'The cluster asks for {} nodes; the {} scheduler has {} ({}): it holds at most {} at once.'.format(
                    size, self.name, self.node_limit, self.node_limit_source or 'its limit', self.node_limit))}]
        else:
            props.pop('errors', None)

    # vCPUs a node of a cluster has, and all the scheduler has (for `usages`); the service sets them.
    cores_per_node = 1
    total_cores = None

    def usages(self, clusters):
        """Batch AI's Usages_List lines for the local service: [(name, localized name, current value, limit)].
        `clusters`: (store key, body) of the clusters in the location asked about. Here: the cores of this machine
        (or of the Slurm partition), dedicated and low-priority alike (both run the same way), the current values the
        cores their clusters' running jobs hold (cores_per_node for each node)."""
        held = {'dedicated': 0, 'lowpriority': 0}
        for key, body in clusters:
            priority = 'lowpriority' if body['properties'].get('vmPriority') == 'lowpriority' else 'dedicated'
            held[priority] += self.used_slots(key) * self.cores_per_node
        limit = self.total_cores or 0
        return [('Total Cluster Dedicated Regional vCPUs', 'Total Cluster Dedicated Regional vCPUs',
                 held['dedicated'], limit),
                ('Total Cluster LowPriority Regional vCPUs', 'Total Cluster Low Priority Regional vCPUs',
                 held['lowpriority'], limit)]

    def job_notes(self, parent):  # pylint: disable=unused-argument
        """{job name: {note: value}} of the jobs under `parent` (an experiment's key) for the local view: what
        Batch AI's job has no field for (the Azure Batch scheduler: why a queued job waits, its requeues)."""
        return {}

    # Not abstract: only a scheduler that can hold a job's end in memory (the processes runner, while the disk is
    # full) overrides these two; the ARM layer asks every scheduler.
    def view(self, key, body):  # pylint: disable=unused-argument
        """A job's body as answered, with any end the scheduler holds but has not yet recorded applied."""
        return body

    def has_unrecorded(self):
        """True while some job's end is held in memory, not yet in the store."""
        return False


class HeldJobsScheduler(Scheduler):  # pylint: disable=abstract-method
    """The part both schedulers do the same way: `_held` maps the key of each job holding resources to an object
    with `cluster` and a `done` Event (set once its end is recorded); one thread (`start`) calls `_pass()` on every
    `wake()` and at least every `loop_seconds`; `_lock` guards `_held` and every change between queued and running.
    """

    loop_seconds = 1.0

    def __init__(self, store, data_dir):
        self._store = store
        self._data_dir = data_dir
        self._lock = threading.RLock()  # re-entered by `locked()` callers that query the scheduler
        self._held = {}
        self._wake = threading.Event()
        self._stopping = False
        self._thread = None
        self._prepare_lock = threading.Lock()  # jobs starting at once share their cluster's mount-volume links

    def start(self):
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def wake(self):
        self._wake.set()

    def is_running(self, key):
        with self._lock:
            return key in self._held

    def running_below(self, prefix):
        with self._lock:
            return [k for k in self._held if k.startswith(prefix + '/') or k == prefix]

    def wait_for(self, keys, timeout):
        deadline = time.monotonic() + timeout
        for key in keys:
            with self._lock:
                job = self._held.get(key)
            if job is not None:
                job.done.wait(max(0.0, deadline - time.monotonic()))

    def locked(self):
        return self._lock

    def _loop(self):
        while not self._stopping:
            self._wake.wait(self.loop_seconds)
            self._wake.clear()
            if self._stopping:
                break
            try:
                self._pass()
            except Exception:  # pylint: disable=broad-except
                # The loop must survive anything a single bad record can throw; the next pass retries.
                logger.exception('%s scheduler pass failed', self.name)

    @abc.abstractmethod
    def _pass(self):
        """One pass of the scheduler thread (start queued jobs, look at the running ones)."""

    def _prepare_job(self, key, row, spec, cluster_body):
        """(toolkit, JobLayout) of a job about to start: its directories and mount-volume links made, and its marker
        stored before anything runs (crash recovery finds the job's processes, or its Slurm job, by it)."""
        toolkit = next(k for k in TOOLKITS if spec.get(k) is not None)
        layout = JobLayout(self._data_dir, json.loads(row['body']), row['cluster'])
        with self._prepare_lock:
            layout.prepare(spec.get('mountVolumes'),
                           (cluster_body['properties'].get('nodeSetup') or {}).get('mountVolumes'))
        self._store.update(key, marker=layout.uid)
        return toolkit, layout

    def _record_state(self, key, state, started=False):
        """Write a job's new executionState at once (body and state column); `started`: its startTime is now."""
        now = iso(utcnow())
        changes = {'executionState': state, 'executionStateTransitionTime': now}
        if started:
            changes['executionInfo'] = {'startTime': now}
        self._store.update(key, lambda body: body['properties'].update(changes), state=state)

class SubmittingScheduler(HeldJobsScheduler):  # pylint: disable=abstract-method
    """A scheduler that hands jobs to another system (Slurm, Azure Batch) and follows them there: each held object
    also has `nodes`, `running` and `reason` (why the service stopped it: a REASONS key, or None). The jobs run on
    when the service stops; the next start re-attaches to them."""

    def used_slots(self, cluster):
        with self._lock:
            return sum(j.nodes for j in self._held.values() if j.cluster == cluster and j.running)

    def _stop_loop(self, timeout):
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _mark_killed(self, key, reason, state=None):
        """The held job of `key` with its reason set (the first one stays) and `state` recorded, or None."""
        with self._lock:
            job = self._held.get(key)
            if job is None:
                return None
            if job.reason is None:
                job.reason = reason
            if state:
                self._record_state(key, state)
        return job

    def _unqueue(self, key, reason):
        """(False, None) unless the job is queued; else (True, its held job or None), the job recorded failed."""
        with self._lock:
            row = self._store.get(key)
            if row is None or row['state'] != 'queued':
                return False, None
            job = self._held.pop(key, None)
            self._record_end(key, 'failed', None, [error(reason)])
        return True, job

    def _record_end(self, key, state, exit_code, errors):
        # A job that succeeded between two polls did run: its start time is its end time.
        self._store.update(key, ending(state, exit_code, errors, started_if_unknown=state == 'succeeded'),
                           state=state, pgid=None)
        logger.info('job %s %s (exit code %s%s)', key, state, exit_code,
                    ', ' + errors[0]['code'] if errors else '')


def requeued(body):
    """A job stopped by a shrinking cluster, queued again (nodeDeallocationOption requeue): queued since now, its
    run's executionInfo gone (it runs again from the start)."""
    props = body['properties']
    props.pop('executionInfo', None)
    props.update(executionState='queued', executionStateTransitionTime=iso(utcnow()))


def ending(state, exit_code, errors, started_if_unknown=False):
    """finish(body): writes a job's end (state, endTime, exitCode, errors) into its body, now.

    `started_if_unknown`: a job that ended between two looks at it did run; its startTime is its end time.
    """
    now = iso(utcnow())

    def finish(body):
        props = body['properties']
        info = props.get('executionInfo') or {}
        if started_if_unknown:
            info.setdefault('startTime', now)
        info['endTime'] = now
        if exit_code is not None:
            info['exitCode'] = exit_code
        if errors:
            info['errors'] = errors
        props.update(executionState=state, executionStateTransitionTime=now, executionInfo=info)
    return finish
