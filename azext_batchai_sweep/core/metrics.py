"""Metric extraction from jobs' log files, streamed with bounded memory, and the ranking of a sweep's jobs.

A metric is found line by line, by a regular expression (its named group `value`, else its first group) or by
Katib's `name=value` log format given the metric's name; the values of one file are reduced to one number
(last, first, min, max or mean) as they stream by, so a log of any size needs only a chunk and a line in memory.
"""
import codecs
import csv
import json
import logging
import math
import re

from .download import STDOUTERR, find_output_file, iter_url_chunks
from .errors import SpecError
from .listing import job_summary, list_jobs, select_jobs, state_of
from .parallel import run_parallel
from .retry import RetrySettings, describe_error

logger = logging.getLogger(__name__)

REDUCERS = ('last', 'first', 'min', 'max', 'mean')
GOALS = ('max', 'min')
# A "line" longer than this (a binary file, a progress bar without newlines) is scanned in pieces of this size.
MAX_LINE = 1024 * 1024
_NUMBER = r'[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?'


def katib_pattern(metric_name):
    """The regex of Katib's default metrics format, `name=value`, for one metric name (not a longer name)."""
    return r'(?<![\w.-]){}\s*=\s*(?P<value>{})'.format(re.escape(metric_name), _NUMBER)


class _Reduction:
    """A running last/first/min/max/mean, so no list of values is ever kept."""

    def __init__(self, how):
        self.how = how
        self.value = None
        self.count = 0
        self.total = 0.0

    def add(self, value):
        self.count += 1
        self.total += value
        if self.value is None or self.how == 'last':
            self.value = value
        elif self.how == 'min':
            self.value = min(self.value, value)
        elif self.how == 'max':
            self.value = max(self.value, value)

    def result(self):
        if self.count == 0:
            return None
        return self.total / self.count if self.how == 'mean' else self.value


class MetricExtractor:
    """Finds one metric in a log: `regex` (a named group `value` or one capture group) or Katib's `metric_name=v`.

    Raises SpecError for an invalid regex, a regex without a capture group, or an unknown reduce.
    """

    def __init__(self, regex=None, metric_name=None, reduce='last'):
        if reduce not in REDUCERS:
            raise SpecError('reduce must be one of {}, not {!r}'.format(', '.join(REDUCERS), reduce), path='reduce')
        if regex:
            try:
                self.pattern = re.compile(regex)
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
            self.pattern = re.compile(katib_pattern(metric_name))
            self.group = 'value'
        else:
            raise SpecError('give a regular expression or a metric name', path='metric')
        self.reduce = reduce
        self.metric_name = metric_name

    def _scan(self, line, reduction):
        for match in self.pattern.finditer(line):
            try:
                value = float(match.group(self.group))
            except (TypeError, ValueError):
                continue
            # nan/inf would poison sorting and JSON output: a non-finite value counts as no value.
            if math.isfinite(value):
                reduction.add(value)

    def extract_lines(self, lines):
        """The reduced metric over an iterable of text lines, or None when it never appears."""
        reduction = _Reduction(self.reduce)
        for line in lines:
            self._scan(line, reduction)
        return reduction.result()

    def extract_chunks(self, chunks, encoding='utf-8'):
        """The reduced metric over an iterable of byte chunks, holding only one chunk and one partial line."""
        decoder = codecs.getincrementaldecoder(encoding)(errors='replace')
        reduction = _Reduction(self.reduce)
        partial = ''
        for chunk in chunks:
            text = partial + decoder.decode(chunk)
            lines = text.split('\n')
            partial = lines.pop()
            for line in lines:
                self._scan(line, reduction)
            if len(partial) > MAX_LINE:
                self._scan(partial, reduction)
                partial = ''
        partial += decoder.decode(b'', final=True)
        if partial:
            self._scan(partial, reduction)
        return reduction.result()

    def extract_text(self, text):
        return self.extract_lines(text.splitlines())


def sort_rows(rows, goal='max', top=None):
    """Rows best first for the goal (max or min); rows without a metric last; ties by job name."""
    if goal not in GOALS:
        raise SpecError('goal must be max or min, not {!r}'.format(goal), path='goal')
    sign = -1 if goal == 'max' else 1
    ranked = sorted(rows, key=lambda row: (row['metric'] is None, sign * (row['metric'] or 0.0), row['name']))
    return ranked[:top] if top is not None else ranked


def get_metrics(client, resource_group, workspace, experiment, extractor, *, sweep_name=None, job_names=None,
                state=None, file='stdout.txt', output_directory_id=STDOUTERR, goal='max', top=None, parallel=8,
                progress=None, retry=None):
    """One row per job, best first: {name, state, parameters, metric, error}.

    Each job's file is streamed from its downloadUrl in parallel across jobs. A job without the file, without a
    match, or whose download failed has metric None (and, for a failure, the error), never a crash.
    progress(done, total) counts jobs.
    """
    retry = retry or RetrySettings()
    jobs = list(select_jobs(list_jobs(client, resource_group, workspace, experiment, retry=retry),
                            sweep_name=sweep_name, state=state, job_names=job_names))
    rows = []
    done = [0]

    def work(job):
        item = find_output_file(client, resource_group, workspace, experiment, job.name, file, output_directory_id,
                                retry=retry)
        if item is None or not item.download_url:
            return None
        return extractor.extract_chunks(iter_url_chunks(item.download_url, retry=retry))

    def on_result(job, metric, exc):
        summary = job_summary(job)
        if exc is not None:
            logger.warning('job %s: metric not read: %s', job.name, describe_error(exc))
        rows.append({'name': job.name, 'state': state_of(job), 'parameters': summary['parameters'],
                     'metric': metric, 'error': describe_error(exc) if exc is not None else None})
        done[0] += 1
        if progress is not None:
            progress(done[0], len(jobs))

    run_parallel(work, jobs, parallel=parallel, on_result=on_result)
    return sort_rows(rows, goal=goal, top=top)


def write_metrics_csv(rows, stream, metric_column='metric'):
    """Write rows as CSV: name, state, the metric, then one column per parameter (dict values as JSON)."""
    parameter_names = sorted({key for row in rows for key in (row.get('parameters') or {})})
    writer = csv.writer(stream)
    writer.writerow(['name', 'state', metric_column] + parameter_names)
    for row in rows:
        parameters = row.get('parameters') or {}
        values = [parameters.get(key) for key in parameter_names]
        writer.writerow([row['name'], row.get('state'), '' if row['metric'] is None else repr(row['metric'])]
                        + ['' if v is None else json.dumps(v) if isinstance(v, (dict, list)) else v for v in values])
