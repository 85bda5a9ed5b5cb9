"""`az batchai sweep run` with two objectives and a constraint, end to end: the real az, the session's local service,
tiny deterministic jobs (data/tradeoff.py: accuracy Q, latency 100 Q K, memory 10 Q).

Grid over Q in (0.2, 0.5, 0.8) and K in (1, 2), memory at most 7: Q = 0.8 breaks the constraint, K = 2 is dominated
by K = 1 at the same Q; so the front is exactly (0.2, 1) and (0.5, 1). `run`, `metrics`, `status` and `report` must
all say so, in tables and JSON.
"""
import json
import os

import pytest

from .run_helpers import report_html, run_args, service_setup, target, write_tradeoff_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

def _sweep(directory):
    return write_tradeoff_sweep(directory, 'pareto', [
        'objectives: [{metric: val_accuracy, goal: max}, {metric: latency_ms, goal: min}]',
        'constraints: [{metric: memory_gb, max: 7}]',
        'limits: {maxConcurrentJobs: 3}'], [0.2, 0.5, 0.8])


@pytest.fixture(scope='module')
def ran(local_service, tmp_path_factory):
    az, directory, experiment = service_setup(local_service, tmp_path_factory, 'pareto')
    run = az(*run_args(local_service, experiment, 'pareto', _sweep(directory)))
    assert run.exit_code == 0, run.stderr
    return az, directory, experiment, run


def _front(entries):
    return sorted((e['parameters']['Q'], e['parameters']['K']) for e in entries)


def test_run_prints_the_front_and_the_infeasible(ran):
    _, _, _, run = ran
    result = run.json()
    assert result['ended'] == 'exhausted' and result['jobs'] == 6
    pareto = result['pareto']
    assert [o['metric'] for o in pareto['objectives']] == ['val_accuracy', 'latency_ms']
    assert _front(pareto['front']) == [(0.2, 1), (0.5, 1)]
    assert [e['rank'] for e in pareto['ranked']] == [0, 0, 1, 1]  # sorted by dominance rank
    assert {e['parameters']['Q'] for e in pareto['infeasible']} == {0.8}
    assert all('memory_gb <= 7 (8)' in e['failed'] for e in pareto['infeasible'])
    # the best (by the first objective) is feasible: Q 0.5, not the infeasible 0.8
    assert result['best']['parameters']['Q'] == 0.5
    assert 'Pareto front of val_accuracy (max), latency_ms (min): 2 job(s)' in run.stderr
    assert '2 infeasible' in run.stderr


def test_metrics_prints_the_front_as_table_and_json(ran, local_service):
    az, _, experiment, _ = ran
    shown = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'pareto'), '-o', 'json')
    assert shown.exit_code == 0, shown.stderr
    assert _front(shown.json()) == [(0.2, 1), (0.5, 1)]
    assert all(set(e['values']) == {'val_accuracy', 'latency_ms'} for e in shown.json())
    table = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'pareto'), '-o', 'table')
    assert table.exit_code == 0, table.stderr
    header = table.stdout.splitlines()[0]
    assert 'val_accuracy' in header and 'latency_ms' in header and 'Rank' in header
    assert len(table.stdout.strip().splitlines()) == 2 + 2  # header, rule, two jobs
    assert max(len(line) for line in table.stdout.splitlines()) <= 100
    # an explicit --metric is the plain metrics of every job, as before
    plain = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'pareto'), '--metric',
               'latency_ms', '--goal', 'min', '-o', 'json')
    assert plain.exit_code == 0, plain.stderr
    assert len(plain.json()) == 6 and plain.json()[0]['metric'] == 20


def test_status_marks_the_front_and_the_infeasible(ran, local_service):
    az, _, experiment, _ = ran
    shown = az('batchai', 'sweep', 'status', *target(local_service, experiment, 'pareto'), '-o', 'json')
    assert shown.exit_code == 0, shown.stderr
    marks = {(float(r['parameters']['Q']), int(r['parameters']['K'])): r['tuning'] for r in shown.json()['jobs']}
    assert {key for key, t in marks.items() if t['onFront']} == {(0.2, 1), (0.5, 1)}
    assert {key for key, t in marks.items() if t['infeasible']} == {(0.8, 1), (0.8, 2)}
    assert marks[(0.5, 2)]['paretoRank'] == 1
    table = az('batchai', 'sweep', 'status', *target(local_service, experiment, 'pareto'), '-o', 'table')
    assert table.exit_code == 0, table.stderr
    assert 'Pareto' in table.stdout.splitlines()[0]
    assert table.stdout.count('front') == 2 and table.stdout.count('infeasible') == 2
    assert max(len(line) for line in table.stdout.splitlines()) <= 100


def test_report_draws_the_front_and_greys_the_infeasible(ran, local_service):
    az, directory, experiment, _ = ran
    made, html = report_html(az, local_service, experiment, 'pareto', directory)
    section = html[html.index('<section id="pareto">'):]
    section = section[:section.index('</section>')]
    assert section.count('class="dot front"') == 2 and 'class="front-line"' in section
    assert section.count('<tr class="infeasible">') == 2 and 'breaks memory_gb &lt;= 7 (8)' in section
    assert section.count('<tr class="front">') == 2
    # the table by dominance rank: both front rows before the rank-1 rows, infeasible last
    rows = [part.split('"')[0] for part in section.split('<tr class="')[1:]]
    assert rows == ['front', 'front', 'ranked', 'ranked', 'infeasible', 'infeasible']
    assert json.loads(json.dumps(made.json()))['summary']['figures']['pareto']['front']


def test_a_bad_constraint_is_refused_before_any_request(ran, local_service, batchai_client):
    az, directory, _, _ = ran
    path = os.path.join(directory, 'bad.yaml')
    with open(_sweep(directory), encoding='utf-8') as f:
        text = f.read().replace('{metric: memory_gb, max: 7}', '{metric: memory_gb, max: 7, min: 9}')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    experiment = 'pareto-bad'
    bad = az(*run_args(local_service, experiment, 'bad', path))
    assert bad.exit_code == 6, bad.stderr  # bad input
    assert 'constraints[0].min' in bad.stderr and 'no larger than max' in bad.stderr
    assert 'Traceback' not in bad.stderr
    from azure.core.exceptions import ResourceNotFoundError
    with pytest.raises(ResourceNotFoundError):  # not even the experiment was created
        batchai_client.experiments.get(local_service.resource_group, local_service.workspace, experiment)


def test_run_again_resumes_with_the_same_front_as_a_table(ran, local_service):
    az, directory, experiment, first = ran
    again = az(*[a for a in run_args(local_service, experiment, 'pareto', _sweep(directory)) if a != 'json'][:-1],
               '-o', 'table')
    assert again.exit_code == 0, again.stderr
    lines = again.stdout.splitlines()
    assert 'Rank' in lines[0] and 'val_accuracy' in lines[0] and 'latency_ms' in lines[0]
    names = sorted(e['name'] for e in first.json()['pareto']['front'])
    assert sorted(line.split()[0] for line in lines[2:]) == names
    assert max(len(line) for line in lines) <= 100
