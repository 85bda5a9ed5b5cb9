"""The report's "What mattered" section: the importance in the report's data (-o json) and its bar chart."""
import math
import re
import xml.etree.ElementTree as ET

from azext_batchai_sweep.core.report.collect import sweep_record
from azext_batchai_sweep.core.report.data import report_data
from azext_batchai_sweep.core.report.html import render_html
from azext_batchai_sweep.core.report.importance import importance
from azext_batchai_sweep.core.report.model import Objective
from azext_batchai_sweep.core.tuning.trial import Report, Trial
from tests.report.synthetic import synthetic_record

SVG = '{http://www.w3.org/2000/svg}'


def chart(html):
    found = re.findall(r'<svg class="plot importance".*?</svg>', html, re.S)
    return [ET.fromstring(svg) for svg in found]


def bars(svg):
    rows = [g for g in svg.iter(SVG + 'g') if g.get('class') == 'importance-row']
    return [(g.get('data-parameter'), g.find(SVG + 'rect'), g.find(SVG + 'path'), g.find(SVG + 'title').text)
            for g in rows]


def test_the_chart_draws_every_parameter_top_first_with_its_interval():
    record = synthetic_record(60, epochs=12, seed=5)
    data = report_data(record)
    entry, = data['importance']
    # The jobs that count: run to the end, or stopped early by a decision (with the value they had then).
    counted = [t for t in record.trials if t.state == 'succeeded' or (t.state == 'terminated' and t.stopped_early)]
    assert entry['objective'] == 'val_accuracy' and entry['goal'] == 'max' and entry['jobs'] == len(counted)
    assert entry['method'] == 'ped-anova' and entry['resamples'] == 200 and not entry['tooFewJobs']
    # The same numbers as importance() on those jobs and their values, with the report's axes.
    values = [job['values'] for job in data['jobs']]
    objective = [job['objective'] if job['state'] == 'succeeded' or job['stoppedEarly'] and
                 job['state'] == 'terminated' else None for job in data['jobs']]
    axes = [dict(axis, integer=axis['name'] == 'UNITS') for axis in data['parameters']]
    assert importance(values, axes, objective, 'max')['parameters'] == entry['parameters']
    html = render_html(data)
    svg, = chart(html)
    drawn = bars(svg)
    assert [name for name, *_ in drawn] == [row['name'] for row in entry['parameters']]
    widths = [float(rect.get('width')) for _, rect, _, _ in drawn]
    assert widths == sorted(widths, reverse=True) and widths[0] > 0
    for (name, _, whisker, title), row in zip(drawn, entry['parameters']):
        assert whisker is not None and title.startswith('{}: '.format(name)) and '90% interval' in title
    assert entry['parameters'][0]['name'] == 'LEARNING_RATE'  # the synthetic sweep's ceiling is most its lr's
    assert '<section id="importance"><h2>What mattered</h2>' in html
    assert 'reaching the best {} of the {} jobs with a value of val_accuracy'.format(
        entry['topJobs'], entry['jobs']) in html and 'the 90% interval over 200 resamples' in html
    assert entry['topJobs'] == math.ceil(entry['targetQuantile'] * entry['jobs'])  # no ties in these values


def test_too_few_jobs_say_so_instead_of_a_chart():
    data = report_data(synthetic_record(8, epochs=5, seed=2))
    entry, = data['importance']
    assert entry['tooFewJobs'] and all(row['importance'] is None for row in entry['parameters'])
    html = render_html(data)
    assert not chart(html)
    assert re.search(r'No importance for val_accuracy: \d finished job\(s\) with a value: importance needs at '
                     r'least 10\.', html)


def test_a_sweep_without_parameters_says_so():
    trials = [Trial(name='j{}'.format(i), index=i, params={}, state='succeeded', reports=(Report(1, 0.1 * i),))
              for i in range(12)]
    data = report_data(sweep_record('s', Objective(metric='m'), trials))
    assert data['importance'][0]['parameters'] == []
    assert 'No importance for m: the sweep has no parameters.' in render_html(data)


def test_a_run_with_several_objectives_gets_a_chart_per_objective():
    from azext_batchai_sweep.core.report.importance import front_importance
    import random
    rng = random.Random(4)
    entries = []
    for i in range(30):
        params = {'A': rng.random(), 'B': rng.random(), 'OPT': rng.choice(['x', 'y'])}
        entries.append({'name': 'j{}'.format(i), 'rank': 0, 'parameters': params,
                        'values': {'acc': -(params['A'] - 0.3) ** 2, 'ms': params['B']}})
    pareto = {'objectives': [{'metric': 'acc', 'goal': 'max'}, {'metric': 'ms', 'goal': 'min'}],
              'ranked': entries[:25], 'infeasible': entries[25:28] + [dict(entries[28], values=None)]}
    found = front_importance(pareto)
    assert [(e['objective'], e['goal'], e['jobs'], e['parameters'][0]['name']) for e in found] == [
        ('acc', 'max', 28, 'A'), ('ms', 'min', 28, 'B')]  # the infeasible jobs with values count
    data = report_data(synthetic_record(30, epochs=5, seed=2), figures=None)
    data['importance'] = found
    html = render_html(data)
    assert len(chart(html)) == 2 and '<h3>acc</h3>' in html and '<h3>ms</h3>' in html
