# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""`sweep run`'s plumbing on the command side: the sweep file, the job bodies' secrets, the journal's place and the
progress lines; the loop itself is core/tuning/loop.py."""
import os
import sys
import time
from contextlib import contextmanager

from knack.log import get_logger

logger = get_logger(__name__)

# Without a terminal (CI logs, scripts), a progress line at most this often unless something was decided.
QUIET_SECONDS = 30.0


def run_journal_path(cli_ctx, resource_group, workspace, experiment, sweep):
    """The run's journal: next to resubmit's, one file per sweep (core/tuning/loop.py: a cache, never the truth)."""
    from ._targeting import journal_path
    return journal_path(cli_ctx, resource_group, workspace, experiment, sweep)[:-len('.jsonl')] + '.run.json'


def load_run_definition(cmd, spec, *, template, cluster, storage_account_name, sampling, count, seed,
                        recorded_seed=None, max_total_jobs=None):
    """The sweep file for `run`. Without a seed in the file or on the command line, the seed is the one the sweep's
    jobs on the service carry (BATCHAI_SWEEP_SEED): a resumed run must draw what the killed one drew."""
    from ._errors import core_errors
    from ._local_storage import local_file_storage
    from .core.spec.sweepfile import load_sweep_file
    with core_errors('run'):
        definition = load_sweep_file(spec, template_path=template, sampling=sampling, count=count, seed=seed,
                                     storage_account_name=storage_account_name, cluster_id=cluster,
                                     file_storage=local_file_storage(cmd.cli_ctx), adaptive=True,
                                     recorded_seed=recorded_seed, max_total_jobs=max_total_jobs)
    if definition.seed_origin == 'drawn':
        logger.warning('Sweep seed: %d (drawn; the jobs record it, so a re-run resumes with it)',
                       definition.sampling['seed'])
    from .core.tuning.handoff import handoff_warnings
    for warning in handoff_warnings(definition):
        logger.warning('%s: %s (docs/sweep-run.md, "Where a promoted job finds its checkpoint")', spec, warning)
    from .core.tuning.objectives_settings import first_objective_note
    note = first_objective_note(definition)
    if note:
        logger.warning('%s: %s (docs/sweep-objectives.md)', spec, note)
    return definition


def check_before_run(cmd, client, identity, definition, spec, retry):
    """What would make the run fail or take over another sweep, found before its first request that changes
    anything (nothing is created, and there is nothing to resume): a missing cluster, as create and submit name it
    (exit 3); jobs under the sweep's name that this sweep file would not make (exit 6, core/tuning/takeover.py)."""
    from azure.cli.core.azclierror import InvalidArgumentValueError
    from ._errors import core_errors
    from .core.service.identity import experiment_jobs
    from .core.service.listing import being_deleted, sweep_name_of
    from .core.service.preflight import check_cluster, cluster_id_of
    from .core.tuning.loop import JobFactory, Journal
    from .core.tuning.takeover import differences
    with core_errors():
        check_cluster(client, cluster_id_of(definition.template), retry=retry)
        jobs = [job for job in experiment_jobs(client, identity.resource_group, identity.workspace,
                                               identity.experiment, retry=retry)
                if sweep_name_of(job) == identity.name and not being_deleted(job)]
        changes = differences(jobs, JobFactory(definition, identity.name))
    if not changes:
        return
    journal_path = run_journal_path(cmd.cli_ctx, identity.resource_group, identity.workspace, identity.experiment,
                                    identity.name)
    earlier = Journal(journal_path).data.get('spec') if os.path.exists(journal_path) else None
    plan_file = '{}.plan.jsonl'.format(identity.name)
    made_by = ' (made by {})'.format(earlier) if earlier else (
        ' (planned in {})'.format(plan_file) if os.path.exists(plan_file) else '')
    raise InvalidArgumentValueError(
        'Sweep {}{} already has {} job(s) that {} would not make: {}. A run never takes over another sweep: its jobs '
        'are kept as they are, and status, metrics and report go on showing them as they were made and '
        'judged'.format(identity.name, made_by, len(jobs), spec, '; '.join(changes)),
        recommendation='Run {} as a new sweep: the same command with another name (-n {}-2, say); or delete sweep {} '
                       'first ("az batchai sweep delete {} --yes"), then run the same command '
                       'again.'.format(spec, identity.name, identity.name, identity.args()))


