"""MetricExtractor: regex and Katib formats, reductions, and streaming with bounded memory."""
import io
import math

import pytest

from azext_batchai_sweep.core.outputs import metrics as metrics_module
from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.outputs.metrics import MAX_LINE, MetricExtractor, sort_rows, write_metrics_csv

LOG = '''training: learning_rate=0.05 hidden_units=8 epochs=3
epoch=1 loss=0.9000 accuracy=0.5000 val_accuracy=0.4000
epoch=2 loss=0.5000 accuracy=0.7000 val_accuracy=0.8000
epoch=3 loss=0.3000 accuracy=0.9000 val_accuracy=0.6000
'''


@pytest.mark.parametrize('reduce, expected', [
    ('last', 0.6), ('first', 0.4), ('min', 0.4), ('max', 0.8), ('mean', 0.6),
])
def test_katib_format_reductions(reduce, expected):
    assert MetricExtractor(metric_name='val_accuracy', reduce=reduce).extract_text(LOG) == pytest.approx(expected)


def test_katib_name_does_not_match_a_longer_name():
    # 'accuracy' must not pick up 'val_accuracy=...'
    assert MetricExtractor(metric_name='accuracy', reduce='max').extract_text(LOG) == pytest.approx(0.9)


def test_regex_first_group_and_named_value_group():
    assert MetricExtractor(regex=r'loss=(\d+\.\d+)', reduce='min').extract_text(LOG) == pytest.approx(0.3)
    extractor = MetricExtractor(regex=r'(epoch)=\d+ loss=(?P<value>[\d.]+)', reduce='first')
    assert extractor.extract_text(LOG) == pytest.approx(0.9)


def test_scientific_and_signed_numbers():
    text = 'lr=1e-4\nlr=-2.5E+3\nlr=.5\n'
    assert MetricExtractor(metric_name='lr', reduce='min').extract_text(text) == -2500.0
    assert MetricExtractor(metric_name='lr', reduce='max').extract_text(text) == 0.5


def test_no_match_is_none_and_non_finite_values_are_ignored():
    assert MetricExtractor(metric_name='missing').extract_text(LOG) is None
    extractor = MetricExtractor(regex=r'loss=(\S+)', reduce='max')
    assert extractor.extract_text('loss=nan\nloss=inf\nloss=oops\nloss=2\n') == 2.0
    assert extractor.extract_text('loss=inf\n') is None


@pytest.mark.parametrize('kwargs, where', [
    ({'regex': 'loss=(['}, 'regex'),
    ({'regex': r'loss=\d+'}, 'regex'),
    ({}, 'metric'),
    ({'metric_name': 'loss', 'reduce': 'median'}, 'reduce'),
])
def test_invalid_specs_raise_spec_error(kwargs, where):
    with pytest.raises(SpecError) as info:
        MetricExtractor(**kwargs)
    assert info.value.path == where


def test_chunks_split_lines_and_multibyte_characters():
    data = ('é metric=1\n' * 3 + 'naïve metric=42.5\nno newline at end metric=7').encode('utf-8')
    # 1-byte chunks cut every line and every multi-byte character in two.
    chunks = (data[i:i + 1] for i in range(len(data)))
    assert MetricExtractor(metric_name='metric', reduce='max').extract_chunks(chunks) == 42.5
    assert MetricExtractor(metric_name='metric', reduce='last').extract_chunks([data]) == 7.0


def test_streaming_reads_chunk_by_chunk_with_bounded_memory():
    """A 5 MB log is consumed from a generator one 64 KiB chunk at a time, never joined: what is scanned at once is
    at most one chunk plus the partial line carried over from the chunk before."""
    line = b'step=1 loss=0.5 ' + b'x' * 80 + b'\n'
    count = 5 * 1024 * 1024 // len(line)
    data = line * count + b'loss=0.125\n'
    pulled = []

    def chunks():
        for start in range(0, len(data), 64 * 1024):
            pulled.append(start)
            yield data[start:start + 64 * 1024]

    extractor = MetricExtractor(metric_name='loss', reduce='min')
    original_scan = extractor._scan_bytes  # pylint: disable=protected-access
    longest = [0]

    def scan(buffer, start, end, reduction, encoding):
        assert len(buffer) <= 64 * 1024 + len(line)  # a chunk, or a carried-over line: nothing joined
        longest[0] = max(longest[0], end - start)
        original_scan(buffer, start, end, reduction, encoding)

    extractor._scan_bytes = scan  # pylint: disable=protected-access
    assert extractor.extract_chunks(chunks()) == 0.125
    assert len(pulled) == math.ceil(len(data) / (64 * 1024))
    assert 0 < longest[0] <= 64 * 1024 + len(line)


