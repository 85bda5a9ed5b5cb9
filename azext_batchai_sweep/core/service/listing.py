"""Reading a sweep back from the service alone: paged job listings and what a job says about itself.

Sweep membership and parameter values come from the environment variables every generated job carries
(BATCHAI_SWEEP_NAME, BATCHAI_SWEEP_PARAMS, PARAM_<NAME>), so no local state is needed to find a sweep's jobs.
"""
import json
import logging
from types import SimpleNamespace

from .rest import job_path_name, jobs_url, next_page_url, send_json
from .retry import RetrySettings, call_with_retries

logger = logging.getLogger(__name__)

SWEEP_NAME_VAR = 'BATCHAI_SWEEP_NAME'
SWEEP_PARAMS_VAR = 'BATCHAI_SWEEP_PARAMS'
PARAM_PREFIX = 'PARAM_'
PAGE_SIZE = 1000  # the API's maximum: the fewer round trips, the better for sweeps of thousands of jobs

# The Batch AI execution states, in the order status output shows them, plus 'terminated': a job that Batch AI
# reports failed because it was terminated (`az batchai sweep stop`, error code JobTerminated).
STATES = ('queued', 'running', 'terminating', 'succeeded', 'failed', 'terminated')
FINISHED_STATES = frozenset({'succeeded', 'failed', 'terminated'})
TERMINATED_ERROR = 'JobTerminated'


class ListedJob:
    """A job of a listing, read from the REST JSON of its page: the fields the sweep commands read from every job
    are attributes, as on the SDK's Job model, and anything else deserializes the whole Job (once).

    Why not the SDK's models: msrest's deserializer takes about 0.4 ms of CPU per job, most of the time of a
    10,000-job `status` and a third of the fixed cost of `metrics`; these few fields cost a dictionary lookup
    (core/service/rest.py).
    """

    def __init__(self, raw, deserializer):
        self._raw = raw
        self._deserializer = deserializer
        self._model = None
        properties = raw.get('properties') or {}
        self.name = raw.get('name')
        self.execution_state = properties.get('executionState')
        self.provisioning_state = properties.get('provisioningState')
        # The job's creation time as the service wrote it: what tells a job recreated under the same name (resubmit)
        # from the one a report read before (core/report/log_cache.py).
        self.creation_time_text = properties.get('creationTime')
        self._variables = properties.get('environmentVariables') or ()
        self._environment = None
        self._execution_info = properties.get('executionInfo')

    @property
    def environment_variables(self):
        return [SimpleNamespace(name=var.get('name'), value=var.get('value')) for var in self._variables]

    def environment(self):
        """{name: value} of its environment variables, read from the JSON once (env_of copies it): a listing's
        jobs are filtered by one of them (sweep_name_of), which made an object per variable of every job listed."""
        if self._environment is None:
            self._environment = {var.get('name'): var.get('value') for var in self._variables}
        return self._environment

    @property
    def execution_info(self):
        info = self._execution_info
        if info is None:
            return None
        errors = info.get('errors')
        return SimpleNamespace(start_time=self._datetime(info.get('startTime')),
                               end_time=self._datetime(info.get('endTime')), exit_code=info.get('exitCode'),
                               errors=self._deserializer.deserialize_data(errors, '[BatchAIError]') if errors else None)

    def _datetime(self, text):
        return self._deserializer.deserialize_data(text, 'iso-8601') if text is not None else None

    def as_model(self):
        """The SDK's Job model of this job (deserialized on first use)."""
        if self._model is None:
            self._model = self._deserializer('Job', self._raw)
        return self._model

    def __getattr__(self, name):
        if name.startswith('_'):
            raise AttributeError(name)
        return getattr(self.as_model(), name)

    def __repr__(self):
        return 'ListedJob({!r}, {})'.format(self.name, self.execution_state)


def list_jobs(client, resource_group, workspace, experiment, *, retry=None, should_stop=None):
    """Yield every job of the experiment (ListedJob), page by page.

    A page that fails transiently is fetched again from its own continuation link, so a long listing survives
    a dropped connection without starting over (and without yielding a job twice).
    """
    retry = retry or RetrySettings()
    deserializer = client._deserialize  # pylint: disable=protected-access
    url = jobs_url(client, resource_group, workspace, experiment, maxresults=PAGE_SIZE)
    while url:
        page = call_with_retries(lambda: send_json(client, 'GET', url), settings=retry,  # noqa: B023
                                 should_stop=should_stop, what='list jobs')
        for raw in page.get('value') or ():
            yield ListedJob(raw, deserializer)
        url = next_page_url(page)


def get_job(client, resource_group, workspace, experiment, name, *, retry=None, should_stop=None):
    """One job (a ListedJob, as a listing gives it: Batch AI's Jobs_Get answers the same Job), or None when it is
    not there (404)."""
    from azure.core.exceptions import ResourceNotFoundError  # pylint: disable=import-outside-toplevel
    url = jobs_url(client, resource_group, workspace, experiment, '/' + job_path_name(client, name))

    def get():
        try:
            return send_json(client, 'GET', url)
        except ResourceNotFoundError:
            return None
    raw = call_with_retries(get, settings=retry or RetrySettings(), should_stop=should_stop,
                            what='get job {}'.format(name))
    return None if raw is None else ListedJob(raw, client._deserialize)  # pylint: disable=protected-access


def env_of(job) -> dict:
    """The job's environment variables as a dict (secrets are not in here: they are write-only)."""
    if isinstance(job, ListedJob):
        return dict(job.environment())
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
    """The execution state as a lower-case string ('queued', 'running', ...); 'terminated' for a job that failed
    because it was terminated."""
    state = job.execution_state
    if state is None:
        return None
    state = str(getattr(state, 'value', state)).lower()
    if state == 'failed' and TERMINATED_ERROR in error_codes(job):
        return 'terminated'
    return state


def being_deleted(job) -> bool:
    """True for a job on its way out (provisioning state 'deleting'): its name is about to be free again."""
    state = job.provisioning_state
    return str(getattr(state, 'value', state)).lower() == 'deleting'


def error_codes(job):
    """The codes of the job's executionInfo.errors (Batch AI's reasons why it failed)."""
    raw = getattr(job, '_execution_info', None) if isinstance(job, ListedJob) else None
    if raw is not None:
        return [error.get('code') for error in raw.get('errors') or () if isinstance(error, dict)]
    info = job.execution_info
    return [getattr(error, 'code', None) for error in getattr(info, 'errors', None) or ()]


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
        **_code_of(job),
    }


def _code_of(job):
    """{'code': hash} of a job that runs a code snapshot (core/code/job.py), else {}."""
    from ..code.job import CODE_HASH_VAR
    digest = env_of(job).get(CODE_HASH_VAR)
    return {'code': digest} if digest else {}


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
