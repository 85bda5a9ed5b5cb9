"""metrics.py's rules that mutation testing found unchecked: the ranking's defaults and ties, the CSV's cells, a log
read from its end that never holds the metric, and get_metrics' rows against the local service (filters, progress,
the files found, reductions read as a stream, a job whose read fails)."""
import io
import logging
import re

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.outputs import metrics as metrics_module
from azext_batchai_sweep.core.outputs.metrics import (MetricExtractor, get_metrics, last_match, line_matches, sort_rows,
                                                      write_metrics_csv)
from azext_batchai_sweep.core.service.retry import describe_error
from azext_batchai_sweep.core.service.submit import submit_jobs

from .service_helpers import new_experiment, quick_retry, sweep_plan, wait_all


def _re_error(regex):
    try:
        re.compile(regex)
    except re.error as exc:
        return str(exc)  # its wording is Python's (it may change between releases)
    raise AssertionError(regex)


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


@pytest.mark.parametrize('options, where, words', [
    (dict(metric_name='loss', reduce='median'), 'reduce',
     "reduce must be one of last, first, min, max, mean, not 'median'"),
    (dict(regex='loss=(\\d', reduce='LAST'), 'reduce', "reduce must be one of last, first, min, max, mean, not 'LAST'"),
    (dict(regex='loss=(\\d'), 'regex', "invalid regular expression 'loss=(\\\\d': {}".format(_re_error('loss=(\\d'))),
    (dict(regex=r'loss=\d'), 'regex',
     "the regular expression 'loss=\\\\d' needs a capture group (or a group named value) around the number"),
    (dict(), 'metric', 'give a regular expression or a metric name'),
])
def test_an_extractor_that_cannot_read_a_metric_is_refused_naming_its_field(options, where, words):
    with pytest.raises(SpecError) as refused:
        MetricExtractor(**options)
    assert (refused.value.path, refused.value.message) == (where, words)


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


# ---- a log read in chunks, or from its end in windows: the same reading as the whole text -----------------------

# Lines of every kind: the metric once, twice, spaced, in a longer name, after a non-ASCII letter (\w for text, not
# for bytes: the reading must be the text's), between lines without it, and a long line without it.
LOG_LINES = ['epoch=1 loss=0.5', 'noise', 'loss=2 loss=3', 'val_loss=9', 'éloss=4', '42 loss=8', 'loss = 6',
             'x' * 40, 'acc=1 loss=-1e-3', '', 'loss=7']
EXTRACTORS = [dict(metric_name='loss'), dict(regex=r'loss=(\S+)'), dict(regex=r'^loss=(\d+)$'),
              dict(regex=r'^(\d+)')]
EXTRACTOR_IDS = ['name', 'regex', 'anchored', 'line-start']


def _chunkings(data):
    """Every split into two, every fixed chunk size, and a few fixed irregular ones."""
    yield [data]
    for cut in range(1, len(data)):
        yield [data[:cut], data[cut:]]
    for size in range(1, 20):
        yield [data[i:i + size] for i in range(0, len(data), size)]
    yield [data[:1], data[1:3], data[3:40], data[40:41], data[41:]]


@pytest.mark.parametrize('options', EXTRACTORS, ids=EXTRACTOR_IDS)
@pytest.mark.parametrize('reduce', ['last', 'first', 'min', 'max', 'mean'])
def test_a_log_in_any_chunks_reads_as_its_whole_text(monkeypatch, options, reduce):
    """Lines up to MAX_LINE (here 16 bytes) are read whole however the chunks cut them; a longer line without the
    metric changes nothing."""
    monkeypatch.setattr(metrics_module, 'MAX_LINE', 16)
    lines = [line for line in LOG_LINES if len(line.encode()) <= 16 or 'loss' not in line]
    for ending in ('\n', ''):
        text = '\n'.join(lines) + ending
        extractor = MetricExtractor(reduce=reduce, **options)
        expected = extractor.extract_text(text)
        if reduce == 'mean':  # a mean summed in another order may differ in its last bit
            expected = pytest.approx(expected, rel=1e-12)
        for chunks in _chunkings(text.encode()):
            assert extractor.extract_chunks(iter(chunks)) == expected, chunks


