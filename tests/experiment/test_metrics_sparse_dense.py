"""A block of a log is scanned one of two ways (core/outputs/metrics.py, MetricExtractor._matches): a sparse one (an
epoch line among step lines) keeps the rest of each matched line and looks for the metric's name there; a dense
one counts the name over the block. Either way a line's reading is its last match (line_matches), whatever the
mix of lines: these tests read logs of both shapes, with lines naming the metric twice where each way must notice,
against that rule applied line by line, and check which way each shape takes (the speed, docs/benchmarks.md).
"""
import math
import random
import re

import pytest
from hypothesis import given, settings, strategies as st

from azext_batchai_sweep.core.outputs import metrics as metrics_module
from azext_batchai_sweep.core.outputs.metrics import MetricExtractor, katib_pattern, last_match

NAME = 'val_accuracy'
STEP = 'step={0} loss=0.{1:04d} accuracy=0.{1:04d} lr=0.05\n'
EPOCH = 'epoch={0} loss=0.5 val_accuracy=0.{1:04d} lr=0.05\n'
# Lines that hold the name more than once: a second value (the line's reading is the last), the name again without
# a value (the first value stands), a longer name after it, and the name before its value without '='.
TWICE = ['epoch={0} val_accuracy=0.{1:04d} val_accuracy=9.{1:04d}\n',
         'epoch={0} val_accuracy=0.{1:04d} (val_accuracy: best so far)\n',
         'epoch={0} val_accuracy=0.{1:04d} best_val_accuracy=7.5 val_accuracy_top5=8.5\n',
         'val_accuracy: epoch={0} val_accuracy = -0.{1:04d}\n']


def make_log(shape, lines, twice_every, seed):
    rng = random.Random(seed)
    out = []
    for i in range(lines):
        if twice_every and i % twice_every == twice_every // 2:
            out.append(rng.choice(TWICE).format(i, rng.randrange(10000)))
        elif shape == 'dense' or i % 100 == 99:
            out.append(EPOCH.format(i, rng.randrange(10000)))
        else:
            out.append(STEP.format(i, rng.randrange(10000)))
    return ''.join(out)


def reading_by_line(text, reduce):
    """The rule itself: each line's last match, reduced (no block scanning at all)."""
    pattern = re.compile(katib_pattern(NAME))
    values = []
    for line in text.split('\n'):
        match = last_match(pattern, line)
        if match is not None:
            values.append(float(match.group('value')))
    if not values:
        return None
    return {'max': max(values), 'min': min(values), 'first': values[0], 'last': values[-1],
            'mean': sum(values) / len(values)}[reduce]


LOGS = [('sparse', 3000, 0), ('sparse', 3000, 250), ('sparse', 3000, 7), ('dense', 2000, 0), ('dense', 2000, 3),
        ('dense', 2000, 401)]


@pytest.mark.parametrize('shape,lines,twice_every', LOGS)
@pytest.mark.parametrize('reduce', ['max', 'min', 'mean', 'first', 'last'])
def test_both_ways_read_each_line_as_its_last_match(shape, lines, twice_every, reduce):
    text = make_log(shape, lines, twice_every, seed=lines + twice_every)
    data = text.encode('ascii')
    expected = reading_by_line(text, reduce)
    assert expected is not None
    if reduce == 'mean':
        expected = pytest.approx(expected, rel=1e-12)
    extractor = MetricExtractor(metric_name=NAME, reduce=reduce)
    for size in (len(data), 1 << 20, 65536, 4099):
        chunks = [data[i:i + size] for i in range(0, len(data), size)]
        assert extractor.extract_chunks(iter(chunks)) == expected, size
    assert extractor.extract_text(text) == expected  # as text (a non-ASCII log's way)


