"""What makes a sweep one object on the service: its identity, and how its jobs are recognised and compared.

A sweep is (subscription, resource group, workspace, experiment, sweep name). Everything needed to recognise its jobs
is on the service, in fields the Batch AI spec has: the job names (``<prefix>-<hash of sweep name and values>``, see
naming.py) and the jobs' environment variables:

- ``BATCHAI_SWEEP_NAME``: the sweep that owns the job;
- ``BATCHAI_SWEEP_PARAMS``: the job's parameter values (JSON);
- ``BATCHAI_SWEEP_SEED``: the seed of the sweep's random draws (when anything is drawn), so that a re-plan with
  nothing but the service left draws the same jobs;
- ``BATCHAI_SWEEP_JOB_DIGEST``: a digest of the job's definition as planned, so that "already present" means
  present *and equal*: a job whose template changed is never silently skipped.

The functions here are small and free of the command layer, for every command and for a controller that drives a
sweep (find the jobs, check a plan against the service, read the seed back).
"""
import hashlib
import json
import shlex
from dataclasses import dataclass, field

from ..errors import NotFoundError, SweepError
from .listing import SWEEP_NAME_VAR, being_deleted, env_of, list_jobs, parameters_of, select_jobs
from .retry import NO_SDK_RETRY, RetrySettings, call_with_retries

SWEEP_SEED_VAR = 'BATCHAI_SWEEP_SEED'
JOB_DIGEST_VAR = 'BATCHAI_SWEEP_JOB_DIGEST'
DIGEST_LENGTH = 16


@dataclass(frozen=True)
class SweepIdentity:
    """The coordinates of a sweep on one service (the subscription is the client's)."""
    resource_group: str
    workspace: str
    experiment: str
    name: str

    def args(self):
        """`-g G -w W -e E -n N`, quoted for a shell where needed: hints print pasteable commands."""
        return ' '.join('{} {}'.format(option, shlex.quote(value)) for option, value in (
            ('-g', self.resource_group), ('-w', self.workspace), ('-e', self.experiment), ('-n', self.name)))


def body_digest(body_json):
    """The digest of a planned job's definition: 16 hex characters of the SHA-256 of its JSON text.

    :param body_json: the job body as the plan writes it, before its digest variable is added.
    """
    return hashlib.sha256(body_json.encode('utf-8')).hexdigest()[:DIGEST_LENGTH]


def add_digest(body, digest):
    """Append the ``BATCHAI_SWEEP_JOB_DIGEST`` variable to a job body dict (changed in place); returns the body."""
    props = body.get('properties') if isinstance(body.get('properties'), dict) else body
    props.setdefault('environmentVariables', []).append({'name': JOB_DIGEST_VAR, 'value': digest})
    return body


def digest_of_body(body):
    """The digest variable of a planned job body (a dict), or None (a plan of version 0.1)."""
    props = body.get('properties') if isinstance(body, dict) and isinstance(body.get('properties'), dict) else body
    for var in (props or {}).get('environmentVariables') or ():
        if isinstance(var, dict) and var.get('name') == JOB_DIGEST_VAR:
            return var.get('value')
    return None


def digest_of_job(job):
    """The digest variable of a job as the service returns it, or None (a job made by version 0.1)."""
    return env_of(job).get(JOB_DIGEST_VAR)


def seed_of_job(job):
    """The sweep's seed recorded in a job, as an int, or None."""
    value = env_of(job).get(SWEEP_SEED_VAR)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def sweep_jobs(client, resource_group, workspace, experiment, sweep_name, *, state=None, job_names=None, retry=None,
               should_stop=None):
    """The jobs of one sweep (ListedJobs), from one paged listing of the experiment: those whose
    ``BATCHAI_SWEEP_NAME`` is `sweep_name` (every job with None), optionally in one state or among given names.

    :raises NotFoundError: naming the workspace or the experiment when it does not exist.
    """
    from azure.core.exceptions import ResourceNotFoundError  # pylint: disable=import-outside-toplevel
    try:
        jobs = list_jobs(client, resource_group, workspace, experiment, retry=retry, should_stop=should_stop)
        return list(select_jobs(jobs, sweep_name=sweep_name, state=state, job_names=job_names))
    except ResourceNotFoundError:
        check_workspace(client, resource_group, workspace, retry=retry)
        raise NotFoundError('experiment {} does not exist in workspace {}{}'.format(
            experiment, workspace, ', so sweep {} has no jobs there'.format(sweep_name) if sweep_name else ''),
            recommendation='Check -e (or the configured default: az configure --list-defaults).') from None


def experiment_jobs(client, resource_group, workspace, experiment, *, retry=None, should_stop=None):
    """Every job of the experiment (ListedJobs, any sweep) as a list; [] when the experiment does not exist yet.

    :raises NotFoundError: naming the workspace when it does not exist (rather than a 404 of the job listing).
    """
    from azure.core.exceptions import ResourceNotFoundError  # pylint: disable=import-outside-toplevel
    try:
        return list(list_jobs(client, resource_group, workspace, experiment, retry=retry, should_stop=should_stop))
    except ResourceNotFoundError:
        check_workspace(client, resource_group, workspace, retry=retry)
        return []


def check_workspace(client, resource_group, workspace, *, retry=None):
    """Raise NotFoundError naming the workspace (and its resource group) when it does not exist."""
    from azure.core.exceptions import ResourceNotFoundError  # pylint: disable=import-outside-toplevel

    def get():
        try:
            client.workspaces.get(resource_group, workspace, **NO_SDK_RETRY)
            return True
        except ResourceNotFoundError:
            return False
    if not call_with_retries(get, settings=retry or RetrySettings(), what='get workspace {}'.format(workspace)):
        raise NotFoundError('workspace {} does not exist in resource group {}'.format(workspace, resource_group),
                            recommendation='Check -g/-w (or the configured defaults: az configure --list-defaults); '
                                           '"az batchai workspace list -o table" lists the workspaces.')


