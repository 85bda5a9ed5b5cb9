"""An infeasible job is never the best, anywhere (issue 41, item 1): `run`, `status`, `metrics` (its ranking, --top,
-o tsv) and `report` (summary.best, the best card, best-so-far, the highlight) name the same feasible job, through the
real az and the session's local service; `metrics` marks the infeasible rows. One helper decides
(core/tuning/best.py); its cases are tested here too.

The jobs (data/tradeoff.py): accuracy Q, memory 10 Q; under `memory_gb <= 7` the most accurate job (Q 0.8, memory 8)
breaks the constraint, so the best is Q 0.5.
"""
import csv
import io
import re

import pytest

from azext_batchai_sweep.core.outputs.metrics import sort_rows, write_metrics_csv
from azext_batchai_sweep.core.tuning.best import best_of, rank_key

from .run_helpers import report_html, run_args, service_setup, target, write_tradeoff_sweep

Q_VALUES = [0.2, 0.8, 0.5]


# ---- the helper ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('goal, values, infeasible, best', [
    ('max', {'a': 0.9, 'b': 0.5, 'c': 0.2}, {'a'}, 'b'),          # the case: the most accurate broke it
    ('min', {'a': 0.1, 'b': 0.5, 'c': 0.2}, {'a', 'c'}, 'b'),     # goal min, two infeasible
    ('max', {'a': 0.9, 'b': 0.5}, {'a', 'b'}, None),              # every job infeasible: no best at all
    ('max', {'a': 0.9, 'b': None, 'c': 0.1}, set(), 'a'),         # no value: never the best
    ('max', {'a': 0.5, 'b': 0.5}, set(), 'a'),                    # a tie goes to the earlier job
])
def test_best_of_never_names_an_infeasible_job(goal, values, infeasible, best):
    jobs = sorted(values)
    found = best_of(jobs, goal, values.get, feasible=lambda name: name not in infeasible, tie=jobs.index)
    assert found == best


def test_rank_key_puts_every_feasible_job_above_every_infeasible_one():
    rows = [('feasible-worst', 0.1, True), ('infeasible-best', 99.0, False), ('feasible-best', 0.5, True)]
    ranked = sorted(rows, key=lambda r: rank_key('max', r[1], feasible=r[2], tie=r[0]))
    assert [r[0] for r in ranked] == ['feasible-best', 'feasible-worst', 'infeasible-best']


@pytest.mark.parametrize('goal', ['max', 'min'])
def test_sort_rows_ranks_infeasible_last_and_top_never_returns_one(goal):
    rows = [{'name': 'a', 'state': 'succeeded', 'metric': 0.9}, {'name': 'b', 'state': 'succeeded', 'metric': 0.5},
            {'name': 'c', 'state': 'succeeded', 'metric': 0.1}, {'name': 'd', 'state': 'failed', 'metric': None}]
    infeasible = {'a', 'c'}  # the best by value either way is infeasible
    ranked = sort_rows(rows, goal, infeasible=infeasible)
    assert ranked[0]['name'] == 'b'
    assert {r['name'] for r in ranked[1:3]} == {'a', 'c'} and ranked[3]['name'] == 'd'
    assert [r['name'] for r in sort_rows(rows, goal, top=1, infeasible=infeasible)] == ['b']
    assert all(r['name'] not in infeasible for r in sort_rows(rows, goal, top=3, infeasible=infeasible))
    assert sort_rows(rows, goal, top=1, infeasible={'a', 'b', 'c', 'd'}) == []


def test_metrics_csv_has_the_infeasible_column_when_marked():
    rows = [{'name': 'a', 'state': 'succeeded', 'metric': 0.5, 'infeasible': None, 'parameters': {}},
            {'name': 'b', 'state': 'succeeded', 'metric': 0.9, 'infeasible': 'mem <= 12 (20)', 'parameters': {}}]
    stream = io.StringIO()
    write_metrics_csv(rows, stream)
    read = list(csv.reader(io.StringIO(stream.getvalue())))
    assert read[0][:4] == ['name', 'state', 'metric', 'infeasible'] and read[2][3] == 'mem <= 12 (20)'


# ---- through az ------------------------------------------------------------------------------------------------

