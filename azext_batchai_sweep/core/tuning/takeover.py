"""Whether `sweep run` may go on with the jobs its sweep already has on the service, before its first request.

A run resumes its own sweep: the jobs an earlier run of the same sweep file submitted (same objective, sampling,
early termination and job template). Anything else under the sweep's name is another sweep, which a run never takes
over: jobs `create`/`submit` made (they carry no run settings), or jobs of a run whose sweep file has since changed
(a fixed objective included: the jobs already judged by the old one would be ranked by two objectives, and `status`
and `metrics` would disagree). The jobs stay as they are; the run is refused, naming what differs, as `create` and
`submit` refuse a re-plan that changes a sweep.
"""
import json

from ..service.identity import body_digest, digest_of_job
from ..service.listing import env_of, parameters_of
from ..spec.naming import canonical_json
from .loop import ENV_OBJECTIVE, ENV_OBJECTIVES, ENV_TUNING
# Sampling settings that only say how many jobs to run: a resumed run may be given more (or fewer) of them.
_COUNTS = ('count',)


def _loaded(text):
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text


def _without_counts(tuning):
    tuning = dict(tuning or {})
    tuning['sampling'] = {key: value for key, value in (tuning.get('sampling') or {}).items() if key not in _COUNTS}
    return tuning


def differences(jobs, factory):
    """What differs between the sweep's jobs on the service and the run about to start (a JobFactory of its sweep
    file), in words; [] when the run may resume them. `jobs`: the sweep's listed jobs (not being deleted)."""
    if not jobs:
        return []
    envs = [env_of(job) for job in jobs]
    made_by_plan = [job.name for job, env in zip(jobs, envs) if not env.get(ENV_TUNING)]
    if made_by_plan:
        return ['{} of its {} job(s) were made by "az batchai sweep create/submit", not by a run ({}): a run steers '
                'only the jobs it submitted'.format(len(made_by_plan), len(jobs), ', '.join(made_by_plan[:3]))]
    changes = []
    new = factory.constant
    for variable, what in ((ENV_OBJECTIVE, 'objective'), (ENV_OBJECTIVES, 'objectives/constraints')):
        old_values = {canonical_json(_loaded(env.get(variable))) if env.get(variable) else None for env in envs}
        if old_values != {new.get(variable)}:
            old = [_loaded(value) for value in old_values if value] or [None]
            changes.append('{}: {} -> {}'.format(what, ', '.join(json.dumps(value, sort_keys=True) for value in old),
                                                 json.dumps(_loaded(new.get(variable)), sort_keys=True)))
    old_tuning = _without_counts(_loaded(envs[0].get(ENV_TUNING)))
    new_tuning = _without_counts(_loaded(new[ENV_TUNING]))
    for key, what in (('sampling', 'sampling'), ('earlyTermination', 'earlyTermination')):
        if old_tuning.get(key) != new_tuning.get(key):
            changes.append('{}: {} -> {}'.format(what, json.dumps(old_tuning.get(key), sort_keys=True),
                                                 json.dumps(new_tuning.get(key), sort_keys=True)))
    # A job records its sweep's seed: another seed is a change of sampling (said above), not of the template.
    same_seed = (old_tuning['sampling'].get('seed') == new_tuning['sampling'].get('seed'))
    changed_jobs = [job.name for job in jobs if same_seed and _template_changed(job, factory)]
    if changed_jobs:
        changes.append('the job template (the sweep file\'s job, --template, --cluster or the storage account) of {} '
                       'job(s): {}'.format(len(changed_jobs), ', '.join(changed_jobs[:3])))
    return changes


def _template_changed(job, factory):
    """Whether the sweep file now renders this job's values into another job than the one on the service."""
    recorded = digest_of_job(job)
    if recorded is None:
        return True
    try:
        values = parameters_of(job)
        text = factory.template.render_json(values, canonical_json(values))
    except Exception:  # pylint: disable=broad-except
        return True  # its parameters are not the sweep file's any more
    return body_digest(text) != recorded
