"""Median stopping (Azure ML's MedianStoppingPolicy): stop a job whose best value so far is worse than the median
of the running averages of all the sweep's jobs at the same step (running jobs included).

At an evaluation at step s: each job that has reached s has a running average (the mean of its values up to s);
the judged job stops when its best value up to s is worse than the median of those averages (its own included).
"""
from ...floats import mean, median as median_of
from ..decision import best_of, better, fmt
from .base import Policy, peers_at, reports_upto


class MedianPolicy(Policy):
    name = 'median'

    def decide(self, trial, n, trials):
        report = trial.reports[n - 1]
        step = report.step
        averages = [mean(r.value for r in reports_upto(t, step)) for t in peers_at(trials, step)]
        if len(averages) < 2:
            return None  # nothing to compare with yet
        median = median_of(averages)
        best = best_of([r.value for r in reports_upto(trial, step)], self.goal)  # trial: its first n reports
        if not better(median, best, self.goal):
            return None
        return self.stop(trial, step, 'best {} {} median {} of {} running averages'.format(
            fmt(best), '<' if self.goal == 'max' else '>', fmt(median), len(averages)),
            best=best, median=median, jobs=len(averages))
