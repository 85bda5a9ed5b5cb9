"""ASHA: asynchronous successive halving over the step (Li et al., 2018), as Optuna's SuccessiveHalvingPruner.

Rungs are at steps minResource * eta^k below maxResource. When a job first reports at or past a rung's step, its
value there is compared with the values every job of the sweep had when it crossed that rung (running, finished
and stopped jobs alike, itself included); the job goes on only when it is among the best max(1, count // eta) of
them, else it stops. A job is never judged twice at one rung, and a report that crosses several rungs is judged at
each of them in turn, as Optuna does. evaluationInterval and delayEvaluation do not apply: the rungs say when.
"""
from ..decision import fmt
from .base import Policy


class AshaPolicy(Policy):
    name = 'asha'

    def __init__(self, goal, min_resource, max_resource, eta, **kwargs):
        super().__init__(goal, **kwargs)
        self.min_resource, self.max_resource, self.eta = min_resource, max_resource, eta
        self.rungs = []
        step = min_resource
        while step < max_resource:
            self.rungs.append(step)
            step *= eta

    def rungs_crossed(self, trial, n):
        """The rungs (k, step) the trial's n-th report is the first to reach."""
        previous = max((r.step for r in trial.reports[:n - 1]), default=float('-inf'))
        current = trial.reports[n - 1].step
        return [(k, step) for k, step in enumerate(self.rungs) if previous < step <= current]

    def evaluation_points(self, trial):
        return [n for n in range(1, len(trial.reports) + 1) if self.rungs_crossed(trial, n)]

    def rung_value(self, trial, step):
        """The trial's value when it crossed the rung at `step` (its first report at or past it), or None."""
        for report in trial.reports:
            if report.step >= step:
                return report.value
        return None

    def _rungs(self, trial, n, trials):
        """(k, step, value, keep, competing, cutoff, kept) for each rung the n-th report crosses, in order."""
        value = trial.reports[n - 1].value
        for k, step in self.rungs_crossed(trial, n):
            competing = [v for v in (self.rung_value(t, step) for t in trials if t.name != trial.name)
                         if v is not None] + [value]
            keep = max(1, len(competing) // self.eta)
            ranked = sorted(competing, reverse=self.goal == 'max')
            cutoff = ranked[keep - 1]
            kept = value >= cutoff if self.goal == 'max' else value <= cutoff
            yield k, step, value, keep, len(competing), cutoff, kept

    def decide(self, trial, n, trials):
        for k, step, value, keep, competing, cutoff, kept in self._rungs(trial, n, trials):
            if not kept:
                return self.stop(trial, trial.reports[n - 1].step, '{} is not in the top {} of {} at rung {} '
                                 '({} {}; cutoff {})'.format(fmt(value), keep, competing, k, self.step_label,
                                                             fmt(step), fmt(cutoff)),
                                 value=value, rung=k, rungStep=step, keep=keep, competing=competing,
                                 cutoff=cutoff)
        return None

    def kept(self, trial, n, trials):
        texts = ['promoted past rung {} ({} {}) by asha: {} is in the top {} of {} (cutoff {})'.format(
            k, self.step_label, fmt(step), fmt(value), keep, competing, fmt(cutoff))
            for k, step, value, keep, competing, cutoff, _ in self._rungs(trial, n, trials)]
        return '; '.join(texts) or None
