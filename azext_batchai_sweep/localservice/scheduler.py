"""The one small interface between the ARM layer and whatever runs the jobs.

The ARM routes (arm_api.py) only ever talk to a `Scheduler`: they store a job as `queued` and `wake()` it (submit);
they read what it runs (`used_slots`, `is_running`: poll); they `kill()` or `fail_queued()` a job (terminate); and
the service calls `recover()` once at start (re-attach). Each implementation records the job's execution state and
outcome in the store itself. Two exist:

- `runner.Runner` (`--scheduler processes`, the default): jobs are process groups on this machine;
- `slurm.scheduler.SlurmScheduler` (`--scheduler slurm`): jobs are Slurm batch jobs (sbatch, squeue, scancel).
"""
import abc

# Why a job ended without its own exit code deciding: executionInfo.errors[].code and message.
REASONS = {
    'terminated': ('JobTerminated', 'The job was terminated by the user.'),
    'deleted': ('JobDeleted', 'The job was deleted while it was running.'),
    'wallclock': ('MaxWallClockTimeExceeded', 'The job ran longer than its constraints.maxWallClockTime.'),
    'stopped': ('ServiceStopped', 'The local Batch AI service was stopped while the job was running.'),
    'crashed': ('ServiceInterrupted', 'The local Batch AI service died while the job was running; '
                                      'the job was marked failed and its processes killed at the next start.'),
    'cluster': ('ClusterDeleted', 'The cluster of the job was deleted.'),
}


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

    # Not abstract: only a scheduler that can hold a job's end in memory (the processes runner, while the disk is
    # full) overrides these two; the ARM layer asks every scheduler.
    def view(self, key, body):  # pylint: disable=unused-argument
        """A job's body as answered, with any end the scheduler holds but has not yet recorded applied."""
        return body

    def has_unrecorded(self):
        """True while some job's end is held in memory, not yet in the store."""
        return False
