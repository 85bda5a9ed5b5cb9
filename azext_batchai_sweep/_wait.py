# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""`--wait` (submit, status, resubmit): block until the sweep's jobs have finished, then exit JOBS_FAILED for a failed
job or one terminated by someone else, TIMEOUT for jobs still unfinished at --timeout.
"""
from knack.log import get_logger

from ._command_context import retry_settings
from ._errors import core_errors
from ._output import Progress, fail_after_output, listed as _listed
from ._params import DEFAULT_MAX_RETRIES
from ._run_view import RunView
from ._scheduler_view import waiting_reader_of

logger = get_logger(__name__)


def wait_for_sweep(cmd, client, identity, interval, job_names=None, timeout=None, max_retries=DEFAULT_MAX_RETRIES,
                   run_view=None):
    """Block until the jobs have finished; after the output, a failed job or one terminated by someone else (not by a
    `sweep run`'s decision) makes the command exit JOBS_FAILED, jobs still unfinished at --timeout exit TIMEOUT.
    `run_view`: the caller's RunView, when it shows the run's decisions too (read once)."""
    from ._exit_codes import JobsFailedError, SweepTimeoutError
    from ._output import wait_line_period
    from .core.service.status import unfinished, wait_for_jobs
    with core_errors(), Progress(cmd, 'Waiting for the jobs', period=wait_line_period(interval),
                                 waiting=waiting_reader_of(cmd, client, identity)) as progress:
        status = wait_for_jobs(client, identity.resource_group, identity.workspace, identity.experiment,
                               sweep_name=identity.name, job_names=job_names, interval=interval, progress=progress,
                               progress_rows=True, timeout=timeout, retry=retry_settings(max_retries))
    counts = ', '.join('{} {}'.format(n, state) for state, n in status['counts'].items() if n) or 'no jobs'
    if status.get('timedOut'):
        busy = unfinished(status)
        logger.warning('Sweep %s not finished after %gs: %s', identity.name, timeout, counts)
        fail_after_output(cmd.cli_ctx, SweepTimeoutError(
            'Sweep {} did not finish within --timeout {:g}s: {}'.format(identity.name, timeout, '; '.join(
                '{} {}: {}'.format(len(names), state, _listed(names)) for state, names in busy.items())),
            recommendation='Wait longer with "az batchai sweep status {} --wait --timeout SECONDS", or stop it with '
                           '"az batchai sweep stop {} --yes".'.format(identity.args(), identity.args())))
        return status
    logger.warning('Sweep %s finished: %s', identity.name, counts)
    failed = [row['name'] for row in status['jobs'] if row['state'] == 'failed']
    stopped = stopped_by_someone_else(status['jobs'], run_view or RunView(cmd, client, identity))
    if failed or stopped:
        what = '; '.join(part for part in (
            '{} job(s) of sweep {} failed: {}'.format(len(failed), identity.name, _listed(failed)) if failed else '',
            '{} job(s) of sweep {} were terminated before they finished: {}'.format(
                len(stopped), identity.name, _listed(stopped)) if stopped else '') if part)
        fail_after_output(cmd.cli_ctx, JobsFailedError(
            what,
            recommendation=failed_recommendation(identity, (failed or stopped)[0],
                                                 state='failed' if failed else 'terminated')))
    return status


def stopped_by_someone_else(rows, run_view):
    """The terminated jobs among `rows` that no `sweep run` decision terminated (its journal here, else what its jobs
    carry on the service): stopped by `az batchai sweep stop` or by hand, so they did not finish their work."""
    terminated = [row['name'] for row in rows if row['state'] == 'terminated']
    if not terminated:
        return []
    decided = run_view.get()[0]
    return [name for name in terminated if (decided.get(name) or {}).get('decision') is None]


def failed_recommendation(identity, job, state='failed'):
    return ('See why with "az batchai sweep status {} --job {} --tail 50"; run the {} jobs again with '
            '"az batchai sweep resubmit {}{}".'.format(identity.args(), job, state, identity.args(),
                                                       '' if state == 'failed' else ' --state ' + state))
