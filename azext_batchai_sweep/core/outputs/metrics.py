"""Metric extraction from jobs' log files, streamed with bounded memory, and the ranking of a sweep's jobs.

A metric is found line by line, by a regular expression (its named group `value`, else its first group) or by
Katib's `name=value` log format given the metric's name; the values of one file are reduced to one number
(last, first, min, max or mean) as they stream by, so a log of any size needs only a chunk and a line in memory.
"""
import csv
import json
import logging
import math
import re
import threading

from ..floats import RunningMean
from .download import STDOUTERR, RangeNotSupported, find_output_file, iter_url_chunks, read_url_range
from ..errors import SpecError
from ..service.identity import sweep_jobs
from ..service.listing import parameters_of, state_of
from ..service.parallel import run_parallel
from ..service.retry import RetrySettings, describe_error

logger = logging.getLogger(__name__)

REDUCERS = ('last', 'first', 'min', 'max', 'mean')
GOALS = ('max', 'min')
# A "line" longer than this (a binary file, a progress bar without newlines) is scanned in pieces of this size.
MAX_LINE = 1024 * 1024
# With reduce `last`, a log is read backwards, one HTTP Range request per window, until a whole line holds the
# metric: the first window is small, since a finished log usually ends with its metric and a request's CPU grows
# with its size (64 kB: about 800 lines of a dense log); each next window is four times larger, up to the cap, so a
# log with its metric far from the end costs few requests.
TAIL_WINDOW = 64 * 1024
TAIL_WINDOW_MAX = 1024 * 1024
# A block with at most one value per this many bytes is sparse (MetricExtractor._matches): where keeping each
# matched line's rest costs less than counting the name over the whole block (measured on epoch and dense logs).
SPARSE_BYTES = 1024
SPARSE_SAMPLE = 16 * 1024
_NUMBER = r'[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?'


def katib_pattern(metric_name):
    r"""The regex of Katib's default metrics format, `name=value`, for one metric name (not a longer name).

    It starts with the name itself and only then looks behind it for a longer name: a pattern that starts with a
    literal lets `re` skip to the candidates with a fast substring search instead of trying every position, which
    is what makes a multi-megabyte log scan at close to download speed. `[ \t]` rather than `\s`: a match never
    spans two lines.
    """
    name = re.escape(metric_name)
    return r'{0}(?<![\w.-]{0})[ \t]*=[ \t]*(?P<value>{1})'.format(name, _NUMBER)


def katib_pattern_bytes(metric_name):
    """katib_pattern for ASCII bytes, or None for a name that is not ASCII.

    Used only on blocks that are all ASCII, where `\\w` means the same for bytes and for text, so both find the same
    values; a block with any other byte is decoded and scanned as text.
    """
    try:
        return katib_pattern(metric_name).encode('ascii')
    except UnicodeEncodeError:
        return None


def katib_pattern_loose_bytes(metric_name):
    """katib_pattern_bytes with the value as any run of the characters a number is made of (`[-+.0-9eE]`, from a
    sign, digit or point), or None for a name that is not ASCII.

    Where the run parses as a float it is exactly the number katib_pattern finds at that place (a float's text is
    such a run, and the exact syntax takes the longest number there); where it does not, the caller reads the block
    again with the exact pattern. Where the exact pattern finds no number, the run never parses.
    """
    try:
        name = re.escape(metric_name).encode('ascii')
    except UnicodeEncodeError:
        return None
    return name + rb'(?<![\w.-]' + name + rb')[ \t]*=[ \t]*(?P<value>[-+.\d][-+.\deE]*)'


def line_matches(pattern, text, pos=0, endpos=None):
    """The one reading of a metric per line, for every consumer (metrics, `sweep run`'s reports and its other
    objectives and constraints, the report's curves): each line holding the pattern gives its **last** match (a line
    ``acc=0.7 lat=1 lat=1e308`` reads lat 1e308), and a match that spans two lines does not count. An empty match
    never replaces a line's earlier match: `re` finds an empty match right after each match of a pattern like
    ``([0-9]*)$``, so the line ``5`` holds ``5`` and then ``''``, and reads 5. Linear in the text, however many
    matches a line holds."""
    newline = b'\n' if isinstance(text, bytes) else '\n'
    last, line_end = None, None  # the last match so far, and where its line ends
    for match in pattern.finditer(text, pos) if endpos is None else pattern.finditer(text, pos, endpos):
        if newline in match.group(0):
            continue
        if last is not None and match.start() > line_end:
            yield last  # a match on a later line: the line before is read
            last = None
        if last is None:
            found = text.find(newline, match.end())
            line_end = found if found >= 0 else len(text)
        elif match.end() == match.start():
            continue  # an empty match after another on its line: the line reads the other (at worst, empty too)
        last = match
    if last is not None:
        yield last


