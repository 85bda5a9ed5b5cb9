"""Reading a sweep back from the service alone: paged job listings and what a job says about itself.

Sweep membership and parameter values come from the environment variables every generated job carries
(BATCHAI_SWEEP_NAME, BATCHAI_SWEEP_PARAMS, PARAM_<NAME>), so no local state is needed to find a sweep's jobs.
"""
import json
import logging

from azure.mgmt.batchai.models import JobsListByExperimentOptions

from .retry import NO_SDK_RETRY, RetrySettings, call_with_retries

logger = logging.getLogger(__name__)

SWEEP_NAME_VAR = 'BATCHAI_SWEEP_NAME'
SWEEP_PARAMS_VAR = 'BATCHAI_SWEEP_PARAMS'
PARAM_PREFIX = 'PARAM_'
PAGE_SIZE = 1000  # the API's maximum: the fewer round trips, the better for sweeps of thousands of jobs

# The Batch AI execution states, in the order status output shows them.
STATES = ('queued', 'running', 'terminating', 'succeeded', 'failed')
FINISHED_STATES = frozenset({'succeeded', 'failed'})


def list_jobs(client, resource_group, workspace, experiment, *, retry=None, should_stop=None):
    """Yield every job of the experiment, page by page.

    A page that fails transiently is fetched again from its own continuation link, so a long listing survives
    a dropped connection without starting over (and without yielding a job twice).
    """
    retry = retry or RetrySettings()
    options = JobsListByExperimentOptions(max_results=PAGE_SIZE)
    pages = client.jobs.list_by_experiment(resource_group, workspace, experiment,
                                           jobs_list_by_experiment_options=options, **NO_SDK_RETRY).by_page()

    def next_page():
        # A failed page leaves the iterator's continuation token where it was: calling again re-fetches that page.
        return list(next(pages))

    while True:
        try:
            items = call_with_retries(next_page, settings=retry, should_stop=should_stop, what='list jobs')
        except StopIteration:
            return
        yield from items


def env_of(job) -> dict:
    """The job's environment variables as a dict (secrets are not in here: they are write-only)."""
    return {var.name: var.value for var in (job.environment_variables or [])}


def sweep_name_of(job):
    return env_of(job).get(SWEEP_NAME_VAR)


def parameters_of(job) -> dict:
    """The parameter values of a generated job: BATCHAI_SWEEP_PARAMS, else the PARAM_<NAME> variables."""
    env = env_of(job)
    raw = env.get(SWEEP_PARAMS_VAR)
    if raw:
        try:
            values = json.loads(raw)
            if isinstance(values, dict):
                return values
        except ValueError:
            logger.debug('job %s: %s is not JSON, falling back to %s* variables', job.name, SWEEP_PARAMS_VAR,
                         PARAM_PREFIX)
    return {name[len(PARAM_PREFIX):]: value for name, value in sorted(env.items()) if name.startswith(PARAM_PREFIX)}


def state_of(job):
    """The execution state as a lower-case string ('queued', 'running', ...)."""
    state = job.execution_state
    return str(getattr(state, 'value', state)).lower() if state is not None else None


def _iso(value):
    return value.isoformat() if value is not None else None


def job_summary(job) -> dict:
    """One JSON-ready row of status output."""
    info = job.execution_info
    start = getattr(info, 'start_time', None)
    end = getattr(info, 'end_time', None)
    return {
        'name': job.name,
        'state': state_of(job),
        'exitCode': getattr(info, 'exit_code', None),
        'startTime': _iso(start),
        'endTime': _iso(end),
        'durationSeconds': round((end - start).total_seconds(), 3) if start is not None and end is not None else None,
        'parameters': parameters_of(job),
    }


def select_jobs(jobs, sweep_name=None, state=None, job_names=None):
    """Filter jobs by sweep membership, execution state and/or an explicit set of names."""
    names = set(job_names) if job_names is not None else None
    state = state.lower() if state else None
    for job in jobs:
        if sweep_name is not None and sweep_name_of(job) != sweep_name:
            continue
        if state is not None and state_of(job) != state:
            continue
        if names is not None and job.name not in names:
            continue
        yield job
