"""The report's pure parts: intermediate values from logs, the report's data, the HTML it draws (no service)."""
import itertools
import json
import math
import re
import xml.etree.ElementTree as ET

import pytest

from azext_batchai_sweep.core.outputs.metrics import MetricExtractor
from azext_batchai_sweep.core.report import data as report_data_module
from azext_batchai_sweep.core.report.collect import sweep_record
from azext_batchai_sweep.core.report.data import expected_best_of_random, report_data
from azext_batchai_sweep.core.report.html import render_html
from azext_batchai_sweep.core.report.intermediate import ReportReader
from azext_batchai_sweep.core.report.model import Objective, ParameterInfo
from azext_batchai_sweep.core.tuning.trial import Report, Trial
from tests.report.synthetic import synthetic_record

SVG = '{http://www.w3.org/2000/svg}'
LOG = ('training lr=0.1\n' + ''.join('epoch={} loss={:.3f} val_accuracy={:.3f}\n'.format(e, 1 / e, 1 - 1 / (e + 1))
                                    for e in range(1, 31)) + 'done\n')


def reader(metric='val_accuracy', step=None, regex=None):
    return ReportReader(MetricExtractor(regex=regex, metric_name=None if regex else metric), step_key=step)


@pytest.mark.parametrize('size', [1, 7, 64, 4096])
def test_reports_are_the_same_whatever_the_chunks(size):
    data = LOG.encode()
    chunks = [data[i:i + size] for i in range(0, len(data), size)]
    key, reports = reader().read_chunks(iter(chunks))
    assert key == 'epoch'
    assert reports == [(float(e), round(1 - 1 / (e + 1), 3)) for e in range(1, 31)]
    assert reader().read_text(LOG) == (key, reports)


def test_step_key_given_detected_or_numbered():
    text = 'step=10 acc=0.5\nstep=20 acc=0.6\nstep=30 acc=0.7 epoch=1\n'
    assert reader('acc').read_text(text) == ('step', [(10.0, 0.5), (20.0, 0.6), (30.0, 0.7)])
    # One report line without the key: the reports are numbered instead.
    assert reader('acc', step='epoch').read_text(text) == (None, [(1.0, 0.5), (2.0, 0.6), (3.0, 0.7)])
    assert reader('acc').read_text('acc=1\nacc=nan\nacc=2\nmy_acc=9\n') == (None, [(1.0, 1.0), (2.0, 2.0)])
    regex = reader(regex=r'^it (\d+) score (?P<value>[\d.]+)$', step='it')
    assert regex.read_text('it 1 score 3.5\nit 2 score 4.5\n') == (None, [(1.0, 3.5), (2.0, 4.5)])
    # A regex's group named step gives the step, as `sweep run` reads it.
    grouped = reader(regex=r'^it (?P<step>\d+) score (?P<value>[\d.]+)$')
    assert grouped.read_text('it 10 score 3.5\nit 20 score 4.5\n') == ('step', [(10.0, 3.5), (20.0, 4.5)])


def brute_expected_best(values, k, goal):
    pick = max if goal == 'max' else min
    draws = list(itertools.product(values, repeat=k))
    return sum(pick(draw) for draw in draws) / len(draws)


@pytest.mark.parametrize('goal', ['max', 'min'])
def test_expected_best_of_random_search_is_the_mean_best_of_k_draws(goal):
    values = [0.3, 0.9, 0.5, 0.5, 0.1]
    got = expected_best_of_random(values, [1, 2, 3, 4], goal)
    for k, value in got:
        assert value == pytest.approx(brute_expected_best(values, k, goal))
    assert got[0][1] == pytest.approx(sum(values) / len(values))


def final_value(trial):
    return trial.reports[-1].value if trial.reports else None


