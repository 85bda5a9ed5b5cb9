# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The old `utilities.experiment`: ExperimentUtils, bulk operations on the jobs of one experiment.

Each method is the core's operation (core/service/submit.py, status.py, resubmit.py, core/outputs/metrics.py,
core/service/delete.py) with the old arguments and return values: its retries (429/5xx/dropped connections,
Retry-After), idempotent creation and listings that resume at a failed page come with it.

What differs from the old code, on purpose (docs/migrating-from-batchai-utilities.md):
- job names are ``<prefix>-<16 hex>``, the hash over the job definition without its credentials (the old code
  hashed the whole object, keys included, and joined with '_'): re-running a submit cell finds its jobs already
  there instead of failing or duplicating them, and a changed definition (more epochs) is a new job;
- submit_jobs raises when a job could not be submitted (the old code printed a count and returned the others);
- the experiment is created when it does not exist (the old constructor failed).
"""
import collections
import logging
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from ..core.service.delete import delete_jobs
from ..core.errors import ServiceError, SpecError
from ..core.spec.naming import canonical_json, name_from_digest, sanitize_prefix, values_digest
from ..core.service.resubmit import resubmit_jobs
from ..core.service.retry import RetrySettings
from ..core.service.status import list_sweep_jobs, wait_for_jobs
from ..core.service.submit import ensure_experiment
from ..core.service.submit import submit_jobs as _core_submit_jobs
from ..core.spec.substitution import is_model
from ..core.spec.sweep import ParameterSweep as _CoreParameterSweep
from .job import convert_job_to_jcp
from .job_factory import _add_old_dict_variables

__all__ = ['ExperimentUtils', 'JobToSubmit', 'job_name_for', 'NUM_THREADS', 'NUM_RETRIES', 'JOB_NAME_HASH_LENGTH']

NUM_THREADS = 30
NUM_RETRIES = 5
JOB_NAME_HASH_LENGTH = 16
# wait_all_jobs polls after 0.25 s, then twice as long each time, up to this: short local jobs are seen finished at
# once and a long sweep costs one listing per WAIT_INTERVAL_SECS.
WAIT_INTERVAL_SECS = 10
FIRST_WAIT_SECS = 0.25

JobToSubmit = collections.namedtuple('JobToSubmit', ['name', 'parameters'])

# Left out of the hash that names a job: credentials (a rotated key must not rename jobs, and a key never feeds a
# name) and the values of secrets.
_UNNAMED_FIELDS = frozenset(('credentials', 'accountKey', 'password', 'adminUserPassword'))


def _definition(node):
    if isinstance(node, dict):
        return {key: (_secret_names(value) if key == 'secrets' else _definition(value))
                for key, value in node.items() if key not in _UNNAMED_FIELDS}
    if isinstance(node, list):
        return [_definition(item) for item in node]
    return node


def _secret_names(secrets):
    return [item.get('name') if isinstance(item, dict) else None for item in secrets or []]


def job_name_for(job_name_prefix, jcp):
    """``<prefix>-<16 hex>``: the core's job name form, the hash over the job definition without its credentials."""
    rest = jcp.serialize() if is_model(jcp) else jcp
    return name_from_digest(sanitize_prefix(job_name_prefix), values_digest(canonical_json(_definition(rest))))


class _Backoff:  # pylint: disable=too-few-public-methods
    """A `sleep` for core.service.status.wait_for_jobs: FIRST_WAIT_SECS, then doubling up to the interval it asks
    for."""

    def __init__(self, sleep):
        self._next = FIRST_WAIT_SECS
        self._sleep = sleep

    def __call__(self, seconds):
        pause = min(seconds, self._next)
        self._next = min(self._next * 2, WAIT_INTERVAL_SECS)
        self._sleep(pause)


