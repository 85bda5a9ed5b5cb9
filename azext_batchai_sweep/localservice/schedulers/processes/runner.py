"""The processes scheduler (`--scheduler processes`, the default): jobs as process groups on this machine.

A cluster's nodes are slots. The scheduler thread (off the request path: requests only `wake()` it) starts the
queued jobs of each cluster strictly in order (priority high > normal > low, then submission order): when the
head of a queue needs more slots than are free, the jobs behind it wait too, as Batch AI's gang scheduling does.
Each running job has a thread that runs its process group (job preparation, then the toolkit command), enforces
maxWallClockTime and records the outcome.

A job's processes are those Batch AI started (launcher.py): a nodeCount N job runs on N slots, its nodes all
'localhost' (127.0.0.1) with free ports for TensorFlow; one process runs as the job's process group itself, more
run under launcher.py's `run` in that group (so terminating, the wall clock and crash recovery reach them all).

GPUs (`--gpus`): each job gets its own devices through CUDA_VISIBLE_DEVICES, as many per node as its cluster's VM
size has (gpus.py), each node's processes its node's; a job waits in the queue until that many are free, so no two
jobs ever share a GPU.
"""
import json
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from .. import launcher
from ...errors import bad_request, is_disk_full
from ..gpus import gpus_per_node
from ...data.stored_spec import SecretsNotKept, job_spec
from ..jobenv import MARKER_VARIABLE
from ...resources import job_wall_clock
from ..scheduler import REQUEUED, HeldJobsScheduler, ending, error as _error, requeued

logger = logging.getLogger(__name__)

KILL_GRACE_SECONDS = 2.0
DISK_FULL_JOB_MESSAGE = ("The local service's disk filled up: the job could not be prepared or its outcome written. "
                         'Free space on the file system of the data dir, then resubmit it.')
POLL_SECONDS = 0.1
LOCAL_NODE = launcher.Node('localhost', '127.0.0.1')  # every node of a job is a slot of this machine

@dataclass
class _Running:
    """A job that holds slots: its current process and why it is being stopped (if it is)."""
    cluster: str
    slots: int
    gpus: tuple = ()
    proc: subprocess.Popen = None
    reason: str = None
    kill_at: float = None
    # A step's process is being started (Popen has not returned): it may already run its command, so a stop asked
    # meanwhile is a SIGTERM once its pid is known, as it would have been a moment later (term_due).
    launching: bool = False
    term_due: bool = False
    done: threading.Event = field(default_factory=threading.Event)


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _groups_with_marker(marker):
    """The process groups of the live processes whose environment carries a job's marker.

    Recovery looks processes up by their marker rather than by the recorded group id: the marker is stored before the
    job starts, the group id only after, so a service killed in between still finds the job's processes; so it does
    for a child that moved to a group of its own; and a group id the system reused for someone else is never hit.
    """
    needle = '{}={}'.format(MARKER_VARIABLE, marker).encode()
    groups = set()
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/{}/environ'.format(pid), 'rb') as f:
                if needle not in f.read().split(b'\0'):
                    continue
            with open('/proc/{}/stat'.format(pid), 'rb') as f:
                stat = f.read()
            groups.add(int(stat[stat.rindex(b')') + 2:].split()[2]))
        except (OSError, ValueError, IndexError):
            continue
    return groups


def kill_orphaned_groups(row):
    """SIGKILL what is left of the process groups of a job (a store row) after the service died while it ran."""
    for pgid in sorted(_groups_with_marker(row['marker'])) if row['marker'] else ():
        logger.warning('killing orphaned process group %s of job %s', pgid, row['key'])
        _signal_group(pgid, signal.SIGKILL)


