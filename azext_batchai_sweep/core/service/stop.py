"""Stopping a sweep: Batch AI's job terminate operation on each of its queued and running jobs.

Terminate keeps a job and its outputs; Batch AI reports the job failed with the error code JobTerminated, which the
listing shows as 'terminated' (core/service/listing.py), and `resubmit --state terminated` runs it again under its name.
Only the named sweep's jobs are touched (they are found by BATCHAI_SWEEP_NAME, see core/service/identity.py), and
stopping a sweep twice is harmless: a finished job is never terminated.
"""
import logging
import time

from azure.core.exceptions import ResourceNotFoundError

from .identity import sweep_jobs
from .listing import state_of
from .parallel import run_parallel
from .retry import NO_SDK_RETRY, RetrySettings, call_with_retries, describe_error, interruptible_sleep

logger = logging.getLogger(__name__)

STOPPABLE_STATES = ('queued', 'running')
STOPPING_STATES = ('queued', 'running', 'terminating')


def terminate_job(client, resource_group, workspace, experiment, name, *, retry, should_stop=None) -> bool:
    """Ask Batch AI to terminate one job (POST .../terminate, no LRO polling); False when the job is gone."""
    def terminate():
        try:
            client.jobs.begin_terminate(resource_group, workspace, experiment, name, polling=False, **NO_SDK_RETRY)
            return True
        except ResourceNotFoundError:
            return False
    return call_with_retries(terminate, settings=retry, should_stop=should_stop,
                             what='terminate job {}'.format(name))


def wait_until_stopped(client, resource_group, workspace, experiment, sweep_name, names, *, retry, interval=1.0,
                       timeout=600.0, should_stop=None, clock=time.monotonic):
    """Poll the sweep's listing until none of `names` is queued, running or terminating; returns the names still
    stopping when `timeout` ran out (empty when all have stopped)."""
    deadline = clock() + timeout
    names = set(names)
    while True:
        jobs = sweep_jobs(client, resource_group, workspace, experiment, sweep_name, job_names=names, retry=retry,
                          should_stop=should_stop)
        busy = sorted(job.name for job in jobs if state_of(job) in STOPPING_STATES)
        if not busy or clock() >= deadline:
            return busy
        interruptible_sleep(min(interval, max(0.0, deadline - clock())), retry, should_stop)


def stop_jobs(client, resource_group, workspace, experiment, sweep_name, *, job_names=None, parallel=8, wait=True,
              interval=1.0, timeout=600.0, progress=None, should_stop=None, retry=None):
    """Terminate the sweep's queued and running jobs (or only the named ones among them).

    :param sweep_name: the sweep; jobs of other sweeps are never touched, even when named in `job_names`.
    :param job_names: restrict to these jobs; the caller checks that they belong to the sweep (see `unknown_jobs`).
    :param wait: return only once the stopped jobs have left the queued/running/terminating states.
    :return: ``{stopped: [names], notRunning: [names], failed: [{job, error}], stillStopping: [names]}``:
        `notRunning` are the selected jobs that had already finished (nothing to do: a second stop stops nothing).
    """
    retry = retry or RetrySettings()
    jobs = sweep_jobs(client, resource_group, workspace, experiment, sweep_name, job_names=job_names, retry=retry,
                      should_stop=should_stop)
    targets = sorted(job.name for job in jobs if state_of(job) in STOPPABLE_STATES)
    terminating = sorted(job.name for job in jobs if state_of(job) == 'terminating')
    result = {'stopped': [], 'notRunning': sorted(job.name for job in jobs if state_of(job) not in STOPPING_STATES),
              'failed': [], 'stillStopping': []}
    done = [0]

    def work(name):
        return terminate_job(client, resource_group, workspace, experiment, name, retry=retry,
                             should_stop=should_stop)

    def on_result(name, terminated, exc):
        if exc is not None:
            result['failed'].append({'job': name, 'error': describe_error(exc)})
            logger.warning('job %s not stopped: %s', name, describe_error(exc))
        elif terminated:
            result['stopped'].append(name)
        else:
            result['notRunning'].append(name)  # deleted meanwhile
        done[0] += 1
        if progress is not None:
            progress(done[0], len(targets))

    for name in run_parallel(work, targets, parallel=parallel, on_result=on_result, should_stop=should_stop):
        result['failed'].append({'job': name, 'error': 'stopped before termination'})
    result['stopped'].sort()
    result['notRunning'].sort()
    waiting_for = result['stopped'] + terminating
    if wait and waiting_for:
        result['stillStopping'] = wait_until_stopped(client, resource_group, workspace, experiment, sweep_name,
                                                     waiting_for, retry=retry, interval=interval, timeout=timeout,
                                                     should_stop=should_stop)
    return result


def unknown_jobs(client, resource_group, workspace, experiment, sweep_name, job_names, *, retry=None):
    """The names among `job_names` that are not jobs of the sweep (a name that matches nothing is an error)."""
    found = {job.name for job in sweep_jobs(client, resource_group, workspace, experiment, sweep_name,
                                            job_names=job_names, retry=retry)}
    return sorted(set(job_names) - found)
