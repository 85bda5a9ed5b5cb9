"""What mattered for a Hyperband (or BOHB) sweep: its jobs ran to several resources, and a value after 1 epoch does
not rank a configuration as one after 9 does. The importance compares the jobs at one resource (the largest with at
least 10 values, BOHB's rule for its model, else the largest), says which, and never counts the resource placeholder
(EPOCHS) as a tuned parameter; the report and `metrics --importance` (core) agree."""
import random

from azext_batchai_sweep.core.report.collect import sweep_record
from azext_batchai_sweep.core.report.data import report_data
from azext_batchai_sweep.core.report.html import render_html
from azext_batchai_sweep.core.report.importance import metrics_importance
from azext_batchai_sweep.core.report.model import Objective
from azext_batchai_sweep.core.tuning.trial import Report, Trial


def _jobs(counts, seed=3):
    """{resource: how many jobs}: at 1 epoch Y decides the value, at 3 and 9 epochs X does (a low-fidelity proxy that
    ranks otherwise, as short runs often do); later epochs score higher whatever the configuration."""
    rng = random.Random(seed)
    trials = []
    for resource, count in counts.items():
        for _ in range(count):
            x, y = rng.random(), rng.random()
            value = resource + (-(y - 0.8) ** 2 if resource == 1 else -(x - 0.2) ** 2)
            trials.append(Trial(name='j{}'.format(len(trials)), index=len(trials),
                                params={'X': x, 'Y': y, 'EPOCHS': resource}, state='succeeded',
                                reports=(Report(float(resource), value),), resource=float(resource)))
    return trials


def test_the_report_compares_the_jobs_at_the_largest_resource_with_enough_values():
    data = report_data(sweep_record('hb', Objective(metric='acc'), _jobs({1: 27, 3: 12, 9: 4})))
    entry, = data['importance']
    assert entry['resource'] == {'name': 'EPOCHS', 'value': 3.0, 'jobs': 12, 'leftOut': 31}
    assert entry['jobs'] == 12 and [p['name'] for p in entry['parameters']] == ['X', 'Y']
    html = render_html(data)
    assert 'Jobs at EPOCHS 3 only (12 with a value; 31 at other EPOCHS left out' in html
    # too few at every resource but the first: the first; none with 10: the largest, said with the reason
    low, = report_data(sweep_record('hb', Objective(metric='acc'), _jobs({1: 27, 3: 6, 9: 2})))['importance']
    assert low['resource']['value'] == 1.0 and low['parameters'][0]['name'] == 'Y'
    few, = report_data(sweep_record('hb', Objective(metric='acc'), _jobs({1: 6, 3: 2})))['importance']
    assert few['tooFewJobs'] and few['resource']['value'] == 3.0
    assert 'Jobs at EPOCHS 3 only (2 with a value; 6 at other EPOCHS left out' in render_html(
        report_data(sweep_record('hb', Objective(metric='acc'), _jobs({1: 6, 3: 2}))))


def test_metrics_importance_follows_the_same_rule_with_the_run_s_resources():
    trials = _jobs({1: 27, 3: 12, 9: 4})
    rows = [{'name': t.name, 'state': t.state, 'metric': t.last, 'parameters': t.params} for t in trials]
    entry, = metrics_importance(rows, 'max', 'acc', resources={t.name: t.resource for t in trials})
    assert entry['resource'] == {'name': 'EPOCHS', 'value': 3.0, 'jobs': 12, 'leftOut': 31}
    assert [p['name'] for p in entry['parameters']] == ['X', 'Y']
    # a sweep without resources: every job, every parameter, as before
    plain, = metrics_importance([dict(r, parameters={'X': r['parameters']['X'], 'Y': r['parameters']['Y']})
                                 for r in rows], 'max', 'acc')
    assert 'resource' not in plain and plain['jobs'] == 43
