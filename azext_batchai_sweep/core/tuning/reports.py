"""Reports from a job's log: every line holding the objective is one intermediate value, at a step.

With ``objective.metric`` the value is Katib's ``NAME=VALUE`` and the step the ``<step key>=N`` of the same line
(``epoch=3 loss=0.4 val_accuracy=0.81``); with ``objective.regex``, the group ``value`` (or the first group) and
the group ``step`` when the regex has one. Without a step the report's number (1, 2, ...) is its step.
"""
import re

from ..outputs.metrics import MAX_STEP, as_metric, as_step, katib_pattern, last_match
from ..outputs.names import NameCounter
from .trial import Report


class ReportParser:
    """Turns whole lines of a log into Reports; ``count`` is how many reports it has made (the default step).

    :param extra_metrics: names of the other metrics a sweep with several objectives or constraints reads from the
        same log (core/tuning/objectives.py): each line's NAME=VALUE of them, the last one kept (metrics_of).
    """

    def __init__(self, objective, extra_metrics=()):
        self.extra = [(name, re.compile(katib_pattern(name))) for name in extra_metrics]
        if objective.get('regex'):
            self.pattern = re.compile(objective['regex'])
            self.group = 'value' if 'value' in self.pattern.groupindex else 1
            self.step_pattern, self.step_group = (self.pattern, 'step') if 'step' in self.pattern.groupindex \
                else (None, None)
        else:
            self.pattern = re.compile(katib_pattern(objective['metric']))
            self.group = 'value'
            self.step_pattern = re.compile(katib_pattern(objective['step'])) if objective.get('step') else None
            self.step_group = 'value'
        self.step_name = objective.get('step') or 'step'
        self.refused_step = None  # the first step value refused (not a whole number from 0 to MAX_STEP), or None

    def refused_step_text(self):
        """What to say, once, when a line's step was refused, else None."""
        if self.refused_step is None:
            return None
        text = self.refused_step if isinstance(self.refused_step, str) else str(self.refused_step)
        return ('{}={}: not a step (a whole number from 0 to {}); lines with such a step are not reports'.format(
            self.step_name, text[:40] + ('...' if len(text) > 40 else ''), MAX_STEP))

    def step_of(self, line):
        """The value of the step key on a line (with or without the metric), or None."""
        if self.step_pattern is None or self.step_pattern is self.pattern:
            return None
        found = last_match(self.step_pattern, line)
        return as_step(found.group(self.step_group)) if found is not None else None

    def metrics_of(self, line):
        """[(name, value), ...] of the extra metrics on a line."""
        found = []
        for name, pattern in self.extra:
            match = last_match(pattern, line)
            value = as_metric(match.group('value')) if match is not None else None
            if value is not None:
                found.append((name, value))
        return found

    def parse_line(self, line, count):
        """The Report of one line (text), or None."""
        match = last_match(self.pattern, line)  # the one reading of a line (core/outputs/metrics.line_matches)
        if match is None:
            return None
        value = as_metric(match.group(self.group))
        if value is None:
            return None
        step = None
        if self.step_pattern is not None:
            found = match if self.step_pattern is self.pattern else last_match(self.step_pattern, line)
            step = as_step(found.group(self.step_group)) if found is not None else None
            if step is None:
                if found is not None and self.refused_step is None:
                    self.refused_step = found.group(self.step_group)  # said once (refused_step_text)
                return None  # a line with the metric but no step is not a report of a step
        return Report(step=float(step if step is not None else count + 1), value=value)


class LogReader:
    """The reports of one growing log, fed its new bytes as they come; a line cut at the end waits for the rest."""

    def __init__(self, parser, offset=0, reports=(), metrics=None):
        self.parser = parser
        self.metrics = dict(metrics or {})  # {extra metric: its last value}
        self.offset = offset     # bytes of the log consumed, partial line included
        self.partial = b''
        self.reports = list(reports)
        self.lines = 0               # whole lines read
        self.names = NameCounter()   # the name=value names of its lines, until its first report
        self.steps = set()           # the step key's values on those lines (the epochs it got through without one)

    def feed(self, data, final=False):
        """Consume the log's next bytes; `final` when the log is complete (its last line may lack a newline)."""
        self.offset += len(data)
        data = self.partial + data
        cut = data.rfind(b'\n') + 1
        whole, self.partial = (data, b'') if final else (data[:cut], data[cut:])
        if not whole:
            return
        for line in whole.decode('utf-8', errors='replace').splitlines():
            self.lines += 1
            if self.parser.extra:
                self.metrics.update(self.parser.metrics_of(line))
            report = self.parser.parse_line(line, len(self.reports))
            if report is not None:
                self.reports.append(report)
            elif not self.reports:
                self.names.add_line(line)
                step = self.parser.step_of(line)
                if step is not None:
                    self.steps.add(step)
                continue
            if len(self.metrics) < len(self.parser.extra) and self.names.lines < EXTRA_NAME_LINES:
                self.names.add_line(line)  # what it prints instead of a missing other objective or constraint


