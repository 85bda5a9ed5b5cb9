"""The Slurm scheduler: submit (sbatch), poll (squeue), terminate (scancel), re-attach after a restart.

One background thread does everything: it hands the store's queued jobs to sbatch in Batch AI's order (priority,
then submission; Slurm queues them from there), those queued together with equal resource needs as one job array
(one sbatch for up to 100 jobs: a sweep's jobs arrive within seconds), then polls every job it handed over with
one `squeue -j` call per pass, moving each to running or to its outcome. A job's Slurm id is stored (`sched_id`)
before anything else happens to it, and the batch job is named after the job's uid (an array after a token, and
its folder lists its jobs), so a service killed at any point finds its jobs again: at start it re-attaches to every
job it had submitted (they ran on while it was down) instead of failing them as the processes scheduler must. The
service stopping leaves Slurm jobs running for the same reason.

maxWallClockTime: Slurm gets --time in whole minutes, and the service cancels a job at the exact limit itself.
"""
import concurrent.futures
import contextlib
import datetime
import json
import logging
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field

from ...data.datadir import write_private
from ..gpus import gpus_per_node
from ..jobenv import base_environment
from ...data.stored_spec import job_spec
from ...layout import job_dir
from ..processes.runner import kill_orphaned_groups
from ...resources import job_wall_clock
from ..scheduler import REQUEUED, SubmittingScheduler, error, requeued
from . import mapping
from .commands import SlurmCli, SlurmError

logger = logging.getLogger(__name__)

POLL_SECONDS = 1.0
SUBMIT_BATCH = 100
# sbatch calls in flight at once: each waits mostly on slurmctld's answer (and, on a small login node, on the CPU the
# HTTP side shares), so a few overlap well; Slurm queues them in the order they arrive.
SUBMIT_WORKERS = 4
JOB_NAME_PREFIX = 'batchai-'
ARRAY_NAME_PREFIX = JOB_NAME_PREFIX + 'array-'
EXIT_FILE = 'exit-code'  # in the job's folder: the batch script's own record of how the job's command ended
LAUNCH_SETTINGS_FILE = 'launch-settings.json'  # in the job's folder: what launcher.py plans the job's processes from
ENV_FILE = 'slurm-env'  # in the job's folder, mode 0600: an array task's environment, removed when it starts
ARRAYS_DIR = 'slurm-arrays'  # in the data dir: a folder per job array (links to its jobs' scripts and outputs)
MEMBERS_FILE = 'members'  # in an array's folder: the keys of its jobs, task 0 first
# Variables a job's environment must not carry to sbatch: sbatch reads SBATCH_* (and SLURM_*, SALLOC_*, SRUN_* of an
# enclosing allocation) as options, and SLURM_CONF as the cluster to submit to, so a job's own environmentVariables
# named so would change what it asks for, or where it goes. (The service's own environment never reaches a job at
# all: jobenv.py.) The service then sets SLURM_CONF itself (SlurmCli.environment): the cluster squeue polls.
_SLURM_PREFIXES = ('SLURM_', 'SBATCH_', 'SALLOC_', 'SRUN_')


@dataclass
class _Job:
    """A job handed to Slurm whose end is not recorded yet."""
    slurm_id: str
    cluster: str
    nodes: int
    running: bool = False
    reason: str = None
    deadline: float = None  # wall-clock seconds (time.time()) when maxWallClockTime is reached
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class _Submission:
    """A queued job made ready for sbatch: its folders made, its environment and resource options known."""
    key: str
    spec: dict
    toolkit: str
    layout: object  # layout.JobLayout
    gpus: int
    env: dict
    resources: tuple  # mapping.resource_options: jobs with equal ones can share a job array


def _groups(ready, max_array_size=None):
    """The jobs to submit, in order, as groups sharing one sbatch: those with equal resource options (a job array,
    or one job on its own), at most `max_array_size` (the cluster's MaxArraySize) to a group."""
    groups, by_resources = [], {}
    for job in ready:
        group = by_resources.get(job.resources)
        if group is None or (max_array_size is not None and len(group) >= max_array_size):
            group = by_resources[job.resources] = []
            groups.append(group)
        group.append(job)
    return groups


