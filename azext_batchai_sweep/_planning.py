# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Planning a sweep into its plan file: what `create` does, and what `submit --spec` does first.

A re-plan never changes a sweep: an unseeded random sweep reuses the seed an earlier plan recorded (in the plan
file, or in the jobs on the service), a plan whose sweep file or template changed what the jobs are is refused
before anything is written (unless --allow-changes), and the plan file is written to a draft that replaces the old
plan only after every check and service call has succeeded.
"""
import json
import os
import sys

from knack.log import get_logger

from ._errors import core_errors

logger = get_logger(__name__)

# Progress is only worth drawing for sweeps that take a while to write.
PROGRESS_THRESHOLD = 10000
PROGRESS_EVERY = 1000


def plan_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, spec, *, template, cluster,
               storage_account_name, sampling, count, seed, plan_file, max_jobs, yes, allow_changes=False,
               client=None, before_commit=None, retry=None, code=None, code_size_limit=None):
    """Expand the sweep file into the plan file; returns create's summary (sweep, planFile, jobCount, jobs...).

    :param client: the Batch AI client, or None for an offline plan (`--plan-only`): with it, the plan is checked
        against the sweep's jobs on the service (and an unseeded sweep finds its recorded seed there).
    :param before_commit: called with the first job's body after every check, before the plan replaces the old
        one (create checks the cluster and makes the experiment there).
    """
    from azure.cli.core.azclierror import InvalidArgumentValueError
    from .core.service.identity import SweepIdentity
    from .core.spec.plan import commit_plan, discard_plan, plan_header, write_plan_draft
    from ._local_storage import local_file_storage
    from .core.spec.sweepfile import load_sweep_file

    identity = SweepIdentity(resource_group, workspace_name, experiment_name, sweep_name)
    plan_file = os.path.abspath(plan_file or '{}.plan.jsonl'.format(sweep_name))
    previous = _previous_plan(plan_file, identity, yes)
    service = _ServiceView(client, identity, retry)
    with core_errors():
        definition = load_sweep_file(spec, template_path=template, sampling=sampling, count=count, seed=seed,
                                     storage_account_name=storage_account_name, cluster_id=cluster,
                                     file_storage=local_file_storage(cmd.cli_ctx),
                                     recorded_seed=lambda: _recorded_seed(previous, service, plan_file))
        _report_seed(definition, sweep_name)
    from ._code import attach_code_folder
    template_digest = definition.template_digest  # of the template as written: a changed code is named apart
    snapshot = attach_code_folder(definition, code, code_size_limit, storage_account_name)
    with core_errors():
        jobs = definition.jobs(sweep_name=sweep_name)
    if len(jobs) > max_jobs and not yes:
        raise InvalidArgumentValueError(
            'The sweep has {} jobs, more than --max-jobs ({})'.format(len(jobs), max_jobs),
            recommendation='Add --yes to plan it anyway, raise --max-jobs, or use --sampling random --count N.')
    header = plan_header(sweep=sweep_name, resource_group=resource_group, workspace=workspace_name,
                         experiment=experiment_name, job_name_prefix=jobs.prefix, sampling=definition.sampling,
                         parameters=definition.parameter_summaries, job_count=len(jobs),
                         template_digest=template_digest)
    if definition.objective:
        header['objective'] = definition.objective  # the defaults of `sweep metrics`
    if snapshot is not None:
        header['code'] = snapshot.summary()  # the hash is also in every job (core/code/job.py)
    if previous is not None and not allow_changes:
        _refuse_changes(previous, header, plan_file, identity)  # against the plan file: before any request
    if client is not None:
        # The sweep file is valid: a missing cluster (or a job without one) would fail every job, so it is named
        # before anything is compared with the service, written or created.
        from .core.service.preflight import check_cluster
        with core_errors():
            check_cluster(client, (definition.template.get('cluster') or {}).get('id'), retry=retry)
    comparison = service.comparison()
    values = {} if comparison is not None and comparison.has_sweep_jobs() else None
    listed, first = [], []
    with core_errors():
        draft = write_plan_draft(plan_file, header, _records(cmd, jobs, listed, max_jobs, comparison, values, first))
    try:
        if comparison is not None:
            with _conflicts(identity, plan_file):
                comparison.raise_conflicts(allow_changes=allow_changes, planned_parameters=values)
        if before_commit is not None:
            before_commit(first[0] if first else None)
        if snapshot is not None:
            from ._code import say_plan_only, upload_code
            if client is None:
                say_plan_only(snapshot)
            else:
                upload_code(cmd.cli_ctx, snapshot)
        with core_errors():
            commit_plan(draft, plan_file)
    finally:
        discard_plan(draft)
    logger.warning('Planned %d jobs of sweep %s in %s', len(jobs), sweep_name, plan_file)
    if len(listed) < len(jobs):
        logger.warning('The output lists the first %d jobs; the plan file has all of them.', len(listed))
    return {
        'sweep': sweep_name,
        'resourceGroup': resource_group,
        'workspace': workspace_name,
        'experiment': experiment_name,
        'planFile': plan_file,
        'jobCount': len(jobs),
        'sampling': definition.sampling['type'],
        'seed': definition.sampling['seed'],
        'parameters': [spec.name for spec in definition.parameters],
        'jobs': listed,
        **({'code': snapshot.summary()} if snapshot is not None else {}),
    }


class _ServiceView:
    """The sweep's experiment on the service, listed once and only when a check needs it (never offline)."""

    def __init__(self, client, identity, retry=None):
        self.client = client
        self.identity = identity
        self.retry = retry
        self._jobs = None

    def jobs(self):
        """Every job of the experiment (any sweep), [] when the experiment does not exist yet; None offline."""
        if self.client is None:
            return None
        if self._jobs is None:
            from .core.service.identity import experiment_jobs
            with core_errors():
                self._jobs = experiment_jobs(self.client, self.identity.resource_group, self.identity.workspace,
                                             self.identity.experiment, retry=self.retry)
        return self._jobs

    def comparison(self):
        from .core.service.identity import Comparison
        jobs = self.jobs()
        return None if jobs is None else Comparison.of(self.identity.name, jobs)


