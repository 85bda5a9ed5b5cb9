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
    assert rows[0] == OrderedDict([('Name', 'a'), ('State', 'succeeded'), ('Exit', '0'), ('Start (UTC)', 't0'),
                                   ('Duration', '1.2s'), ('LR', '0.1'), ('N', '2')])
    assert list(rows[1].values()) == ['b', 'queued', '', '', '', '', '3']
    assert sweep_status_table_format(['line 1', 'line 2']) == [OrderedDict([('Line', 'line 1')]),
                                                               OrderedDict([('Line', 'line 2')])]


def test_metrics_rows_show_a_missing_metric_as_empty():
    from azext_batchai_sweep._format import sweep_metrics_table_format
    rows = sweep_metrics_table_format([{'name': 'a', 'state': 'failed', 'metric': None, 'parameters': {'X': 1}},
                                       {'name': 'b', 'state': 'succeeded', 'metric': 0.5, 'parameters': {'X': 2}}])
    assert [list(row.items()) for row in rows] == [
        [('Name', 'a'), ('State', 'failed'), ('objective', ''), ('X', '1')],
        [('Name', 'b'), ('State', 'succeeded'), ('objective', '0.5'), ('X', '2')]]


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
    from azext_batchai_sweep._format import (_cell, _short_time, sweep_resubmit_table_format,
                                             sweep_submit_table_format)
    from azext_batchai_sweep.core.units import duration_text
    # At most 6 significant digits; a value that already has no more keeps its shortest form.
    assert [_cell(v) for v in (0.0031622776601683794, 0.001, 1e-05, 3.0, 123456789.0, 2 / 3, -0.5)] == \
        ['0.00316228', '0.001', '1e-05', '3.0', '1.23457e+08', '0.666667', '-0.5']
    assert _cell(float('nan')) == 'nan' and _cell(7) == '7'
    assert _short_time('2026-11-23T20:17:51.123456+00:00') == '11-23 20:17' and _short_time(None) == ''
    assert [duration_text(s) for s in (1.25, 59.94, 61, 3599, 3600, 86399)] == \
        ['1.2s', '59.9s', '1m01s', '59m59s', '1h00m', '23h59m']
    long_error = 'failed: ' + 'x' * 200
    row = sweep_resubmit_table_format({'resubmitted': [], 'skipped': [], 'failed': [{'job': 'j', 'error': 'x' * 200}]})
    assert len(row[0]['Result']) == 60 and row[0]['Result'].endswith('...') and len(long_error) > 60
    # After --wait, only the states the jobs ended in.
    summary = sweep_submit_table_format({'sweep': 's', 'total': 2, 'submitted': 2, 'alreadyPresent': 0,
                                         'notSubmitted': [], 'counts': {'queued': 0, 'succeeded': 1, 'failed': 1}})
    assert list(summary[0]) == ['Sweep', 'Total', 'Submitted', 'Already Present', 'Not Submitted', 'Succeeded',
                                'Failed']


# ---- local start|status|stop -o table: one row within 100 columns for every scheduler -------------------------

def _rendered(result):
    """The table az prints for local start|status|stop's result (knack's table output with its transformer)."""
    from types import SimpleNamespace
    from knack.output import format_table
    from azext_batchai_sweep._format import local_service_table_format
    return format_table(SimpleNamespace(result=result, table_transformer=local_service_table_format,
                                        is_query_active=False))


LONG_DIR = '/mnt/batch/tasks/shared/a-rather-long-project-folder-name/experiments/2026-11-26/batchai-sweep/local'
COMMON = {'endpoint': 'http://127.0.0.1:65535', 'filesEndpoint': 'http://127.0.0.1:65534', 'dataDir': LONG_DIR,
          'pid': 4194304, 'tokenFile': LONG_DIR + '/token', 'subscriptionId': '00000000-0000-0000-0000-000000000000',
          'resourceGroup': 'batchai-local', 'workspace': 'local', 'cluster': 'local'}
SCHEDULERS = {
    'processes': {'scheduler': 'processes', 'gpus': 8},
    'slurm': {'scheduler': 'slurm', 'slurmCluster': 'a-long-slurm-cluster-name-of-the-lab',
              'slurmConf': '/etc/slurm/a/long/path/slurm.conf', 'partition': 'gpu-a100-80gb-long-partition',
              'account': 'project-account-with-a-long-name'},
    'azure-batch': {'scheduler': 'azure-batch', 'cluster': None, 'batchAccount': 'abatchaccountnameof24chr',
                    'batchResourceGroup': 'a-resource-group-with-a-rather-long-name',
                    'batchEndpoint': 'https://abatchaccountnameof24chr.westeurope.batch.azure.com',
                    'poolAllocationMode': 'UserSubscription', 'poolPrefix': 'batchai'},
}
POOLS = [{'cluster': 'idle-cluster-{}'.format(i), 'workspace': 'local', 'resourceGroup': 'batchai-local',
          'pool': 'batchai-local-idle-cluster-{}-0123456789'.format(i), 'nodes': 0, 'allocationState': 'steady'}
         for i in range(6)] + [
    {'cluster': 'gpu-training-cluster', 'workspace': 'local', 'resourceGroup': 'batchai-local', 'nodes': 4,
     'pool': 'batchai-local-gpu-training-cluster-0123456789', 'allocationState': 'resizing',
     'nextEvaluation': 'about 14:05 UTC'}]


