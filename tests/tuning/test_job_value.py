"""A job's value (core/tuning/job_value.py, issue 42, items 5 and 6), case by case: the last value when no rule
stopped it; for a stopped job, its value when judged (by the count of reports the rule read, else by the decision's
step), the later lines apart; Hyperband's promotions judge without stopping; the steps run count every line."""
from dataclasses import replace

from azext_batchai_sweep.core.tuning.controller import as_seen
from azext_batchai_sweep.core.tuning.decision import NOT_PROMOTED, STOPPED, TIMEOUT, Decision
from azext_batchai_sweep.core.tuning.job_value import (REPORTS_JUDGED, after_decision, counted_reports, job_value,
                                                       steps_run)
from azext_batchai_sweep.core.tuning.result import job_steps, tuning_row
from azext_batchai_sweep.core.tuning.trial import Report, Trial

REPORTS = tuple(Report(step=float(s), value=v) for s, v in [(1, 0.2), (2, 0.6), (3, 0.4), (4, 0.99), (5, 0.98)])


def _stop(kind=STOPPED, step=None, judged=None):
    return Decision(job='j', kind=kind, rule='bandit', text='stopped', step=step,
                    numbers={REPORTS_JUDGED: judged} if judged is not None else {})


def test_the_value_case_by_case():
    assert job_value(REPORTS) == 0.98 and job_value(()) is None
    assert job_value(REPORTS, _stop(judged=3)) == 0.4            # the count of reports the rule read
    assert job_value(REPORTS, _stop(step=2.0)) == 0.6            # else the decision's step
    assert job_value(REPORTS, _stop(kind=TIMEOUT, judged=2)) == 0.6
    assert job_value(REPORTS, _stop(kind=NOT_PROMOTED, step=2.0)) == 0.98  # judged, not stopped: every line counts
    assert job_value(REPORTS, _stop(judged=0)) is None
    assert [r.value for r in after_decision(REPORTS, _stop(judged=3))] == [0.99, 0.98]
    assert counted_reports(REPORTS, None) == REPORTS


def test_status_row_and_steps_agree_with_the_value():
    trial = Trial(name='j', index=0, params={}, state='terminated', reports=REPORTS)
    decision = _stop(judged=3)
    (seen,) = as_seen([trial], {'j': decision})
    row = tuning_row(seen, decision, 'max', 'epoch')
    assert (row['latest'], row['best'], row['step']) == (0.4, 0.6, 3)
    # the same row from the job's whole log: the lines after the decision never count
    assert tuning_row(trial, decision, 'max', 'epoch')['latest'] == 0.4
    assert steps_run(seen) == 5 and steps_run(trial) == 5
    done = Trial(name='k', index=1, params={'x': 1}, state='succeeded', reports=REPORTS)
    used, full = job_steps([seen, replace(done)])
    assert (used, full) == (10, 10)  # both ran 5 steps: nothing was saved