class ExperimentUtils:
    """Submit, wait for, resubmit, measure and delete the jobs of one experiment.

    :param client: an ``azure.mgmt.batchai.BatchAI`` client (Azure, or the local service's:
        ``azext_batchai_sweep.core.service.client.local_batchai_client``).
    :param resource_group_name: the experiment's resource group.
    :param workspace_name: the experiment's workspace.
    :param experiment_name: the experiment; created when it does not exist.
    :param log_to_stdout: log this object's INFO messages to stdout (logger "ExperimentUtils"), as the old one did.
    """

    # pylint: disable=too-many-arguments
    def __init__(self, client, resource_group_name, workspace_name, experiment_name, log_to_stdout=True):
        self.client = client
        self.resource_group_name = resource_group_name
        self.workspace_name = workspace_name
        self.experiment_name = experiment_name
        if log_to_stdout:
            self.log_to_stdout()
        self.logger = logging.getLogger('ExperimentUtils')
        ensure_experiment(client, resource_group_name, workspace_name, experiment_name)
        self.logger.info('Initialized ExperimentUtils in resource group: %s | workspace: %s | experiment: %s',
                         resource_group_name, workspace_name, experiment_name)

    @property
    def _where(self):
        return self.client, self.resource_group_name, self.workspace_name, self.experiment_name

    # -- submission -------------------------------------------------------------------------------------------------

    def submit_jobs(self, jcp_list, job_name_prefix, *args, max_retries=NUM_RETRIES, num_threads=NUM_THREADS):
        """Submit jobs; returns a concurrent.futures.Future whose ``.result()`` is the list of submitted Jobs.

        Call forms: ``submit_jobs(jcp_list, job_name_prefix, max_retries=5, num_threads=30)`` (the old code);
        ``submit_jobs(jcp_list, parameters, job_name_prefix)`` (the README's second version: `parameters` is not
        needed); ``submit_jobs(jcp, parameters, job_name_prefix)`` (the first README: the grid of `parameters` over
        the template `jcp`, named by the core from the parameter values). Jobs already on the service under their
        name are not submitted again; they are in the result like the new ones.
        """
        parameters = None
        if isinstance(job_name_prefix, _CoreParameterSweep):
            if not args:
                raise TypeError('submit_jobs(jcp, parameters, job_name_prefix): the job name prefix is missing')
            parameters, job_name_prefix, args = job_name_prefix, args[0], args[1:]
        if len(args) > 2:
            raise TypeError('submit_jobs() takes at most max_retries and num_threads after the job name prefix')
        if args:
            max_retries = args[0]
            num_threads = args[1] if len(args) > 1 else num_threads
        items = self._planned(jcp_list, parameters, job_name_prefix)  # errors now, before anything is sent
        executor = ThreadPoolExecutor(max_workers=1)
        future = executor.submit(self._submit, items, max_retries, num_threads)
        executor.shutdown(wait=False)  # the caller decides when to block, on .result()
        return future

    @staticmethod
    def _planned(jcp_list, parameters, job_name_prefix):
        if parameters is not None and (is_model(jcp_list) or isinstance(jcp_list, dict)):
            items = []
            for job in _CoreParameterSweep.generate_jobs(parameters, jcp_list, job_name_prefix=job_name_prefix):
                body = job.body
                _add_old_dict_variables(body, parameters.specs, job.parameters)
                items.append((job.name, body))
            return items
        if is_model(jcp_list) or isinstance(jcp_list, dict) or isinstance(jcp_list, str):
            raise SpecError('jcp_list must be a list of JobCreateParameters (or give the ParameterSweep as in '
                            'submit_jobs(jcp, parameters, job_name_prefix))')
        return [(job_name_for(job_name_prefix, jcp), jcp) for jcp in jcp_list]

    def _submit(self, items, max_retries, num_threads):
        if not items:
            return []
        result = _core_submit_jobs(*self._where, items, parallel=num_threads, max_retries=max_retries)
        if result['notSubmitted']:
            errors = '; '.join('{}: {}'.format(item['job'], item['error']) for item in result['failed'][:3])
            raise ServiceError('{} of {} job(s) not submitted ({}); submitting the same jobs again submits only '
                               'those'.format(len(result['notSubmitted']), result['total'], errors or 'stopped'))
        self.logger.info('%d job(s) submitted, %d already present', result['submitted'], result['alreadyPresent'])
        names = list(dict.fromkeys(name for name, _ in items))
        return self._jobs(names, ordered=True)

    def _jobs(self, job_names=None, ordered=False):
        """The Job models of the experiment (or the named ones; in the names' order when `ordered`)."""
        listed = [job.as_model() for job in list_sweep_jobs(*self._where, job_names=job_names)]
        if not ordered:
            return listed
        by_name = {job.name: job for job in listed}
        return [by_name[name] for name in job_names if name in by_name]

    # -- waiting ----------------------------------------------------------------------------------------------------

    def wait_all_jobs(self, job_names=None, on_progress=None, timeout=None):
        """Block until every job of the experiment (or the named ones) has succeeded or failed.

        :param job_names: names of the jobs to wait for; None (or empty): every job of the experiment.
        :param on_progress: called after each poll with the list of Jobs (their current state).
        :param timeout: seconds after which to return even if jobs are still running.
        :return: the list of Jobs.
        """
        job_names = list(job_names) if job_names else None
        last = [None]

        def progress(done, total, counts):
            line = '{0}/{1} jobs completed ({2} succeeded, {3} failed)'.format(
                done, total, counts.get('succeeded', 0), counts.get('failed', 0))
            # As the old loop: a counts line while jobs are still running (once per change), then only the final
            # "All jobs completed." below.
            if done < total and line != last[0]:
                last[0] = line
                print(line)
            if on_progress is not None:
                on_progress(self._jobs(job_names))

        status = wait_for_jobs(*self._where, job_names=job_names, interval=WAIT_INTERVAL_SECS, progress=progress,
                               timeout=timeout, sleep=_Backoff(time.sleep))
        if status['finished']:
            print('All jobs completed.')
        return self._jobs(job_names)

    # -- resubmission -----------------------------------------------------------------------------------------------

    def resubmit_failed_jobs(self, job_names=None, max_retries=NUM_RETRIES, num_threads=NUM_THREADS):
        """Delete the failed jobs (all, or those of `job_names`) and create them again under the same names, each
        from its own definition with the storage keys filled in (convert_job_to_jcp); returns the new Jobs."""
        failed = list_sweep_jobs(*self._where, state='failed', job_names=list(job_names) if job_names else None)
        if not failed:
            self.logger.info('There are no failed jobs in the experiment %s.', self.experiment_name)
            return []
        plan = [(job.name, convert_job_to_jcp(job, self.client)) for job in failed]
        names = [name for name, _ in plan]
        result = resubmit_jobs(*self._where, sweep_name=None, job_names=names, state='failed', plan=plan,
                               parallel=num_threads, retry=RetrySettings(max_retries=max_retries))
        if result['failed']:
            raise ServiceError('{} job(s) not resubmitted: {}'.format(len(result['failed']), '; '.join(
                '{}: {}'.format(item['job'], item['error']) for item in result['failed'][:3])))
        return self._jobs(result['resubmitted'], ordered=True)

    # -- metrics ----------------------------------------------------------------------------------------------------

    def get_metrics_for_jobs(self, jobs, metric_extractor):
        """Wait for the jobs, then read each one's metric: a list of {"job_name", "job", "metric_value"} in the
        order of `jobs` (metric_value is inf where the file or the metric is missing)."""
        jobs = list(jobs)
        names = [job.name for job in jobs]
        if not names:
            return []
        self.wait_all_jobs(job_names=names)
        where = (self.resource_group_name, self.workspace_name, self.experiment_name, self.client)
        if hasattr(metric_extractor, 'get_metrics'):
            values = metric_extractor.get_metrics(names, *where)  # one listing, the jobs read in parallel
        else:  # an extractor of the user's own, with the old get_metric(job_name, rg, ws, experiment, client)
            values = {name: metric_extractor.get_metric(name, *where) for name in names}
        return [{'job_name': job.name, 'job': job, 'metric_value': values[job.name]} for job in jobs]

    # -- deletion ---------------------------------------------------------------------------------------------------

    def delete_jobs_in_experiment(self, execution_state=None, job_names=None, job_name_regex=None,
                                  num_threads=NUM_THREADS):
        """Delete the experiment's jobs, optionally only those in `execution_state` (an ExecutionState or its
        name), named in `job_names`, and/or whose name `job_name_regex` matches (re.match). Returns None once the
        jobs are gone."""
        state = None if execution_state is None else \
            str(getattr(execution_state, 'value', execution_state)).lower()
        names = list(job_names) if job_names else None
        if job_name_regex is not None:
            pattern = re.compile(job_name_regex)
            names = [job.name for job in list_sweep_jobs(*self._where, state=state, job_names=names)
                     if pattern.match(job.name)]
            if not names:
                print('There are no jobs to delete in the experiment {0}.'.format(self.experiment_name))
                return
        result = delete_jobs(*self._where, state=state, job_names=names, parallel=num_threads, wait=True)
        if result['failed']:
            raise ServiceError('{} job(s) not deleted: {}'.format(len(result['failed']), '; '.join(
                '{}: {}'.format(item['job'], item['error']) for item in result['failed'][:3])))
        if not result['deleted']:
            print('There are no jobs to delete in the experiment {0}.'.format(self.experiment_name))
            return
        self.logger.info('%d jobs in experiment %s were deleted.', len(result['deleted']), self.experiment_name)

    @staticmethod
    def log_to_stdout():
        """Log the INFO messages of ExperimentUtils to stdout."""
        logger = logging.getLogger('ExperimentUtils')
        logger.setLevel(logging.INFO)
        logger.handlers = [logging.StreamHandler(sys.stdout)]