def last_match(pattern, line):
    """The match that is a line's reading of the pattern (line_matches), or None."""
    found = None
    for found in line_matches(pattern, line):
        pass
    return found


# A step (an epoch, an iteration) is a whole number from 0 to this: a billion steps is past any training loop, and
# keeps every count made of steps (job-steps used, full, saved) an exact, modest integer.
MAX_STEP = 10 ** 9


def as_step(text):
    """The step of a report as a float holding a whole number in [0, MAX_STEP], or None: `epoch=1e308`, `epoch=-1`,
    `epoch=2.5` and `epoch=nan` are not steps (the line is then no report of a step)."""
    value = as_metric(text)
    if value is None or value < 0 or value > MAX_STEP or not float(value).is_integer():
        return None
    return float(value)


def as_metric(text):
    """The float of a matched value, or None: nan and inf would poison sorting and JSON output."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


class _Reduction:
    """A running last/first/min/max/mean, so no list of values is ever kept."""

    def __init__(self, how):
        self.how = how
        self.value = None
        self.count = 0
        self.mean = RunningMean()  # never overflows: six reports of 1e308 have the mean 1e308

    def add(self, value):
        self.count += 1
        if self.how == 'mean':
            self.mean.add(value)
        if self.value is None or self.how == 'last':
            self.value = value
        elif self.how == 'min':
            self.value = min(self.value, value)
        elif self.how == 'max':
            self.value = max(self.value, value)

    def add_all(self, values):
        """Several values in log order; the loops run in C (min, max, fsum), not per value in Python."""
        if not values:
            return
        if self.how == 'min':
            self.add(min(values))
        elif self.how == 'max':
            self.add(max(values))
        elif self.how == 'first':
            self.add(values[0])
        elif self.how == 'last':
            self.add(values[-1])
        else:
            self.count += len(values)
            self.mean.add_all(values)
            self.value = values[-1]

    def result(self):
        if self.count == 0:
            return None
        return self.mean.result() if self.how == 'mean' else self.value


class MetricExtractor:
    """Finds one metric in a log: `regex` (a named group `value` or one capture group) or Katib's `metric_name=v`.

    Matching is per line: `^` and `$` match at line starts and ends, and a match never spans two lines. Logs are
    scanned a block of whole lines at a time with one regex pass, and `last` (the default) and `first` look only
    at the end or start of each block, so a log where every line holds the metric costs about what decoding it
    does (docs/benchmarks.md, "CLI"). With a metric name, a block that is all ASCII (most logs) is scanned as the
    bytes it arrived in, in place: no decoding, and no copy of the block.

    Raises SpecError for an invalid regex, a regex without a capture group, or an unknown reduce.
    """

    def __init__(self, regex=None, metric_name=None, reduce='last'):
        if reduce not in REDUCERS:
            raise SpecError('reduce must be one of {}, not {!r}'.format(', '.join(REDUCERS), reduce), path='reduce')
        if regex:
            try:
                self.pattern = re.compile(regex, re.MULTILINE)
            except re.error as exc:
                raise SpecError('invalid regular expression {!r}: {}'.format(regex, exc), path='regex') from exc
            if 'value' in self.pattern.groupindex:
                self.group = 'value'
            elif self.pattern.groups >= 1:
                self.group = 1
            else:
                raise SpecError('the regular expression {!r} needs a capture group (or a group named value) '
                                'around the number'.format(regex), path='regex')
        elif metric_name:
            self.pattern = re.compile(katib_pattern(metric_name), re.MULTILINE)
            self.group = 'value'
            bytes_pattern = katib_pattern_bytes(metric_name)
            self.bytes_pattern = re.compile(bytes_pattern, re.MULTILINE) if bytes_pattern else None
            # The first match of each line, the rest of the line skipped, or kept as a second group (see _matches).
            self.first = re.compile(katib_pattern(metric_name) + '[^\n]*', re.MULTILINE)
            self.first_rest = re.compile(katib_pattern(metric_name) + '([^\n]*)', re.MULTILINE)
            # For ASCII blocks, the value as a run of the characters a number is made of, which float() then reads
            # or refuses (see _katib_values): a fifth faster than the number's own syntax on a dense log.
            loose = katib_pattern_loose_bytes(metric_name) if bytes_pattern else None
            self.bytes_first = re.compile(loose + b'[^\n]*', re.MULTILINE) if loose else None
            self.bytes_first_rest = re.compile(loose + b'([^\n]*)', re.MULTILINE) if loose else None
            self.bytes_first_exact = re.compile(bytes_pattern + b'[^\n]*', re.MULTILINE) if loose else None
            self.bytes_first_rest_exact = re.compile(bytes_pattern + b'([^\n]*)', re.MULTILINE) if loose else None
            self.bytes_name = metric_name.encode('ascii') if bytes_pattern else None
        else:
            raise SpecError('give a regular expression or a metric name', path='metric')
        if regex:
            self.bytes_pattern = None
        self.reduce = reduce
        self.metric_name = metric_name

    def _matches(self, text, pos=0, endpos=None):
        """The metric values in `text` (whole lines; str, or ASCII bytes with a metric name), or in its lines from
        pos to endpos, in order; a match that spans a line break does not count."""
        if self.metric_name is not None:
            end = len(text) if endpos is None else endpos
            if isinstance(text, bytes):
                values = self._katib_values(text, pos, end, self.bytes_first, self.bytes_first_rest)
                if values is not None:
                    return values
                # A run of number characters that is no number (`1e`, `0.5-0.1`): read again by the exact syntax,
                # which takes the number at the run's start, or none.
                return self._katib_values(text, pos, end, self.bytes_first_exact, self.bytes_first_rest_exact)
            return self._katib_values(text, pos, end, self.first, self.first_rest)
        if pos or endpos is not None:
            text = text[pos:endpos]
        values = []
        for match in line_matches(self.pattern, text):
            value = as_metric(match.group(self.group))
            if value is not None:
                values.append(value)
        return values

    def _katib_values(self, text, pos, end, first_pattern, first_rest_pattern):
        """_matches for a metric name, or None when a value found by a loose pattern does not parse."""
        # Katib's pattern cannot span lines and has one group: findall and float run in C, and findall returns
        # that group's text (float takes bytes as well as str).
        as_bytes = isinstance(text, bytes)
        name = self.bytes_name if as_bytes else self.metric_name
        # The first value of each line (the pattern then skips the rest of its line) is a line's reading unless
        # the line holds the metric again. In a sparse block (an epoch line among step lines, by the name's count
        # in the block's first SPARSE_SAMPLE bytes) the rest of each matched line is kept and searched for the
        # name; in a dense one, where that would cost an object per line, the name's count over the block tells
        # (a line naming it twice has more names than lines). Both ways read the same values.
        sample = min(end, pos + SPARSE_SAMPLE)
        if text.count(name, pos, sample) * SPARSE_BYTES <= sample - pos:
            pairs = first_rest_pattern.findall(text, pos, end)
            found = [value for value, _ in pairs]
            again = any(name in rest for _, rest in pairs)
        else:
            found = first_pattern.findall(text, pos, end)
            again = text.count(name, pos, end) > len(found)
        if again:
            pattern = self.bytes_pattern if as_bytes else self.pattern
            if len(pattern.findall(text, pos, end)) > len(found):
                # A line holds the metric twice: its reading is its last value (line_matches), as everywhere.
                found = [m.group('value') for m in line_matches(pattern, text, pos, end)]
        try:
            values = list(map(float, found))
        except ValueError:
            return None
        return values if all(map(math.isfinite, values)) else [v for v in values if math.isfinite(v)]

    def _edge_value(self, block, from_end):
        """The last (or first) value of a block of whole lines, reading lines only until one holds the metric.

        Lines are found with rfind/find from the edge rather than by splitting the block: in a log where most lines
        hold the metric, one line is read per block.
        """
        newline = b'\n' if isinstance(block, bytes) else '\n'
        pattern = self.bytes_pattern if isinstance(block, bytes) else self.pattern
        first_match = pattern.search(block)  # one C-speed pass rules out most blocks of a sparse log
        if first_match is None:
            return None
        if not from_end:
            pos = block.rfind(newline, 0, first_match.start()) + 1  # the line of the first match (a candidate)
            while pos < len(block):
                end = block.find(newline, pos)
                end = len(block) if end < 0 else end
                values = self._matches(block[pos:end])
                if values:
                    return values[-1]  # the line's reading: its last value (line_matches)
                pos = end + 1
            return None
        end = len(block)
        while end > 0:
            start = block.rfind(newline, 0, end) + 1
            values = self._matches(block[start:end])
            if values:
                return values[-1]
            end = start - 1
        return None

    def _scan_block(self, block, reduction):
        if self.reduce in ('last', 'first'):
            value = self._edge_value(block, from_end=self.reduce == 'last')
            if value is not None:
                reduction.add(value)
        else:
            reduction.add_all(self._matches(block))

    def _scan_bytes(self, data, start, end, reduction, encoding):
        """Scan the whole lines data[start:end]: in place as bytes when they can be (ASCII, a metric name), else
        decoded. A region starts and ends at a line boundary, so a character is never cut in two, except in the
        pieces of a line longer than MAX_LINE, which are scanned as they come (as they always were)."""
        if self.bytes_pattern is not None and data.isascii():
            if self.reduce in ('last', 'first'):
                self._scan_block(data[start:end] if start or end != len(data) else data, reduction)
            else:
                reduction.add_all(self._matches(data, start, end))
        else:
            self._scan_block(data[start:end].decode(encoding, errors='replace'), reduction)

    def extract_chunks(self, chunks, encoding='utf-8'):
        """The reduced metric over an iterable of byte chunks, holding only one chunk and one partial line.

        Each chunk's whole lines are scanned where they lie (a line cut by the chunk's end is carried over to the
        next chunk), so the bytes are not copied or joined. `encoding` must write '\\n' as that byte (UTF-8, ASCII,
        Latin-1...). With reduce `first`, reading stops at the first chunk that holds the metric.
        """
        reduction = _Reduction(self.reduce)
        first = self.reduce == 'first'
        partial = b''
        for chunk in chunks:
            start = 0
            if partial:
                newline = chunk.find(b'\n')
                if newline < 0:
                    partial += chunk
                    if len(partial) > MAX_LINE:  # a "line" this long is scanned in pieces
                        self._scan_bytes(partial, 0, len(partial), reduction, encoding)
                        partial = b''
                        if first and reduction.count:
                            return reduction.result()
                    continue
                line = partial + chunk[:newline + 1]
                partial = b''
                self._scan_bytes(line, 0, len(line), reduction, encoding)
                if first and reduction.count:
                    return reduction.result()
                start = newline + 1
            cut = chunk.rfind(b'\n', start) + 1
            if cut > start:
                self._scan_bytes(chunk, start, cut, reduction, encoding)
                if first and reduction.count:
                    return reduction.result()
            else:
                cut = start
            partial = chunk[cut:]
            if len(partial) > MAX_LINE:
                self._scan_bytes(partial, 0, len(partial), reduction, encoding)
                partial = b''
                if first and reduction.count:
                    return reduction.result()
        if partial:
            self._scan_bytes(partial, 0, len(partial), reduction, encoding)
        return reduction.result()

    def extract_last_backwards(self, read_range, size, encoding='utf-8'):
        """The last value of a file of `size` bytes, reading it from its end: read_range(start, end) -> bytes.

        A finished job's log usually ends with its metric, so this reads one window where extract_chunks would
        read the whole file. A line cut by a window's start is completed by the window before it (it is carried
        over), and only whole lines are decoded, so a multi-byte character is never split.
        """
        if self.reduce != 'last':
            raise ValueError('extract_last_backwards is for reduce last')
        end, carry, window = size, b'', TAIL_WINDOW
        while end > 0:
            start = max(0, end - window)
            window = min(window * 4, TAIL_WINDOW_MAX)
            data = read_range(start, end) + carry
            carry = b''
            if start > 0:
                cut = data.find(b'\n') + 1  # bytes before it belong to a line that starts in an earlier window
                if cut == 0 and len(data) <= MAX_LINE:
                    carry, end = data, start
                    continue
                carry, data = data[:cut], data[cut:]
            if self.bytes_pattern is None or not data.isascii():
                data = data.decode(encoding, errors='replace')
            value = self._edge_value(data, from_end=True)
            if value is not None:
                return value
            end = start
        return None

    def extract_text(self, text):
        reduction = _Reduction(self.reduce)
        self._scan_block(text, reduction)
        return reduction.result()


def sort_rows(rows, goal='max', top=None, infeasible=()):
    """Rows best first for the goal (max or min); ties by job name (core/tuning/best.rank_key, the rule `run`,
    `status` and `report` name the best by).

    A job that did not succeed (failed, terminated, still running) never ranks above one that did, a job without
    the metric never above one with it, and a job named in ``infeasible`` (it broke a constraint of its `sweep run`)
    never above a feasible one: the best job is a finished, feasible one with a value. ``top`` keeps the first
    ``top`` of the jobs that can be the best (infeasible ones never come with ``top``).
    """
    from ..tuning.best import rank_key
    if goal not in GOALS:
        raise SpecError('goal must be max or min, not {!r}'.format(goal), path='goal')
    infeasible = set(infeasible)
    ranked = sorted(rows, key=lambda row: rank_key(goal, row['metric'],
                                                   finished=row.get('state') in (None, 'succeeded'),
                                                   feasible=row['name'] not in infeasible, tie=row['name']))
    if top is None:
        return ranked
    return [row for row in ranked if row['name'] not in infeasible][:top]


def get_metrics(client, resource_group, workspace, experiment, extractor, *, sweep_name=None, job_names=None,
                state=None, file='stdout.txt', output_directory_id=STDOUTERR, goal='max', top=None, parallel=8,
                progress=None, retry=None, stats=None):
    """One row per job, best first: {name, state, parameters, metric, error}.

    Each job's file is streamed from its downloadUrl in parallel across jobs. A job without the file, without a
    match, or whose download failed has metric None (and, for a failure, the error), never a crash.
    progress(done, total) counts jobs. `stats` (a dict, when given) gets filesFound: how many jobs have the file.
    """
    retry = retry or RetrySettings()
    jobs = sweep_jobs(client, resource_group, workspace, experiment, sweep_name, state=state, job_names=job_names,
                      retry=retry)
    rows = []
    done = [0]
    found, found_lock = [0], threading.Lock()

    def work(job):
        item = find_output_file(client, resource_group, workspace, experiment, job.name, file, output_directory_id,
                                retry=retry)
        if item is None or not item.download_url:
            return None
        with found_lock:
            found[0] += 1
        if extractor.reduce == 'last' and item.content_length:
            try:
                return extractor.extract_last_backwards(
                    lambda start, end: read_url_range(item.download_url, start, end, retry=retry), item.content_length)
            except RangeNotSupported:
                pass  # read it all, as a stream
        return extractor.extract_chunks(iter_url_chunks(item.download_url, retry=retry))

    def on_result(job, metric, exc):
        if exc is not None:
            logger.warning('job %s: metric not read: %s', job.name, describe_error(exc))
        # Only the parameters of the job: a whole status row would also parse its start and end times.
        rows.append({'name': job.name, 'state': state_of(job), 'parameters': parameters_of(job),
                     'metric': metric, 'error': describe_error(exc) if exc is not None else None})
        done[0] += 1
        if progress is not None:
            progress(done[0], len(jobs))

    run_parallel(work, jobs, parallel=parallel, on_result=on_result)
    if stats is not None:
        stats['filesFound'] = found[0]
    return sort_rows(rows, goal=goal, top=top)


def write_metrics_csv(rows, stream, metric_column='metric'):
    """Write rows as CSV: name, state, the metric, then one column per parameter (dict values as JSON)."""
    parameter_names = sorted({key for row in rows for key in (row.get('parameters') or {})})
    marked = any('infeasible' in row for row in rows)  # a `sweep run` with constraints: the ones each job broke
    writer = csv.writer(stream)
    writer.writerow(['name', 'state', metric_column] + (['infeasible'] if marked else []) + parameter_names)
    for row in rows:
        parameters = row.get('parameters') or {}
        values = [parameters.get(key) for key in parameter_names]
        writer.writerow([row['name'], row.get('state'), '' if row['metric'] is None else repr(row['metric'])]
                        + ([row.get('infeasible') or ''] if marked else [])
                        + ['' if v is None else json.dumps(v) if isinstance(v, (dict, list)) else v for v in values])