def recorded_seed(jobs):
    """The seed recorded in the first of `jobs` that has one (they all share it), or None."""
    for job in jobs:
        seed = seed_of_job(job)
        if seed is not None:
            return seed
    return None


class SweepConflict(SweepError):
    """A plan that does not agree with the service: another sweep's job under a planned name, planned jobs whose
    definition differs from the service's, or service jobs of the sweep that the plan does not have.

    :ivar kind: 'foreign', 'changed' or 'unplanned'.
    :ivar jobs: the job names concerned (sorted); ``owners`` maps a foreign job to its sweep.
    """

    def __init__(self, message, kind, jobs, owners=None, changed_parameters=None, legacy=False):
        super().__init__(message)
        self.kind = kind
        self.jobs = jobs
        self.owners = owners or {}
        self.changed_parameters = changed_parameters or []
        self.legacy = legacy


@dataclass
class Comparison:
    """A plan compared with the service: which planned jobs are there and equal, changed, or missing.

    Built one planned job at a time (`add`), so a plan of any size needs no more memory than the listing.
    """
    sweep_name: str
    on_service: dict
    present: set = field(default_factory=set)
    changed: list = field(default_factory=list)
    foreign: dict = field(default_factory=dict)
    missing: int = 0
    _seen: set = field(default_factory=set)

    @classmethod
    def of(cls, sweep_name, listing):
        """From the experiment's listing (every job, any sweep); jobs being deleted do not count."""
        return cls(sweep_name, {job.name: job for job in listing
                                if not being_deleted(job)})

    def add(self, name, digest):
        """Classify one planned job; returns 'missing', 'present', 'changed' or 'foreign'."""
        job = self.on_service.get(name)
        if job is None:
            self.missing += 1
            return 'missing'
        self._seen.add(name)
        owner = env_of(job).get(SWEEP_NAME_VAR)
        if owner != self.sweep_name:
            self.foreign[name] = owner
            return 'foreign'
        theirs = digest_of_job(job)
        if digest is not None and theirs is not None and theirs != digest:
            self.changed.append(name)
            return 'changed'
        self.present.add(name)
        return 'present'

    def has_sweep_jobs(self):
        """True when the service has any job of this sweep."""
        return any(env_of(job).get(SWEEP_NAME_VAR) == self.sweep_name for job in self.on_service.values())

    def unplanned(self):
        """The service's jobs of this sweep that the plan does not have (sorted)."""
        return sorted(name for name, job in self.on_service.items()
                      if name not in self._seen and env_of(job).get(SWEEP_NAME_VAR) == self.sweep_name)

    def raise_conflicts(self, *, allow_changes=False, planned_parameters=None):
        """Raise SweepConflict for what would break the sweep: always for another sweep's job under a planned name;
        unless `allow_changes`, for planned jobs that differ from the service's and for service jobs of the sweep
        that the plan lacks (a changed parameter, or a sweep made by version 0.1).

        :param planned_parameters: {name: set of canonical JSON values} of the plan, to name changed parameters.
        """
        if self.foreign:
            name = sorted(self.foreign)[0]
            raise SweepConflict('job {} is already on the service and belongs to sweep {!r}, not {!r}{}: it is '
                                'neither counted nor changed'.format(
                                    name, self.foreign[name], self.sweep_name,
                                    _more(len(self.foreign))), 'foreign', sorted(self.foreign), dict(self.foreign))
        if allow_changes:
            return
        if self.changed:
            changed = sorted(self.changed)
            raise SweepConflict('{} planned job(s) differ from the jobs of sweep {!r} on the service (the sweep file, '
                                'template or options changed what they run): {}'.format(
                                    len(changed), self.sweep_name, _names(changed)), 'changed', changed)
        unplanned = self.unplanned()
        if unplanned:
            jobs = [self.on_service[name] for name in unplanned]
            legacy = all(digest_of_job(job) is None for job in jobs)
            parameters = _changed_parameters(jobs, planned_parameters) if planned_parameters else []
            if legacy:
                why = ('they were made by version 0.1 of the extension, whose job names do not carry the sweep\'s '
                       'name, so this plan would submit the sweep a second time')
            elif parameters:
                why = 'the parameter(s) {} changed'.format(', '.join(parameters))
            else:
                why = 'the sweep file or its options changed which jobs the sweep has'
            raise SweepConflict('{} job(s) of sweep {!r} on the service are not in this plan ({}): {}'.format(
                len(unplanned), self.sweep_name, why, _names(unplanned)), 'unplanned', unplanned,
                changed_parameters=parameters, legacy=legacy)


def _changed_parameters(jobs, planned_parameters):
    """The parameters whose values on the service are not all among the plan's (or that only one side has)."""
    changed = []
    seen = {}
    for job in jobs:
        for name, value in parameters_of(job).items():
            seen.setdefault(name, set()).add(json.dumps(value, sort_keys=True))
    for name in list(planned_parameters) + [name for name in seen if name not in planned_parameters]:
        if name not in seen or name not in planned_parameters or not seen[name] <= planned_parameters[name]:
            if name not in changed:
                changed.append(name)
    return changed


def _names(names, limit=5):
    shown = ', '.join(names[:limit])
    return shown + (' and {} more'.format(len(names) - limit) if len(names) > limit else '')


def _more(count):
    return ' (and {} more such job(s))'.format(count - 1) if count > 1 else ''
