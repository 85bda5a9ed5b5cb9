"""One number per job: the value a `sweep run` job counts with, the same in run, status, metrics and report.

A job's value is its objective at its last judged step:
- a job no rule stopped: the last value it reported;
- a job a rule stopped (a policy, ASHA, the run's timeout): the last value it had reported when it was judged. A job
  goes on printing for a moment after the decision, before it is gone; those lines are shown as "after the decision"
  and count for nothing (not for the best job, not for the samplers, not for the steps run).

`status` shows it as Latest (beside Best, the best value among the judged steps), `metrics` ranks by it (the log's
last value, when later, is its afterDecision), the run's best and the report's figures use it.
"""
from .decision import STOPPED, TIMEOUT

# Decision.numbers: how many reports the rule had read when it judged the job (set by the controller).
REPORTS_JUDGED = 'reportsJudged'
STOPPING_KINDS = (STOPPED, TIMEOUT)
# Trial.extra: how many reports a stopped job's log shows in all (those after its decision too): the steps it ran.
REPORTS_RUN = 'reportsRun'


def steps_run(trial):
    """The steps a job ran, as its log shows them: every report, the ones after a stop decision included (they were
    run, so they were not saved), however many of them count for its value."""
    return max(len(trial.reports), trial.extra.get(REPORTS_RUN, 0))


def judged_reports(reports, decision):
    """The reports that count: all of them, or for a job a decision stopped, those the rule had read when it judged
    (or, for a decision without that count, those up to the decision's step)."""
    reports = tuple(reports)
    if decision is None:
        return reports
    judged = decision.numbers.get(REPORTS_JUDGED)
    if isinstance(judged, int) and not isinstance(judged, bool):
        return reports[:judged]
    if decision.step is not None:
        return tuple(r for r in reports if r.step <= decision.step)
    return reports


def after_decision(reports, decision):
    """The reports a stopped job made after its decision (shown, never counted)."""
    reports = tuple(reports)
    return reports[len(judged_reports(reports, decision)):]


def counted_reports(reports, decision=None):
    """The reports that count for a job whatever its decision: up to a stop decision, all of them otherwise (a
    Hyperband promotion or non-promotion judged the job without stopping it)."""
    return judged_reports(reports, decision if decision is not None and decision.kind in STOPPING_KINDS else None)


def job_value(reports, decision=None):
    """The job's value: its objective at its last judged step, or None when it reported nothing that counts."""
    counted = counted_reports(reports, decision)
    return counted[-1].value if counted else None