def test_summary_best_counts_and_compute_saved():
    record = synthetic_record(300, epochs=20, seed=3, running=5)
    data = report_data(record)
    succeeded = [t for t in record.trials if t.state == 'succeeded']
    best = max(succeeded, key=final_value)
    summary = data['summary']
    assert summary['best']['name'] == best.name and summary['best']['value'] == final_value(best)
    assert summary['best']['parameters'] == best.params
    states = [t.state for t in record.trials]
    assert summary['counts'] == {s: states.count(s) for s in ('queued', 'running', 'terminating', 'succeeded',
                                                                'failed', 'terminated') if s in states or
                                 s in ('queued', 'running', 'terminating', 'succeeded', 'failed')}
    stopped = [t for t in record.trials if t.stopped_early]
    assert summary['stoppedEarly'] == len(stopped) > 0
    assert summary['compute']['savedJobSteps'] == sum(20 - t.reports[-1].step for t in stopped)
    assert summary['compute']['savedJobSeconds'] == pytest.approx(sum((20 - t.reports[-1].step) * 3.0
                                                                      for t in stopped))
    assert summary['compute']['jobSteps'] == sum(t.reports[-1].step for t in record.trials)
    assert summary['time']['stillRunning'] is True and summary['time']['lastEnd'] is None
    assert summary['decisions'] == {'stopped': len(stopped)}
    marks = {job['name']: job['mark'] for job in data['jobs']}
    assert marks[best.name] == 'best'
    assert all(marks[t.name] == 'stopped' for t in stopped)
    assert {marks[t.name] for t in record.trials if t.state == 'running'} == {'running'}
    # Best so far: the staircase ends at the best job, every step an improvement.
    improvements = data['plots']['bestSoFar']['improvements']
    assert improvements[-1]['job'] == best.name
    assert all(a['value'] < b['value'] and a['finished'] < b['finished']
               for a, b in zip(improvements, improvements[1:]))
    assert data['plots']['bestSoFar']['finished'] == len(succeeded)
    json.dumps(data)  # plain JSON


@pytest.mark.parametrize('goal, values', [
    ('maximize', {'b-job': 0.9, 'a-job': 0.9, 'c-job': 0.5}),
    ('minimize', {'z9': 0.1, 'm1': 0.1, 'a2': 0.1, 'b0': 0.7}),
    ('maximize', {'hb-f': 0.7875, 'hb-0': 0.7875}),
])
def test_a_tie_names_the_best_job_as_sweep_run_names_it(goal, values):
    """Jobs tied on the best value: the report's best is `sweep run`'s (the first by name), whatever their order."""
    from azext_batchai_sweep.core.tuning.result import best_trial
    trials = [Trial(name=name, index=index, state='succeeded', reports=(Report(1, 0.0), Report(2, value)),
                    params={'X': index}) for index, (name, value) in enumerate(values.items())]
    data = report_data(sweep_record('s', Objective(metric='m', goal=goal), trials))
    expected = best_trial(trials, goal).name
    assert expected == min(name for name, value in values.items() if value == values[expected])
    assert data['summary']['best']['name'] == expected
    assert {job['name'] for job in data['jobs'] if job['mark'] == 'best'} == {expected}


def test_axes_from_the_plan_or_inferred_from_the_values():
    trials = [Trial(name='j{}'.format(i), index=i, state='succeeded', reports=(Report(1, float(i)),),
                    params={'LR': 10 ** -i, 'NARROW': 1 + i, 'TINY': 0.5 + i * 0.01, 'OPT': ['a', 'b'][i % 2],
                            'HP': {'DEPTH': i, 'ACT': 'relu'}, 'FLAG': bool(i % 2)}) for i in range(4)]
    objective = Objective(metric='m')
    inferred = {axis['name']: axis for axis in report_data(sweep_record('s', objective, trials))['parameters']}
    assert inferred['LR']['kind'] == 'log'                      # spans 1000x
    assert inferred['NARROW']['kind'] == 'linear'               # 1..4
    assert inferred['OPT'] == {'name': 'OPT', 'kind': 'categorical', 'categories': ['a', 'b']}
    assert inferred['HP.DEPTH']['kind'] == 'linear' and inferred['HP.ACT']['categories'] == ['relu']
    assert inferred['FLAG']['kind'] == 'categorical'
    planned = report_data(sweep_record('s', objective, trials, parameters=[
        ParameterInfo('TINY', 'numeric', 'LOG'), ParameterInfo('LR', 'numeric', 'LINEAR')]))
    axes = {axis['name']: axis for axis in planned['parameters']}
    assert axes['TINY']['kind'] == 'log' and axes['LR']['kind'] == 'linear'
    assert [axis['name'] for axis in planned['parameters']][:2] == ['TINY', 'LR']  # the plan's order first


def svgs(html):
    return [ET.fromstring(match) for match in re.findall(r'<svg class="plot.*?</svg>', html, re.S)]