def _previous_plan(plan_file, identity, yes):
    """The header of the plan already at `plan_file` when it is this sweep's (same target), else None.

    A plan of another sweep or target, or a file that is not a plan, is only replaced with --yes.
    """
    from azure.cli.core.azclierror import InvalidArgumentValueError
    from .core.errors import SweepError
    from .core.spec.plan import read_plan
    if not os.path.exists(plan_file):
        return None
    try:
        header, _ = read_plan(plan_file)
    except (SweepError, OSError, UnicodeDecodeError):
        header = None
    if header is not None:
        theirs = (header.get('sweep'), header.get('resourceGroup'), header.get('workspace'), header.get('experiment'))
        ours = (identity.name, identity.resource_group, identity.workspace, identity.experiment)
        if theirs == ours:
            return header
        what = 'sweep {!r} of group {}, workspace {}, experiment {}'.format(*theirs)
    else:
        what = 'something that is not a sweep plan'
    if yes:
        logger.info('%s holds %s: replaced once the plan is made, as --yes asks', plan_file, what)
        return None
    raise InvalidArgumentValueError(
        'The plan file {} holds {}: it is not replaced'.format(plan_file, what),
        recommendation='Give this sweep its own plan file with --plan-file FILE, or add --yes to replace it.')


def _recorded_seed(previous, service, plan_file=None):
    """The seed an earlier plan of this sweep drew: from its plan file, else from the sweep's default plan file here
    (`<name>.plan.jsonl`, when --plan-file names another), else from its jobs on the service."""
    for header in (previous, _default_plan_header(plan_file, service.identity)):
        if header is not None and (header.get('sampling') or {}).get('seed') is not None:
            return header['sampling']['seed']
    from .core.service.identity import recorded_seed
    from .core.service.listing import select_jobs
    jobs = service.jobs()
    if not jobs:
        return None
    return recorded_seed(select_jobs(jobs, sweep_name=service.identity.name))


def _default_plan_header(plan_file, identity):
    """The header of `<name>.plan.jsonl` in the working directory when it is another file than `plan_file` and holds
    this sweep (same target), else None."""
    if plan_file is None or os.path.abspath('{}.plan.jsonl'.format(identity.name)) == plan_file:
        return None
    return default_plan_header(identity)


def default_plan_header(identity):
    """The header of `<name>.plan.jsonl` in the working directory when it holds this sweep (same target), else None
    (no such file, not a plan, or another sweep's or target's)."""
    default = '{}.plan.jsonl'.format(identity.name)
    if not os.path.isfile(default):
        return None
    from .core.spec.plan import read_plan
    try:
        header, _ = read_plan(default)
    except Exception:  # pylint: disable=broad-except  # not a plan: nothing to take from it
        return None
    ours = (identity.name, identity.resource_group, identity.workspace, identity.experiment)
    theirs = (header.get('sweep'), header.get('resourceGroup'), header.get('workspace'), header.get('experiment'))
    return header if theirs == ours else None


def _report_seed(definition, sweep_name):
    seed = definition.sampling['seed']
    if definition.seed_origin == 'drawn':
        logger.warning('Sweep %s draws its values with the new random seed %d (recorded in the plan and in every '
                       'job, so that planning it again gives the same jobs)', sweep_name, seed)
    elif definition.seed_origin == 'recorded':
        logger.warning('Sweep %s reuses its recorded random seed %d', sweep_name, seed)


def _refuse_changes(previous, header, plan_file, identity):
    """Refuse a re-plan of this sweep whose jobs would differ from its existing plan, naming what changed."""
    from azure.cli.core.azclierror import InvalidArgumentValueError
    changed = what_changed(previous, header)
    if changed:
        raise InvalidArgumentValueError(
            'The sweep file or options changed sweep {} since its plan {}: {}'.format(
                identity.name, plan_file, '; '.join(changed)),
            recommendation=changes_recommendation(identity))


def changes_recommendation(identity):
    return ('A re-plan never changes a sweep: start a new sweep with another name (-n), or add --allow-changes '
            'if you mean to change this one (az batchai sweep create {} --spec FILE --allow-changes).'.format(
                identity.args()))


