"""The sweep file's ``objectives`` and ``constraints`` (core/tuning/objectives.py), checked beyond what
sweep.schema.json says, with the same SpecErrors as the rest of the file, before the first request.

Kept apart from settings.py (objective, limits, earlyTermination, Hyperband) and bayesian_settings.py; sweepfile.py
calls :func:`check_objectives` before check_tuning, which then sees the first objective as the sweep's objective:
what policies, Hyperband and the result limits judge by.
"""
from ..errors import SpecError
from .objectives import CONSTRAINTS, OBJECTIVES
from .settings import RUN_ONLY


def _check_metrics(entries, key, path, hint):
    """Each entry's metric: a name MetricExtractor takes, not named by an earlier entry of the section."""
    from ..outputs.metrics import MetricExtractor  # not at import: planning a sweep needs no HTTP stack
    seen = []
    for index, entry in enumerate(entries):
        field = '{}[{}].metric'.format(key, index)
        if entry['metric'] in seen:
            raise SpecError('expected a metric not named by another entry of {} ({!r} is {}[{}]){}'.format(
                key, entry['metric'], key, seen.index(entry['metric']), hint), source=path, path=field)
        seen.append(entry['metric'])
        try:
            MetricExtractor(metric_name=entry['metric'])
        except SpecError as ex:
            raise SpecError(ex.message, source=path, path=field) from None


def check_objectives(document, path, adaptive):
    """The objectives/constraints spec the jobs carry ({'objectives': [...], 'constraints': [...]}), or None.

    Sets ``document['objective']`` to the first of several objectives (a copy of the document is not needed: the
    document is the loader's own). Refuses both ``objective`` and ``objectives``, repeated metrics, a constraint
    whose min is above its max, and either section outside `sweep run`.
    """
    objectives = document.get(OBJECTIVES)
    constraints = document.get(CONSTRAINTS)
    if objectives is None and constraints is None:
        return None
    for key, present in ((OBJECTIVES, objectives), (CONSTRAINTS, constraints)):
        if present is not None and not adaptive:
            raise SpecError('expected no {} here: '.format(key) + RUN_ONLY.format('compare jobs by several metrics'),
                            source=path, path=key)
    spec = {}
    if objectives is not None:
        if document.get('objective') is not None:
            raise SpecError('expected either objective (one metric) or objectives (two or more), not both',
                            source=path, path=OBJECTIVES)
        _check_metrics(objectives, OBJECTIVES, path, '')
        spec[OBJECTIVES] = [{'metric': o['metric'], 'goal': o['goal']} for o in objectives]
        document['objective'] = dict(spec[OBJECTIVES][0])
    if constraints is not None:
        if document.get('objective') is None:
            raise SpecError('expected an objective or objectives: constraints decide which jobs may be the best',
                            source=path, path=CONSTRAINTS)
        _check_metrics(constraints, CONSTRAINTS, path, ': give both min and max in one')
        for index, entry in enumerate(constraints):
            where = '{}[{}]'.format(CONSTRAINTS, index)
            if 'min' in entry and 'max' in entry and entry['min'] > entry['max']:
                raise SpecError('expected a min no larger than max ({:g}): no value could be feasible'.format(
                    entry['max']), source=path, path=where + '.min')
        spec[CONSTRAINTS] = [{k: entry[k] for k in ('metric', 'max', 'min') if k in entry} for entry in constraints]
    return spec


def first_objective_note(definition):
    """What `run` says before it starts when one number must decide in a sweep with several objectives: which rules
    judge by the first objective alone (None when no rule compares jobs by one number)."""
    spec = definition.objective_set or {}
    objectives = spec.get(OBJECTIVES) or []
    if len(objectives) < 2:
        return None
    rules = []
    if definition.early_termination:
        rules.append('earlyTermination ({})'.format(definition.early_termination['policy']))
    sampling = definition.sampling
    if sampling.get('type') == 'hyperband':
        rules.append('Hyperband')
    if sampling.get('sampler') == 'bayesian' or sampling.get('multiFidelity'):
        rules.append('the multi-fidelity model (BOHB: the TPE at each {})'.format(
            'rung' if sampling.get('multiFidelity') else 'resource'))
    rules += ['limits.' + key for key in ('stopAt', 'noImprovementJobs') if key in (definition.limits or {})]
    if not rules:
        return None
    first = objectives[0]
    return '{} judge(s) by the first objective alone, {} ({}); {} count(s) for the Pareto front only'.format(
        ', '.join(rules), first['metric'], first['goal'], ', '.join(o['metric'] for o in objectives[1:]))
