"""Units and wording (issue 42, item 10): a number says its unit, and one thing has one name, in every command.

The rules (core/units.py, one function per kind of quantity):
- a job's value is headed by the objective's metric (`objective` for a regex objective) in `status`, `metrics`,
  `report` and `run`'s end alike, and the best job is said the same way on each command's stderr line
  ("best val_accuracy 0.9 (job)"), `status --watch`'s included;
- a duration names its unit, the same text in `status`'s table and the report;
- a share saved is the same percentage (one decimal) in `run`'s table, its stderr line and the report;
- a size is in binary units named as such (KiB, MiB), as --code-size-limit counts them;
- a duration option's default shows its unit in --help.
The real az runs the same rules end to end in tests/tuning/test_run_one_value.py.
"""
import json
import re

import pytest

from azext_batchai_sweep._format import (sweep_metrics_table_format, sweep_report_table_format,
                                         sweep_run_table_format, sweep_status_table_format)
from azext_batchai_sweep.core.units import duration_text, percent_text, size_text, value_label

JOB = 'lr-0af3c2d1e4b5a697'


def _figures(metric, saved_percent=33.3, value=0.9):
    return {'goal': 'max', 'metric': metric, 'jobs': 3,
            'best': {'name': JOB, 'objective': value, 'step': 6, 'resource': None, 'parameters': {'LR': 0.1}},
            'counts': {'succeeded': 2, 'terminated': 1}, 'decisions': {'stopped': 1, 'ran to the end': 2},
            'compute': {'jobSteps': 12, 'jobStepsFull': 18, 'jobStepsSaved': 6, 'savedPercent': saved_percent,
                        'stepLabel': 'epoch', 'jobSeconds': 90.0}}


def _value_headers(metric, value=0.9):
    """The header of the best job's value in each command's table, in the command's order."""
    figures = _figures(metric, value=value)
    status = sweep_status_table_format({'sweep': 'lr', 'figures': figures, 'jobs': [{
        'name': JOB, 'state': 'succeeded', 'parameters': {'LR': 0.1},
        'tuning': {'step': 6, 'latest': value, 'best': value, 'decision': 'ran to the end', 'reason': None}}]})
    metrics = sweep_metrics_table_format([{'name': JOB, 'state': 'succeeded', 'metric': value, 'metricName': metric,
                                           'parameters': {'LR': 0.1}}])
    report = sweep_report_table_format({'sweep': 'lr', 'reportFile': 'lr.html', 'objective': {'metric': metric},
                                        'summary': {'jobs': 3, 'counts': {'succeeded': 3},
                                                    'best': {'name': JOB, 'value': value}}})
    run = sweep_run_table_format(dict(figures, sweep='lr', ended='exhausted', endedBecause='done'))
    found = {}
    for command, row in (('status', status[0]), ('metrics', metrics[0]), ('report', report[0]), ('run', run[0])):
        found[command] = [str(header) for header, cell in row.items() if cell == str(value)]
    return found


@pytest.mark.parametrize('metric, label', [('val_accuracy', 'val_accuracy'), ('Loss_1', 'Loss_1'),
                                           (None, 'objective')])
def test_a_jobs_value_has_one_header_in_status_metrics_report_and_run(metric, label):
    headers = _value_headers(metric)
    # status has Best beside it (the best of the job's judged steps): the job's value is the column named like the rest.
    assert headers == {'status': [label, 'Best'], 'metrics': [label], 'report': [label], 'run': [label]}, headers
    assert value_label(metric) == label


def test_the_metric_keeps_its_case_in_the_header():
    """knack upper-cases a header's first letter; a metric reads as the jobs print it (val_accuracy, not
    Val_accuracy)."""
    for row in (sweep_run_table_format(dict(_figures('val_accuracy'), sweep='lr', ended='x', endedBecause='x'))[0],):
        header = next(h for h in row if str(h) == 'val_accuracy')
        assert header[0].upper() + header[1:] == 'val_accuracy'


@pytest.mark.parametrize('metric, phrase', [('val_accuracy', 'best val_accuracy 0.9 ({})'.format(JOB)),
                                            (None, 'best objective 0.9 ({})'.format(JOB))])
def test_the_best_job_is_said_the_same_way_on_every_commands_stderr(metric, phrase):
    from azext_batchai_sweep.core.report.screen import summary_line
    from azext_batchai_sweep.core.tuning.result import describe, describe_figures
    figures = _figures(metric)
    assert phrase in describe_figures(figures)  # status, metrics, report
    assert phrase in describe(dict(figures, endedBecause='every job has finished'))  # run's end
    watched = {'objective': {'metric': metric}, 'summary': {'jobs': 3, 'counts': {'succeeded': 3},
                                                           'best': {'name': JOB, 'value': 0.9}}}
    assert phrase in summary_line(watched)  # status --watch
    assert 'best max' not in describe_figures(figures)  # the goal is no name of the value