class SlurmScheduler(SubmittingScheduler):
    name = 'slurm'

    def __init__(self, store, data_dir, cli=None, poll_seconds=POLL_SECONDS):
        super().__init__(store, data_dir)  # self._held: job key -> _Job
        self.cli = cli or SlurmCli()
        self.cluster_info = {}
        self.loop_seconds = poll_seconds  # a pass (submit, then poll) at least this often
        self.poll_count = 0
        self._last_poll = 0.0
        self._arrays = {}  # array token -> keys of its jobs still followed
        self._array_of = {}  # job key -> its array's token

    def connect(self):
        """Check the cluster (SlurmError says what is wrong); return {'cluster', 'partition', 'nodes'}."""
        self.cluster_info = self.cli.check()
        return self.cluster_info

    def describe(self):
        info = {'scheduler': self.name, 'slurmCluster': self.cluster_info.get('cluster'),
                'partition': self.cluster_info.get('partition')}
        if self.cli.conf:
            info['slurmConf'] = self.cli.conf
        if self.cli.account:
            info['account'] = self.cli.account
        return info

    def check_job(self, props, toolkit, cluster_body):
        mapping.check_toolkit(props, toolkit)

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def recover(self):
        """Re-attach to the jobs handed to Slurm before an unclean exit (they may still run, or have ended)."""
        self._recover_arrays()
        for row in self._store.in_states(('queued', 'running', 'terminating', 'deleting')):
            slurm_id = row['sched_id']
            if not slurm_id and row['marker'] and row['state'] == 'queued':
                # Killed between sbatch and storing its answer: the job name finds it.
                found = self.cli.find_by_name(JOB_NAME_PREFIX + row['marker'])
                if found:
                    slurm_id = found[0]
                    self._store.update(row['key'], sched_id=slurm_id)
            if not slurm_id:
                if row['state'] in ('running', 'terminating'):
                    # Left by a processes-scheduler service that died on this data dir: its processes are orphans.
                    kill_orphaned_groups(row)
                    self._record_end(row['key'], 'failed', None, [error(
                        'terminated' if row['state'] == 'terminating' else 'crashed')])
                continue
            if row['state'] == 'deleting':
                self.cli.cancel([slurm_id])
                continue
            full = self._store.get(row['key'])
            body, spec = json.loads(full['body']), json.loads(full['spec'])
            job = _Job(slurm_id=slurm_id, cluster=row['cluster'], nodes=full['node_count'],
                       running=row['state'] in ('running', 'terminating'),
                       reason='terminated' if row['state'] == 'terminating' else None)
            start = (body['properties'].get('executionInfo') or {}).get('startTime')
            if start:
                job.deadline = _timestamp(start) + job_wall_clock(spec).total_seconds()
            self._held[row['key']] = job
            logger.info('re-attached job %s to Slurm job %s (%s)', row['key'], slurm_id, row['state'])
        for row in self._store.in_states(('deleting',), kind=None):
            self._store.delete_tree(row['key'])
        for key in list(self._array_of):  # the folders of arrays with no job followed any more go
            if key not in self._held:
                self._release(key)

    def _recover_arrays(self):
        """Find the arrays submitted before the exit: ids for the jobs whose ids were not stored yet (the array's
        name finds it; an array Slurm never got leaves its jobs queued, to be submitted again), and the folders."""
        root = os.path.join(self._data_dir, ARRAYS_DIR)
        for token in sorted(os.listdir(root)) if os.path.isdir(root) else []:
            try:
                with open(os.path.join(root, token, MEMBERS_FILE), encoding='utf-8') as f:
                    keys = [line for line in f.read().splitlines() if line]
            except OSError:  # killed before the list was written: sbatch never ran
                shutil.rmtree(os.path.join(root, token), ignore_errors=True)
                continue
            self._arrays[token] = set(keys)
            self._array_of.update((key, token) for key in keys)
            rows = [self._store.get(key) for key in keys]
            if any(r is not None and r['state'] == 'queued' and not r['sched_id'] for r in rows):
                found = self.cli.find_array(ARRAY_NAME_PREFIX + token)
                for i, row in enumerate(rows):
                    if found and row is not None and row['state'] == 'queued' and not row['sched_id']:
                        self._store.update(row['key'], sched_id='{}_{}'.format(found, i))

    def stop(self, timeout=10.0):
        """Stop submitting and polling. Slurm jobs run on: the next start re-attaches to them."""
        self._stop_loop(timeout)
        spent = ', '.join('{} {} in {:.2f} s'.format(name, calls, seconds)
                          for name, (calls, seconds) in sorted(self.cli.calls.items()))
        logger.info('Slurm commands run: %s; %d polls', spent, self.poll_count)

    # ---- queries and control from the API ---------------------------------------------------------------------

    def kill(self, key, reason, state=None):
        job = self._mark_killed(key, reason, state)
        if job is None:
            return False
        self.cli.cancel([job.slurm_id])
        self._wake.set()
        return True

    def release_nodes(self, cluster, capacity, requeue):
        """The jobs still pending in Slurm go back to the service's queue first (they hold no node yet, and would
        take one), then the most recently started running ones, until the rest fit in `capacity`."""
        with self._lock:
            jobs = [(key, job) for key, job in self._held.items() if job.cluster == cluster]
        held = sum(job.nodes for _, job in jobs)
        pending = [(key, job) for key, job in reversed(jobs) if not job.running]
        running = [(key, job) for key, job in reversed(jobs) if job.running]
        for key, job in pending + running:
            if held <= capacity:
                break
            self.kill(key, REQUEUED if requeue or not job.running else 'resized')
            held -= job.nodes

    def fail_queued(self, key, reason):
        queued, job = self._unqueue(key, reason)
        if not queued:
            return False
        if job is not None:  # pending in Slurm: it must never start
            self.cli.cancel([job.slurm_id])
            job.done.set()
        self._release(key)
        return True

    # ---- the loop --------------------------------------------------------------------------------------------

    def _pass(self):
        self._submit_queued()
        self._maybe_poll()

    def _maybe_poll(self):
        """Poll when half an interval has passed (wakes come with every create), or a job is being stopped."""
        if time.monotonic() - self._last_poll >= self.loop_seconds * 0.5 or self._any_killed():
            self._last_poll = time.monotonic()
            self._poll()

    def _any_killed(self):
        with self._lock:
            return any(j.reason for j in self._held.values())

    def _submit_queued(self):
        waiting = set()  # clusters whose next job waits for nodes (their size): their later jobs wait too
        while not self._stopping:
            rows = self._store.unsubmitted(SUBMIT_BATCH, waiting)
            if not rows:
                return
            rows = self._admitted(rows, waiting)
            if not rows:
                continue  # every one waits: the next query leaves their clusters out
            # Batch AI order (priority, then creation) is the order the workers take the jobs in, and the order of
            # the tasks in each array.
            with concurrent.futures.ThreadPoolExecutor(SUBMIT_WORKERS, thread_name_prefix='sbatch') as pool:
                ready = [s for s in pool.map(self._ready, [row['key'] for row in rows]) if s is not None]
                list(pool.map(self._submit_group, _groups(ready, self.cluster_info.get('maxArraySize'))))
            self._maybe_poll()  # a long queue to submit does not hold back the states of the jobs already in Slurm

    def _submit_limit(self, cluster):
        """The nodes a cluster's jobs in Slurm may need together, or None: no limit of the service's (a cluster as
        large as the partition, or gone: Slurm's own queue bounds what runs)."""
        row = self._store.get(cluster)
        if row is None:
            return None
        size = self.cluster_capacity(json.loads(row['body'])['properties'])
        return None if self.node_limit is None or size >= self.node_limit else size

    def _admitted(self, rows, waiting):
        """The rows (in order) whose cluster may hold them now: a cluster smaller than the partition (resized, or
        created so) hands Slurm only as many nodes' worth of jobs as its size, counting the jobs it already has
        there, pending or running; the first job that does not fit holds back the cluster's later ones (Batch AI's
        order), whose clusters are added to `waiting`."""
        with self._lock:
            held = {}
            for job in self._held.values():
                held[job.cluster] = held.get(job.cluster, 0) + job.nodes
        limits, admitted = {}, []
        for row in rows:
            cluster = row['cluster']
            if cluster not in limits:
                limits[cluster] = self._submit_limit(cluster)
            limit = limits[cluster]
            if limit is not None:
                if cluster in waiting or held.get(cluster, 0) + row['node_count'] > limit:
                    waiting.add(cluster)
                    continue
                held[cluster] = held.get(cluster, 0) + row['node_count']
            admitted.append(row)
        return admitted

    def _ready(self, key):
        """A queued job made ready for sbatch (folders, environment, options), or None (gone, or failed here)."""
        if self._stopping:
            return None
        row = self._store.get(key)
        if row is None or row['state'] != 'queued' or row['sched_id']:
            return None
        try:
            spec = job_spec(row)  # its secret values, sealed in service.db (stored_spec.py)
            cluster_body = json.loads(self._store.get(row['cluster'])['body'])
            toolkit, layout = self._prepare_job(key, row, spec, cluster_body)
            gpus = gpus_per_node(cluster_body['properties'].get('vmSize'))
            env = self._environment(layout, spec, gpus)
            if spec.get('containerSettings'):
                image = (spec['containerSettings'].get('imageSourceRegistry') or {}).get('image')
                with open(os.path.join(layout.stdouterr_dir, 'stderr.txt'), 'a', encoding='utf-8') as f:
                    f.write('batchai-local: containerSettings ignored (image {!r}): the job runs on the Slurm '
                            'nodes without a container.\n'.format(image))
        except Exception as ex:  # pylint: disable=broad-except
            logger.exception('job %s could not be submitted', key)
            self._fail_unsubmitted(key, 'JobStartFailed', str(ex))
            return None
        return _Submission(key=key, spec=spec, toolkit=toolkit, layout=layout, gpus=gpus, env=env,
                           resources=tuple(mapping.resource_options(spec, toolkit, gpus)))

    def _submit_group(self, group):
        if self._stopping:
            return
        if len(group) > 1 and '\\' in self._data_dir:
            # An array's output pattern needs sbatch's %a, which a data directory holding a backslash turns off.
            for job in group:
                self._submit_group([job])
            return
        if len(group) > 1:
            try:
                ids = self._submit_array(group)
            except SlurmError as ex:
                # A cluster may refuse an array and take the same jobs one by one (MaxArraySize, MaxSubmitJobs...):
                # each job then goes alone, and fails, if at all, with its own sbatch's words.
                logger.warning('sbatch refused a job array of %d jobs (%s); submitting them one by one', len(group),
                               ex)
                for job in group:
                    self._release(job.key)
                for job in group:
                    self._submit_group([job])
                return
            except Exception as ex:  # pylint: disable=broad-except
                logger.exception('jobs %s could not be submitted', ', '.join(job.key for job in group))
                for job in group:
                    self._fail_unsubmitted(job.key, 'JobStartFailed', str(ex))
                return
            for job, slurm_id in zip(group, ids):
                self._follow(job.key, slurm_id)
            return
        (job,) = group
        try:
            options = mapping.sbatch_options(job.spec, job.toolkit, job.gpus, JOB_NAME_PREFIX + job.layout.uid,
                                             job.layout.stdouterr_dir, job.layout.temp_dir)
            slurm_id = self.cli.submit(options, self._write_script(job), job.env)
        except SlurmError as ex:
            # Slurm refused the job (partition, limits, GRES...): it fails with Slurm's own words, never stays queued.
            self._fail_unsubmitted(job.key, 'SlurmSubmitFailed', 'sbatch refused the job: {}'.format(ex))
            return
        except Exception as ex:  # pylint: disable=broad-except
            logger.exception('job %s could not be submitted', job.key)
            self._fail_unsubmitted(job.key, 'JobStartFailed', str(ex))
            return
        self._follow(job.key, slurm_id)

    def _write_script(self, job, env_file=None):
        exit_file = os.path.join(job.layout.job_dir, EXIT_FILE)
        settings = os.path.join(job.layout.job_dir, LAUNCH_SETTINGS_FILE)
        with open(settings, 'w', encoding='utf-8') as f:
            f.write(mapping.launch_settings(job.spec, job.toolkit, job.layout))
        path = os.path.join(job.layout.job_dir, 'slurm-job.sh')
        with open(path, 'w', encoding='utf-8') as f:
            f.write(mapping.batch_script(job.spec, job.toolkit, job.layout, exit_file, settings, env_file))
        return path

    def _submit_array(self, group):
        """Submit jobs with equal resource needs as one job array (one sbatch instead of one each); their Slurm ids.

        The array's folder (data dir/slurm-arrays/<token>) links task i's script and output to the i-th job's, and
        lists the jobs (`members`, written before sbatch) so that a service killed before storing the ids finds
        them by the array's name. Each job's environment travels in a file only the service's user can read, which
        its batch script removes when it starts.
        """
        token = uuid.uuid4().hex[:12]
        array_dir = os.path.join(self._data_dir, ARRAYS_DIR, token)
        os.makedirs(array_dir, mode=0o700)
        with self._lock:
            self._arrays[token] = {job.key for job in group}
            self._array_of.update((job.key, token) for job in group)
        for i, job in enumerate(group):
            env_file = os.path.join(job.layout.job_dir, ENV_FILE)
            write_private(env_file, mapping.environment_file(job.env))
            os.symlink(self._write_script(job, env_file), os.path.join(array_dir, '{}.sh'.format(i)))
            for stream in ('out', 'err'):
                os.symlink(os.path.join(job.layout.stdouterr_dir, 'std{}.txt'.format(stream)),
                           os.path.join(array_dir, '{}.{}'.format(i, stream)))
        write_private(os.path.join(array_dir, MEMBERS_FILE), ''.join(job.key + '\n' for job in group))
        script = os.path.join(array_dir, 'array.sh')
        write_private(script, mapping.array_script(array_dir))
        options = mapping.array_options(list(group[0].resources), ARRAY_NAME_PREFIX + token, array_dir, len(group))
        array_id = self.cli.submit(options, script, self._array_environment())
        logger.debug('jobs %s are Slurm job array %s', ', '.join(job.key for job in group), array_id)
        return ['{}_{}'.format(array_id, i) for i in range(len(group))]

    def _array_environment(self):
        """sbatch's environment for an array: the base every job's environment starts from (no SLURM_* or SBATCH_*
        among its variables), nothing of a job."""
        return self.cli.environment(base_environment())

    def _follow(self, key, slurm_id):
        """Store a submitted job's Slurm id and follow it, or cancel it if it was stopped while sbatch ran."""
        with self._lock:
            row = self._store.get(key)
            keep = row is not None and row['state'] == 'queued'
            if keep:
                self._store.update(key, sched_id=slurm_id)
                self._held[key] = _Job(slurm_id=slurm_id, cluster=row['cluster'], nodes=row['node_count'])
        if not keep:  # terminated or deleted while sbatch ran
            self.cli.cancel([slurm_id])
            self._release(key)
        logger.debug('job %s is Slurm job %s', key, slurm_id)

    def _release(self, key, marker=None):
        """A job left Slurm's hands: remove its environment file if its script never ran, and its array's folder
        once no job of the array is followed."""
        with self._lock:
            token = self._array_of.pop(key, None)
            members = self._arrays.get(token)
            empty = False
            if members is not None:
                members.discard(key)
                empty = not members
                if empty:
                    del self._arrays[token]
        if token is not None:
            if marker is None:
                row = self._store.get(key)
                marker = row['marker'] if row is not None else None
            if marker:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(job_dir(self._data_dir, marker), ENV_FILE))
            if empty:
                shutil.rmtree(os.path.join(self._data_dir, ARRAYS_DIR, token), ignore_errors=True)

    def _environment(self, layout, spec, gpus):
        """The job's environment as the processes scheduler builds it (layout.environment), plus the GPUs of its
        nodes; without variables sbatch would read as options (the nodes' own variables come from launcher.py, in
        the batch script)."""
        env = {k: v for k, v in layout.environment(spec).items() if not k.startswith(_SLURM_PREFIXES)}
        env = self.cli.environment(env)
        env['AZ_BATCHAI_NUM_GPUS'] = str(gpus)
        if gpus:
            env.pop('CUDA_VISIBLE_DEVICES', None)  # Slurm sets it to the job's GRES
        else:
            env['CUDA_VISIBLE_DEVICES'] = ''  # a job without GPUs sees none
        return env

    def _fail_unsubmitted(self, key, code, message):
        with self._lock:
            self._release(key)
            row = self._store.get(key)
            if row is not None and row['state'] == 'queued':
                self._record_end(key, 'failed', None, [{'code': code, 'message': message}])

    def _poll(self):
        with self._lock:
            jobs = dict(self._held)
        if not jobs:
            return
        states = self.cli.states([j.slurm_id for j in jobs.values()])
        self.poll_count += 1
        now = time.time()
        for key, job in jobs.items():
            state, why = states.get(job.slurm_id, (None, None))
            if state in mapping.QUEUED_STATES:
                if why in mapping.UNRUNNABLE_REASONS and job.reason is None:
                    self._fail_unrunnable(key, job, why)
                continue
            if state in mapping.LIVE_STATES:
                if not job.running:
                    self._mark_running(key, job)
                elif job.deadline is not None and now >= job.deadline and job.reason is None:
                    logger.info('job %s reached its maxWallClockTime: cancelling Slurm job %s', key, job.slurm_id)
                    self.kill(key, 'wallclock')
                continue
            self._finish(key, job, state)

    def _fail_unrunnable(self, key, job, why):
        with self._lock:
            if self._held.get(key) is not job:
                return
            del self._held[key]
            self._record_end(key, 'failed', None, [{'code': 'SlurmJobUnrunnable', 'message': (
                'Slurm cannot run the job: {} (pending reason {}); it was cancelled.'.format(
                    mapping.UNRUNNABLE_REASONS[why], why))}])
        self.cli.cancel([job.slurm_id])
        self._release(key)
        job.done.set()

    def _mark_running(self, key, job):
        with self._lock:
            if self._held.get(key) is not job:
                return
            row = self._store.get(key)
            if row is None or row['state'] != 'queued':
                return
            job.running = True
            spec = json.loads(row['spec'])
            job.deadline = time.time() + job_wall_clock(spec).total_seconds()
            self._record_state(key, 'running', started=True)

    def _finish(self, key, job, slurm_state):
        row = self._store.get(key)
        exit_record = None
        nodes = slurm_exit = None
        if row is not None and row['marker']:
            exit_record = mapping.read_exit_file(os.path.join(job_dir(self._data_dir, row['marker']), EXIT_FILE))
        if slurm_state != 'COMPLETED':
            shown = self.cli.show(job.slurm_id) or {}
            slurm_state = slurm_state or shown.get('JobState')
            nodes, slurm_exit = shown.get('NodeList'), shown.get('ExitCode')
        if slurm_state is None:  # Slurm forgot it: the script's own record decides
            slurm_state = 'LOST' if exit_record is None else ('COMPLETED' if exit_record[1] == 0 else 'FAILED')
        with self._lock:
            if self._held.get(key) is not job:
                return  # failed meanwhile (fail_queued)
            del self._held[key]
            # Its leftovers go before its end is recorded: a job answered ended has no environment file left.
            self._release(key, row['marker'] if row is not None else None)
            if job.reason == REQUEUED and row is not None:
                # Its cluster shrank: back to the service's queue, submitted again when the cluster has room.
                self._store.update(key, requeued, state='queued', sched_id=None)
                logger.info('job %s requeued: its cluster was resized (Slurm job %s cancelled)', key, job.slurm_id)
            elif job.reason != 'deleted' and row is not None:
                state, exit_code, errors = mapping.outcome(slurm_state, job.reason, exit_record, slurm_exit, nodes)
                self._record_end(key, state, exit_code, errors)
        job.done.set()
        self._wake.set()


def _timestamp(text):
    return datetime.datetime.strptime(text.rstrip('Z')[:26], '%Y-%m-%dT%H:%M:%S.%f').replace(
        tzinfo=datetime.timezone.utc).timestamp()

