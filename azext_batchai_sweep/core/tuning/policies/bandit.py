"""Bandit (Azure ML's BanditPolicy): stop a job whose value is worse than the best so far by more than the slack.

At an evaluation at step s, "the best so far" is the best value any job of the sweep reported at a step up to s.
Goal max: stop when value < best / (1 + slackFactor), or value < best - slackAmount.
Goal min: stop when value > best * (1 + slackFactor), or value > best + slackAmount.
"""
from ..decision import best_of, fmt
from .base import Policy, reports_upto


class BanditPolicy(Policy):
    name = 'bandit'

    def __init__(self, goal, slack_factor=None, slack_amount=None, **kwargs):
        super().__init__(goal, **kwargs)
        if (slack_factor is None) == (slack_amount is None):
            raise ValueError('bandit needs exactly one of slack_factor and slack_amount')
        self.slack_factor, self.slack_amount = slack_factor, slack_amount

    def threshold(self, best):
        """The value a job must not be worse than, and the formula as text."""
        if self.slack_factor is not None:
            if self.goal == 'max':
                return best / (1 + self.slack_factor), '{} / {}'.format(fmt(best), fmt(1 + self.slack_factor))
            return best * (1 + self.slack_factor), '{} * {}'.format(fmt(best), fmt(1 + self.slack_factor))
        if self.goal == 'max':
            return best - self.slack_amount, '{} - {}'.format(fmt(best), fmt(self.slack_amount))
        return best + self.slack_amount, '{} + {}'.format(fmt(best), fmt(self.slack_amount))

    def decide(self, trial, n, trials):
        report = trial.reports[n - 1]
        candidates = [(r.value, t.name) for t in trials for r in reports_upto(t, report.step)]
        best = best_of([value for value, _ in candidates], self.goal)
        limit, formula = self.threshold(best)
        worse = report.value < limit if self.goal == 'max' else report.value > limit
        if not worse:
            return None
        leader = min(name for value, name in candidates if value == best)
        return self.stop(trial, report.step, '{} {} {}'.format(
            fmt(report.value), '<' if self.goal == 'max' else '>', formula),
            value=report.value, best=best, threshold=limit, bestJob=leader)