def test_a_block_sparse_at_its_start_and_dense_after_reads_every_line_by_the_rule():
    """Which way a block takes is judged by its first SPARSE_SAMPLE bytes; a block that changes shape after them
    (dense lines naming the metric twice) still reads by the rule."""
    text = make_log('sparse', 400, 0, seed=1) + make_log('dense', 600, 2, seed=2)
    assert len(text.split('\n', 400)[0]) < metrics_module.SPARSE_SAMPLE < len(text)
    for reduce in ('max', 'min', 'mean', 'last'):
        expected = reading_by_line(text, reduce)
        got = MetricExtractor(metric_name=NAME, reduce=reduce).extract_chunks(iter([text.encode('ascii')]))
        assert got == (pytest.approx(expected, rel=1e-12) if reduce == 'mean' else expected), reduce


class Recording:
    """A compiled pattern that records which findall the extractor called."""

    def __init__(self, pattern, calls, label):
        self.pattern, self.calls, self.label = pattern, calls, label

    def findall(self, *args):
        self.calls.append(self.label)
        return self.pattern.findall(*args)


@pytest.mark.parametrize('shape,way', [('sparse', 'rest kept'), ('dense', 'name counted')])
def test_a_sparse_block_keeps_each_matched_lines_rest_and_a_dense_one_counts_the_name(shape, way):
    data = make_log(shape, 3000, 0, seed=3).encode('ascii')
    extractor = MetricExtractor(metric_name=NAME, reduce='max')
    calls = []
    extractor.bytes_first_rest = Recording(extractor.bytes_first_rest, calls, 'rest kept')
    extractor.bytes_first = Recording(extractor.bytes_first, calls, 'name counted')
    assert extractor.extract_chunks(iter([data])) == reading_by_line(data.decode(), 'max')
    assert calls == [way]


# ---- the value read as a run of number characters (ASCII blocks), the exact syntax where the run is no number ----

NUMBERISH = ['0.5', '1e5', '1e', '.5', '5.', '-', '+.5e-3', '0.5-0.1', '1.2.3', '1e5e5', '--1', 'e5', '1E+', '.',
             '7', '1e400', '-1e400', '3.0e-2x', '0x10', '+-5', '2.5.', '00.1']


@pytest.mark.parametrize('value', NUMBERISH)
@pytest.mark.parametrize('shape', ['sparse', 'dense'])
def test_a_value_that_is_a_run_of_number_characters_reads_as_the_exact_syntax_reads_it(value, shape):
    """A line's value whatever follows its number (`1e`, `0.5-0.1`, `1e400`): the extractor reads what the exact
    pattern reads, line by line (an infinite value is no reading)."""
    text = make_log(shape, 600, 0, seed=5)
    lines = text.split('\n')
    lines[300] = 'epoch=300 val_accuracy={} loss=1'.format(value)
    lines[301] = 'epoch=301 val_accuracy=0.25 val_accuracy={}'.format(value)
    text = '\n'.join(lines)
    for reduce in ('max', 'min', 'last', 'first', 'mean'):
        expected = reading_by_line_finite(text, reduce)
        got = MetricExtractor(metric_name=NAME, reduce=reduce).extract_chunks(iter([text.encode('ascii')]))
        assert got == (pytest.approx(expected, rel=1e-12) if reduce == 'mean' else expected), (value, reduce)


def reading_by_line_finite(text, reduce):
    pattern = re.compile(katib_pattern(NAME))
    values = []
    for line in text.split('\n'):
        match = last_match(pattern, line)
        if match is not None and math.isfinite(float(match.group('value'))):
            values.append(float(match.group('value')))
    return {'max': max(values), 'min': min(values), 'first': values[0], 'last': values[-1],
            'mean': sum(values) / len(values)}[reduce]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet='0123456789.+-eE= _vlacury\t', max_size=30), min_size=1, max_size=40))
def test_any_mix_of_number_characters_reads_as_the_exact_syntax_line_by_line(tails):
    text = ''.join('step={} val_accuracy{}\n'.format(i, tail) for i, tail in enumerate(tails))
    values = []
    for line in text.split('\n'):
        match = last_match(re.compile(katib_pattern(NAME)), line)
        if match is not None and math.isfinite(float(match.group('value'))):
            values.append(float(match.group('value')))
    got = MetricExtractor(metric_name=NAME, reduce='max').extract_chunks(iter([text.encode('ascii')]))
    assert got == (max(values) if values else None)


