"""metrics.py's rules that mutation testing found unchecked: the ranking's defaults and ties, the CSV's cells, a log
read from its end that never holds the metric, and get_metrics' rows against the local service (filters, progress,
the files found, reductions read as a stream, a job whose read fails)."""
import io
import logging

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.outputs import metrics as metrics_module
from azext_batchai_sweep.core.outputs.metrics import MetricExtractor, get_metrics, sort_rows, write_metrics_csv
from azext_batchai_sweep.core.service.submit import submit_jobs

from .service_helpers import new_experiment, quick_retry, sweep_plan, wait_all


def _row(name, metric, state='succeeded'):
    return {'name': name, 'metric': metric, 'state': state}


def test_rows_rank_highest_first_by_default_and_ties_by_name_whatever_their_order():
    rows = [_row('c', 1.0), _row('b', 2.0), _row('z', 2.0), _row('a', 2.0), _row('d', None)]
    assert [row['name'] for row in sort_rows(rows)] == ['a', 'b', 'z', 'c', 'd']
    assert [row['name'] for row in sort_rows(list(reversed(rows)), goal='min')] == ['c', 'a', 'b', 'z', 'd']


@pytest.mark.parametrize('goal', ['maximize', 'MAX', ''])
def test_an_unknown_goal_is_refused_naming_it(goal):
    with pytest.raises(SpecError) as refused:
        sort_rows([_row('a', 1.0)], goal=goal)
    assert str(refused.value) == "goal: goal must be max or min, not {!r}".format(goal)
    assert refused.value.path == 'goal'


def test_the_csv_writes_parameters_as_given_and_an_empty_cell_for_a_job_that_broke_nothing():
    rows = [dict(_row('j1', 0.5), parameters={'act': 'relu', 'lr': 0.1, 'n': 3, 'layers': [1, 2], 'opt': None},
                 infeasible='memory'),
            dict(_row('j2', None), parameters={'act': 'tanh', 'lr': 1e-05, 'n': 4, 'layers': [], 'opt': {'m': 1}})]
    out = io.StringIO()
    write_metrics_csv(rows, out)
    assert out.getvalue().splitlines() == [
        'name,state,metric,infeasible,act,layers,lr,n,opt',
        'j1,succeeded,0.5,memory,relu,"[1, 2]",0.1,3,',
        'j2,succeeded,,,tanh,[],1e-05,4,"{""m"": 1}"']


def test_a_log_read_from_its_end_without_the_metric_gives_none():
    log = b'epoch 1\nnothing here\n' * 50000  # more than one window
    reads = []

    def read_range(start, end):
        reads.append((start, end))
        return log[start:end]
    assert MetricExtractor(metric_name='loss').extract_last_backwards(read_range, len(log)) is None
    assert reads[-1][0] == 0  # read back to the start, once
    assert len(reads) == len(set(reads))


def test_a_log_read_from_its_end_reads_its_last_line_as_it_ends():
    """An anchored regex sees the last line's end where the file ends (nothing carried onto it)."""
    log = b'loss=5\n' * 10 + b'loss=3'
    extractor = MetricExtractor(regex=r'^loss=(\d+)$')
    assert extractor.extract_last_backwards(lambda start, end: log[start:end], len(log)) == 3.0
    with pytest.raises(ValueError, match='^extract_last_backwards is for reduce last$'):
        MetricExtractor(regex=r'loss=(\d+)', reduce='max').extract_last_backwards(lambda s, e: b'', 0)


# ---- get_metrics on the local service ---------------------------------------------------------------------------

LOSSES = 'echo "loss=$((PARAM_X + 5))"; echo "loss=$((PARAM_X * 3))"; exit $((PARAM_X % 2))'


