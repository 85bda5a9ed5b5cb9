"""Steps are bounded like values (issue 41, item 5): a step that is not a whole number from 0 to MAX_STEP is no step
(the line is no report, said once), `saved` counts only what a decision cut, and the report computes with guards.
Through the real az too: a job printing `epoch=1e308` first."""
import os
import sys

import pytest

from azext_batchai_sweep.core.outputs.metrics import MAX_STEP, MetricExtractor, as_step
from azext_batchai_sweep.core.report.data import _run_compute
from azext_batchai_sweep.core.report.intermediate import ReportReader
from azext_batchai_sweep.core.tuning.reports import LogReader, ReportParser
from azext_batchai_sweep.core.tuning.result import sweep_figures
from azext_batchai_sweep.core.tuning.trial import Report, Trial

from .run_helpers import report_html, run_args, service_setup, target


@pytest.mark.parametrize('text, step', [
    ('3', 3.0), ('0', 0.0), ('1e3', 1000.0), (str(MAX_STEP), float(MAX_STEP)), ('1e308', None), ('-1', None),
    ('2.5', None), (str(MAX_STEP + 1), None), ('nan', None), ('inf', None), ('1e999', None),
])
def test_a_step_is_a_whole_number_within_the_bound(text, step):
    assert as_step(text) == step


@pytest.mark.parametrize('bad', ['1e308', '-3', '0.5', '10000000000'])
def test_run_and_report_refuse_the_same_lines_and_say_so(bad):
    log = 'epoch={} acc=0.1\nepoch=1 acc=0.5\nepoch=2 acc=0.7\n'.format(bad)
    parser = ReportParser({'metric': 'acc', 'step': 'epoch'})
    reader = LogReader(parser)
    reader.feed(log.encode(), final=True)
    assert [(r.step, r.value) for r in reader.reports] == [(1.0, 0.5), (2.0, 0.7)]
    said = parser.refused_step_text()
    assert said.startswith('epoch={}: not a step'.format(bad)) and str(MAX_STEP) in said
    key, reports = ReportReader(MetricExtractor(metric_name='acc'), step_key='epoch').read_text(log)
    assert key == 'epoch' and reports == [(1.0, 0.5), (2.0, 0.7)]


def test_saved_counts_only_what_a_decision_cut():
    # Two configurations ran to the end, one to step 3, the other to step 30: nothing was stopped, nothing saved.
    trials = [Trial(name='a', index=0, params={'x': 1}, state='succeeded',
                    reports=tuple(Report(float(s), 0.5) for s in range(1, 4))),
              Trial(name='b', index=1, params={'x': 2}, state='succeeded',
                    reports=tuple(Report(float(s), 0.6) for s in range(1, 31)))]
    figures = sweep_figures(trials, {}, 'max')
    assert figures['compute']['jobStepsSaved'] == 0 and figures['compute']['savedPercent'] == 0.0
    assert figures['compute']['jobStepsFull'] == figures['compute']['jobSteps'] == 33


@pytest.mark.parametrize('saved', [10 ** 308, 10 ** 400, 7])
def test_the_report_computes_with_guards(saved):
    compute = _run_compute({'compute': {'jobSteps': 3, 'jobStepsSaved': saved, 'jobSeconds': 5.0,
                                        'jobStepsFull': saved + 3}})
    assert compute['savedJobSeconds'] >= 0 and compute['savedJobSeconds'] != float('inf')
    assert 0 <= compute['savedFraction'] <= 1


SCRIPT = '''import sys
q = float(sys.argv[1])
print('epoch=1e308 val_accuracy=0.01', flush=True)
for epoch in (1, 2, 3):
    print('epoch={} val_accuracy={}'.format(epoch, q * epoch / 3), flush=True)
'''


@pytest.mark.az
@pytest.mark.service
def test_a_job_printing_epoch_1e308_through_az(local_service, tmp_path_factory):
    az, directory, experiment = service_setup(local_service, tmp_path_factory, 'steps')
    script = os.path.join(directory, 'steps.py')
    with open(script, 'w', encoding='utf-8') as f:
        f.write(SCRIPT)
    spec = os.path.join(directory, 'steps.yaml')
    with open(spec, 'w', encoding='utf-8') as f:
        f.write('\n'.join(['jobNamePrefix: steps', 'objective: {metric: val_accuracy, goal: max, step: epoch}',
                           'parameters:', '  - {name: Q, type: discrete, values: [0.3, 0.9]}', 'job:',
                           '  nodeCount: 1', '  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs',
                           '  customToolkitSettings: {{commandLine: "{} {} {{{{Q}}}}"}}'.format(sys.executable,
                                                                                              script)]) + '\n')
    run = az(*run_args(local_service, experiment, 'steps', spec))
    assert run.exit_code == 0, run.stderr
    compute = run.json()['compute']
    assert compute['jobStepsFull'] == compute['jobSteps'] == 6 and compute['savedPercent'] == 0.0
    assert run.stderr.count('epoch=1e308: not a step') == 1, run.stderr
    assert run.json()['best']['step'] == 3
    made, _ = report_html(az, local_service, experiment, 'steps', directory)
    curves = {job['name']: job['reports'] for job in made.json()['jobs']}
    assert all([step for step, _ in reports] == [1, 2, 3] for reports in curves.values())
    status = az('batchai', 'sweep', 'status', *target(local_service, experiment, 'steps'), '-o', 'json')
    assert status.exit_code == 0 and '0.0% saved' in status.stderr
