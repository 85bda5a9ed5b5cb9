"""The Pareto front of a sweep with several objectives and/or constraints: what `run` and `metrics` print, what
`status` marks and what the report draws; pure functions of the jobs (core/tuning/objectives.py judges them).

Only jobs that ran to the end with every objective count (at Hyperband's largest resource, as for the best job); an
infeasible job is never on the front and is listed with the constraints it broke.
"""
from .objectives import CONSTRAINTS, OBJECTIVES
from .final import final_trials

FRONT = 'front'
INFEASIBLE = 'infeasible'


def _entry(trial, values, rank, objectives):
    return {'name': trial.name, 'rank': rank, 'values': dict(zip(objectives.names, values)),
            'parameters': trial.params}


def front_figures(final, trials, objectives):
    """{'objectives', 'constraints', 'front': [entry, ...], 'ranked': [entry, ...], 'infeasible': [...]}.

    :param final: the jobs that count (final.final_trials).
    :param trials: every job (the infeasible ones are named from all the finished jobs).
    Entries: {name, rank (0: on the front), values {metric: value}, parameters}; 'ranked' holds every feasible job
    with all objectives, by dominance rank then submission order; 'front' those of rank 0; 'infeasible' entries:
    {name, failed (the constraints broken, in words), values (None without every objective), parameters}.
    """
    ranked = [_entry(t, v, r, objectives) for t, v, r in objectives.ranked(final)]
    infeasible = [{'name': t.name, 'failed': objectives.describe_failed(t),
                   'values': dict(zip(objectives.names, objectives.values(t) or ())) or None,
                   'parameters': t.params}
                  for t in trials if t.state == 'succeeded' and not t.stopped_early and objectives.constraints
                  and not objectives.feasible(t)]
    spec = objectives.spec()
    return {OBJECTIVES: spec.get(OBJECTIVES) or [{'metric': m, 'goal': g} for m, g in objectives.objectives],
            CONSTRAINTS: spec.get(CONSTRAINTS) or [],
            FRONT: [e for e in ranked if e['rank'] == 0], 'ranked': ranked, INFEASIBLE: infeasible}


def front_rows(trials, objectives):
    """{job name: what `status` adds to its row}: 'objectives' {metric: value}, 'paretoRank' (None when the job
    does not count), 'onFront', and 'infeasible' (the constraints broken, or None)."""
    ranks = {t.name: r for t, _, r in objectives.ranked(final_trials(trials))}
    rows = {}
    for trial in trials:
        values = objectives.values(trial)
        broken = objectives.describe_failed(trial) if objectives.constraints and trial.state == 'succeeded' \
            and not trial.stopped_early else ''
        rows[trial.name] = {'objectives': dict(zip(objectives.names, values)) if values else None,
                            'paretoRank': ranks.get(trial.name), 'onFront': ranks.get(trial.name) == 0,
                            'infeasible': broken or None}
    return rows


def describe_front(pareto):
    """One line for stderr: the front's size, and how many jobs broke a constraint."""
    text = 'Pareto front of {}: {} job(s)'.format(
        ', '.join('{} ({})'.format(o['metric'], o['goal']) for o in pareto[OBJECTIVES]), len(pareto[FRONT]))
    if pareto[FRONT]:
        text += ' ({})'.format(', '.join(e['name'] for e in pareto[FRONT][:5]) +
                               (' and {} more'.format(len(pareto[FRONT]) - 5) if len(pareto[FRONT]) > 5 else ''))
    if pareto[CONSTRAINTS]:
        text += '; {} infeasible'.format(len(pareto[INFEASIBLE]))
    return text
