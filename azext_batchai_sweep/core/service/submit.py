"""Bulk submission of a sweep's jobs: one listing, then one PUT per missing job, many in flight.

Job names are deterministic, so a PUT is idempotent and submission can be re-run after a crash or Ctrl-C: the jobs
already on the service are skipped (alreadyPresent), a job whose creation answer was lost is looked up before it
is counted failed, and nothing is ever created twice.
"""
import logging
import threading

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from .delete import delete_job
from .identity import Comparison, digest_of_body
from .listing import being_deleted, list_jobs
from .parallel import run_parallel
from .retry import (NO_SDK_RETRY, RetrySettings, Stopped, call_with_retries, describe_error, is_retryable,
                    response_is_lost, status_of)

logger = logging.getLogger(__name__)

SUBMITTED = 'submitted'
ALREADY_PRESENT = 'alreadyPresent'


def job_exists(client, resource_group, workspace, experiment, name, *, retry, should_stop=None) -> bool:
    """True when the job is on the service and not on its way out (a job being deleted does not count)."""
    def get():
        try:
            return client.jobs.get(resource_group, workspace, experiment, name, **NO_SDK_RETRY)
        except ResourceNotFoundError:
            return None
    job = call_with_retries(get, settings=retry, should_stop=should_stop, what='get job {}'.format(name))
    return job is not None and not being_deleted(job)


def create_job(client, resource_group, workspace, experiment, name, body, *, retry, should_stop=None) -> str:
    """Create one job with a single PUT (no LRO polling); returns SUBMITTED or ALREADY_PRESENT.

    The answer's status says who created the job: 201/202 is a create, 200 the job as it already was (an identical
    PUT, from another process submitting the same sweep at the same time): that one is ALREADY_PRESENT, unless an
    earlier attempt of this call may have created it. A 409 Conflict or a lost answer (dropped connection, 5xx
    after the request may have landed) is resolved with a GET: if the job now exists the PUT did its work. A 409
    for a job that does not exist (yet another delete still in progress) is retried. Raises the last error
    otherwise.
    """
    lost = threading.Event()

    def note(exc):
        if response_is_lost(exc):
            lost.set()

    def put():
        statuses = []
        try:
            client.jobs.begin_create(resource_group, workspace, experiment, name, body, polling=False,
                                     raw_response_hook=lambda response: statuses.append(
                                         response.http_response.status_code), **NO_SDK_RETRY)
            if statuses and statuses[-1] == 200 and not lost.is_set():
                return ALREADY_PRESENT
            return SUBMITTED
        except HttpResponseError as exc:
            if status_of(exc) != 409:
                raise
            if job_exists(client, resource_group, workspace, experiment, name, retry=retry, should_stop=should_stop):
                # Ours if an earlier attempt of this call may have created it; otherwise someone got there first.
                return SUBMITTED if lost.is_set() else ALREADY_PRESENT
            raise

    def retryable(exc):
        return is_retryable(exc) or status_of(exc) == 409

    try:
        return call_with_retries(put, settings=retry, retryable=retryable, should_stop=should_stop, on_error=note,
                                 what='create job {}'.format(name))
    except Stopped:
        raise
    except Exception:  # pylint: disable=broad-except
        if lost.is_set() and job_exists(client, resource_group, workspace, experiment, name, retry=retry):
            return SUBMITTED
        raise


def _sized(planned_jobs):
    """The planned jobs with a known length, for a determinate progress bar (a sweep knows it up front)."""
    try:
        len(planned_jobs)
        return planned_jobs
    except TypeError:
        return list(planned_jobs)