@pytest.fixture(scope='module')
def ran(local_service, tmp_path_factory):
    az, directory, experiment = service_setup(local_service, tmp_path_factory, 'feasible')
    spec = write_tradeoff_sweep(directory, 'feasible', [
        'objective: {metric: val_accuracy, goal: max, step: epoch}',
        'constraints: [{metric: memory_gb, max: 7}]',
        'limits: {maxConcurrentJobs: 3}'], Q_VALUES, k_values=(1,))
    run = az(*run_args(local_service, experiment, 'feasible', spec))
    assert run.exit_code == 0, run.stderr
    best = run.json()['best']
    assert best['parameters']['Q'] == 0.5  # the feasible best, not Q 0.8 (memory 8)
    names = {float(job['parameters']['Q']): job['name'] for job in _status(az, local_service, experiment)['jobs']}
    return az, directory, experiment, best['name'], names


def _status(az, service, experiment):
    shown = az('batchai', 'sweep', 'status', *target(service, experiment, 'feasible'), '-o', 'json')
    assert shown.exit_code == 0, shown.stderr
    return shown.json()


@pytest.mark.az
@pytest.mark.service
def test_status_names_the_feasible_best(ran, local_service):
    az, _, experiment, best, names = ran
    shown = az('batchai', 'sweep', 'status', *target(local_service, experiment, 'feasible'), '-o', 'json')
    assert shown.exit_code == 0, shown.stderr
    said = re.findall(r'best \S+ \S+ \((\S+)\)', shown.stderr)  # "best METRIC VALUE (JOB)"
    assert said == [best] and names[0.8] not in said, shown.stderr


@pytest.mark.az
@pytest.mark.service
@pytest.mark.parametrize('extra', [[], ['--metric', 'val_accuracy', '--goal', 'max'], ['--reduce', 'max']])
def test_metrics_ranks_the_feasible_best_first_and_marks_the_infeasible(ran, local_service, extra):
    az, _, experiment, best, names = ran
    shown = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'feasible'), *extra, '-o', 'json')
    assert shown.exit_code == 0, shown.stderr
    rows = shown.json()
    assert rows[0]['name'] == best
    assert {r['name']: bool(r['infeasible']) for r in rows} == {names[0.2]: False, names[0.5]: False,
                                                                 names[0.8]: True}
    assert rows[-1]['name'] == names[0.8] and 'memory_gb <= 7 (8)' in rows[-1]['infeasible']
    assert 'broke a constraint' in shown.stderr


@pytest.mark.az
@pytest.mark.service
@pytest.mark.parametrize('top', ['1', '3'])
def test_metrics_top_as_tsv_never_gives_an_infeasible_configuration(ran, local_service, top):
    az, _, experiment, best, names = ran
    shown = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'feasible'), '--top', top,
               '-o', 'tsv')
    assert shown.exit_code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert len(lines) == min(int(top), 2)  # only the two feasible jobs can come with --top
    assert best in lines[0].split('\t')
    assert names[0.8] not in shown.stdout and '0.8' not in shown.stdout
    table = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'feasible'), '-o', 'table')
    assert table.exit_code == 0 and 'Feasible' in table.stdout.splitlines()[0]
    assert table.stdout.count(' no') == 1 and max(len(line) for line in table.stdout.splitlines()) <= 100


@pytest.mark.az
@pytest.mark.service
def test_report_names_the_feasible_best_everywhere(ran, local_service):
    az, directory, experiment, best, names = ran
    made, html = report_html(az, local_service, experiment, 'feasible', directory)
    data = made.json()
    assert data['summary']['best']['name'] == best
    improvements = data['plots']['bestSoFar']['improvements']
    assert improvements and improvements[-1]['job'] == best
    assert names[0.8] not in [point['job'] for point in improvements]
    marks = {job['name']: job['mark'] for job in data['jobs']}
    assert marks[best] == 'best' and marks[names[0.8]] != 'best'
    assert [job['name'] for job in data['jobs'] if job['infeasible']] == [names[0.8]]
    card = html[html.index('Best job'):]
    assert card[:card.index('</dl>')].count(best) == 1 and names[0.8] not in card[:card.index('</dl>')]
