"""Status of a sweep and waiting for it to finish, from paged listings of the service only."""
import logging
import time

from ..errors import ServiceUnreachableError
from .identity import sweep_jobs
from .listing import FINISHED_STATES, STATES, job_summary
from .retry import RetrySettings, Stopped, describe_error, is_retryable

logger = logging.getLogger(__name__)


def list_sweep_jobs(client, resource_group, workspace, experiment, sweep_name=None, state=None, job_names=None, *,
                    retry=None, should_stop=None):
    """The experiment's jobs (ListedJobs), restricted to one sweep, one execution state and/or given names
    (core/service/identity.py's sweep_jobs: a missing workspace or experiment is a NotFoundError naming it)."""
    return sweep_jobs(client, resource_group, workspace, experiment, sweep_name, state=state, job_names=job_names,
                      retry=retry, should_stop=should_stop)


def summarize(jobs) -> dict:
    """{counts: {state: n}, jobs: [row]} for SDK Job models, rows sorted by name."""
    return summarize_rows(sorted((job_summary(job) for job in jobs), key=lambda row: row['name']))


def summarize_rows(rows, with_missing=False) -> dict:
    """{counts: {state: n}, jobs: rows} of status rows; `with_missing` counts the 'missing' state too."""
    counts = dict.fromkeys(STATES + (('missing',) if with_missing else ()), 0)
    for row in rows:
        counts[row['state']] = counts.get(row['state'], 0) + 1
    return {'counts': counts, 'jobs': rows}


def sweep_status(client, resource_group, workspace, experiment, sweep_name=None, state=None, job_names=None, *,
                 retry=None):
    """{counts: {queued, running, terminating, succeeded, failed}, jobs: [{name, state, exitCode, startTime, endTime,
    durationSeconds, parameters}]}; counts cover the selected jobs."""
    return summarize(list_sweep_jobs(client, resource_group, workspace, experiment, sweep_name=sweep_name,
                                     state=state, job_names=job_names, retry=retry))


MAX_FAILED_ROUNDS = 3


def wait_for_jobs(client, resource_group, workspace, experiment, sweep_name=None, job_names=None, *, interval=10,
                  progress=None, timeout=None, should_stop=None, retry=None, clock=time.monotonic, sleep=time.sleep,
                  max_failed_rounds=MAX_FAILED_ROUNDS, progress_rows=False):
    """Block until every selected job has finished; returns the last status plus `finished`, `missing`, `timedOut`.

    Each round is one paged listing (with `retry`'s retries). A round whose listing still fails is logged and the
    wait goes on, since a sweep's progress is not lost to one bad minute; but `max_failed_rounds` failed rounds in a
    row mean the service has stopped answering, and the wait ends with the last error (never an endless loop). On
    timeout (`timedOut` True) or should_stop it returns with finished False. Named jobs that are not on the service
    are reported in `missing` rather than waited for forever. progress(done, total, counts) is called after each
    successful round (progress_rows: progress(done, total, counts, rows), with the status rows).
    """
    retry = retry or RetrySettings()
    deadline = clock() + timeout if timeout is not None else None
    status = {'counts': dict.fromkeys(STATES, 0), 'jobs': []}
    missing = []
    failed_rounds = 0
    timed_out = False
    while True:
        try:
            jobs = list_sweep_jobs(client, resource_group, workspace, experiment, sweep_name=sweep_name,
                                   job_names=job_names, retry=retry, should_stop=should_stop)
        except Stopped:
            break
        except Exception as exc:  # pylint: disable=broad-except
            if not is_retryable(exc):
                raise
            failed_rounds += 1
            if failed_rounds >= max_failed_rounds:
                raise ServiceUnreachableError(
                    'the Batch AI service stopped answering while waiting for the jobs ({} listings in a row failed '
                    'after their retries): {}'.format(failed_rounds, describe_error(exc))) from exc
            logger.warning('listing jobs failed (%s); still waiting', describe_error(exc))
        else:
            failed_rounds = 0
            status = summarize(jobs)
            found = {row['name'] for row in status['jobs']}
            missing = sorted(set(job_names) - found) if job_names is not None else []
            done = sum(1 for row in status['jobs'] if row['state'] in FINISHED_STATES)
            if progress is not None:
                progress(done, len(status['jobs']), status['counts'], *([status['jobs']] if progress_rows else []))
            if done == len(status['jobs']):
                return dict(status, finished=True, missing=missing, timedOut=False)
        if should_stop is not None and should_stop():
            break
        pause = interval
        if deadline is not None:
            pause = min(pause, deadline - clock())
            if pause <= 0:
                timed_out = True
                break
        sleep(pause)
    return dict(status, finished=False, missing=missing, timedOut=timed_out)


def unfinished(status):
    """{state: [names]} of the jobs of a status that are still queued, running or terminating."""
    busy = {}
    for row in status['jobs']:
        if row['state'] not in FINISHED_STATES:
            busy.setdefault(row['state'], []).append(row['name'])
    return busy
