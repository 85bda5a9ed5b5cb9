"""The sweep file's ``objectives`` and ``constraints`` (core/tuning/objectives.py), checked beyond what
sweep.schema.json says, with the same SpecErrors as the rest of the file, before the first request.

Kept apart from settings.py (objective, limits, earlyTermination, Hyperband) and bayesian_settings.py; sweepfile.py
calls :func:`check_objectives` before check_tuning, which then sees the first objective as the sweep's objective:
what policies, Hyperband and the result limits judge by.
"""
from ..errors import SpecError
from .objectives import CONSTRAINTS, OBJECTIVES
from .settings import RUN_ONLY


def _check_metric(name, path, field):
    from ..outputs.metrics import MetricExtractor  # not at import: planning a sweep needs no HTTP stack
    try:
        MetricExtractor(metric_name=name)
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
        seen = []
        for index, entry in enumerate(objectives):
            field = '{}[{}].metric'.format(OBJECTIVES, index)
            if entry['metric'] in seen:
                raise SpecError('expected a metric not named by another objective ({!r} is objectives[{}])'.format(
                    entry['metric'], seen.index(entry['metric'])), source=path, path=field)
            seen.append(entry['metric'])
            _check_metric(entry['metric'], path, field)
        spec[OBJECTIVES] = [{'metric': o['metric'], 'goal': o['goal']} for o in objectives]
        document['objective'] = dict(spec[OBJECTIVES][0])
    if constraints is not None:
        if document.get('objective') is None:
            raise SpecError('expected an objective or objectives: constraints decide which jobs may be the best',
                            source=path, path=CONSTRAINTS)
        seen = []
        for index, entry in enumerate(constraints):
            where = '{}[{}]'.format(CONSTRAINTS, index)
            if entry['metric'] in seen:
                raise SpecError('expected a metric not named by another constraint (give both min and max in '
                                'one)', source=path, path=where + '.metric')
            seen.append(entry['metric'])
            _check_metric(entry['metric'], path, where + '.metric')
            if 'min' in entry and 'max' in entry and entry['min'] > entry['max']:
                raise SpecError('expected a min no larger than max ({:g}): no value could be feasible'.format(
                    entry['max']), source=path, path=where + '.min')
        spec[CONSTRAINTS] = [{k: entry[k] for k in ('metric', 'max', 'min') if k in entry} for entry in constraints]
    return spec
