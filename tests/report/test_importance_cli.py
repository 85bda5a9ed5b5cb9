"""`az batchai sweep metrics --importance` through the real az on the session's local service.

The sweep: a seeded random search of 24 jobs over a log-scale learning rate, a number of units and an optimizer,
whose score depends on the learning rate alone (the units and the optimizer do nothing): the learning rate must
come first. Made once per module: the tests only read it.
"""
import os

import pytest

from azext_batchai_sweep.core.report.importance import importance
from tests.report.conftest import submit_and_wait

pytestmark = [pytest.mark.az, pytest.mark.service]

JOBS = 24  # the sweep file's count
TRAIN = '''
import math, sys
lr, units, opt = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
score = 1.0 - (math.log10(lr) + 2) ** 2 / 10
print('score=%.6f' % score)
if opt == 'adam':
    print('adam_score=%.6f' % score)
'''
SWEEP_FILE = '''jobNamePrefix: imp
sampling: {{type: random, count: 24, seed: 11}}
objective: {{metric: score, goal: max}}
parameters:
  - {{name: LR, type: numeric, dataType: REAL, start: 1e-4, end: 1.0, numValues: 5, scale: LOG}}
  - {{name: UNITS, type: discrete, values: [4, 16, 64]}}
  - {{name: OPT, type: discrete, values: [adam, sgd, rmsprop]}}
job: {job}
'''


class Swept:
    def __init__(self, az, directory, args):
        self.az, self.directory, self.args = az, directory, args

    def metrics(self, *args, **kwargs):
        return self.az('batchai', 'sweep', 'metrics', *self.args, *args, **kwargs)


@pytest.fixture(scope='module')
def swept(local_service, tmp_path_factory):
    directory = str(tmp_path_factory.mktemp('importance'))
    az, args, status = submit_and_wait(local_service, directory, TRAIN, SWEEP_FILE,
                                       'imp-', 'imp', ['LR', 'UNITS', 'OPT'])
    assert status['counts']['succeeded'] == JOBS, status
    return Swept(az, directory, args)


def test_json_ranks_the_parameter_that_matters_first_with_the_numbers_of_the_core(swept):
    # The sweep file's objective (kept in the plan by submit): no --metric, no --goal.
    result = swept.metrics('--importance', '-o', 'json')
    assert result.exit_code == 0, result.stderr
    answer = result.json()
    entry, = answer['importance']
    assert answer['sweep'] == 'imp' and entry['objective'] == 'score' and entry['goal'] == 'max'
    assert entry['jobs'] == JOBS and entry['method'] == 'ped-anova' and not entry['tooFewJobs']
    assert entry['targetQuantile'] == pytest.approx(5 / JOBS) and entry['topJobs'] == 5 and entry['resamples'] == 200
    assert [row['name'] for row in entry['parameters']][0] == 'LR'
    assert entry['parameters'][0]['importance'] > 0.5
    assert sum(row['importance'] for row in entry['parameters']) == pytest.approx(1.0)
    # The same numbers as the core's importance() on the jobs `metrics` reads, on the plan's scales (LR: LOG).
    rows = swept.metrics('-o', 'json').json()
    axes = [{'name': 'LR', 'kind': 'log', 'min': min(r['parameters']['LR'] for r in rows),
             'max': max(r['parameters']['LR'] for r in rows), 'integer': False},
            {'name': 'UNITS', 'kind': 'linear', 'min': 4, 'max': 64, 'integer': True},
            {'name': 'OPT', 'kind': 'categorical', 'categories': ['adam', 'rmsprop', 'sgd']}]
    expected = importance([r['parameters'] for r in rows], axes, [r['metric'] for r in rows], 'max')
    assert entry['parameters'] == expected['parameters']


def test_table_one_row_per_parameter_most_important_first(swept):
    result = swept.metrics('--metric', 'score', '--goal', 'max', '--importance', '-o', 'table')
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ['Parameter', 'Importance', 'Low', 'High', 'Jobs']
    assert [line.split()[0] for line in lines[2:]][0] == 'LR' and len(lines) == 2 + 3
    assert all(line.split()[-1] == str(JOBS) and '%' in line for line in lines[2:])
    assert max(len(line) for line in lines) <= 100


def test_too_few_jobs_with_a_value_are_said_not_estimated(swept):
    # Only the adam jobs print adam_score: fewer than 10 of them.
    result = swept.metrics('--metric', 'adam_score', '--goal', 'max', '--importance', '-o', 'json')
    assert result.exit_code == 0, result.stderr
    entry, = result.json()['importance']
    assert entry['tooFewJobs'] and 0 < entry['jobs'] < 10
    assert all(row['importance'] is None for row in entry['parameters'])
    assert 'Sweep imp: no importance for adam_score: {} finished job(s) with a value: importance needs at least ' \
        '10.'.format(entry['jobs']) in result.stderr