# ---- which way a block takes: by its own first SPARSE_SAMPLE bytes, at most one name per SPARSE_BYTES is sparse ----

def line_of(size, value, name=NAME):
    """One line of exactly `size` bytes (its newline included) holding the metric once."""
    head = 'epoch=1 {}={} '.format(name, value)
    return head + 'x' * (size - len(head) - 1) + '\n'


def ways_taken(chunks, reduce='max'):
    extractor = MetricExtractor(metric_name=NAME, reduce=reduce)
    calls = []
    extractor.bytes_first_rest = Recording(extractor.bytes_first_rest, calls, 'rest kept')
    extractor.bytes_first = Recording(extractor.bytes_first, calls, 'name counted')
    return extractor.extract_chunks(iter([c.encode('ascii') for c in chunks])), calls


@pytest.mark.parametrize('names,way', [(1, 'rest kept'), (2, 'rest kept'), (3, 'name counted'),
                                       (4, 'name counted')])
def test_a_block_with_one_name_per_sparse_bytes_is_sparse_and_one_more_makes_it_dense(names, way):
    size = 2 * metrics_module.SPARSE_BYTES  # within the sample: the whole block is judged
    assert size <= metrics_module.SPARSE_SAMPLE
    sizes = [size // names] * (names - 1) + [size - (size // names) * (names - 1)]
    text = ''.join(line_of(s, '0.{}'.format(i + 1)) for i, s in enumerate(sizes))
    assert len(text) == size and text.count(NAME) == names
    assert ways_taken([text]) == (float('0.{}'.format(names)), [way])


def test_a_block_after_a_carried_line_is_judged_by_its_own_bytes_not_the_line_before_it():
    """The chunk's first line completes a line carried from the chunk before and is scanned alone; the chunk's
    other lines are a block from there: the names of that first line never count in the block's sample."""
    many = 'val_accuracy=0.1 ' * 2000 + '\n'  # the end of the carried line: 2,000 names
    sparse = ''.join(line_of(2000, '0.{}'.format(i + 2)) for i in range(10))
    assert ways_taken(['epoch=0 ', many + sparse]) == (0.9, ['name counted', 'rest kept'])


def test_a_dense_block_after_a_long_carried_line_stays_dense():
    """A block's sample is its own SPARSE_SAMPLE bytes, wherever it starts in its chunk (here 20 kB in)."""
    long_line = 'val_accuracy=0.05 ' + 'y' * 20000 + '\n'
    dense = ''.join(line_of(900, '0.{}'.format(i + 10)) for i in range(40))
    assert ways_taken(['epoch=0 ', long_line + dense]) == (0.49, ['rest kept', 'name counted'])


@pytest.mark.parametrize('form', TWICE)
@pytest.mark.parametrize('shape', ['sparse', 'dense'])
def test_a_log_whose_every_metric_line_names_it_twice_reads_each_line_by_the_rule(form, shape):
    """No line naming the metric once: each way must still notice the lines that name it again."""
    rng = random.Random(TWICE.index(form))
    every = 100 if shape == 'sparse' else 1
    text = ''.join(form.format(i, rng.randrange(10000)) if i % every == every - 1
                   else STEP.format(i, rng.randrange(10000)) for i in range(1500))
    for reduce in ('max', 'min', 'mean', 'first', 'last'):
        expected = reading_by_line(text, reduce)
        got = MetricExtractor(metric_name=NAME, reduce=reduce).extract_chunks(iter([text.encode('ascii')]))
        assert got == (pytest.approx(expected, rel=1e-12) if reduce == 'mean' else expected), reduce


class RecordingAll(Recording):
    def finditer(self, *args):
        self.calls.append('by line')
        return self.pattern.finditer(*args)


@pytest.mark.parametrize('chunks,calls', [
    # a carried line naming the metric 2,000 times (read again, by the exact pattern), then a dense block
    (['epoch=0 ', 'val_accuracy=0.1 ' * 2000 + '\n' + STEP.format(1, 5) + EPOCH.format(2, 7) * 200],
     ['name counted', 'exact', 'by line', 'name counted']),
    # lines naming the metric again without a value: counted again by the exact pattern, never read line by line
    ([EPOCH.format(2, 7) * 100 + TWICE[1].format(3, 8) * 100], ['name counted', 'exact']),
    # a dense block, then a line cut by the chunk's end: its name is no part of the block
    ([EPOCH.format(2, 7) * 200 + 'val_accuracy=0.3', '\n'], ['name counted', 'name counted']),
])
def test_a_dense_block_whose_lines_each_hold_one_value_is_read_in_one_pass(chunks, calls):
    """The name's count over the block (not before its start nor past its end) equals its lines with a value: the
    block is not read again by the exact pattern, the cost that makes a dense block cheap; where a line names it
    again without a second value, the exact pattern's count says so, and the block is not read line by line."""
    extractor = MetricExtractor(metric_name=NAME, reduce='max')
    got = []
    extractor.bytes_first_rest = RecordingAll(extractor.bytes_first_rest, got, 'rest kept')
    extractor.bytes_first = RecordingAll(extractor.bytes_first, got, 'name counted')
    extractor.bytes_pattern = RecordingAll(extractor.bytes_pattern, got, 'exact')
    text = ''.join(chunks)
    assert extractor.extract_chunks(iter([c.encode('ascii') for c in chunks])) == reading_by_line(text, 'max')
    assert got == calls


@pytest.mark.parametrize('pos,endpos,values', [(0, None, [1.0, 2.0, 3.0]), (4, None, [2.0, 3.0]),
                                               (0, 8, [1.0, 2.0]), (4, 8, [2.0])])
@pytest.mark.parametrize('how', ['regex', 'name'])
def test_the_values_of_a_blocks_lines_from_pos_to_endpos_only(pos, endpos, values, how):
    """_matches' region (whole lines of a block scanned in place), the same for a regex and a metric name."""
    extractor = MetricExtractor(regex=r'^a=(\d+)') if how == 'regex' else MetricExtractor(metric_name='a')
    text = 'a=1\na=2\na=3\n'
    assert extractor._matches(text, pos, endpos) == values  # pylint: disable=protected-access
    if how == 'name':
        assert extractor._matches(text.encode('ascii'), pos, endpos) == values  # pylint: disable=protected-access


# ---- a log read from its end (reduce last): extract_last_backwards ----

def read_backwards(text, extractor=None):
    data = text.encode('utf-8')
    extractor = extractor or MetricExtractor(metric_name=NAME)
    return extractor.extract_last_backwards(lambda start, end: data[start:end], len(data))


def test_a_first_line_cut_one_byte_from_the_start_of_the_file_is_read_whole():
    """The first window starts at byte 1: the line it cuts is completed by the byte before it."""
    first = 'val_accuracy=15\n'
    for size in (metrics_module.TAIL_WINDOW + 1, metrics_module.TAIL_WINDOW + 2, metrics_module.TAIL_WINDOW):
        text = first + 'x' * (size - len(first) - 1) + '\n'
        assert len(text) == size
        assert read_backwards(text) == 15.0, size


def test_a_log_with_other_characters_read_from_its_end_keeps_the_longer_name_rule():
    """A window with a non-ASCII byte is decoded (a letter like é is part of a name), an ASCII one is read as
    bytes: `éval_accuracy=3` is another metric, whichever way."""
    assert read_backwards('val_accuracy=1\néval_accuracy=3\n') == 1.0
    assert read_backwards('val_accuracy=1\nval_accuracy=2 loss=0.5\n') == 2.0
    assert read_backwards('é val_accuracy=1\nxval_accuracy=2\n') == 1.0
