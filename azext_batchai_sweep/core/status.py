"""Status of a sweep and waiting for it to finish, from paged listings of the service only."""
import logging
import time

from .listing import FINISHED_STATES, STATES, job_summary, list_jobs, select_jobs
from .retry import RetrySettings, Stopped, describe_error, is_retryable

logger = logging.getLogger(__name__)


def list_sweep_jobs(client, resource_group, workspace, experiment, sweep_name=None, state=None, job_names=None, *,
                    retry=None, should_stop=None):
    """The experiment's jobs (SDK Job models), restricted to one sweep, one execution state and/or given names."""
    jobs = list_jobs(client, resource_group, workspace, experiment, retry=retry, should_stop=should_stop)
    return list(select_jobs(jobs, sweep_name=sweep_name, state=state, job_names=job_names))


def summarize(jobs) -> dict:
    """{counts: {state: n}, jobs: [row]} for SDK Job models, rows sorted by name."""
    rows = sorted((job_summary(job) for job in jobs), key=lambda row: row['name'])
    counts = dict.fromkeys(STATES, 0)
    for row in rows:
        counts[row['state']] = counts.get(row['state'], 0) + 1
    return {'counts': counts, 'jobs': rows}


def sweep_status(client, resource_group, workspace, experiment, sweep_name=None, state=None, job_names=None, *,
                 retry=None):
    """{counts: {queued, running, terminating, succeeded, failed}, jobs: [{name, state, exitCode, startTime, endTime,
    durationSeconds, parameters}]}; counts cover the selected jobs."""
    return summarize(list_sweep_jobs(client, resource_group, workspace, experiment, sweep_name=sweep_name,
                                     state=state, job_names=job_names, retry=retry))


def wait_for_jobs(client, resource_group, workspace, experiment, sweep_name=None, job_names=None, *, interval=10,
                  progress=None, timeout=None, should_stop=None, retry=None, clock=time.monotonic, sleep=time.sleep):
    """Block until every selected job has succeeded or failed; returns the last status plus `finished`, `missing`.

    Each round is one paged listing. A listing that still fails after its retries is logged and the round is
    simply repeated: the wait keeps going until the deadline instead of losing the sweep's progress. On timeout or
    should_stop it returns with finished False. Named jobs
    that are not on the service are reported in `missing` rather than waited for forever.
    progress(done, total, counts) is called after each successful round.
    """
    retry = retry or RetrySettings()
    deadline = clock() + timeout if timeout is not None else None
    status = {'counts': dict.fromkeys(STATES, 0), 'jobs': []}
    missing = []
    while True:
        try:
            jobs = list_sweep_jobs(client, resource_group, workspace, experiment, sweep_name=sweep_name,
                                   job_names=job_names, retry=retry, should_stop=should_stop)
        except Stopped:
            break
        except Exception as exc:  # pylint: disable=broad-except
            if not is_retryable(exc):
                raise
            logger.warning('listing jobs failed (%s); still waiting', describe_error(exc))
        else:
            status = summarize(jobs)
            found = {row['name'] for row in status['jobs']}
            missing = sorted(set(job_names) - found) if job_names is not None else []
            done = sum(1 for row in status['jobs'] if row['state'] in FINISHED_STATES)
            if progress is not None:
                progress(done, len(status['jobs']), status['counts'])
            if done == len(status['jobs']):
                return dict(status, finished=True, missing=missing)
        if should_stop is not None and should_stop():
            break
        pause = interval
        if deadline is not None:
            pause = min(pause, deadline - clock())
            if pause <= 0:
                break
        sleep(pause)
    return dict(status, finished=False, missing=missing)