def by_class(root, tag, css):
    return [el for el in root.iter(SVG + tag) if css in (el.get('class') or '').split()]


def test_html_draws_one_element_per_job_and_axis():
    record = synthetic_record(40, epochs=12, seed=5)
    data = report_data(record)
    html = render_html(data)
    curves, pc, scatter, _, best = svgs(html)  # the fourth: what mattered (test_importance_report.py)
    names = {t.name for t in record.trials if len(t.reports) >= 2}
    drawn = by_class(curves, 'polyline', 'curve')
    assert sorted(el.get('data-job') for el in drawn) == sorted(names)
    assert [el.get('data-job') for el in drawn if 'mark-best' in el.get('class')] == [data['summary']['best']['name']]
    assert len(by_class(curves, 'path', 'end-stopped')) == sum(1 for t in record.trials if t.stopped_early)
    axes = [el for el in pc.iter(SVG + 'g') if 'pc-axis' in (el.get('class') or '').split()]
    assert [a.get('data-axis') for a in axes] == ['LEARNING_RATE', 'UNITS', 'OPT', 'val_accuracy']
    assert 'pc-axis-log' in axes[0].get('class') and 'pc-axis-categorical' in axes[2].get('class')
    assert len(by_class(pc, 'polyline', 'pc-line')) == data['summary']['withObjective']
    panels = [el for el in scatter.iter(SVG + 'g') if el.get('class') == 'panel']
    assert [len(by_class(panel, 'circle', 'dot')) for panel in panels] == [data['summary']['withObjective']] * 3
    assert by_class(best, 'polyline', 'expected') and by_class(best, 'polyline', 'stairs')
    assert "default-src 'none'" in html and 'http://' not in html.replace('http://www.w3.org/2000/svg', '')


def test_hostile_values_stay_text():
    trials = [Trial(name='j0', index=0, state='succeeded', reports=(Report(1, 0.5), Report(2, 0.6)),
                    params={'F': '</script><script>alert(1)</script><!--', 'G': '" onmouseover="x'})]
    html = render_html(report_data(sweep_record('s', Objective(metric='m'), trials)))
    assert html.count('<script') == 2  # the table's JSON and the page's script, nothing else
    assert 'onmouseover="x' not in html
    for svg in svgs(html):
        assert svg is not None  # still well-formed XML


