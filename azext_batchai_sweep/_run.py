# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""`sweep run`'s plumbing on the command side: the sweep file, the job bodies' secrets, the journal's place and the
progress lines; the loop itself is core/tuning/loop.py."""
import sys
import time

from knack.log import get_logger

logger = get_logger(__name__)

# Without a terminal (CI logs, scripts), a progress line at most this often unless something was decided.
QUIET_SECONDS = 30.0


def run_journal_path(cli_ctx, resource_group, workspace, experiment, sweep):
    """The run's journal: next to resubmit's, one file per sweep (core/tuning/loop.py: a cache, never the truth)."""
    from ._targeting import journal_path
    return journal_path(cli_ctx, resource_group, workspace, experiment, sweep)[:-len('.jsonl')] + '.run.json'


def load_run_definition(cmd, spec, *, template, cluster, storage_account_name, sampling, count, seed,
                        recorded_seed=None):
    """The sweep file for `run`. Without a seed in the file or on the command line, the seed is the one the sweep's
    jobs on the service carry (BATCHAI_SWEEP_SEED): a resumed run must draw what the killed one drew."""
    from ._errors import core_errors
    from ._local_storage import local_file_storage
    from .core.spec.sweepfile import load_sweep_file
    with core_errors():
        definition = load_sweep_file(spec, template_path=template, sampling=sampling, count=count, seed=seed,
                                     storage_account_name=storage_account_name, cluster_id=cluster,
                                     file_storage=local_file_storage(cmd.cli_ctx), adaptive=True,
                                     recorded_seed=recorded_seed)
    if definition.seed_origin == 'drawn':
        logger.warning('Sweep seed: %d (drawn; the jobs record it, so a re-run resumes with it)',
                       definition.sampling['seed'])
    return definition


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
    when stderr is not a terminal)."""

    def __init__(self):
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, line):
        now = time.monotonic()
        if line.startswith('Sweep ') and not self.tty and now - self.last < QUIET_SECONDS:
            return
        if line.startswith('Sweep '):
            self.last = now
        logger.warning(line)
