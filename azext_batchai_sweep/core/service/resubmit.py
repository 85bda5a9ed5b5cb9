"""Resubmitting jobs: delete each one, wait until it is gone, create it again under the same name.

The body of the new job is the plan's when a plan is given (Batch AI never returns `secrets` or storage/registry
keys, so only the plan has the full definition), else it is rebuilt from the job as the service returns it, which
is refused when the job had hidden secrets.

Interrupted half-way (Ctrl-C, SIGKILL between a delete and its create), a re-run of the same resubmit completes the
work with no job duplicated and none missing:
- with a plan, every plan job missing on the service is created again (a deleted-but-not-recreated job is missing);
  jobs already re-created are on the service in the queued/running state, so they are not deleted again;
- without a plan, pass `journal_path`: each rebuilt body is appended to this JSON Lines file (and flushed to disk)
  BEFORE its job is deleted; a re-run re-creates the journal's jobs that are missing on the service, and the
  journal is removed once a resubmit ends with nothing failed.
Creation itself is idempotent (deterministic names, 409 resolved by GET), see submit.create_job.
"""
import json
import logging
import os
import threading

from azure.mgmt.batchai.models import JobCreateParameters

from .delete import delete_job
from ..errors import SpecError
from .listing import state_of
from .parallel import run_parallel
from .retry import RetrySettings, describe_error
from .status import list_sweep_jobs
from .submit import create_job

logger = logging.getLogger(__name__)

_KEY_FIELDS = ('accountKey', 'accountKeySecretReference', 'password', 'passwordSecretReference')


class HiddenSecretsError(SpecError):
    """Jobs that cannot be re-created from the service alone: `paths` {job name: [paths of the write-only values it
    lacks]} (a storage mount's credentials, the job's secrets)."""

    def __init__(self, paths):
        self.paths = paths
        example = next(iter(sorted(paths)))
        super().__init__('{} job(s) have write-only values the service does not return ({} in {}): resubmit them '
                         'with the sweep\'s plan file, which has the full definitions'.format(
                             len(paths), ', '.join(paths[example]), example), path='plan')

    @property
    def only_credentials(self):
        """True when every value missing is a storage mount's key (which the caller may give again)."""
        return all(path.endswith('.credentials') for paths in self.paths.values() for path in paths)


def rebuild_body(job) -> JobCreateParameters:
    """The JobCreateParameters of a job as the service returned it: every creation field, none of the read-only."""
    creation_fields = JobCreateParameters._attribute_map  # pylint: disable=protected-access
    job = job.as_model() if hasattr(job, 'as_model') else job  # a ListedJob: its full SDK model
    return JobCreateParameters(**{attr: getattr(job, attr) for attr in creation_fields
                                  if getattr(job, attr, None) is not None})


def hidden_secrets(body) -> list:
    """Paths of the write-only values a rebuilt body lacks: `secrets`, and credentials whose key or password the
    service did not return. Empty when the body can be re-created as is."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                where = '{}.{}'.format(path, key) if path else key
                if key == 'secrets' and value:
                    found.append(where)
                elif key == 'credentials' and isinstance(value, dict) and not any(value.get(k) for k in _KEY_FIELDS):
                    found.append(where)
                else:
                    walk(value, where)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, '{}[{}]'.format(path, index))

    walk(body.serialize() if hasattr(body, 'serialize') else body, '')
    return found


def _read_journal(path):
    if not path or not os.path.exists(path):
        return {}
    entries = {}
    with open(path, 'r', encoding='utf-8') as stream:
        for line in stream:
            line = line.strip()
            if line:
                entry = json.loads(line)
                entries[entry['name']] = entry['job']
    return entries


class _Journal:
    """Append-only JSON Lines of {name, job}, each line on disk before the job it describes is deleted."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def record(self, name, body):
        if not self.path:
            return
        rest = body.serialize() if hasattr(body, 'serialize') else body
        line = json.dumps({'name': name, 'job': rest}, separators=(',', ':'), sort_keys=True)
        with self.lock, open(self.path, 'a', encoding='utf-8') as stream:
            stream.write(line + '\n')
            stream.flush()
            os.fsync(stream.fileno())


