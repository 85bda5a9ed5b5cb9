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


class Progress:
    """A determinate progress bar on stderr, drawn only for someone watching (stderr is a terminal).

    Use as a callback: progress(done, total). Scripts and CI logs get the command's summary line instead.
    """

    def __init__(self, cmd, message):
        self.message = message
        self.controller = cmd.cli_ctx.get_progress_controller(det=True) if sys.stderr.isatty() else None

    def __call__(self, done, total, *_):
        if self.controller is not None and total:
            self.controller.add(message=self.message, value=done, total_val=total)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.controller is not None:
            self.controller.end()
        return False