@pytest.mark.parametrize('chunks', [
    [b' ' * 11 + b'loss=', b'7\n'],  # a partial line of exactly MAX_LINE bytes is kept whole
    [b' ' * 8, b'   loss=', b'7\n'],
    [b' ' * 8, b'   loss=', b'7'],
])
def test_a_line_of_exactly_max_line_bytes_is_read_whole(monkeypatch, chunks):
    monkeypatch.setattr(metrics_module, 'MAX_LINE', 16)
    for reduce in ('last', 'first', 'max'):
        assert MetricExtractor(metric_name='loss', reduce=reduce).extract_chunks(iter(chunks)) == 7.0


def test_a_first_reading_goes_past_a_long_line_without_the_metric(monkeypatch):
    monkeypatch.setattr(metrics_module, 'MAX_LINE', 16)
    chunks = [b'x' * 10, b'x' * 10, b'x' * 10, b'\nloss=3\nloss=4\n']
    assert MetricExtractor(metric_name='loss', reduce='first').extract_chunks(iter(chunks)) == 3.0


@pytest.mark.parametrize('chunks', [
    [b' ' * 10, b' ' * 10, b'loss=3\n'],  # the first 20 bytes are one piece, the rest the next
    [b' ' * 20, b'loss=3\n'],
    [b'loss=3' + b' ' * 20, b'\n'],  # a piece that starts with the metric
])
def test_a_line_longer_than_max_line_is_read_in_pieces_as_they_come(monkeypatch, chunks):
    monkeypatch.setattr(metrics_module, 'MAX_LINE', 16)
    for reduce in ('last', 'first', 'max'):
        assert MetricExtractor(metric_name='loss', reduce=reduce).extract_chunks(iter(chunks)) == 3.0


@pytest.mark.parametrize('options', EXTRACTORS, ids=EXTRACTOR_IDS)
def test_a_log_read_from_its_end_in_windows_reads_as_its_whole_text(monkeypatch, options):
    monkeypatch.setattr(metrics_module, 'TAIL_WINDOW', 3)
    monkeypatch.setattr(metrics_module, 'TAIL_WINDOW_MAX', 12)
    monkeypatch.setattr(metrics_module, 'MAX_LINE', 16)
    extractor = MetricExtractor(**options)
    lines = [line for line in LOG_LINES if len(line.encode()) <= 16]
    for first in range(len(lines)):  # every suffix of the log: the metric at every distance from the end
        for ending in ('\n', ''):
            data = ('\n'.join(lines[first:]) + ending).encode()
            expected = extractor.extract_text(data.decode())
            assert extractor.extract_last_backwards(lambda start, end, d=data: d[start:end], len(data)) == expected


@pytest.mark.parametrize('log, first', [
    ('\nloss=3\nloss=4\n', 3.0),  # the pattern's first match starts at the blank line (and spans it)
    ('\n\nloss=3\nloss=4', 3.0),
    ('loss=3\n\nloss=4\n', 3.0),
])
def test_a_first_reading_starts_at_the_first_line_holding_the_metric_after_blank_lines(log, first):
    """A regex that can match a line break (`\\s*` before the name) finds its first match at a blank line; the
    reading is still per line: the first line holding the metric, whatever lines come before it."""
    extractor = MetricExtractor(regex=r'\s*loss=(\d+)', reduce='first')
    assert extractor.extract_text(log) == first
    assert extractor.extract_chunks(iter([log.encode()])) == first
    assert MetricExtractor(regex=r'\s*loss=(\d+)').extract_text(log) == 4.0


@pytest.mark.parametrize('options', [dict(metric_name='loss'), dict(regex=r'loss=(\d+)')], ids=['name', 'regex'])
@pytest.mark.parametrize('reduce, value', [('first', 1.0), ('min', 1.0), ('max', 5.0), ('mean', 3.0), ('last', 5.0)])
def test_a_last_line_without_a_line_break_reads_as_its_last_match(options, reduce, value):
    # 'loss=1' once, then a last line naming it three times and no final line break: that line reads 5, as it
    # would with a line break after it
    for ending in ('', '\n'):
        log = 'loss=1\nloss=9 loss=2 loss=5' + ending
        extractor = MetricExtractor(reduce=reduce, **options)
        assert extractor.extract_text(log) == value
        assert extractor.extract_chunks(iter([log.encode()])) == value