def _results(scheduler):
    """What local start, status and stop return on this scheduler, with long values."""
    info = dict(COMMON, **SCHEDULERS[scheduler])
    pools = {'pools': POOLS} if scheduler == 'azure-batch' else {}
    return {'start': info, 'status': dict(info, running=True, targeted=True, **pools),
            'stopped status': dict(info, running=False, targeted=False, **pools),
            'stop': dict({'stopped': True, 'dataDir': LONG_DIR}, **pools)}


def test_local_tables_fit_100_columns_for_every_scheduler_and_keep_what_matters():
    for scheduler in SCHEDULERS:
        for command, result in _results(scheduler).items():
            table = _rendered(result)
            lines = table.splitlines()
            assert max(len(line) for line in lines) <= 100, (scheduler, command, '\n' + table)
            pool_rows = scheduler == 'azure-batch' and 'status' in command
            if not pool_rows:  # the data dir keeps its own name
                assert lines[2].rstrip().endswith('batchai-sweep/local'), table
            if command == 'start':
                assert scheduler in table and 'http://127.0.0.1:65535' in table, table
    status = _rendered(_results('azure-batch')['status']).splitlines()
    # One row per pool, those holding nodes first, each with its next evaluation; the account is said.
    assert status[0].split() == ['Running', 'Targeted', 'Runs', 'On', 'Cluster', 'Nodes', 'Next', 'Evaluation']
    assert status[2].split() == ['True', 'True', 'abatchaccountnameof24chr...', 'gpu-training-cluster', '4',
                                 'about', '14:05', 'UTC'], status
    assert [line.split() for line in status[3:]] == [['idle-cluster-{}'.format(i), '0'] for i in range(6)]
    assert 'gpu-a100' in _rendered(_results('slurm')['start'])
    stop = _rendered(_results('azure-batch')['stop'])
    assert 'gpu-training-cluster=4, idle-cluster-0=0 +5 more' in stop, stop


def test_a_short_local_table_is_not_cut():
    from azext_batchai_sweep._format import local_service_table_format
    row = local_service_table_format({'stopped': True, 'dataDir': '/tmp/x/local', 'pools': [
        {'cluster': 'c0', 'nodes': 0}, {'cluster': 'c1', 'nodes': 2}]})[0]
    assert list(row.items()) == [('Stopped', 'True'), ('Pools', 'c1=2, c0=0'), ('Data Dir', '/tmp/x/local')]
    status = local_service_table_format({'running': True, 'targeted': False, 'scheduler': 'azure-batch',
                                         'batchAccount': 'b', 'poolAllocationMode': 'BatchService', 'pools': []})
    assert [list(row.values()) for row in status] == [['True', 'False', 'b (BatchService)', 'none', '', '']]


def _rendered_status(result):
    from types import SimpleNamespace
    from knack.output import format_table
    from azext_batchai_sweep._format import sweep_status_table_format
    return format_table(SimpleNamespace(result=result, table_transformer=sweep_status_table_format,
                                        is_query_active=False))


def _run_job(name, decision, **parameters):
    return {'name': name, 'state': 'terminated', 'exitCode': None, 'startTime': None, 'durationSeconds': None,
            'parameters': parameters,
            'tuning': {'step': 7, 'latest': 0.61, 'best': 0.63, 'decision': 'stopped', 'reason': decision}}


def test_a_run_sweeps_status_table_fits_100_columns_by_cutting_the_decision_never_a_name():
    # A sweep's job names (the sweep's name and 16 hex digits), two parameters, a stopped job's decision in words: the
    # decision is cut, from its end, to what the other columns leave.
    decision = 'stopped: val_accuracy 0.6133 < median 0.8467 at epoch 7 (median rule)'
    for names in (('moons-0123456789abcdef',), ('moons-0123456789abcdef', 'moons-f00d'),
                  ('m-0123456789abcdef', 'mo-0123456789abcdef'), ('moons-0123456789abcdef', 'm-0123456789abcdef')):
        jobs = [_run_job(name, decision, lr=0.0123, units=64) for name in names]
        result = {'jobs': jobs, 'figures': {'metric': 'val_accuracy'}}
        table = _rendered_status(result)
        lines = table.splitlines()
        assert max(len(line) for line in lines) <= 100, '\n' + table
        for name in names:
            assert name in table  # a name is what --job takes: never cut
        assert 'stopped: val' in table and '...' in table  # the decision's start, and a mark of the cut


def test_a_status_table_that_fits_is_not_cut_nor_a_short_decision_that_cannot_make_it_fit():
    decision = 'stopped at epoch 7'
    table = _rendered_status({'jobs': [_run_job('a', decision, x=1)], 'figures': {'metric': 'acc'}})
    assert decision in table and '...' not in table
    # The README tour's shape: 31-character names and two long parameter names are wider than 100 columns whatever
    # the decision; a short one is kept whole rather than cut for nothing.
    wide = {'jobs': [_run_job('moons-adaptive-0123456789abcdef', 'ran to the end', LEARNING_RATE=0.05,
                              HIDDEN_UNITS=8)], 'figures': {'metric': 'val_accuracy'}}
    assert 'ran to the end' in _rendered_status(wide)
