"""Importance never credits what did not vary (issue 41, item 6): when every job has the same value nothing can be
ranked (said, no share to anyone), and a parameter that took one value gets no share, ever; through the library and
the real az (`metrics --importance`, the report's "What mattered")."""
import os
import sys

import pytest

from azext_batchai_sweep.core.report.importance import importance

from tests.tuning.run_helpers import report_html, run_args, service_setup, target

AXES = [{'name': 'A', 'kind': 'linear', 'min': 0, 'max': 9, 'integer': True},
        {'name': 'B', 'kind': 'linear', 'min': 0, 'max': 10, 'integer': True},
        {'name': 'C', 'kind': 'categorical', 'categories': ['x', 'y']}]


def _jobs(count=20, b=7):
    return [{'A': i % 10, 'B': b, 'C': 'xy'[i % 2]} for i in range(count)]


@pytest.mark.parametrize('value', [0.5, 0.0, -1e308])
@pytest.mark.parametrize('goal', ['max', 'min'])
def test_every_job_with_the_same_value_ranks_nothing(value, goal):
    result = importance(_jobs(), AXES, [value] * 20, goal, bootstrap=20)
    assert result['nothingRanked'] and 'same value' in result['message']
    assert [row['importance'] for row in result['parameters']] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize('values', [
    [float(i % 10) for i in range(20)],                # A decides
    [float(i % 2) for i in range(20)],                 # C decides
    [float((i % 10) * (i % 2)) for i in range(20)],    # both
])
def test_a_parameter_with_one_value_gets_no_share(values):
    result = importance(_jobs(), AXES, values, 'max', bootstrap=20)
    shares = {row['name']: row for row in result['parameters']}
    assert shares['B']['importance'] == 0.0 and shares['B']['high'] == 0.0
    assert sum(row['importance'] for row in result['parameters']) == pytest.approx(1.0)
    assert not result['nothingRanked']


def test_one_valued_parameters_only_rank_nothing():
    jobs = [{'B': 7, 'C': 'x'} for _ in range(20)]
    result = importance(jobs, AXES[1:], [float(i) for i in range(20)], 'max', bootstrap=10)
    assert result['nothingRanked'] and [row['importance'] for row in result['parameters']] == [0.0, 0.0]


SCRIPT = 'import sys\nprint("epoch=1 acc=0.5")\n'


@pytest.mark.az
@pytest.mark.service
def test_metrics_importance_and_the_report_say_nothing_can_be_ranked(local_service, tmp_path_factory):
    az, directory, experiment = service_setup(local_service, tmp_path_factory, 'flat')
    script = os.path.join(directory, 'flat.py')
    with open(script, 'w', encoding='utf-8') as f:
        f.write(SCRIPT)
    spec = os.path.join(directory, 'flat.yaml')
    with open(spec, 'w', encoding='utf-8') as f:
        f.write('\n'.join(['jobNamePrefix: flat', 'objective: {metric: acc, goal: max}', 'parameters:',
                           '  - {name: A, type: discrete, values: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}',
                           '  - {name: B, type: discrete, values: [7]}', 'limits: {maxConcurrentJobs: 4}', 'job:',
                           '  nodeCount: 1', '  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs',
                           '  customToolkitSettings: {{commandLine: "{} {} {{{{A}}}} {{{{B}}}}"}}'.format(
                               sys.executable, script)]) + '\n')
    run = az(*run_args(local_service, experiment, 'flat', spec))
    assert run.exit_code == 0, run.stderr
    shown = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'flat'), '--importance',
               '-o', 'json')
    assert shown.exit_code == 0, shown.stderr
    entry = shown.json()['importance'][0]
    assert entry['nothingRanked'] and all(row['importance'] == 0.0 for row in entry['parameters'])
    assert 'no parameter can be ranked' in shown.stderr
    table = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'flat'), '--importance',
               '-o', 'table')
    assert table.exit_code == 0 and '50%' not in table.stdout and '100%' not in table.stdout
    made, html = report_html(az, local_service, experiment, 'flat', directory)
    assert made.json()['importance'][0]['nothingRanked']
    assert 'no parameter can be ranked' in html and 'class="importance-bar"' not in html
