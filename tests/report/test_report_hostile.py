"""The report takes whatever the jobs printed: generated report sequences (hypothesis) through the report's data and
every plot of its HTML, values at the float limits (1e308, -1e308, 5e-324) and steps in any order. No exception, JSON
without NaN or infinities, every SVG coordinate a finite number, and the best job the one `sweep run` names."""
import json
import math
import re

from hypothesis import HealthCheck, given, settings, strategies as st

from azext_batchai_sweep.core.report.collect import sweep_record
from azext_batchai_sweep.core.report.data import report_data
from azext_batchai_sweep.core.report.html import render_html
from azext_batchai_sweep.core.report.model import EXTRA_DECISION, EXTRA_DURATION, Objective
from azext_batchai_sweep.core.report.svg import Linear, nice_ticks
from azext_batchai_sweep.core.tuning.result import best_trial
from azext_batchai_sweep.core.tuning.trial import Report, Trial
from tests.hostile_values import EDGES, steps, values

FAST = settings(max_examples=60, deadline=5000, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])
COORDINATE = re.compile(r'\b(?:x|y|x1|x2|y1|y2|cx|cy)="([^"]*)"')


@st.composite
def records(draw):
    trials = []
    for i in range(draw(st.integers(1, 6))):
        state = draw(st.sampled_from(['succeeded', 'succeeded', 'running', 'terminated', 'failed']))
        reports = tuple(draw(st.lists(st.builds(Report, step=steps, value=values), max_size=6)))
        stopped = state == 'terminated' and draw(st.booleans())
        decision = {'action': 'stopped', 'rule': 'median', 'step': reports[-1].step if reports else None,
                    'reason': 'stopped', 'rung': None, 'bracket': None} if stopped else None
        extra = {EXTRA_DECISION: decision, EXTRA_DURATION: draw(st.sampled_from([None, 1.0, 1e308, 5e-324]))}
        trials.append(Trial(name='job{}'.format(i), index=i, state=state, reports=reports, stopped_early=stopped,
                            params={'LR': draw(st.sampled_from([1e-4, 0.1, 1.0])), 'OPT': draw(st.sampled_from(
                                ['adam', 'sgd']))}, extra=extra))
    goal = draw(st.sampled_from(['max', 'min']))
    return sweep_record('hostile', Objective(metric='acc', goal=goal, step='epoch'), trials,
                        sampling=draw(st.sampled_from(['random', 'grid'])), generated_at='2026-11-23T12:00:00+00:00')


def _check_svg_numbers(html):
    for value in COORDINATE.findall(html):
        assert math.isfinite(float(value)), value
    for points in re.findall(r'points="([^"]*)"', html):
        for number in re.split(r'[ ,]', points.strip()):
            if number:
                assert math.isfinite(float(number)), points


@FAST
@given(records())
def test_the_report_draws_any_reports(record):
    data = report_data(record)
    json.dumps(data, allow_nan=False)
    best = best_trial(record.trials, record.objective.goal)
    assert (data['summary']['best'] or {}).get('name') == (best.name if best else None)
    html = render_html(data)
    _check_svg_numbers(html)


@FAST
@given(st.sampled_from(EDGES) | values, st.sampled_from(EDGES) | values)
def test_scales_and_ticks_of_any_finite_range(a, b):
    low, high = min(a, b), max(a, b)
    scale = Linear(low, high, 0.0, 100.0)
    for value in (low, high):
        assert -1e-6 <= scale(value) <= 100.0 + 1e-6
    ticks = nice_ticks(scale.low, scale.high)
    assert 1 <= len(ticks) <= 12 and all(math.isfinite(t) for t in ticks)


def test_report_of_values_near_the_float_limits():
    # The axis ticks raised OverflowError (log10 of an infinite range): no report was written.
    trials = [Trial(name='a', index=0, params={'LR': 0.1}, state='succeeded',
                    reports=(Report(1.0, 1e308), Report(2.0, -1e308))),
              Trial(name='b', index=1, params={'LR': 0.2}, state='succeeded',
                    reports=(Report(1.0, -1e308), Report(2.0, 1e308)))]
    record = sweep_record('limits', Objective(metric='acc', goal='max', step='epoch'), trials,
                          generated_at='2026-11-23T12:00:00+00:00')
    data = report_data(record)
    assert data['summary']['best']['name'] == 'b'
    _check_svg_numbers(render_html(data))


def test_ticks_of_a_range_a_few_ulps_wide_end():
    # value += step stood still next to 1.0: the tick loop never ended.
    assert nice_ticks(1.0, 1.0000000000000002) == [1.0, 1.0000000000000002]
    assert nice_ticks(0.0, 5e-324) == [0.0, 5e-324]