def resubmit_jobs(client, resource_group, workspace, experiment, *, sweep_name, job_names=None, state='failed',
                  plan=None, journal_path=None, parallel=8, progress=None, should_stop=None, retry=None,
                  delete_timeout=600.0, poll_interval=1.0, prepare_rebuilt=None):
    """Delete and re-create the sweep's jobs in `state` (default failed), or the named ones (state None: any state).

    plan: (name, body) pairs of the sweep (body a REST dict or JobCreateParameters); also re-creates plan jobs that
    are missing on the service. prepare_rebuilt: without a plan, called with each body rebuilt from the service (a
    REST dict) before it is checked: gives back what the service does not return (a storage mount's key). Raises
    HiddenSecretsError (a SpecError), before deleting anything, when a job would lose hidden secrets.
    Returns {resubmitted: [names], skipped: [{job, reason}], failed: [{job, error}]}; progress(done, total).
    """
    retry = retry or RetrySettings()
    on_service = {job.name: job for job in list_sweep_jobs(client, resource_group, workspace, experiment,
                                                          sweep_name=sweep_name, retry=retry)}
    bodies = dict(plan) if plan is not None else {}
    journaled = _read_journal(journal_path)
    state = state.lower() if state else None
    skipped, targets = [], []

    # Interrupted earlier: a planned (or journaled) job that is not on the service is only created again.
    wanted = set(job_names) if job_names is not None else None
    for name in sorted(set(bodies) | set(journaled)):
        if name not in on_service and (wanted is None or name in wanted):
            targets.append((name, None))
    recreate_only = {name for name, _ in targets}

    candidates = job_names if job_names is not None else sorted(on_service)
    for name in candidates:
        job = on_service.get(name)
        if name in recreate_only:
            continue
        if job is None:
            skipped.append({'job': name, 'reason': 'not found in sweep {}'.format(sweep_name)})
        elif state is not None and state_of(job) != state:
            if job_names is not None:
                skipped.append({'job': name, 'reason': 'state is {}, not {}'.format(state_of(job), state)})
        else:
            targets.append((name, job))

    def body_for(name, job):
        if name in bodies:
            return bodies[name]
        if job is None:
            return journaled[name]
        if prepare_rebuilt is not None:  # e.g. the storage mounts' key, which the service never returns
            return prepare_rebuilt(rebuild_body(job).serialize())
        return rebuild_body(job)

    planned = [(name, job, body_for(name, job)) for name, job in targets]
    if plan is None:
        refused = {name: hidden_secrets(body) for name, job, body in planned if job is not None}
        refused = {name: paths for name, paths in refused.items() if paths}
        if refused:
            raise HiddenSecretsError(refused)
    journal = _Journal(journal_path if plan is None else None)
    result = {'resubmitted': [], 'skipped': skipped, 'failed': []}
    done = [0]

    def work(item):
        name, job, body = item
        if job is not None:
            journal.record(name, body)
            delete_job(client, resource_group, workspace, experiment, name, retry=retry, wait=True,
                       interval=poll_interval, timeout=delete_timeout, should_stop=should_stop)
        create_job(client, resource_group, workspace, experiment, name, body, retry=retry, should_stop=should_stop)
        return name

    def on_result(item, name, exc):
        if exc is not None:
            result['failed'].append({'job': item[0], 'error': describe_error(exc)})
            logger.warning('job %s not resubmitted: %s', item[0], describe_error(exc))
        else:
            result['resubmitted'].append(name)
        done[0] += 1
        if progress is not None:
            progress(done[0], len(planned))

    for name, _, _ in run_parallel(work, planned, parallel=parallel, on_result=on_result, should_stop=should_stop):
        result['failed'].append({'job': name, 'error': 'stopped before resubmission'})
    result['resubmitted'].sort()
    # Kept while it holds a job that is neither on the service nor resubmitted now (a re-run for other jobs left it
    # out): the journal is the only copy of that job's definition.
    unresolved = set(journaled) - set(on_service) - set(result['resubmitted'])
    if journal_path and not result['failed'] and not unresolved and os.path.exists(journal_path):
        os.remove(journal_path)
    return result
