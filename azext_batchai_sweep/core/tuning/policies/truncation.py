"""Truncation selection (Azure ML's TruncationSelectionPolicy): at each evaluation, stop a job that is among the
lowest truncationPercentage percent of the sweep's jobs at the same step (running jobs included).

At step s, the jobs that have reached s are ranked by their value at s; the floor(count * percentage / 100) worst
are cut. A job is cut when fewer than that many jobs are strictly worse than it.
"""
import math

from ..decision import better, fmt
from .base import Policy, peers_at, value_at


class TruncationPolicy(Policy):
    name = 'truncation'

    def __init__(self, goal, truncation_percentage, **kwargs):
        super().__init__(goal, **kwargs)
        self.percentage = truncation_percentage

    def decide(self, trial, n, trials):
        report = trial.reports[n - 1]
        step = report.step
        others = [value_at(t, step) for t in peers_at(trials, step) if t.name != trial.name]
        values = others + [report.value]
        cut = math.floor(len(values) * self.percentage / 100.0)
        worse = sum(1 for v in others if better(report.value, v, self.goal))
        if cut == 0 or worse >= cut:
            return None
        return self.stop(trial, step, '{} is in the lowest {}% of {} jobs at this step (rank {} of {} from the '
                         'bottom; {} cut)'.format(fmt(report.value), fmt(self.percentage), len(values), worse + 1,
                                                   len(values), cut),
                         value=report.value, jobs=len(values), cut=cut, rankFromBottom=worse + 1)