@pytest.fixture(scope='module')
def two_sweeps(request):
    """An experiment with a 6-job sweep whose odd jobs fail (each job reports loss X+5 then 3X) and another sweep."""
    client, svc = request.getfixturevalue('batchai_client'), request.getfixturevalue('local_service')
    experiment = new_experiment(client, svc)
    plan = sweep_plan(svc, 'losses', 6, LOSSES)
    submit_jobs(client, svc.resource_group, svc.workspace, experiment, plan, retry=quick_retry())
    submit_jobs(client, svc.resource_group, svc.workspace, experiment, sweep_plan(svc, 'other', 1, 'echo loss=-99'),
                retry=quick_retry())
    wait_all(client, svc, experiment, 'losses')
    wait_all(client, svc, experiment, 'other')
    return client, svc, experiment, [name for name, _ in plan]


def _metrics(two_sweeps, extractor, **options):
    client, svc, experiment, _ = two_sweeps
    return get_metrics(client, svc.resource_group, svc.workspace, experiment, extractor, retry=quick_retry(),
                       **options)


@pytest.mark.service
@pytest.mark.parametrize('reduce, value', [('max', lambda x: max(x + 5, 3 * x)), ('first', lambda x: x + 5.0),
                                           ('mean', lambda x: (x + 5 + 3 * x) / 2.0)])
def test_every_reduction_reads_each_jobs_whole_log(two_sweeps, reduce, value):
    rows = _metrics(two_sweeps, MetricExtractor(metric_name='loss', reduce=reduce), sweep_name='losses', goal='min')
    assert sorted((row['parameters']['X'], row['metric']) for row in rows) == [(x, value(x)) for x in range(6)]
    assert all(row['error'] is None for row in rows)


@pytest.mark.service
def test_only_the_named_sweep_state_and_jobs_are_read_with_progress_and_the_files_found(two_sweeps):
    names = two_sweeps[3]
    progress, stats = [], {}
    rows = _metrics(two_sweeps, MetricExtractor(metric_name='loss'), sweep_name='losses', progress=lambda *a:
                    progress.append(a), stats=stats)
    assert sorted(row['name'] for row in rows) == names  # not the other sweep's job
    assert sorted(progress) == [(done, 6) for done in range(1, 7)] and stats == {'filesFound': 6}
    every = _metrics(two_sweeps, MetricExtractor(metric_name='loss'), goal='min')
    assert every[0]['metric'] == -99.0 and len(every) == 7
    failed = _metrics(two_sweeps, MetricExtractor(metric_name='loss'), sweep_name='losses', state='failed')
    assert sorted(row['name'] for row in failed) == names[1::2]
    two = _metrics(two_sweeps, MetricExtractor(metric_name='loss'), sweep_name='losses', job_names=names[:2])
    assert sorted(row['name'] for row in two) == names[:2]
    stats = {}
    missing = _metrics(two_sweeps, MetricExtractor(metric_name='loss'), sweep_name='losses', file='nope.txt',
                       stats=stats)
    assert stats == {'filesFound': 0} and [row['metric'] for row in missing] == [None] * 6


@pytest.mark.service
def test_a_job_whose_log_cannot_be_read_keeps_its_row_with_the_error_and_a_warning(two_sweeps, monkeypatch,
                                                                                  caplog):
    """The download of one job's log fails (a stand-in for a dropped connection: the service cannot be made to
    drop one job's reads); its row stays, with the error, after the jobs that were read."""
    names = two_sweeps[3]
    real = metrics_module.iter_url_chunks

    def chunks(url, **options):
        if names[2] in url:
            raise ConnectionResetError('connection reset by peer')
        return real(url, **options)
    monkeypatch.setattr(metrics_module, 'iter_url_chunks', chunks)
    with caplog.at_level(logging.WARNING, logger=metrics_module.__name__):
        rows = _metrics(two_sweeps, MetricExtractor(metric_name='loss', reduce='max'), sweep_name='losses')
    broken = [row for row in rows if row['name'] == names[2]]
    assert broken == [dict(broken[0], metric=None)] and 'connection reset by peer' in broken[0]['error']
    assert all(row['error'] is None for row in rows if row['name'] != names[2])
    assert ['job {}: metric not read: '.format(names[2]) in r.getMessage() for r in caplog.records] == [True]
    assert 'connection reset by peer' in caplog.records[0].getMessage()
