"""The table transformer of `az batchai sweep create`."""
from collections import OrderedDict

from azext_batchai_sweep._format import sweep_create_table_format


def test_one_row_per_job_a_column_per_parameter_and_per_dict_key():
    result = {'jobs': [
        {'name': 'lr-1', 'parameters': {'LR': 0.0001, 'HP': {'HIDDEN': 100, 'DROP': 0.5}, 'DEV': 'gpu', 'X': None}},
    ]}
    assert sweep_create_table_format(result) == [OrderedDict([
        ('Name', 'lr-1'), ('LR', '0.0001'), ('HP.HIDDEN', '100'), ('HP.DROP', '0.5'), ('DEV', 'gpu'), ('X', '')])]


def test_no_jobs_no_rows():
    assert sweep_create_table_format({'jobs': []}) == []


def test_status_rows_have_a_column_per_parameter_and_empty_cells_for_missing_values():
    from azext_batchai_sweep._format import sweep_status_table_format
    result = {'counts': {}, 'jobs': [
        {'name': 'a', 'state': 'succeeded', 'exitCode': 0, 'startTime': 't0', 'durationSeconds': 1.25,
         'parameters': {'LR': 0.1, 'N': 2}},
        {'name': 'b', 'state': 'queued', 'exitCode': None, 'startTime': None, 'durationSeconds': None,
         'parameters': {'N': 3}},
    ]}
    rows = sweep_status_table_format(result)
    assert rows[0] == OrderedDict([('Name', 'a'), ('State', 'succeeded'), ('Exit', '0'), ('Start', 't0'),
                                   ('Duration', '1.2s'), ('LR', '0.1'), ('N', '2')])
    assert list(rows[1].values()) == ['b', 'queued', '', '', '', '', '3']
    assert sweep_status_table_format(['line 1', 'line 2']) == [OrderedDict([('Line', 'line 1')]),
                                                               OrderedDict([('Line', 'line 2')])]


def test_metrics_rows_show_a_missing_metric_as_empty():
    from azext_batchai_sweep._format import sweep_metrics_table_format
    rows = sweep_metrics_table_format([{'name': 'a', 'state': 'failed', 'metric': None, 'parameters': {'X': 1}},
                                       {'name': 'b', 'state': 'succeeded', 'metric': 0.5, 'parameters': {'X': 2}}])
    assert [list(row.items()) for row in rows] == [
        [('Name', 'a'), ('State', 'failed'), ('Metric', ''), ('X', '1')],
        [('Name', 'b'), ('State', 'succeeded'), ('Metric', '0.5'), ('X', '2')]]


def test_summary_tables_are_one_row():
    from azext_batchai_sweep._format import (sweep_delete_table_format, sweep_resubmit_table_format,
                                             sweep_submit_table_format)
    submit = sweep_submit_table_format({'sweep': 's', 'total': 3, 'submitted': 1, 'alreadyPresent': 1,
                                        'failed': [{'job': 'c', 'error': 'e'}], 'notSubmitted': ['c']})
    assert list(submit[0].items()) == [('Sweep', 's'), ('Total', 3), ('Submitted', 1), ('Already Present', 1),
                                       ('Not Submitted', 1)]
    assert sweep_delete_table_format({'sweep': 's', 'deleted': ['a'], 'notFound': [], 'failed': []})[0]['Deleted'] == 1
    resubmit = sweep_resubmit_table_format({'resubmitted': ['a'], 'skipped': [{'job': 'b', 'reason': 'r'}],
                                            'failed': [{'job': 'c', 'error': 'e'}]})
    assert [row['Result'] for row in resubmit] == ['resubmitted', 'skipped: r', 'failed: e']


def test_table_cells_are_short_and_json_keeps_full_precision():
    from azext_batchai_sweep._format import (_cell, _short_duration, _short_time, sweep_resubmit_table_format,
                                             sweep_submit_table_format)
    # At most 6 significant digits; a value that already has no more keeps its shortest form.
    assert [_cell(v) for v in (0.0031622776601683794, 0.001, 1e-05, 3.0, 123456789.0, 2 / 3, -0.5)] == \
        ['0.00316228', '0.001', '1e-05', '3.0', '1.23457e+08', '0.666667', '-0.5']
    assert _cell(float('nan')) == 'nan' and _cell(7) == '7'
    assert _short_time('2026-11-23T20:17:51.123456+00:00') == '11-23 20:17' and _short_time(None) == ''
    assert [_short_duration(s) for s in (1.25, 59.94, 61, 3599, 3600, 86399)] == \
        ['1.2s', '59.9s', '1m01s', '59m59s', '1h00m', '23h59m']
    long_error = 'failed: ' + 'x' * 200
    row = sweep_resubmit_table_format({'resubmitted': [], 'skipped': [], 'failed': [{'job': 'j', 'error': 'x' * 200}]})
    assert len(row[0]['Result']) == 60 and row[0]['Result'].endswith('...') and len(long_error) > 60
    # After --wait, only the states the jobs ended in.
    summary = sweep_submit_table_format({'sweep': 's', 'total': 2, 'submitted': 2, 'alreadyPresent': 0,
                                         'notSubmitted': [], 'counts': {'queued': 0, 'succeeded': 1, 'failed': 1}})
    assert list(summary[0]) == ['Sweep', 'Total', 'Submitted', 'Already Present', 'Not Submitted', 'Succeeded',
                                'Failed']
