"""Reports from a job's log: every line holding the objective is one intermediate value, at a step.

With ``objective.metric`` the value is Katib's ``NAME=VALUE`` and the step the ``<step key>=N`` of the same line
(``epoch=3 loss=0.4 val_accuracy=0.81``); with ``objective.regex``, the group ``value`` (or the first group) and
the group ``step`` when the regex has one. Without a step the report's number (1, 2, ...) is its step.
"""
import re

from ..outputs.metrics import as_metric, katib_pattern
from .trial import Report


class ReportParser:
    """Turns whole lines of a log into Reports; ``count`` is how many reports it has made (the default step)."""

    def __init__(self, objective):
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

    def parse_line(self, line, count):
        """The Report of one line (text), or None."""
        match = self.pattern.search(line)
        if match is None:
            return None
        value = as_metric(match.group(self.group))
        if value is None:
            return None
        step = None
        if self.step_pattern is not None:
            found = match if self.step_pattern is self.pattern else self.step_pattern.search(line)
            step = as_metric(found.group(self.step_group)) if found is not None else None
            if step is None:
                return None  # a line with the metric but no step is not a report of a step
        return Report(step=float(step if step is not None else count + 1), value=value)


class LogReader:
    """The reports of one growing log, fed its new bytes as they come; a line cut at the end waits for the rest."""

    def __init__(self, parser, offset=0, reports=()):
        self.parser = parser
        self.offset = offset     # bytes of the log consumed, partial line included
        self.partial = b''
        self.reports = list(reports)

    def feed(self, data, final=False):
        """Consume the log's next bytes; `final` when the log is complete (its last line may lack a newline)."""
        self.offset += len(data)
        data = self.partial + data
        cut = data.rfind(b'\n') + 1
        whole, self.partial = (data, b'') if final else (data[:cut], data[cut:])
        if not whole:
            return
        for line in whole.decode('utf-8', errors='replace').splitlines():
            report = self.parser.parse_line(line, len(self.reports))
            if report is not None:
                self.reports.append(report)
