"""A sweep's objectives and constraints, judged on its jobs: values, feasibility, dominance and the Pareto front.

The sweep file's ``objectives: [{metric, goal}, ...]`` (two or more) and ``constraints: [{metric, max and/or min},
...]``; the single ``objective`` is unchanged. The first objective is what a sweep with several is steered by
where one number must decide: its reports are the jobs' intermediate values, so early-termination policies,
Hyperband/ASHA, limits.stopAt and limits.noImprovementJobs judge by the first objective alone (the documented
rule, docs/sweep-objectives.md). Every other objective and every constraint is the metric's last value in the job's
log (Katib's NAME=VALUE, in the same file), kept in ``Trial.metrics``.

Feasibility: a job is feasible when it reported every constraint's metric and each lies within its bounds (a
bound itself is allowed). An infeasible job is never the best and never on the front. Its violation is Optuna's
constraints_func score: the sum of how far each value lies outside its bounds (a metric not reported counts as
infinitely far).
"""
import math
from dataclasses import dataclass

from .pareto import nondominated_ranks

# The keys of the spec the jobs carry (loop.ENV_OBJECTIVES), as the sweep file spells them.
OBJECTIVES = 'objectives'
CONSTRAINTS = 'constraints'


@dataclass(frozen=True)
class Constraint:
    """``metric`` must be at most ``maximum`` and/or at least ``minimum``."""
    metric: str
    maximum: float = None
    minimum: float = None

    def violation(self, value):
        """How far value lies outside the bounds (0: within); a value not reported is infinitely far."""
        if value is None:
            return math.inf
        over = value - self.maximum if self.maximum is not None else 0.0
        under = self.minimum - value if self.minimum is not None else 0.0
        return max(0.0, over, under)

    def describe(self):
        bounds = []
        if self.minimum is not None:
            bounds.append('>= {:g}'.format(self.minimum))
        if self.maximum is not None:
            bounds.append('<= {:g}'.format(self.maximum))
        return '{} {}'.format(self.metric, ' and '.join(bounds))

    def as_dict(self):
        spec = {'metric': self.metric}
        if self.maximum is not None:
            spec['max'] = self.maximum
        if self.minimum is not None:
            spec['min'] = self.minimum
        return spec


class Objectives:  # pylint: disable=too-many-public-methods
    """The objectives ((metric, goal) pairs, the first read from the job's reports) and the constraints of a sweep.

    :param objectives: [(metric, goal), ...]; one pair for a sweep with a single objective (and constraints).
    :param constraints: [Constraint, ...].
    """

    def __init__(self, objectives, constraints=()):
        self.objectives = [(metric, goal) for metric, goal in objectives]
        self.constraints = list(constraints)

    @classmethod
    def from_spec(cls, spec, objective=None):
        """From the spec jobs carry ({'objectives': [...], 'constraints': [...]}, either absent) and the sweep's
        single objective (its metric names the first objective when ``objectives`` is absent)."""
        spec = spec or {}
        pairs = [(o['metric'], o['goal']) for o in spec.get(OBJECTIVES) or ()]
        if not pairs and objective is not None:
            pairs = [(objective.get('metric') or 'objective', objective.get('goal', 'max'))]
        constraints = [Constraint(c['metric'], c.get('max'), c.get('min')) for c in spec.get(CONSTRAINTS) or ()]
        return cls(pairs, constraints)

    def spec(self):
        """What the jobs carry: the multi-objective part of the sweep file (empty for a plain single objective)."""
        spec = {}
        if len(self.objectives) > 1:
            spec[OBJECTIVES] = [{'metric': m, 'goal': g} for m, g in self.objectives]
        if self.constraints:
            spec[CONSTRAINTS] = [c.as_dict() for c in self.constraints]
        return spec

    @property
    def several(self):
        return len(self.objectives) > 1

    @property
    def names(self):
        return [metric for metric, _ in self.objectives]

    @property
    def goals(self):
        return [goal for _, goal in self.objectives]

    def extra_metrics(self):
        """The metrics read from the logs besides the first objective's reports, each once, in file order."""
        names = [m for m, _ in self.objectives[1:]] + [c.metric for c in self.constraints]
        return list(dict.fromkeys(names))

    def _metric(self, trial, name):
        value = trial.metrics.get(name) if trial.metrics else None
        if value is None and name == self.objectives[0][0]:
            value = trial.last
        return value if isinstance(value, (int, float)) and math.isfinite(value) else None

    def values(self, trial, first=None):
        """The objectives' values of a job (the first: ``first`` or the job's last report), or None when one is
        missing."""
        head = trial.last if first is None else first
        if not isinstance(head, (int, float)) or not math.isfinite(head):
            return None
        values = [float(head)]
        for metric, _ in self.objectives[1:]:
            value = self._metric(trial, metric)
            if value is None:
                return None
            values.append(float(value))
        return tuple(values)

    def losses(self, values):
        """The values as points to minimise (a goal max negated)."""
        return tuple(-v if goal == 'max' else v for v, goal in zip(values, self.goals))

    def failed(self, trial):
        """[(Constraint, value or None), ...] of the constraints the job breaks."""
        failed = []
        for constraint in self.constraints:
            value = self._metric(trial, constraint.metric)
            if constraint.violation(value) > 0:
                failed.append((constraint, value))
        return failed

    def violation(self, trial):
        """The job's total violation (0: feasible)."""
        return sum(c.violation(self._metric(trial, c.metric)) for c in self.constraints)

    def reported_violation(self, trial):
        """The violation of the constraints whose metrics the job has reported (a job still running, or stopped
        early, may not have reached the others yet: they are not counted as broken)."""
        return sum(c.violation(v) for c, v in ((c, self._metric(trial, c.metric)) for c in self.constraints)
                   if v is not None)

    def constraints_reported(self, trial):
        """True when the job has a value of every constraint's metric (its feasibility is known)."""
        return all(self._metric(trial, c.metric) is not None for c in self.constraints)

    def feasible(self, trial):
        return not self.failed(trial)

    def describe_failed(self, trial):
        """Which constraints a job breaks, in words ('' when none)."""
        return '; '.join('{} ({})'.format(c.describe(), 'not reported' if v is None else '{:g}'.format(v))
                         for c, v in self.failed(trial))

    def ranked(self, trials):
        """[(trial, values, rank), ...] of the feasible jobs with every objective, rank their non-domination rank
        (0: the Pareto front), sorted by rank then index."""
        scored = [(t, self.values(t)) for t in trials]
        scored = [(t, v) for t, v in scored if v is not None and self.feasible(t)]
        ranks = nondominated_ranks([self.losses(v) for _, v in scored])
        return sorted(((t, v, r) for (t, v), r in zip(scored, ranks)), key=lambda item: (item[2], item[0].index))