def test_a_line_without_newline_longer_than_the_bound_is_scanned_in_pieces():
    data = b'metric=3 ' + b'y' * (MAX_LINE + 10)
    chunks = (data[i:i + 65536] for i in range(0, len(data), 65536))
    assert MetricExtractor(metric_name='metric').extract_chunks(chunks) == 3.0


def test_sort_rows_best_first_none_last_and_top():
    rows = [{'name': 'a', 'metric': None}, {'name': 'b', 'metric': 0.5}, {'name': 'c', 'metric': 0.9},
            {'name': 'd', 'metric': 0.0}]
    assert [r['name'] for r in sort_rows(rows, 'max')] == ['c', 'b', 'd', 'a']
    assert [r['name'] for r in sort_rows(rows, 'min', top=2)] == ['d', 'b']
    with pytest.raises(SpecError):
        sort_rows(rows, 'best')


def test_csv_has_one_column_per_parameter():
    rows = [{'name': 'j1', 'state': 'succeeded', 'metric': 0.5, 'parameters': {'LR': 0.1, 'D': {'K': 1}}},
            {'name': 'j2', 'state': 'failed', 'metric': None, 'parameters': {'LR': 1}}]
    out = io.StringIO()
    write_metrics_csv(rows, out, metric_column='val_accuracy')
    assert out.getvalue().splitlines() == [
        'name,state,val_accuracy,D,LR',
        'j1,succeeded,0.5,"{""K"": 1}",0.1',
        'j2,failed,,,1',
    ]


def test_first_stops_reading_at_the_first_block_with_the_metric():
    data = b'noise\n' * 20000 + b'acc=0.25\n' + b'acc=0.75\n' * 200000
    pulled = []

    def chunks():
        for start in range(0, len(data), 64 * 1024):
            pulled.append(start)
            yield data[start:start + 64 * 1024]

    assert MetricExtractor(metric_name='acc', reduce='first').extract_chunks(chunks()) == 0.25
    assert len(pulled) < 5  # of about 30: the rest of the log is never downloaded


@pytest.mark.parametrize('reduce, expected', [('last', 2.0), ('first', 7.0), ('min', 1.0), ('max', 9.0),
                                              ('mean', 4.5)])
def test_block_scan_keeps_line_semantics(reduce, expected):
    # A match may not span lines (`\s` would cross the newline between "value:" and "99"); ^ anchors at each line.
    text = ('value: 7\nvalue:\n99\nxvalue: 100\nvalue: 3\nvalue: 9\nvalue: 1\nvalue: 5\nvalue: 2\n' * 3)
    chunks = [text.encode()[i:i + 7] for i in range(0, len(text), 7)]
    extractor = MetricExtractor(regex=r'^value:\s*(\d+)', reduce=reduce)
    assert extractor.extract_chunks(iter(chunks)) == expected
    assert extractor.extract_text(text) == expected


@pytest.mark.parametrize('chunk', [5, 64, 65536])
def test_last_and_first_skip_lines_without_the_metric_at_a_block_edge(chunk):
    text = 'start\nloss=9 noise\n' + 'noise\n' * 50 + 'loss=4\nloss=3 x\ntrailing noise\n' + 'more\n' * 50
    data = text.encode()
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)]
    assert MetricExtractor(metric_name='loss', reduce='last').extract_chunks(iter(pieces)) == 3.0
    assert MetricExtractor(metric_name='loss', reduce='first').extract_chunks(iter(pieces)) == 9.0
    assert MetricExtractor(regex=r'loss=(\d+)$', reduce='last').extract_chunks(iter(pieces)) == 4.0


def _reader(data, reads):
    def read_range(start, end):
        reads.append(end - start)
        return data[start:end]
    return read_range