# A job's output is evidence that the objective is misnamed once it has: finished; with a step key, got through this
# many steps (distinct values of the key: a job may print many lines per epoch before its metric at the epoch's end);
# without one, printed this many name=value lines; with a regex, this many lines, none matching.
STEPS_WITHOUT = 2
NAME_VALUE_LINES = 100
REGEX_LINES = 200
# The name=value lines of a job counted while one of the other metrics is missing from its log: enough to say what
# it prints instead, without scanning every line of a long log twice.
EXTRA_NAME_LINES = 1000


def objective_unreported(objective, readers, finished):
    """None, or why no job reports the objective although their output says it should have by now.

    :param readers: {job name: LogReader}; only consulted while no job has reported the objective at all.
    :param finished: the names of the jobs whose logs were read to their end.
    """
    if any(reader.reports for reader in readers.values()):
        return None
    step = objective.get('step')
    names, witnesses, lines = {}, [], 0
    for name in sorted(readers):
        reader = readers[name]
        done = name in finished
        if objective.get('regex'):
            if reader.lines and (done or reader.lines >= REGEX_LINES):
                witnesses.append(name)
                lines += reader.lines
            continue
        seen = reader.names
        if seen.lines and (done or len(reader.steps) >= STEPS_WITHOUT
                           or (not step and seen.lines >= NAME_VALUE_LINES)):
            witnesses.append(name)
            for key, count in seen.names.items():
                names[key] = names.get(key, 0) + count
    if not witnesses:
        return None
    jobs = '{}{}'.format(', '.join(witnesses[:3]), ' and {} more'.format(len(witnesses) - 3)
                         if len(witnesses) > 3 else '')
    if objective.get('regex'):
        return 'objective regex {!r} matches no line: no job has reported it ({} line(s) read of {})'.format(
            objective['regex'], lines, jobs)
    seen = sorted(names, key=lambda key: -names[key])[:12]
    return '{}: no job has reported it; seen: {} (in the output of {})'.format(
        objective['metric'], ', '.join(seen), jobs)


def metrics_unreported(objectives, readers, succeeded):
    """None, or why an objective after the first or a constraint's metric is never reported: jobs ran to the end
    (``succeeded``: the names of the jobs that succeeded and whose logs were read to their end) and not one printed
    it. The same evidence and words as objective_unreported, for every metric the sweep judges by; each message names
    the sweep file's field (``objectives[1].metric``, ``constraints[0].metric``)."""
    witnesses = [name for name in sorted(readers) if name in succeeded]
    if objectives is None or not witnesses:
        return None
    fields = [(metric, 'objectives[{}].metric'.format(i)) for i, (metric, _) in enumerate(objectives.objectives)
              if i > 0]
    fields += [(c.metric, 'constraints[{}].metric'.format(i)) for i, c in enumerate(objectives.constraints)]
    first = objectives.objectives[0][0]
    missing = [(metric, where) for metric, where in fields if metric != first
               and not any(metric in reader.metrics for reader in readers.values())]
    if not missing:
        return None
    names = {}
    for name in witnesses:
        for key, count in readers[name].names.names.items():
            names[key] = names.get(key, 0) + count
    seen = sorted(names, key=lambda key: -names[key])[:12]
    jobs = '{}{}'.format(', '.join(witnesses[:3]), ' and {} more'.format(len(witnesses) - 3)
                         if len(witnesses) > 3 else '')
    return '; '.join('{}: no job has reported it ({}); seen: {} (in the output of {})'.format(
        metric, where, ', '.join(seen) or 'no name=value pair at all', jobs) for metric, where in missing)
