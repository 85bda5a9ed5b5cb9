# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Progress on stderr, and a result that is printed yet ends the command with a non-zero exit code."""
import sys

from knack.log import get_logger

logger = get_logger(__name__)


def fail_after_output(cli_ctx, error):
    """Let the command return its result, then raise `error` once az has printed that result.

    az's invoker always gives a returned result exit code 0. knack raises EVENT_CLI_SUCCESSFUL_EXECUTE after the
    result is written to stdout (azure-cli's own paged commands hook it to print their next-page token); an error
    raised there goes through az's exception handler like any other: its message on stderr, its exit code.
    """
    from knack.events import EVENT_CLI_SUCCESSFUL_EXECUTE

    def raise_error(_cli_ctx, **_):
        cli_ctx.unregister_event(EVENT_CLI_SUCCESSFUL_EXECUTE, raise_error)
        raise error
    cli_ctx.register_event(EVENT_CLI_SUCCESSFUL_EXECUTE, raise_error)


def listed(names, limit=10):
    """`a, b, c and 4 more`: names in a message."""
    shown = ', '.join(names[:limit])
    return shown + (' and {} more'.format(len(names) - limit) if len(names) > limit else '')


class Progress:
    """Progress on stderr: a determinate bar for someone watching (stderr is a terminal), and, with `period`, a
    short line every `period` seconds otherwise, so that a CI log shows that a long wait is alive.

    Use as a callback: progress(done, total[, counts[, rows]]). Without `period`, scripts and CI logs get the
    command's summary line only. `waiting`: reads why the rows' queued jobs wait (scheduler_ids.waiting_reader,
    a local service only), said with the bar or after each line.
    """

    def __init__(self, cmd, message, period=None, clock=None, waiting=None):
        import time
        self.message = message
        self.controller = cmd.cli_ctx.get_progress_controller(det=True) if sys.stderr.isatty() else None
        self.period = period if self.controller is None else None
        self.clock = clock or time.monotonic
        self.next_line = None
        self.waiting = waiting

    def _waiting(self, counts, rows):
        if self.waiting is None or not rows or not (counts or {}).get('queued'):
            return []
        return self.waiting(rows)

    def __call__(self, done, total, counts=None, rows=None):
        if self.controller is not None and total:
            waiting = self._waiting(counts, rows)
            self.controller.add(message='; '.join([self.message] + waiting), value=done, total_val=total)
        elif self.period is not None:
            now = self.clock()
            if self.next_line is None or now >= self.next_line:
                self.next_line = now + self.period
                busy = ', '.join('{} {}'.format(n, state) for state, n in (counts or {}).items()
                                 if n and state in ('queued', 'running', 'terminating'))
                logger.warning('%s: %d of %d finished%s', self.message, done, total,
                               ' ({})'.format(busy) if busy else '')
                for line in self._waiting(counts, rows):
                    logger.warning('%s', line)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.controller is not None:
            self.controller.end()
        return False


def wait_line_period(interval):
    """Seconds between two progress lines of a wait without a terminal: a few checks' worth, at most 30 s (but never
    more often than the checks themselves)."""
    return max(interval, min(30.0, 3 * interval))
