"""A sweep file can neither hang nor exhaust the machine that checks it (issue 41, item 4): warm-start results files
(and the sweep file itself) are read as regular files only, bounded, and every malformed content is "Invalid sweep
definition: ... sampling.warmStart[i] ..." with exit 6, through the real az's `run --plan-only` (the CI check
docs/pipelines.md recommends), with no service."""
import json
import os
import time

import pytest

from azext_batchai_sweep._exit_codes import BAD_INPUT

from .run_helpers import write_sweep
from .test_run_plan_only import offline_run

pytestmark = pytest.mark.az

BIG = 10 ** 400  # a valid JSON number no float holds


def _row(**changes):
    row = {'name': 'old-1', 'state': 'succeeded', 'parameters': {'Q': 0.1}, 'metric': 0.5,
           'metricName': 'val_accuracy'}
    row.update(changes)
    return row


def _report(**changes):
    report = {'kind': 'batchai-sweep-report', 'objective': {'metric': 'val_accuracy', 'goal': 'max'},
              'summary': {'figures': None},
              'jobs': [{'name': 'old-1', 'state': 'succeeded', 'parameters': {'Q': 0.1}, 'objective': 0.5,
                        'reports': [[1, 0.5]], 'resource': None}]}
    report.update(changes)
    return report


CONTENTS = {
    'metric-400-digits': [_row(metric=BIG)],
    'parameter-400-digits': [_row(parameters={'Q': BIG})],
    'report-step-400-digits': _report(jobs=[dict(_report()['jobs'][0], reports=[[BIG, 0.5]])]),
    'report-resource-400-digits': _report(jobs=[dict(_report()['jobs'][0], resource=BIG)]),
    'summary-a-string': _report(summary='fine'),
    'figures-a-list': _report(summary={'figures': [1, 2]}),
    'pareto-a-string': _report(summary={'figures': {'pareto': 'front'}}),
    'objective-a-list': _report(objective=['val_accuracy']),
    'metric-a-list': _report(objective={'metric': ['val_accuracy']}),
    'name-a-list': [_row(name=['a'])],
    'parameters-a-list': [_row(parameters=['Q', 0.1])],
    'rows-not-objects': [1, 2, 3],
}


def _spec(tmp_path, source):
    return write_sweep(str(tmp_path), 'warm', ['sampling: {{type: bayesian, count: 4, seed: 3, startupJobs: 3, '
                                               'warmStart: [{}]}}'.format(source), 'limits: {maxConcurrentJobs: 2}'],
                       [0.1, 0.2, 0.3], epochs=2)


def _refused(result, started):
    assert result.exit_code == BAD_INPUT, result.stderr
    assert 'Traceback' not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith('ERROR:')]
    assert len(errors) == 1 and 'Invalid sweep definition' in errors[0] and 'sampling.warmStart[0]' in errors[0], \
        result.stderr
    assert time.monotonic() - started < 60


def test_every_malformed_results_file_is_refused_with_exit_6(az, tmp_path):
    for name, content in CONTENTS.items():
        path = tmp_path / (name + '.json')
        path.write_text(json.dumps(content))
        started = time.monotonic()
        result = offline_run(az, _spec(tmp_path, path.name), '--plan-only')
        try:
            _refused(result, started)
        except AssertionError as failure:
            raise AssertionError('{}: {}'.format(name, failure)) from None


@pytest.mark.parametrize('kind', ['dev-zero', 'fifo', 'folder'])
def test_a_results_file_that_never_ends_or_blocks_is_refused_at_once(az, tmp_path, kind):
    if kind == 'dev-zero':
        source = '/dev/zero'
    elif kind == 'fifo':
        source = str(tmp_path / 'pipe.json')
        os.mkfifo(source)
    else:
        source = str(tmp_path / 'folder.json')
        os.mkdir(source)
    started = time.monotonic()
    result = offline_run(az, _spec(tmp_path, source), '--plan-only')
    _refused(result, started)
    assert 'not a regular file' in result.stderr


@pytest.mark.parametrize('kind', ['dev-zero', 'fifo'])
def test_a_job_template_that_never_ends_or_blocks_is_refused_at_once(az, tmp_path, kind):
    """The sweep file names its job template (`job: FILE`), read by the same bounded reader."""
    if kind == 'dev-zero':
        template = '/dev/zero'
    else:
        template = str(tmp_path / 'job.json')
        os.mkfifo(template)
    spec = tmp_path / 'sweep.yaml'
    spec.write_text('jobNamePrefix: t\nparameters:\n  - {{name: Q, type: discrete, values: [1, 2]}}\njob: {}\n'
                    .format(template))
    started = time.monotonic()
    result = offline_run(az, str(spec), '--plan-only')
    assert result.exit_code == BAD_INPUT, result.stderr
    assert 'not a regular file' in result.stderr and 'Traceback' not in result.stderr
    assert time.monotonic() - started < 60