def test_ten_thousand_jobs_draw_a_bounded_sample():
    data = report_data(synthetic_record(10000, epochs=30, seed=1))
    html = render_html(data)
    curves, pc, scatter, _, _ = svgs(html)
    plot = data['plots']['learningCurves']
    assert len(by_class(curves, 'polyline', 'curve')) == len(plot['drawn']) == report_data_module.MAX_CURVES
    assert data['summary']['best']['name'] in plot['drawn'] and plot['band'] and by_class(curves, 'polygon', 'band')
    assert len(by_class(pc, 'polyline', 'pc-line')) == report_data_module.MAX_LINES
    assert len(by_class(scatter, 'circle', 'dot')) == 3 * report_data_module.MAX_POINTS
    assert all(len(el.get('points').split()) <= 160 for el in by_class(curves, 'polyline', 'curve'))
    assert len(html) < 4 * 1024 * 1024
    assert len(data['jobs']) == 10000 and all(len(job['reports']) >= 2 for job in data['jobs'])
    # The band is every job's 10-50-90% at each step: the median at the last step, checked by hand.
    last = sorted(job['reports'][-1][1] for job in data['jobs'] if job['lastStep'] == 30)
    assert plot['band'][-1][2] == pytest.approx(last[len(last) // 2], abs=1e-3)
    assert not math.isnan(plot['band'][0][1])


def test_scales_ticks_and_thinning():
    from azext_batchai_sweep.core.report.svg import Band, Linear, Log, colour, fmt, nice_ticks, thin
    assert nice_ticks(0.2152, 0.8709) == [0.4, 0.6, 0.8]  # steps of 1, 2, 2.5 or 5 times a power of ten
    assert nice_ticks(0, 1.1) == [0, 0.25, 0.5, 0.75, 1.0]
    ticks = nice_ticks(0, 1)
    assert ticks[0] == 0 and ticks[-1] == 1 and len(set(round(b - a, 9) for a, b in zip(ticks, ticks[1:]))) == 1
    log = Log(1e-4, 1.0, 0, 400)
    assert log(1e-4) == 0 and log(1.0) == 400 and log(1e-2) == pytest.approx(200)
    assert log.ticks() == [1e-4, 1e-3, 1e-2, 1e-1, 1.0]
    assert Log(1e-8, 1.0, 0, 1).ticks() == [1e-8, 1e-6, 1e-4, 1e-2, 1.0]  # at most about 5: every other decade
    assert Linear(5, 5, 0, 10)(5) == 5  # one value: centred
    band = Band(['a', 'b'], 0, 100)
    assert (band('a'), band('b'), band.step) == (25, 75, 50)
    assert colour(0) == '#440154' and colour(1) == '#fde725' and colour(float('nan')) == '#440154'
    assert (fmt(0.000012), fmt(3.0), fmt(0.81234567)) == ('1.2e-5', '3', '0.8123')
    points = [(i, math.sin(i / 5.0) + (3 if i == 123 else 0)) for i in range(1000)]
    kept = thin(points, 150)
    assert len(kept) <= 150 and kept[0] == points[0] and kept[-1] == points[-1]
    assert (123, points[123][1]) in kept  # a peak survives
    assert [p[0] for p in kept] == sorted(p[0] for p in kept)


def test_hyperband_decisions_compute_and_marks_agree_with_sweep_run():
    from azext_batchai_sweep.core.tuning.result import job_steps

    def job(name, index, q, steps, decision=None, resource=None, parent=None):
        reports = tuple(Report(float(s), round(q * s / 9, 4)) for s in steps)
        extra = {'decision': {'action': decision, 'rule': 'hyperband', 'reason': '{} by hyperband'.format(decision),
                              'step': float(steps[-1]), 'rung': 0, 'bracket': 1} if decision else None}
        return Trial(name=name, index=index, params={'Q': q}, state='succeeded', reports=reports, resource=resource,
                     parent=parent, extra=extra)
    trials = [job('a0', 0, 0.9, [1], 'promoted', 1), job('b0', 1, 0.2, [1], 'not promoted', 1),
              job('c0', 2, 0.5, [1], 'promoted', 1), job('a1', 3, 0.9, [2, 3], 'promoted', 3, 'a0'),
              job('c1', 4, 0.5, [2, 3], 'not promoted', 3, 'c0'), job('a2', 5, 0.9, range(4, 10), None, 9, 'a1')]
    data = report_data(sweep_record('hb', Objective(metric='m', step='epoch'), trials))
    marks = {job['name']: job['mark'] for job in data['jobs']}
    assert marks == {'a0': 'finished', 'b0': 'stopped', 'c0': 'finished', 'a1': 'finished', 'c1': 'stopped',
                     'a2': 'best'}
    used, full = job_steps(trials)
    compute = data['summary']['compute']
    assert (compute['jobSteps'], compute['savedJobSteps']) == (used, full - used) == (13, 14)
    assert data['summary']['decisions'] == {'promoted': 3, 'not promoted': 2}
    html = render_html(data)
    curves = svgs(html)[0]
    assert len(by_class(curves, 'circle', 'curve-dot')) == 3  # the first rung's single reports
    assert sorted(el.get('data-job') for el in by_class(curves, 'path', 'end-stopped')) == ['b0', 'c1']


def test_the_report_shows_the_code_snapshot_the_jobs_ran():
    """Issue 50 ("`report` shows it"; fails on the old code: the report said nothing of the snapshot): the hash of
    the --code snapshot each job ran, the sweep's in the summary, shown on the Jobs card as az prints it (12 hex
    digits, the whole hash on hover); a sweep without --code shows none."""
    from azext_batchai_sweep.core.report.model import EXTRA_CODE
    digest = 'c0de' * 16
    record = synthetic_record(3)
    for trial in record.trials:
        trial.extra[EXTRA_CODE] = digest
    data = report_data(record)
    assert data['summary']['code'] == [digest] and {job['code'] for job in data['jobs']} == {digest}
    assert 'code snapshot: <code title="{}">{}</code>'.format(digest, digest[:12]) in render_html(data)
    plain = report_data(synthetic_record(3))
    assert plain['summary']['code'] == [] and 'code snapshot' not in render_html(plain)
