"""Every report of a metric in a job's log, with its step: the intermediate values of a learning curve.

The metric is found exactly as `az batchai sweep metrics` finds it (core.outputs.metrics.MetricExtractor: Katib's
`name=value` or a regex, line by line); where `metrics` reduces a log to one number, this keeps each value with the
step it was reported at. The step is a regex's group named `step` (as `sweep run` reads it), else the value of
another `name=value` key on the same line (`epoch=3 ... val_accuracy=0.8`): the key given, or else the first of
STEP_KEYS present on every report line of the job; without one, reports are numbered 1, 2, 3...
"""
import re

from ..outputs.metrics import MAX_LINE, as_metric, as_step, katib_pattern, last_match, line_matches

STEP_KEYS = ('epoch', 'step', 'iteration', 'iter')
REGEX_STEP = 'step'  # a regex's named group holding the step


def _compiled(key):
    return re.compile(katib_pattern(key))


_AUTO_STEP_PATTERNS = tuple((key, _compiled(key)) for key in STEP_KEYS)


class ReportReader:
    """Collects (step, value) pairs from a log given as byte chunks, holding one chunk and one partial line.

    :param extractor: a core.outputs.metrics.MetricExtractor (its pattern and capture group find the value).
    :param step_key: the name of the step key (e.g. "epoch"); None to detect one of STEP_KEYS per job.
    """

    def __init__(self, extractor, step_key=None):
        self.pattern = extractor.pattern
        self.group = extractor.group
        self.step_key = step_key
        self.step_patterns = ((step_key, _compiled(step_key)),) if step_key else _AUTO_STEP_PATTERNS
        self.regex_step = REGEX_STEP in self.pattern.groupindex and self.group != REGEX_STEP

    def _scan(self, text, found):
        """Append (line steps, value) for each metric match in whole lines of `text`."""
        for match in line_matches(self.pattern, text):  # one reading per line, as metrics and `sweep run` read it
            value = as_metric(match.group(self.group))
            if value is None:
                continue
            start = text.rfind('\n', 0, match.start()) + 1
            end = text.find('\n', match.end())
            line = text[start:end if end >= 0 else len(text)]
            steps = {}
            if self.regex_step and match.group(REGEX_STEP) is not None:
                steps[None] = as_step(match.group(REGEX_STEP))
            for key, step_pattern in self.step_patterns:
                step = last_match(step_pattern, line)
                if step is not None:
                    steps[key] = as_step(step.group('value'))
            refused_regex_step = self.regex_step and None in steps and steps[None] is None
            refused_key = self.step_key is not None and self.step_key in steps and steps[self.step_key] is None
            if refused_regex_step or refused_key:
                continue  # a step that is no whole number from 0 to MAX_STEP: not a report, as `sweep run` reads it
            steps = {key: step for key, step in steps.items() if step is not None}  # a detected key: not on this line
            found.append((steps, value))

    def read_chunks(self, chunks, encoding='utf-8'):
        """(step key or None, [(step, value)] in log order): the job's reports, and the key its steps came from
        (None: numbered)."""
        found = []
        partial = b''
        for chunk in chunks:
            data = partial + chunk if partial else chunk
            cut = data.rfind(b'\n') + 1
            if cut == 0 and len(data) <= MAX_LINE:
                partial = data
                continue
            if cut == 0:
                cut = len(data)  # a "line" this long is scanned in pieces, as metrics does
            self._scan(data[:cut].decode(encoding, errors='replace'), found)
            partial = data[cut:]
        if partial:
            self._scan(partial.decode(encoding, errors='replace'), found)
        return self.with_steps(found)

    def read_text(self, text):
        found = []
        self._scan(text, found)
        return self.with_steps(found)

    def with_steps(self, found):
        """(key, reports): the regex's step group or the first step key that every report line carries, else None
        and 1, 2, 3..."""
        if self.regex_step and found and all(None in steps for steps, _ in found):
            return REGEX_STEP, [(steps[None], value) for steps, value in found]
        for key, _ in self.step_patterns:
            if found and all(key in steps for steps, _ in found):
                return key, [(steps[key], value) for steps, value in found]
        return None, [(float(number), value) for number, (_, value) in enumerate(found, start=1)]
