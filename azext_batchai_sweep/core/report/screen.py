"""`sweep status --watch`: a one-screen summary of a running sweep, redrawn in place on a terminal.

On a terminal (stderr is a TTY) the summary is a few lines drawn over the previous ones (ANSI: cursor up, erase
down): the counts by state, the best job so far, and the running jobs with their last step and value. Elsewhere (a
pipeline's log, a file) it is one line per change, and at least one every `line_every` seconds, so that a log shows
the sweep is alive without a redraw's escape codes. The figures come from live.LiveSweep (the report's data), so
they are the numbers `status`, `metrics` and the report show.
"""
import time

from ..tuning.result import best_phrase
from ..units import value_label
from .live import DEFAULT_INTERVAL
from .svg import fmt

MAX_RUNNING_SHOWN = 10
WIDTH = 100


def _clip(text, width=WIDTH):
    return text if len(text) <= width else text[:width - 3] + '...'


def summary_line(data):
    """One line: the counts by state and the best job so far."""
    summary = data['summary']
    counts = ', '.join('{} {}'.format(count, state) for state, count in summary['counts'].items() if count)
    best = summary['best']
    said = best_phrase(data['objective']['metric'], best['value'], best['name']) if best else 'no best yet'
    return _clip('{} job(s): {}; {}'.format(summary['jobs'], counts or 'none', said))


def screen_lines(data, checked, final=False):
    """The screen: a heading, the summary line, and the running jobs with their last step and value."""
    running = [job for job in data['jobs'] if job['state'] == 'running']
    step_label = data.get('stepKey') or 'step'  # epoch when the jobs print epoch=N, as the decisions say it
    lines = [_clip('Sweep {} - {}, {}'.format(data['sweep'], 'final' if final else 'live', checked)),
             summary_line(data)]
    if running:
        lines.append('running:')
        for job in running[:MAX_RUNNING_SHOWN]:
            step = '{} {}'.format(step_label, fmt(job['lastStep'])) if job['lastStep'] is not None else 'no step yet'
            value = ' {} {}'.format(value_label(data['objective']['metric']), fmt(job['objective'])) \
                if job['objective'] is not None else ''
            lines.append(_clip('  {}  {}{}'.format(job['name'], step, value)))
        if len(running) > MAX_RUNNING_SHOWN:
            lines.append('  ... and {} more'.format(len(running) - MAX_RUNNING_SHOWN))
    return lines


class Screen:
    """Draws screen_lines on a terminal in place, or writes summary lines to a stream that is not one."""

    def __init__(self, stream, tty=None, line_every=60.0, clock=time.monotonic):
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.line_every, self.clock = line_every, clock
        self.drawn = 0
        self.last_line = None
        self.last_time = None

    def show(self, data, checked, final=False):
        if self.tty:
            lines = screen_lines(data, checked, final)
            up = '\x1b[{}F\x1b[J'.format(self.drawn) if self.drawn else ''
            self.stream.write(up + ''.join(line + '\n' for line in lines))
            self.drawn = len(lines)
        else:
            line = summary_line(data) + (' (final)' if final else '')
            now = self.clock()
            if line != self.last_line or self.last_time is None or now - self.last_time >= self.line_every:
                self.stream.write('{} {}\n'.format(checked, line))
                self.last_line, self.last_time = line, now
        self.stream.flush()


def watch_status(sweep, screen, *, interval=DEFAULT_INTERVAL, sleep=time.sleep, checked=None, on_error=None):
    """Look at the sweep every `interval` seconds, showing each look on `screen`, until every job has ended;
    returns the last data (None: the sweep has no jobs)."""
    from .live import _checked_text  # pylint: disable=import-outside-toplevel
    checked = checked or _checked_text
    while True:
        started = time.monotonic()
        sweep.update(on_error=on_error)
        if sweep.data is None:
            return None
        screen.show(sweep.data, checked(), final=sweep.ended)
        if sweep.ended:
            return sweep.data
        sleep(max(0.0, interval - (time.monotonic() - started)))