@pytest.mark.parametrize('args, message', [
    (['--importance', '--top', '3'], '--importance prints the parameters\' importance, not the jobs: --top does not '
                                     'go with it'),
    (['--importance', '--csv', 'x.csv'], '--csv does not go with it'),
    (['--importance', '--metric', 'score'], '--importance with --metric or --regex needs --goal max or --goal min'),
])
def test_bad_arguments_fail_before_any_request(swept, args, message):
    result = swept.metrics(*args, env={'AZURE_BATCHAI_SWEEP_ENDPOINT': 'http://127.0.0.1:9'})
    assert result.exit_code == 6, result.stderr  # bad input (docs/pipelines.md)
    assert message in result.stderr and 'Traceback' not in result.stderr
    assert not os.path.exists(os.path.join(swept.directory, 'x.csv'))


# A `sweep run` with two objectives: accuracy set by A alone, latency by B alone, C does nothing.
TWO_OBJECTIVES = '''import sys
a, b = float(sys.argv[1]), float(sys.argv[2])
print('epoch=1 val_accuracy=%.6f latency_ms=%.6f' % (1 - (a - 0.7) ** 2, 10 + 50 * b))
'''


TWO_OBJECTIVES_SWEEP = """jobNamePrefix: impmo
sampling: {{type: random, count: 16, seed: 3}}
objectives: [{{metric: val_accuracy, goal: max}}, {{metric: latency_ms, goal: min}}]
limits: {{maxConcurrentJobs: 4}}
parameters:
  - {{name: A, type: numeric, dataType: REAL, start: 0, end: 1, numValues: 3, scale: LINEAR}}
  - {{name: B, type: numeric, dataType: REAL, start: 0, end: 1, numValues: 3, scale: LINEAR}}
  - {{name: C, type: numeric, dataType: REAL, start: 0, end: 1, numValues: 3, scale: LINEAR}}
job:
  nodeCount: 1
  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs
  customToolkitSettings: {{commandLine: "{python} {script} {{{{A}}}} {{{{B}}}}"}}
"""


@pytest.fixture(scope='module')
def ran_two_objectives(local_service, tmp_path_factory):
    import sys
    from tests.tuning.run_helpers import run_args, service_setup
    az, directory, experiment = service_setup(local_service, tmp_path_factory, 'imp-mo')
    script, spec = os.path.join(directory, 'job.py'), os.path.join(directory, 'sweep.yaml')
    for path, text in ((script, TWO_OBJECTIVES), (spec, TWO_OBJECTIVES_SWEEP.format(python=sys.executable,
                                                                                    script=script))):
        with open(path, 'w', encoding='utf-8') as out:
            out.write(text)
    run = az(*run_args(local_service, experiment, 'impmo', spec))
    assert run.exit_code == 0, run.stderr
    args = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', experiment, '-n', 'impmo']
    return Swept(az, directory, args)


def test_several_objectives_get_the_importance_of_each_in_metrics_and_the_report(ran_two_objectives):
    swept = ran_two_objectives
    result = swept.metrics('--importance', '-o', 'json')
    assert result.exit_code == 0, result.stderr
    entries = result.json()['importance']
    assert [(e['objective'], e['goal'], e['jobs']) for e in entries] == [('val_accuracy', 'max', 16),
                                                                       ('latency_ms', 'min', 16)]
    assert [e['parameters'][0]['name'] for e in entries] == ['A', 'B']
    table = swept.metrics('--importance', '-o', 'table')
    lines = table.stdout.splitlines()
    assert lines[0].split() == ['Objective', 'Parameter', 'Importance', 'Low', 'High', 'Jobs']
    assert [line.split()[:2] for line in lines[2:]][::3] == [['val_accuracy', 'A'], ['latency_ms', 'B']]
    report = swept.az('batchai', 'sweep', 'report', *swept.args, '-f', os.path.join(swept.directory, 'r.html'),
                      '--query', 'importance', '-o', 'json')
    assert report.exit_code == 0, report.stderr
    assert report.json() == entries  # the same jobs and values: the same numbers
    with open(os.path.join(swept.directory, 'r.html'), encoding='utf-8') as f:
        html = f.read()
    assert html.count('<svg class="plot importance"') == 2 and '<h3>latency_ms</h3>' in html