def first_failure(client, identity, retry):
    """(name, what the service says of it: exit code and errors) of the sweep's job that failed first; (None, '')
    when none failed."""
    from ._errors import core_errors
    from .core.service.identity import sweep_jobs
    with core_errors():
        failed = sweep_jobs(client, identity.resource_group, identity.workspace, identity.experiment, identity.name,
                            state='failed', retry=retry)
    if not failed:
        return None, ''
    def info(job):
        return getattr(job, '_execution_info', None) or {}  # the listing's raw executionInfo

    job = min(failed, key=lambda j: (info(j).get('endTime') or '', j.name))
    said = ['exit code {}'.format(info(job)['exitCode'])] if info(job).get('exitCode') is not None else []
    for error in info(job).get('errors') or ():
        if isinstance(error, dict):
            said.append(': '.join(str(part) for part in (error.get('code'), error.get('message')) if part))
    return job.name, '; '.join(said) or 'the service gives no reason'


# A grid run lists each parameter's values once (the configurations themselves are walked, never listed).
MAX_LISTED_VALUES = 1000000


def check_run_size(definition, limits, max_jobs):
    """Refuse, before any request, a grid or random run of more than max_jobs jobs that no limit bounds: its size is
    counted, never listed (a parameter of 10^12 values is refused in microseconds). With maxTotalJobs the run
    submits that many at most, drawing them lazily, so any grid may be run a slice at a time."""
    from azure.cli.core.azclierror import InvalidArgumentValueError
    from ._errors import core_errors
    from .core.spec.sweep import ParameterSweep
    if definition.sampling['type'] not in ('grid', 'random'):
        return
    if definition.sampling['type'] == 'grid':
        with core_errors():
            counts = [(spec.name, spec.count()) for spec in definition.parameters]
        name, most = max(counts, key=lambda item: item[1])
        if most > MAX_LISTED_VALUES:  # a grid run lists each parameter's values (never their product)
            raise InvalidArgumentValueError(
                'The parameter {} has {} values, more than the {} a grid run lists'.format(name, most,
                                                                                          MAX_LISTED_VALUES),
                recommendation='Give it fewer values (a larger step, fewer numValues), or use --sampling random.')
    if limits.max_total_jobs is not None:
        return
    with core_errors():
        size = ParameterSweep(definition.parameters).grid_size() if definition.sampling['type'] == 'grid' \
            else definition.sampling['count']
    if size > max_jobs:
        raise InvalidArgumentValueError(
            'The sweep has {} jobs, more than {} that a run submits without a limit'.format(size, max_jobs),
            recommendation='Give --max-total-jobs (or limits.maxTotalJobs) to run that many, or a part of them.')


def service_seed(client, identity, retry):
    """The seed recorded in the sweep's jobs on the service, or None (a new sweep)."""
    def read():
        from .core.service.identity import experiment_jobs, recorded_seed
        from .core.service.listing import select_jobs
        jobs = experiment_jobs(client, identity.resource_group, identity.workspace, identity.experiment,
                               retry=retry)
        return recorded_seed(select_jobs(jobs, sweep_name=identity.name))
    return read


def body_preparer(cli_ctx):
    """Job bodies as submit sends them: `$env:NAME` secrets resolved, storage mounts given their key."""
    from ._submission import fill_mount_credentials, storage_key
    from .core.spec.plan import resolve_secret_references
    key = storage_key(cli_ctx)

    def prepare(body):
        body = resolve_secret_references(body)
        fill_mount_credentials(body, key)
        return body
    return prepare


class ProgressLines:
    """Progress on stderr: every decision, and the sweep's counts when they change (at most every QUIET_SECONDS
    when stderr is not a terminal). `repeat`: how often the run says again why its queued jobs wait (without a
    terminal, every QUIET_SECONDS; at a terminal only when it changes)."""

    def __init__(self):
        self.tty = sys.stderr.isatty()
        self.last = 0.0
        self.repeat = None if self.tty else QUIET_SECONDS

    def __call__(self, line):
        now = time.monotonic()
        if line.startswith('Sweep ') and not self.tty and now - self.last < QUIET_SECONDS:
            return
        if line.startswith('Sweep '):
            self.last = now
        logger.warning(line)


# ---- a run that ends early: say what still runs, and (--stop-on-exit) stop it ------------------------------------