def submit_jobs(client, resource_group, workspace, experiment, planned_jobs, *, parallel=8,
                max_retries=RetrySettings.max_retries,
                progress=None, should_stop=None, retry=None, sweep_name=None, identities=None, allow_changes=False):
    """Submit the planned (name, body) jobs that are not on the service yet.

    body is a JobCreateParameters or its REST dict. One paged listing finds the jobs already there; every other
    job is created with one PUT, `parallel` at a time, retrying throttling and server errors with backoff. When a
    job runs out of retries the service is considered unavailable: no new job is started, and the result lists
    every job not submitted, so a later re-run finishes the sweep.

    With `sweep_name`, "already present" means present *and equal* (core/service/identity.py): before any PUT, a planned
    name held by another sweep's job raises SweepConflict, and so do planned jobs whose digest differs from the
    service's, unless `allow_changes`, in which case those are deleted and created again (`replaced`).
    `identities` yields (name, digest) of the planned jobs cheaply; default: read from the bodies.

    progress(done, total) is called after each job. Returns
    {total, submitted, alreadyPresent, replaced, failed: [{job, error}], notSubmitted: [names], stopped}.
    """
    retry = retry or RetrySettings(max_retries=max_retries)
    planned_jobs = _sized(planned_jobs)
    total = len(planned_jobs)
    gave_up = threading.Event()

    def stopping():
        return gave_up.is_set() or (should_stop is not None and should_stop())

    # A job being deleted (delete --no-wait just before) is about to vanish: it is submitted again, not skipped;
    # its PUT answers 409 until the name is free, which create_job retries.
    listing = list(list_jobs(client, resource_group, workspace, experiment, retry=retry, should_stop=should_stop))
    changed = set()
    if sweep_name is not None:
        comparison = Comparison.of(sweep_name, listing)
        if identities is None:
            identities = ((name, digest_of_body(body)) for name, body in planned_jobs)
        for name, digest in identities:
            comparison.add(name, digest)
        comparison.raise_conflicts(allow_changes=allow_changes)
        changed = set(comparison.changed)
    present = {job.name for job in listing if not being_deleted(job)} - changed
    result = {'total': total, SUBMITTED: 0, ALREADY_PRESENT: 0, 'replaced': 0, 'failed': [], 'notSubmitted': [],
              'stopped': False}
    done = [0]

    def advance():
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    def missing():
        for name, body in planned_jobs:
            if name in present:
                result[ALREADY_PRESENT] += 1
                advance()
                continue
            present.add(name)  # a name planned twice is submitted once
            yield name, body

    def work(item):
        name, body = item
        if name in changed:  # allow_changes: the old definition goes, the planned one comes under the same name
            delete_job(client, resource_group, workspace, experiment, name, retry=retry, wait=True,
                       should_stop=stopping)
            create_job(client, resource_group, workspace, experiment, name, body, retry=retry, should_stop=stopping)
            return 'replaced'
        return create_job(client, resource_group, workspace, experiment, name, body, retry=retry,
                          should_stop=stopping)

    def on_result(item, outcome, exc):
        name = item[0]
        if exc is None:
            result[outcome] += 1
        elif isinstance(exc, Stopped):
            result['notSubmitted'].append(name)
        else:
            if is_retryable(exc) or status_of(exc) == 409:
                gave_up.set()
            result['failed'].append({'job': name, 'error': describe_error(exc)})
            result['notSubmitted'].append(name)
            logger.warning('job %s not submitted: %s', name, describe_error(exc))
        advance()

    not_started = run_parallel(work, missing(), parallel=parallel, on_result=on_result, should_stop=stopping)
    result['notSubmitted'].extend(name for name, _ in not_started)
    result['stopped'] = stopping() or bool(not_started)
    if result['notSubmitted']:
        logger.warning('%d of %d job(s) not submitted; run submit again to finish the sweep',
                       len(result['notSubmitted']), total)
    return result


def ensure_experiment(client, resource_group, workspace, experiment, *, retry=None) -> bool:
    """Create the experiment when it does not exist (GET, then PUT on 404); True when it was created."""
    retry = retry or RetrySettings()

    def get():
        try:
            return client.experiments.get(resource_group, workspace, experiment, **NO_SDK_RETRY)
        except ResourceNotFoundError:
            return None
    if call_with_retries(get, settings=retry, what='get experiment {}'.format(experiment)) is not None:
        return False

    def put():
        client.experiments.begin_create(resource_group, workspace, experiment, polling=False,
                                        **NO_SDK_RETRY).result()
    call_with_retries(put, settings=retry, what='create experiment {}'.format(experiment))
    logger.info('created experiment %s', experiment)
    return True