def what_changed(previous, header):
    """What differs between two plan headers of one sweep, in words ('parameter LR: ...', 'the job template')."""
    changes = []
    old = {entry.get('name'): entry for entry in previous.get('parameters') or ()}
    new = {entry.get('name'): entry for entry in header.get('parameters') or ()}
    for name in list(old) + [name for name in new if name not in old]:
        if name not in new:
            changes.append('parameter {} was removed'.format(name))
        elif name not in old:
            changes.append('parameter {} was added'.format(name))
        elif old[name] != new[name]:
            fields = sorted(key for key in set(old[name]) | set(new[name]) if old[name].get(key) != new[name].get(key))
            changes.append('parameter {} changed ({})'.format(name, ', '.join(
                '{}: {} -> {}'.format(key, json.dumps(old[name].get(key)), json.dumps(new[name].get(key)))
                for key in fields)))
    old_sampling, new_sampling = previous.get('sampling') or {}, header.get('sampling') or {}
    for key in ('type', 'count', 'seed'):
        if old_sampling.get(key) != new_sampling.get(key):
            changes.append('sampling {}: {} -> {}'.format(key, old_sampling.get(key), new_sampling.get(key)))
    if previous.get('jobNamePrefix') != header.get('jobNamePrefix'):
        changes.append('jobNamePrefix: {} -> {}'.format(previous.get('jobNamePrefix'), header.get('jobNamePrefix')))
    old_code, new_code = (previous.get('code') or {}).get('hash'), (header.get('code') or {}).get('hash')
    if old_code != new_code:
        changes.append('the code snapshot: {} -> {}'.format((old_code or 'none')[:12], (new_code or 'none')[:12]))
    if previous.get('templateDigest') and previous.get('templateDigest') != header.get('templateDigest'):
        changes.append('the job template (the sweep file\'s job, --template, --cluster or the storage account)')
    return changes


class _conflicts:  # pylint: disable=invalid-name,too-few-public-methods
    """Turn a core SweepConflict into az's error with a pasteable way forward."""

    def __init__(self, identity, plan_file=None, command='create'):
        self.identity, self.plan_file, self.command = identity, plan_file, command

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, _tb):
        from .core.service.identity import SweepConflict
        if not isinstance(exc, SweepConflict):
            return False
        raise conflict_error(exc, self.identity, self.command) from None


def conflict_error(exc, identity, command):
    """The azclierror of a SweepConflict (see core/service/identity.py), with the command to run next."""
    from azure.cli.core.azclierror import InvalidArgumentValueError
    from ._errors import capitalized
    if exc.kind == 'foreign':
        recommendation = ('Use another sweep name (-n) or another experiment (-e): job names are shared within an '
                          'experiment.')
    elif exc.legacy:
        recommendation = ('Keep using the sweep\'s 0.1 plan file with "az batchai sweep submit {} --plan-file FILE" '
                          '(0.2 reads it), or start a new sweep with another name (-n); "az batchai sweep status {}" '
                          'still shows the 0.1 sweep.'.format(identity.args(), identity.args()))
    elif command == 'submit':
        recommendation = ('Start a new sweep with another name (-n), or add --allow-changes to re-create the changed '
                          'jobs (az batchai sweep submit {} --allow-changes).'.format(identity.args()))
    else:
        recommendation = changes_recommendation(identity)
    return InvalidArgumentValueError(capitalized(str(exc)), recommendation=recommendation)


def _plain(parameters):
    # File values are str subclasses carrying attributes (core.spec.substitution.ExternalValue); az's output would print
    # those attributes as an object instead of the string.
    return {name: str(value) if isinstance(value, str) else value for name, value in parameters.items()}


def _records(cmd, jobs, listed, limit, comparison=None, values=None, first=None):
    """The plan's job records, one at a time; the first `limit` are also kept (name and parameters) for the output.

    Each job body gets its digest (BATCHAI_SWEEP_JOB_DIGEST) and, with a comparison, is checked against the
    service; `values` (a dict, when given) collects each parameter's values to name a changed parameter.
    """
    from .core.service.identity import add_digest, body_digest
    # A bar is for someone watching: redirected stderr (CI logs, scripts) gets only the final status line.
    watched = len(jobs) >= PROGRESS_THRESHOLD and sys.stderr.isatty()
    progress = cmd.cli_ctx.get_progress_controller(det=True) if watched else None
    for job in jobs:
        if len(listed) < limit:
            listed.append({'name': job.name, 'parameters': _plain(job.parameters)})
        if progress and job.index % PROGRESS_EVERY == 0:
            progress.add(message='Planning', value=job.index, total_val=len(jobs))
        text = job.body_json()
        digest = body_digest(text)
        if comparison is not None:
            comparison.add(job.name, digest)
        if values is not None:
            for name, value in json.loads(job.parameters_json).items():
                values.setdefault(name, set()).add(json.dumps(value, sort_keys=True))
        body = add_digest(json.loads(text), digest)
        if first is not None and not first:
            first.append(body)
        yield {'name': job.name, 'parameters': job.parameters, 'job': body}
    if progress:
        progress.end()