class Interrupted(BaseException):
    """A signal arrived during the run. A BaseException, as KeyboardInterrupt: no retry loop's `except Exception`
    may take it for a failed request and go on."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


# Ctrl-C, `kill`/`timeout`/a CI runner's cancel, and a closed terminal or SSH session.
SIGNALS = ('SIGINT', 'SIGTERM', 'SIGHUP')
# A second signal this soon after the first is the same one delivered twice (to the command and to its group).
REPEAT_GRACE_SECONDS = 1.0


@contextmanager
def signals_interrupt():
    """Inside the block, SIGINT, SIGTERM and SIGHUP raise Interrupted. From the first one on, a second signal ends the
    process at once (with the shell's 128 + signal) while the first one's cleanup runs, unless it comes within
    REPEAT_GRACE_SECONDS of the first: `timeout` (and CI runners that signal the whole process group) deliver the same
    signal to the command twice at once, and that echo must not cut short the cleanup the first one started."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set in the main thread (az runs commands there)
        return
    signals = [getattr(signal, name) for name in SIGNALS if hasattr(signal, name)]
    arrived = []  # (signal, when) of the first one

    def repeated(signum, _frame):
        if time.monotonic() - arrived[0][1] < REPEAT_GRACE_SECONDS:
            return  # the first signal's echo
        for number in signals:
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    def handler(signum, _frame):
        for number in signals:
            signal.signal(number, repeated)
        arrived.append((signum, time.monotonic()))
        raise Interrupted(signum)
    previous = {number: signal.signal(number, handler) for number in signals}
    try:
        yield
    finally:
        if not arrived:
            for number, action in previous.items():
                signal.signal(number, action)


def resume_command():
    """The command line of this run, to paste: run again, it resumes from the jobs on the service."""
    import shlex
    return ' '.join(['az'] + [shlex.quote(arg) for arg in sys.argv[1:]])


def unsteered_jobs(cli_ctx, identity):
    """(a fresh client, the sweep's queued and running jobs' names), or (client, None) when they cannot be listed.
    A fresh client: the run's may have been interrupted in the middle of a request."""
    from ._targeting import batchai_client
    from .core.service.identity import sweep_jobs
    from .core.service.listing import state_of
    from .core.service.retry import RetrySettings
    try:
        client = batchai_client(cli_ctx)
        jobs = sweep_jobs(client, identity.resource_group, identity.workspace, identity.experiment, identity.name,
                          retry=RetrySettings(max_retries=2))
    except Exception as ex:  # pylint: disable=broad-except  # the run is ending anyway: say so, do not hide why
        logger.warning('The jobs of sweep %s could not be listed: %s', identity.name, ex)
        return None, None
    return client, sorted(job.name for job in jobs if state_of(job) in ('queued', 'running'))


def stop_unsteered(client, identity):
    """Terminate the sweep's queued and running jobs (--stop-on-exit), waiting half a minute at most for them to end:
    (the names stopped, the names still queued, running or stopping)."""
    from .core.service.retry import RetrySettings
    from .core.service.stop import stop_jobs
    try:
        outcome = stop_jobs(client, identity.resource_group, identity.workspace, identity.experiment, identity.name,
                            wait=True, timeout=30.0, retry=RetrySettings(max_retries=2))
    except Exception as ex:  # pylint: disable=broad-except
        logger.warning('The jobs of sweep %s could not be stopped: %s', identity.name, ex)
        return [], None
    left = sorted([item['job'] for item in outcome['failed']] + list(outcome['stillStopping']))
    return sorted(name for name in outcome['stopped'] if name not in left), left


def remember_stopped_on_exit(cli_ctx, identity, names):
    """Note in the run's journal the jobs --stop-on-exit stops: they were stopped by the run's end, not judged, so
    the resumed run runs them again instead of counting their unfinished steps as saved."""
    from .core.tuning.loop import STOPPED_ON_EXIT, Journal
    journal = Journal(run_journal_path(cli_ctx, identity.resource_group, identity.workspace, identity.experiment,
                                       identity.name))
    owed = journal.data.setdefault(STOPPED_ON_EXIT, [])
    owed.extend(name for name in names if name not in owed)
    try:
        journal.save()
    except OSError as ex:
        logger.warning('The run journal could not be written (%s): a resumed run will not re-run %s', ex,
                       ', '.join(names))


def ended_early(cli_ctx, identity, why, stop_on_exit):
    """What a run that ends early says on stderr: the jobs left queued or running (after stopping them with
    --stop-on-exit) and the commands that stop or resume them. Returns (message, recommendation)."""
    from ._output import listed
    client, busy = unsteered_jobs(cli_ctx, identity)
    stop = 'az batchai sweep stop {} --yes'.format(identity.args())
    resume = resume_command()
    if busy and stop_on_exit:
        # Kept before they are stopped: the resumed run re-runs these jobs (core/tuning/loop.py, stoppedOnExit).
        remember_stopped_on_exit(cli_ctx, identity, busy)
        stopped, left = stop_unsteered(client, identity)
        left = busy if left is None else left
        message = 'Sweep {}: the run ended early ({}); --stop-on-exit stopped its {} queued or running job(s): {}'\
            .format(identity.name, why, len(stopped), listed(stopped, 20))
        if left:
            message += '; {} job(s) still queued or running: {}'.format(len(left), listed(left, 20))
            return message, 'Stop them with "{}", or resume the run with "{}".'.format(stop, resume)
        return message, 'Resume the run with "{}" (it goes on from the jobs on the service).'.format(resume)
    if busy:
        return ('Sweep {}: the run ended early ({}) with {} job(s) still queued or running, now unsteered: {}'.format(
            identity.name, why, len(busy), listed(busy, 20)),
            'Stop them with "{}", or resume the run with "{}". With --stop-on-exit (limits.stopOnExit) a run '
            'stops them itself.'.format(stop, resume))
    if busy is None:
        return ('Sweep {}: the run ended early ({}); its jobs could not be listed and may still run'.format(
            identity.name, why), 'Stop them with "{}", or resume the run with "{}".'.format(stop, resume))
    return ('Sweep {}: the run ended early ({}); no job of the sweep is queued or running'.format(identity.name, why),
            'Resume the run with "{}".'.format(resume))
# `run --plan-only` lists at most this many of the first jobs.
FIRST_JOBS = 20


def plan_run(definition, identity, limits):
    """`run --plan-only`: the sweep file checked as `run` checks it, and the first jobs `run` would submit (names
    and values), without a service. The samplers are pure functions of the seed and the jobs so far, so the first
    suggestions are known for every sampling type (Bayesian starts with random ones; Hyperband with the
    configurations of its first rung)."""
    from .core.tuning.loop import JobFactory
    from .core.tuning.samplers import make_sampler
    goal = definition.objective['goal'] if definition.objective else 'max'
    bounds = [bound for bound in (limits.max_concurrent_jobs, limits.max_total_jobs) if bound]
    count = min(bounds + [FIRST_JOBS])
    factory = JobFactory(definition, identity.name)
    warm_start = _plan_warm_start(definition)
    first = [{'name': factory.name(s), 'parameters': factory.values(s), 'note': s.note}
             for s in make_sampler(definition, goal, limits).suggest([], count)]
    if definition.seed_origin == 'drawn':
        logger.warning('Give --seed %d (or sampling.seed) to `run` to submit exactly these jobs: without it, `run` '
                       'draws its own seed', definition.sampling['seed'])
    logger.warning('Sweep file %s is valid for `sweep run`; the first %d job(s) it submits are listed',
                   definition.source, len(first))
    return {
        'sweep': identity.name,
        'resourceGroup': identity.resource_group,
        'workspace': identity.workspace,
        'experiment': identity.experiment,
        'valid': True,
        'sampling': definition.sampling,
        'objective': definition.objective,
        'limits': limits.as_dict(),
        'earlyTermination': definition.early_termination,
        'parameters': [spec.name for spec in definition.parameters],
        'firstJobs': first,
        **({'warmStart': warm_start} if warm_start else {}),
    }


def _plan_warm_start(definition):
    """--plan-only's warm start: the results files (read with the sweep file) inherited as `run` inherits them; the
    sweeps named are read from the service by `run` alone. Their sources summary, or None without warmStart."""
    entries = definition.sampling.get('warmStart')
    if not entries:
        return None
    from .core.tuning.warmstart import inherit_for
    files = definition.warm_start_files
    inheritance = inherit_for(definition, [(entry, files[entry]) for entry in entries if entry in files])
    definition.inherited = inheritance.trials
    for line in inheritance.messages():
        logger.warning(line)
    for entry in entries:
        if entry not in files:
            logger.warning('warmStart %s: a sweep, read from the service by `run` (not by --plan-only)', entry)
    return inheritance.sources


def run_limits(definition, max_total_jobs, max_concurrent_jobs, timeout):
    """The run's limits: the options, else the sweep file's."""
    from .core.tuning.controller import Limits
    written = definition.limits
    return Limits(max_total_jobs=max_total_jobs or written.get('maxTotalJobs'),
                  max_concurrent_jobs=max_concurrent_jobs or written.get('maxConcurrentJobs'),
                  timeout_minutes=timeout or written.get('timeoutMinutes'),
                  job_timeout_minutes=written.get('jobTimeoutMinutes'), stop_at=written.get('stopAt'),
                  no_improvement_jobs=written.get('noImprovementJobs'))
