"""Deleting jobs: one DELETE each (no SDK polling), optionally waiting until the job is really gone."""
import logging
import time

from azure.core.exceptions import ResourceNotFoundError

from ..errors import ServiceError
from .parallel import run_parallel
from .retry import NO_SDK_RETRY, RetrySettings, call_with_retries, describe_error, interruptible_sleep
from .status import list_sweep_jobs

logger = logging.getLogger(__name__)

DELETED = 'deleted'
NOT_FOUND = 'notFound'


def wait_until_gone(client, resource_group, workspace, experiment, name, *, retry, interval=1.0, timeout=600.0,
                    should_stop=None, clock=time.monotonic):
    """Poll GET until the job answers 404: a Batch AI delete is a long-running operation, and the name cannot be
    reused while the job is still 'deleting'."""
    deadline = clock() + timeout

    def gone():
        try:
            client.jobs.get(resource_group, workspace, experiment, name, **NO_SDK_RETRY)
            return False
        except ResourceNotFoundError:
            return True

    while not call_with_retries(gone, settings=retry, should_stop=should_stop, what='get job {}'.format(name)):
        if clock() >= deadline:
            raise ServiceError('job {} was still being deleted after {:.0f}s'.format(name, timeout))
        interruptible_sleep(interval, retry, should_stop)


def delete_job(client, resource_group, workspace, experiment, name, *, retry, wait=True, interval=1.0, timeout=600.0,
               should_stop=None) -> str:
    """Delete one job; DELETED, or NOT_FOUND when it was not there. With wait, returns once GET answers 404."""
    def delete():
        try:
            client.jobs.begin_delete(resource_group, workspace, experiment, name, polling=False, **NO_SDK_RETRY)
            return DELETED
        except ResourceNotFoundError:
            return NOT_FOUND

    outcome = call_with_retries(delete, settings=retry, should_stop=should_stop, what='delete job {}'.format(name))
    if wait and outcome == DELETED:
        wait_until_gone(client, resource_group, workspace, experiment, name, retry=retry, interval=interval,
                        timeout=timeout, should_stop=should_stop)
    return outcome


def delete_jobs(client, resource_group, workspace, experiment, sweep_name=None, state=None, job_names=None, *,
                parallel=8, wait=False, progress=None, should_stop=None, retry=None):
    """Delete the selected jobs of an experiment (a sweep's, of one state, and/or the named ones).

    With neither sweep_name nor job_names every job of the experiment matches: callers decide whether to allow it.
    Returns {deleted: [names], notFound: [names], failed: [{job, error}]}; progress(done, total).
    """
    retry = retry or RetrySettings()
    names = [job.name for job in list_sweep_jobs(client, resource_group, workspace, experiment,
                                                 sweep_name=sweep_name, state=state, job_names=job_names,
                                                 retry=retry)]
    result = {DELETED: [], NOT_FOUND: [], 'failed': []}
    if job_names is not None:
        result[NOT_FOUND] = sorted(set(job_names) - set(names))
    done = [0]

    def work(name):
        return delete_job(client, resource_group, workspace, experiment, name, retry=retry, wait=wait,
                          should_stop=should_stop)

    def on_result(name, outcome, exc):
        if exc is not None:
            result['failed'].append({'job': name, 'error': describe_error(exc)})
        else:
            result[outcome].append(name)
        done[0] += 1
        if progress is not None:
            progress(done[0], len(names))

    for name in run_parallel(work, names, parallel=parallel, on_result=on_result, should_stop=should_stop):
        result['failed'].append({'job': name, 'error': 'stopped before deletion'})
    for key in (DELETED, NOT_FOUND):
        result[key].sort()
    return result
