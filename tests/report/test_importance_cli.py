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
    assert entry['targetQuantile'] == pytest.approx(5 / JOBS) and entry['resamples'] == 200
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
