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
    assert rows[0] == OrderedDict([('Name', 'a'), ('State', 'succeeded'), ('Exit Code', '0'), ('Start', 't0'),
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
