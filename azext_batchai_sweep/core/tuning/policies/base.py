"""What every early-termination policy shares: when a job is judged, and how reports line up by step.

Azure ML's vocabulary: every report a job prints is one *interval*; a policy judges a job at its reports number
``n`` where ``n >= delayEvaluation`` and ``n % evaluationInterval == 0`` (so no job is judged before it has made
``delayEvaluation`` reports). Jobs are compared *at the same step*: another job counts with its reports up to the
judged report's step, and only when it has reached that step (finished and running jobs alike).

A job's output is untrusted, so the rules hold for any reports: any finite values (1e308, -1e308, 5e-324), steps in
any order, repeated or missing. The judged job counts with the reports it had made when it printed its n-th one, and
never with a later one (a later report at the same or a lower step is the future, not "so far"); a job that has
reached the step but has no report up to it (a job resuming from a checkpoint, whose first report is at a later
step) has no value there and is left out. A decision that cannot be computed is skipped, logged, never raised: no
value a job prints ends the sweep.
"""
import logging
import math
from dataclasses import replace

from ..decision import Decision, STOPPED, fmt

logger = logging.getLogger(__name__)


class Policy:
    """Base of the policies: ``judge`` says whether a job stops at one of its reports.

    A policy is a pure function of the trials: the controller calls ``judge`` once per evaluation point of each
    running job (the points it has not judged yet, in order) and terminates the job at the first "stop".
    """

    name = ''

    def __init__(self, goal, evaluation_interval=1, delay_evaluation=0, step_label='step'):
        self.goal = goal
        self.evaluation_interval = max(1, int(evaluation_interval or 1))
        self.delay_evaluation = max(0, int(delay_evaluation or 0))
        self.step_label = step_label

    def evaluation_points(self, trial):
        """The report counts n (1-based) at which the job is judged, given the reports it has made so far."""
        return [n for n in range(1, len(trial.reports) + 1)
                if n >= self.delay_evaluation and n % self.evaluation_interval == 0]

    def judge(self, trial, n, trials):
        """A stop Decision for `trial` at its n-th report, or None to let it go on (or when no decision can be
        computed from what the jobs reported: logged, never raised).

        :param trials: every job of the sweep (including `trial`), finished and pending.
        """
        own, seen = self.view(trial, n, trials)
        try:
            return self.decide(own, n, seen)
        except (ArithmeticError, ValueError, TypeError) as ex:
            logger.warning('job %s: the %s decision at its report %d was skipped: %s', trial.name, self.name, n, ex)
            return None

    @staticmethod
    def view(trial, n, trials):
        """(trial, trials) as the judgement of the trial's n-th report sees them: the trial with its first n reports."""
        own = replace(trial, reports=tuple(trial.reports[:n]))
        return own, [own if t.name == trial.name else t for t in trials]

    def decide(self, trial, n, trials):
        """judge's rule: `trial` holds its first n reports only, and `trials` holds it so."""
        raise NotImplementedError

    def kept(self, trial, n, trials):  # pylint: disable=unused-argument
        """What a policy that promotes at rungs (ASHA) says of a job it let go on at its n-th report, else None:
        shown on stderr like a stop."""
        return None

    def stop(self, trial, step, text, **numbers):
        numbers = {key: (value if not isinstance(value, float) or math.isfinite(value) else None)
                   for key, value in numbers.items()}  # JSON has no inf: a bound past the float range is None
        return Decision(job=trial.name, kind=STOPPED, rule=self.name, step=step,
                        text='stopped at {} {} by {}: {}'.format(self.step_label, fmt(step), self.name, text),
                        numbers=numbers)


def reports_upto(trial, step):
    """The trial's reports at steps up to `step`."""
    return [r for r in trial.reports if r.step <= step]


def reached(trial, step):
    """True when the trial has reported at `step` or later."""
    return bool(trial.reports) and max(r.step for r in trial.reports) >= step


def value_at(trial, step):
    """The trial's latest value at a step up to `step` (its value "at" that step), or None."""
    upto = reports_upto(trial, step)
    return upto[-1].value if upto else None


def peers_at(trials, step):
    """The trials that have reached `step` with a value at it: those an evaluation at that step compares with (a
    job whose first report is past the step has reached it, but has no value there)."""
    return [t for t in trials if reached(t, step) and reports_upto(t, step)]
