"""ASHA: asynchronous successive halving over the step (Li et al., 2018), as Optuna's SuccessiveHalvingPruner.

Rungs are at steps minResource * eta^k below maxResource. When a job first reports at or past a rung's step, its
value there is compared with the values every job of the sweep had when it crossed that rung (running, finished
and stopped jobs alike, itself included); the job goes on only when it is among the best max(1, count // eta) of
them, else it stops. A job is never judged twice at one rung, and a report that crosses several rungs is judged at
each of them in turn, as Optuna does. evaluationInterval and delayEvaluation do not apply: the rungs say when.

Every value at every rung is read once per poll (one pass over each job's reports) into a sorted list per rung;
a judgment is then a bisection of that list, so a poll's cost grows linearly with the jobs of the sweep, whatever
the number of judgments in it (not as jobs x judgments: issue 44).
"""
import bisect
from dataclasses import replace

from ..decision import fmt
from .base import Policy


class AshaPolicy(Policy):
    name = 'asha'

    def __init__(self, goal, min_resource, max_resource, eta, **kwargs):
        super().__init__(goal, **kwargs)
        self.min_resource, self.max_resource, self.eta = min_resource, max_resource, eta
        self.rungs = []
        self._cache = None  # (the trials, their count, _table of them)
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

    def view(self, trial, n, trials):
        """(the trial with its first n reports, `trials` as given): the rung values are first reports at or past
        each rung, and the judged job competes with its own n-th report's value (see _rungs), so the list needs no
        copy; keeping it the same object lets every judgment of one poll share one table of the rungs."""
        return replace(trial, reports=tuple(trial.reports[:n])), trials

    def _table(self, trials):
        """{rung step: ({job name: its value at the rung}, every such value sorted)} of the trials, built once per
        list of trials (one poll): each judgment is then a bisection, not a pass over the whole sweep."""
        cached = self._cache
        if cached is not None and cached[0] is trials and cached[1] == len(trials):
            return cached[2]
        values = {step: {} for step in self.rungs}
        for t in trials:
            pending = list(self.rungs)
            for report in t.reports:  # one pass over each job's reports fills every rung it crossed
                while pending and report.step >= pending[0]:
                    values[pending.pop(0)][t.name] = report.value
                if not pending:
                    break
        table = {step: (by_name, sorted(by_name.values())) for step, by_name in values.items()}
        self._cache = (trials, len(trials), table)
        return table

    def _rungs(self, trial, n, trials):
        """(k, step, value, keep, competing, cutoff, kept) for each rung the n-th report crosses, in order."""
        value = trial.reports[n - 1].value
        table = self._table(trials)
        for k, step in self.rungs_crossed(trial, n):
            by_name, ranked = table[step]
            # every other job's value at the rung, and the judged job's own (its n-th report)
            ranked = list(ranked)
            if trial.name in by_name:
                del ranked[bisect.bisect_left(ranked, by_name[trial.name])]
            bisect.insort(ranked, value)
            keep = max(1, len(ranked) // self.eta)
            cutoff = ranked[-keep] if self.goal == 'max' else ranked[keep - 1]
            kept = value >= cutoff if self.goal == 'max' else value <= cutoff
            yield k, step, value, keep, len(ranked), cutoff, kept

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