class Runner(HeldJobsScheduler):
    """Runs the jobs stored in `store` on their clusters' slots (and the machine's GPUs, when given)."""

    name = 'processes'

    def __init__(self, store, data_dir, gpus=None):
        super().__init__(store, data_dir)  # self._held: job key -> _Running
        # None: GPUs are not managed (jobs inherit the service's CUDA_VISIBLE_DEVICES); else the device indexes.
        self._gpus = None if gpus is None else [str(g) for g in gpus]
        self._unrecorded = {}  # job key -> (finish(body), state): ends not yet written (a full disk)

    def describe(self):
        info = {'scheduler': self.name}
        if self._gpus is not None:
            info['gpus'] = ','.join(self._gpus)
        return info

    def job_gpus(self, cluster_body, node_count):
        """GPUs a job needs: its cluster's GPUs per node times its nodes (0 when GPUs are not managed)."""
        if self._gpus is None:
            return 0
        return gpus_per_node(cluster_body['properties'].get('vmSize'), len(self._gpus)) * node_count

    def check_job(self, props, toolkit, cluster_body):
        problem = launcher.check(props, toolkit)
        if problem:
            raise bad_request('InvalidRequestContent', problem)
        if launcher.uses_mpirun(props, toolkit) and shutil.which('mpirun') is None:
            raise bad_request('MpiNotInstalled', '{} with {} processes runs them through mpirun (as Batch AI did), '
                              'and the local service finds no mpirun on its PATH: install OpenMPI (Debian: '
                              'apt-get install openmpi-bin).'.format(toolkit, launcher.process_count(props, toolkit)))
        need = self.job_gpus(cluster_body, props['nodeCount'])
        if need > len(self._gpus or ()):
            raise bad_request('InsufficientGpus', 'The job needs {} GPUs ({} nodes of {}); the local service has '
                              '{} (local start --gpus).'.format(need, props['nodeCount'],
                                                                cluster_body['properties'].get('vmSize'),
                                                                len(self._gpus or ())))

    def _free_gpus(self):
        taken = {g for r in self._held.values() for g in r.gpus}
        return [g for g in self._gpus or () if g not in taken]

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def recover(self):
        """After an unclean exit: kill what is left of the process groups of the jobs that were running, fail
        those jobs, and finish the deletions that were under way."""
        for row in self._store.in_states(('running', 'terminating', 'deleting')):
            kill_orphaned_groups(row)
            if row['state'] != 'deleting':
                self._record_end(row['key'], None, 'terminated' if row['state'] == 'terminating' else 'crashed')
        for row in self._store.in_states(('deleting',), kind=None):
            self._store.delete_tree(row['key'])

    def stop(self, timeout=10.0):
        """Stop scheduling, kill every running job (recorded failed: ServiceStopped) and wait for the records."""
        self._stopping = True
        self._wake.set()
        with self._lock:
            running = list(self._held)
        for key in running:
            self.kill(key, 'stopped')
        self.wait_for(running, timeout)

    # ---- queries and control from the API ---------------------------------------------------------------------

    def used_slots(self, cluster):
        with self._lock:
            return sum(r.slots for r in self._held.values() if r.cluster == cluster)

    def kill(self, key, reason, state=None):
        """Stop a running job's process group (SIGTERM, SIGKILL after a grace period); False if not running.

        `state` (e.g. 'terminating') is recorded under the same lock that records a job's end, so it can never
        overwrite the final state of a job that ended meanwhile.
        """
        with self._lock:
            running = self._held.get(key)
            if running is None:
                return False
            if state:  # first: if it cannot be recorded (a full disk), nothing is done and the caller is told
                self._record_state(key, state)
            if running.reason is None:
                running.reason = reason
            running.kill_at = time.monotonic() + KILL_GRACE_SECONDS
            proc = running.proc
            if running.launching:
                running.term_due = True
                return True
        if proc is not None:
            _signal_group(proc.pid, signal.SIGTERM)
        return True

    def release_nodes(self, cluster, capacity, requeue):
        with self._lock:
            jobs = [(key, job) for key, job in self._held.items() if job.cluster == cluster]
            used = sum(job.slots for _, job in jobs)
            for key, job in reversed(jobs):  # held in the order they started
                if used <= capacity:
                    break
                self.kill(key, REQUEUED if requeue else 'resized')
                used -= job.slots

    # ---- scheduling ------------------------------------------------------------------------------------------

    def _pass(self):
        self._record_unrecorded()
        self._schedule()

    def _schedule(self):
        for cluster in self._store.clusters_with_queue():
            cluster_row = self._store.get(cluster)
            if cluster_row is None:
                continue
            cluster_body = json.loads(cluster_row['body'])
            slots = self.cluster_capacity(cluster_body['properties'])  # its size now (a resize changes it)
            while not self._stopping:
                with self._lock:
                    head = self._store.next_queued(cluster)
                    if head is None:
                        break
                    used = sum(r.slots for r in self._held.values() if r.cluster == cluster)
                    if used + head['node_count'] > slots:
                        break
                    free = self._free_gpus()
                    need = self.job_gpus(cluster_body, head['node_count'])
                    if need > len(free):
                        break  # gang order: the jobs behind a job waiting for GPUs wait too
                    # Recorded before the slot is taken: on a full disk the job stays queued (and starts once space
                    # returns) instead of holding a slot without a process.
                    self._record_state(head['key'], 'running', started=True)
                    self._held[head['key']] = _Running(cluster=cluster, slots=head['node_count'],
                                                       gpus=tuple(free[:need]))
                threading.Thread(target=self._run, args=(head['key'], cluster_body), name='job',
                                 daemon=True).start()

    # ---- one job ---------------------------------------------------------------------------------------------

    def _run(self, key, cluster_body):
        exit_code, reason, errors = None, None, []
        try:
            row = self._store.get(key)
            spec = job_spec(row)  # its secret values, sealed in service.db (stored_spec.py)
            toolkit, layout = self._prepare_job(key, row, spec, cluster_body)
            env = layout.environment(spec)
            plan = launcher.plan(spec, toolkit, [LOCAL_NODE] * spec['nodeCount'], layout.host_file,
                                 layout.shared_dir, ports=launcher.free_ports)
            with open(layout.host_file, 'w', encoding='utf-8') as f:
                f.write(plan.host_file)
            self._give_gpus(key, plan, env, cluster_body)
            env.update(plan.env)
            deadline = time.monotonic() + job_wall_clock(spec).total_seconds()
            out_dir = layout.stdouterr_dir
            if spec.get('containerSettings'):
                image = (spec['containerSettings'].get('imageSourceRegistry') or {}).get('image')
                note = ('batchai-local: containerSettings ignored (image {!r}): no container engine, '
                        'the job runs on the host.\n').format(image)
                with open(os.path.join(out_dir, plan.processes[0].stderr), 'a', encoding='utf-8') as f:
                    f.write(note)
                logger.info('job %s: %s', key, note.strip())
            steps = []
            if spec.get('jobPreparation'):
                steps.append((spec['jobPreparation']['commandLine'], env, os.path.join(out_dir, 'stdout-job_prep.txt'),
                              os.path.join(out_dir, 'stderr-job_prep.txt')))
            steps.append(self._main_step(plan, env, layout))
            for index, (line, step_env, out_path, err_path) in enumerate(steps):
                exit_code, reason = self._run_step(key, line, step_env, layout.temp_dir, out_path, err_path,
                                                   deadline)
                if reason or exit_code != 0:
                    if not reason and index < len(steps) - 1:
                        errors.append({'code': 'JobPreparationFailed',
                                       'message': 'jobPreparation.commandLine exited with {}.'.format(exit_code)})
                    break
        except Exception as ex:  # pylint: disable=broad-except
            # A job that cannot even start (bad mount, missing bash, a full disk...) fails visibly instead of
            # staying 'running'.
            logger.exception('job %s could not run', key)
            if is_disk_full(ex):
                errors.append({'code': 'DiskFull', 'message': DISK_FULL_JOB_MESSAGE})
            elif isinstance(ex, SecretsNotKept):
                errors.append({'code': 'SecretsNotKept', 'message': str(ex)})
            else:
                errors.append({'code': 'JobStartFailed', 'message': str(ex)})
            exit_code = None
        with self._lock:
            running = self._held.pop(key, None)
            reason = reason or (running.reason if running else None)
            if reason == REQUEUED:  # its cluster shrank: it runs again when the cluster has room
                self._store.update(key, requeued, state='queued', pgid=None)
                logger.info('job %s requeued: its cluster was resized', key)
            elif reason != 'deleted':  # a deleted job's record goes away with it
                self._record_end(key, exit_code, reason, errors)
        if running is not None:
            running.done.set()
        self._wake.set()

    def _give_gpus(self, key, plan, env, cluster_body):
        """Each node's processes its node's GPUs (an mpirun's ranks, all of the job's); AZ_BATCHAI_NUM_GPUS: the
        GPUs of one node of the cluster's VM size."""
        per_node = gpus_per_node(cluster_body['properties'].get('vmSize'), len(self._gpus or ()))
        env['AZ_BATCHAI_NUM_GPUS'] = str(per_node)
        if self._gpus is None:
            return
        with self._lock:
            devices = self._held[key].gpus
        # Only the job's own devices: the GPUs Batch AI would have given it, and no others.
        env['CUDA_VISIBLE_DEVICES'] = ','.join(devices)
        if len(plan.nodes) > 1:
            for process in plan.processes:
                if process.role != 'mpi':
                    own = devices[process.node * per_node:(process.node + 1) * per_node]
                    process.env['CUDA_VISIBLE_DEVICES'] = ','.join(own)

    @staticmethod
    def _main_step(plan, env, layout):
        """(command line, environment, stdout path, stderr path) of the job's toolkit: its one process as it is,
        or launcher.py running its processes (its own output, if any, in the job's folder)."""
        out_dir = layout.stdouterr_dir
        if len(plan.processes) == 1:
            (process,) = plan.processes
            return (process.command, {**env, **process.env}, os.path.join(out_dir, process.stdout),
                    os.path.join(out_dir, process.stderr))
        plan_file = os.path.join(layout.job_dir, 'launch-plan.json')
        with open(plan_file, 'w', encoding='utf-8') as f:
            f.write(plan.to_json())
        line = 'exec {} -I {} run {} {} local'.format(*(shlex.quote(a) for a in (
            sys.executable, launcher.__file__, plan_file, out_dir)))
        return (line, env, os.path.join(layout.job_dir, 'launcher-stdout.txt'),
                os.path.join(layout.job_dir, 'launcher-stderr.txt'))

    def _run_step(self, key, line, env, cwd, out_path, err_path, deadline):
        """Run one bash command line as its own process group; return (exit code, stop reason or None)."""
        with self._lock:
            running = self._held[key]
            running.launching = True
        # (a process that cannot start ends the job, so `launching` is not reset then: a stop has nothing to signal)
        with open(out_path, 'ab') as out, open(err_path, 'ab') as err:
            proc = subprocess.Popen(['bash', '-c', line], cwd=cwd, env=env, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        with self._lock:
            running.proc = proc
            # Stopped before this step started: killed at once (its command never meant to run); stopped while it
            # was being started: the SIGTERM it was due, its grace running from the stop.
            stop_now = None if running.reason is None else (signal.SIGTERM if running.term_due else signal.SIGKILL)
            running.launching = running.term_due = False
        try:
            self._store.update(key, pgid=proc.pid)
        except Exception as ex:  # pylint: disable=broad-except
            if not is_disk_full(ex):  # recovery finds the group by the job's marker anyway
                _signal_group(proc.pid, signal.SIGKILL)
                raise
        if stop_now:
            _signal_group(proc.pid, stop_now)
        reason = None
        while True:
            try:
                exit_code = proc.wait(timeout=POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                pass
            if reason is None and time.monotonic() >= deadline:
                self.kill(key, 'wallclock')
            with self._lock:
                reason = running.reason
                kill_at = running.kill_at
            if kill_at is not None and time.monotonic() >= kill_at:
                _signal_group(proc.pid, signal.SIGKILL)
        # Whatever the job left behind in its group (background children) ends with it, as on a Batch AI node.
        _signal_group(proc.pid, signal.SIGKILL)
        with self._lock:
            reason = running.reason
        return exit_code, reason

    def _record_end(self, key, exit_code, reason, errors=()):
        """Record how a job ended. On a full disk the end is kept in memory, answered as if recorded (so a wait
        ends and no job looks running without a process), and written as soon as the disk has room again."""
        errors = list(errors)
        if reason:
            errors.append(_error(reason))
        state = 'succeeded' if exit_code == 0 and not errors else 'failed'
        finish = ending(state, exit_code, errors)
        try:
            self._store.update(key, finish, state=state, pgid=None)
        except Exception as ex:  # pylint: disable=broad-except
            if not is_disk_full(ex):
                raise
            logger.warning('job %s %s; the disk is full: recorded once there is room', key, state)
            with self._lock:
                self._unrecorded[key] = (finish, state)
            return
        logger.info('job %s %s (exit code %s%s)', key, state, exit_code, ', ' + reason if reason else '')

    def _record_unrecorded(self):
        """Write the ends kept in memory while the disk was full (each stays kept until its write succeeds)."""
        with self._lock:
            pending = list(self._unrecorded.items())
        for key, (finish, state) in pending:
            try:
                self._store.update(key, finish, state=state, pgid=None)
            except Exception as ex:  # pylint: disable=broad-except
                if is_disk_full(ex):
                    return
                raise
            with self._lock:
                self._unrecorded.pop(key, None)
            logger.info('job %s %s (recorded now that the disk has room)', key, state)

    def view(self, key, body):
        """A job's body as answered: with its end applied when that end is still kept in memory (a full disk)."""
        with self._lock:
            pending = self._unrecorded.get(key)
        if pending is not None:
            pending[0](body)
        return body

    def has_unrecorded(self):
        return bool(self._unrecorded)

    def fail_queued(self, key, reason):
        """Move a queued job straight to failed (terminate of a job that never started); False if not queued."""
        with self._lock:
            row = self._store.get(key)
            if row is None or row['state'] != 'queued':
                return False
            self._record_end(key, None, reason)
            return True