@pytest.mark.parametrize('window,window_max', [(7, 7), (7, 500), (64, 64), (64, 4096), (1000, 1000),
                                               (256 * 1024, 1024 * 1024)])
@pytest.mark.parametrize('seed', range(12))
def test_reading_backwards_gives_the_stream_answer(monkeypatch, window, window_max, seed):
    import random
    monkeypatch.setattr(metrics_module, 'TAIL_WINDOW', window)
    monkeypatch.setattr(metrics_module, 'TAIL_WINDOW_MAX', window_max)
    rng = random.Random(seed)
    lines = []
    for _ in range(rng.randrange(0, 300)):
        kind = rng.random()
        if kind < 0.1:
            lines.append('loss={:.3f} é'.format(rng.random()))  # a multi-byte character near the value
        elif kind < 0.15:
            lines.append('xloss=5 val_loss=7')  # longer names never match `loss`
        else:
            lines.append('noise ' * rng.randrange(0, 40))
    data = ('\n'.join(lines) + ('\n' if rng.random() < 0.5 else '')).encode()
    for extractor in (MetricExtractor(metric_name='loss'), MetricExtractor(regex=r'^loss=([\d.]+)')):
        expected = extractor.extract_chunks(iter([data[i:i + 100] for i in range(0, len(data), 100)]))
        assert extractor.extract_last_backwards(_reader(data, []), len(data)) == expected


def test_reading_backwards_reads_one_window_of_a_log_that_ends_with_its_metric():
    data = b'epoch=1 val_accuracy=0.5\n' * 200000 + b'epoch=2 val_accuracy=0.75\n'  # 5 MB
    reads = []
    assert MetricExtractor(metric_name='val_accuracy').extract_last_backwards(_reader(data, reads), len(data)) == 0.75
    assert reads == [metrics_module.TAIL_WINDOW]


def test_reading_backwards_grows_its_window_up_to_the_cap_when_the_metric_is_far_from_the_end():
    first, cap = metrics_module.TAIL_WINDOW, metrics_module.TAIL_WINDOW_MAX
    data = b'val_accuracy=0.5\n' + b'progress ......................\n' * 200000  # 6.4 MB, the metric first
    reads = []
    assert MetricExtractor(metric_name='val_accuracy').extract_last_backwards(_reader(data, reads), len(data)) == 0.5
    assert reads[:3] == [first, first * 4, first * 16] and max(reads) == cap
    assert sum(reads) == len(data)  # every byte read once, none twice
    assert len(reads) < len(data) / cap + 5  # far fewer requests than with the first window throughout


@pytest.mark.parametrize('seed', range(40))
def test_scanning_bytes_in_place_finds_what_scanning_text_finds(seed):
    """The ASCII fast path (bytes, in place) against the text path on the same log, for every reduce, with lines
    cut anywhere by chunk edges and non-ASCII bytes (a name right after 'é' or '→') in some of the chunks."""
    import random
    rng = random.Random(seed)
    pieces = ['val_loss={:.4f}', 'loss={:.4f}', 'xloss=9', 'loss = {:.2e}', 'éloss=7', '→loss=8', 'a.loss=5',
              'step {:.1f} ' + 'x' * 50, 'loss=1e999', '']
    lines = []
    for _ in range(rng.randrange(1, 400)):
        line = ' '.join(rng.choice(pieces).format(rng.random()) for _ in range(rng.randrange(0, 4)))
        if rng.random() < 0.02:
            line = 'loss=0.5 ' + 'y' * rng.randrange(1000, 3000)  # a long line across several chunks
        lines.append(line)
    data = ('\n'.join(lines) + ('\n' if rng.random() < 0.5 else '')).encode()
    if rng.random() < 0.5:
        data = data.replace('é'.encode(), b'e').replace('→'.encode(), b'-')  # all ASCII: only the fast path
    size = rng.choice([1, 7, 100, 4096, 1 << 20])
    chunks = [data[i:i + size] for i in range(0, len(data), size)]
    for reduce in ('last', 'first', 'min', 'max', 'mean'):
        extractor = MetricExtractor(metric_name='loss', reduce=reduce)
        expected = extractor.extract_text(data.decode())
        got = extractor.extract_chunks(iter(chunks))
        assert got == pytest.approx(expected) if expected is not None else got is None, (reduce, size)
