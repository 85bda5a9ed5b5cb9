"""What every early-termination policy shares: when a job is judged, and how reports line up by step.

Azure ML's vocabulary: every report a job prints is one *interval*; a policy judges a job at its reports number
``n`` where ``n >= delayEvaluation`` and ``n % evaluationInterval == 0`` (so no job is judged before it has made
``delayEvaluation`` reports). Jobs are compared *at the same step*: another job counts with its reports up to the
judged report's step, and only when it has reached that step (finished and running jobs alike).
"""
from ..decision import Decision, STOPPED, fmt


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
        """A stop Decision for `trial` at its n-th report, or None to let it go on.

        :param trials: every job of the sweep (including `trial`), finished and pending.
        """
        raise NotImplementedError

    def kept(self, trial, n, trials):  # pylint: disable=unused-argument
        """What a policy that promotes at rungs (ASHA) says of a job it let go on at its n-th report, else None:
        shown on stderr like a stop."""
        return None

    def stop(self, trial, step, text, **numbers):
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
    """The trials that have reached `step`: those an evaluation at that step compares with."""
    return [t for t in trials if reached(t, step)]