@pytest.mark.parametrize('seconds, text', [(0.04, '0.0s'), (1.25, '1.2s'), (59.94, '59.9s'), (61, '1m01s'),
                                           (119.5, '1m59s'), (3599, '59m59s'), (3600, '1h00m'), (86399, '23h59m')])
def test_a_duration_reads_the_same_in_status_and_the_report(seconds, text):
    from azext_batchai_sweep.core.report.data import report_data
    from azext_batchai_sweep.core.report.html import render_html
    from tests.report.synthetic import synthetic_record
    assert duration_text(seconds) == text
    status = sweep_status_table_format({'sweep': 's', 'jobs': [{'name': 'a', 'state': 'succeeded', 'exitCode': 0,
                                                                'startTime': None, 'durationSeconds': seconds,
                                                                'parameters': {}}]})
    assert status[0]['Duration'] == text
    data = report_data(synthetic_record(3, epochs=4, stop_share=0, fail_share=0))
    data['summary']['compute']['jobSeconds'] = seconds
    assert '{} of jobs'.format(text) in render_html(data)


def test_every_duration_column_of_the_report_table_names_its_unit():
    from azext_batchai_sweep.core.report.data import report_data
    from azext_batchai_sweep.core.report.html import render_html
    from tests.report.synthetic import synthetic_record
    html = render_html(report_data(synthetic_record(3, epochs=4)))
    table = json.loads(re.search(r'id="report-table-data">(.*?)</script>', html).group(1))
    durations = [c['label'] for c in table['columns'] if 'duration' in c['label'] or 'time' in c['label']]
    assert durations and all(re.search(r'\((s|seconds|min|h)\)$', label) for label in durations), durations


@pytest.mark.parametrize('percent', [33.3, 0.0, 100.0, 6.7])
def test_a_share_saved_reads_the_same_in_run_and_the_report(percent):
    from azext_batchai_sweep.core.report.data import _run_compute, report_data
    from azext_batchai_sweep.core.report.html import render_html
    from azext_batchai_sweep.core.tuning.result import describe_figures
    from tests.report.synthetic import synthetic_record
    full = 1000
    saved = round(full * percent / 100)
    figures = _figures('val_accuracy', saved_percent=round(100 * saved / full, 1))
    figures['compute'].update(jobSteps=full - saved, jobStepsFull=full, jobStepsSaved=saved)
    text = percent_text(figures['compute']['savedPercent'])
    assert re.fullmatch(r'\d+\.\d%', text)
    run = sweep_run_table_format(dict(figures, sweep='lr', ended='x', endedBecause='x'))[0]
    assert run['Saved'] == text and '{} saved'.format(text) in describe_figures(figures)
    if saved:  # the report says what early termination saved, when it saved something
        data = report_data(synthetic_record(3, epochs=4))
        data['summary']['compute'] = _run_compute(figures)
        assert '({})'.format(text) in render_html(data)


@pytest.mark.parametrize('size, text', [(0, '0 bytes'), (1023, '1023 bytes'), (1024, '1.0 KiB'),
                                        (12900, '12.6 KiB'), (1048576, '1.0 MiB'), (5 * 1048576 + 1, '5.0 MiB')])
def test_a_size_names_its_binary_unit(size, text):
    from azext_batchai_sweep.core.code.snapshot import format_size
    assert size_text(size) == format_size(size) == text


def test_a_duration_options_default_shows_its_unit_in_help(az):
    """--interval and --poll-interval take 90s, 15m or a plain number of seconds: their default says "10s", not "10"
    (run's --timeout counts plain numbers in minutes, so a bare number is never left to guess)."""
    expected = {'status': ('--interval', '10s'), 'submit': ('--interval', '10s'), 'resubmit': ('--interval', '10s'),
                'run': ('--poll-interval', '5s'), 'report': ('--interval', '10s')}
    for command, (option, default) in expected.items():
        shown = az('batchai', 'sweep', command, '--help')
        assert shown.exit_code == 0, shown.stderr
        # The option's entry: from its line to the next option's (help lines start with 4 spaces and --).
        entry = re.search(r'\n    ' + re.escape(option) + r'\s.*?(?=\n    --|\n\n|\nGlobal)', shown.stdout, re.S)
        said = ' '.join(entry.group(0).split())
        assert re.search(r'Default: {}\.?$'.format(default), said), said


@pytest.mark.parametrize('decisions, columns', [
    ({'stopped': 2, 'ran to the end': 4}, {'Stopped': 2}),
    ({'promoted': 4, 'not promoted': 12, 'ran to the end': 6}, {'Stopped': 0, 'Not Promoted': 12}),
    ({'stopped': 1, 'not promoted': 3}, {'Stopped': 1, 'Not Promoted': 3}),
])
def test_runs_table_counts_every_cut_its_savings_come_from(decisions, columns):
    """A Hyperband run saves by not promoting: its row says so, not "Stopped 0" beside "54.9%" saved, within 100
    columns."""
    row = sweep_run_table_format(dict(_figures('val_accuracy', saved_percent=54.9), decisions=decisions,
                                      sweep='hb', ended='exhausted', endedBecause='x'))[0]
    assert {key: row[key] for key in ('Stopped', 'Not Promoted') if key in row} == columns
    widths = [max(len(str(key)), len(str(cell))) for key, cell in row.items()]
    assert sum(widths) + 2 * (len(widths) - 1) <= 100, row