def test_line_matches_reads_from_pos_to_endpos_and_a_line_as_its_last_match():
    pattern = re.compile(r'loss=(\d)', re.MULTILINE)
    text = 'loss=1 loss=2\nloss=3\nloss=4 loss=5'
    assert [m.group(1) for m in line_matches(pattern, text)] == ['2', '3', '5']
    assert [m.group(1) for m in line_matches(pattern, text, 7)] == ['2', '3', '5']
    assert [m.group(1) for m in line_matches(pattern, text, 14)] == ['3', '5']
    assert [m.group(1) for m in line_matches(pattern, text, 14, 27)] == ['3', '4']
    assert last_match(pattern, 'loss=1 loss=2').group(1) == '2' and last_match(pattern, 'nothing') is None


def test_an_empty_first_line_matched_by_a_regex_that_can_match_nothing_is_a_line_of_its_own():
    # `^(\d*)` matches the empty first line (no value) and each later line's number: the first reading is 5
    extractor = MetricExtractor(regex=r'^(\d*)', reduce='first')
    assert extractor.extract_text('\n5\n7') == 5.0
    assert MetricExtractor(regex=r'^(\d*)', reduce='mean').extract_text('\n5\n7') == 6.0


def test_a_one_byte_log_read_from_its_end():
    assert MetricExtractor(regex=r'(\d)').extract_last_backwards(lambda start, end: b'7'[start:end], 1) == 7.0


def test_a_log_in_another_encoding_or_with_broken_bytes_is_read_in_chunks_and_from_its_end():
    latin = 'précision=0.75\nautre\n'.encode('latin-1')
    extractor = MetricExtractor(metric_name='précision')
    assert extractor.extract_chunks(iter([latin]), encoding='latin-1') == 0.75
    assert extractor.extract_last_backwards(lambda start, end: latin[start:end], len(latin),
                                            encoding='latin-1') == 0.75
    broken = b'loss=1\n\xff\xfe garbage\nloss=2\n\xc3\n'
    for reduce in ('last', 'max', 'first'):
        expected = {'last': 2.0, 'max': 2.0, 'first': 1.0}[reduce]
        assert MetricExtractor(metric_name='loss', reduce=reduce).extract_chunks(iter([broken])) == expected
        assert MetricExtractor(regex=r'loss=(\d)', reduce=reduce).extract_chunks(iter([broken])) == expected
    assert MetricExtractor(metric_name='loss').extract_last_backwards(lambda s, e: broken[s:e], len(broken)) == 2.0


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
    assert [r.getMessage() for r in caplog.records] == ['job {}: metric not read: {}'.format(
        names[2], describe_error(ConnectionResetError('connection reset by peer')))]


@pytest.mark.parametrize('regex', [r'(\d*)$', r'([\d.]*)$', r'(?P<value>\d*\.?\d*)$'])
def test_a_regex_for_the_number_ending_each_line_reads_it_though_re_finds_an_empty_match_after_it(regex):
    # Python's re finds `(\d*)$` twice on the line `5`: `5`, then the empty match at the line's end. The line
    # reads 5 (the empty match never replaces a line's value), read whole, in chunks, from its end and by `sweep run`
    log = 'epoch one\n5\nloss: 7\n\n6\n'
    expected = {'last': 6.0, 'first': 5.0, 'min': 5.0, 'max': 7.0, 'mean': 6.0}
    for reduce, value in expected.items():
        extractor = MetricExtractor(regex=regex, reduce=reduce)
        assert extractor.extract_text(log) == value
        assert extractor.extract_chunks(iter([log.encode()])) == value
        assert extractor.extract_chunks(iter([bytes([b]) for b in log.encode()])) == value
    data = log.encode()
    assert MetricExtractor(regex=regex).extract_last_backwards(lambda start, end: data[start:end], len(data)) == 6.0
    pattern = re.compile(regex, re.MULTILINE)
    assert [m.group(1) for m in line_matches(pattern, log)] == ['', '5', '7', '', '6', '']
    assert last_match(pattern, 'loss: 7').group(1) == '7'