def test_hyperband_says_one_job_goes_on_in_the_singular():
    from azext_batchai_sweep.core.tuning.samplers.hyperband import _going_on
    assert [_going_on(k) for k in (1, 2, 3)] == ['the best one goes on', 'the best 2 go on', 'the best 3 go on']


def test_status_columns_of_a_time_or_duration_say_their_zone_or_unit():
    """A sweep's status without `run`: its Start says UTC (the service's times are UTC), its Duration cells their
    unit; both fit 100 columns with two parameters."""
    rows = sweep_status_table_format({'sweep': 's', 'jobs': [
        {'name': 'lr-0af3c2d1e4b5a697', 'state': 'succeeded', 'exitCode': 0, 'startTime': '2026-11-23T20:17:51+00:00',
         'durationSeconds': 8297.0, 'parameters': {'LEARNING_RATE': 0.001, 'MOMENTUM': 0.9}}]})
    row = rows[0]
    assert row['Start (UTC)'] == '11-23 20:17' and row['Duration'] == '2h18m'
    widths = [max(len(str(key)), len(str(cell))) for key, cell in row.items()]
    assert sum(widths) + 2 * (len(widths) - 1) <= 100, row


@pytest.mark.parametrize('several', [False, True])
def test_a_run_sweeps_status_row_fits_100_columns_with_the_metric_as_header(several):
    """The value headed by its metric (12 characters for val_accuracy, 6 for the old Latest) keeps a status row of a
    two-parameter sweep within 100 columns; with several objectives the Pareto mark stands in Best's place."""
    tuning = {'step': 15, 'latest': 0.9667, 'best': 0.9833, 'decision': 'ran to the end', 'reason': None}
    if several:
        tuning.update(paretoRank=1, onFront=False, infeasible=True)
    rows = sweep_status_table_format({'sweep': 'pareto', 'figures': {'metric': 'val_accuracy'}, 'jobs': [
        {'name': 'pareto-0af3c2d1e4b5a697', 'state': 'succeeded', 'parameters': {'Q': 0.8, 'K': 2},
         'tuning': tuning}]})
    row = rows[0]
    assert [str(key) for key in row][2:5] == ['Step', 'val_accuracy', 'Pareto' if several else 'Best'], row
    widths = [max(len(str(key)), len(str(cell))) for key, cell in row.items()]
    assert sum(widths) + 2 * (len(widths) - 1) <= 100, row


@pytest.mark.parametrize('job_minutes, sweep_minutes', [(30, 10), (2.5, 1.5)])
def test_the_timeouts_warning_says_minutes(az, tmp_path, job_minutes, sweep_minutes):
    """limits.jobTimeoutMinutes longer than limits.timeoutMinutes: `run --plan-only` says both with their unit."""
    from tests.tuning.run_helpers import write_sweep
    spec = write_sweep(str(tmp_path), 'limits', ['limits: {{maxConcurrentJobs: 1, jobTimeoutMinutes: {}, '
                                                 'timeoutMinutes: {}}}'.format(job_minutes, sweep_minutes)],
                       [0.1, 0.2], epochs=2)
    result = az('batchai', 'sweep', 'run', '-g', 'rg', '-w', 'ws', '-e', 'exp', '-n', 'limits', '--spec', spec,
                '-c', 'local', '--plan-only', '-o', 'json',
                env={'AZURE_BATCHAI_SWEEP_ENDPOINT': 'http://127.0.0.1:9',
                     'AZURE_BATCHAI_SWEEP_TOKEN_FILE': str(tmp_path / 'none')})
    assert result.exit_code == 0, result.stderr
    said = 'limits.jobTimeoutMinutes ({:g} minutes) is longer than limits.timeoutMinutes ({:g} minutes)'.format(
        job_minutes, sweep_minutes)
    assert said in ' '.join(result.stderr.split()), result.stderr


@pytest.mark.parametrize('metric', ['Best', 'State', 'Decision', 'Saved'])
def test_a_metric_named_like_a_column_keeps_both(metric):
    """A metric called `Best` (a job prints Best=0.9) must not take the status table's Best column, nor `Saved` the
    run's: its column says `metric Best`, the same in every command."""
    headers = _value_headers(metric, value=0.8125)
    assert {command: found[:1] for command, found in headers.items()} == {
        command: ['metric ' + metric] for command in ('status', 'metrics', 'report', 'run')}, headers
