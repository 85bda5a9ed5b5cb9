# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""One exit code per outcome a script branches on, the same for every `az batchai sweep` command
(docs/pipelines.md#exit-codes).

az itself gives 0 for success, 2 when the command line does not parse (argparse), 3 for a ResourceNotFoundError and 1
for every other error (azure.cli.core.util.handle_exception, called through the CLI's `exception_handler`). The
commands raise az's error classes as before; `install` wraps that same handler so that, for this group's commands
only, the classes below get their own codes after az has printed the error as usual. Nothing calls sys.exit.
"""
import signal

from azure.cli.core import azclierror

SUCCEEDED = 0
ERROR = 1            # az: any error without a class of its own below
USAGE = 2            # az: the command line does not parse (unknown option, missing argument, bad choice or type)
NOT_FOUND = 3        # az: ResourceNotFoundError (a sweep, job, workspace, experiment or cluster that is not there)
JOBS_FAILED = 4      # a job of the sweep failed, or was terminated by someone else while a command waited on it
TIMEOUT = 5          # a wait's --timeout, or a `run` whose --timeout ended it before any job gave a result
BAD_INPUT = 6        # an invalid value, sweep file, plan file or file path
NO_SERVICE = 7       # no Batch AI service to talk to (none configured, not logged in), or it cannot be reached
SIGNAL_BASE = 128    # interrupted by a signal: 128 + its number (130 SIGINT, 143 SIGTERM, 129 SIGHUP), as shells do

GROUP = 'batchai sweep'


class JobsFailedError(azclierror.AzureResponseError):
    exit_code = JOBS_FAILED


class SweepTimeoutError(azclierror.UnclassifiedUserFault):
    exit_code = TIMEOUT


class NoServiceError(azclierror.AzureConnectionError):
    exit_code = NO_SERVICE


class InterruptedByASignalError(azclierror.ManualInterrupt):
    """A command ended by a signal; exit code 128 + the signal's number."""

    def __init__(self, signum, message, recommendation=None):
        super().__init__(message, recommendation=recommendation)
        self.exit_code = SIGNAL_BASE + signum
        self.signal_name = signal.Signals(signum).name


# az's own classes, by outcome; the first match wins (a subclass above carries its own exit_code).
_CLASS_CODES = (
    (azclierror.ResourceNotFoundError, NOT_FOUND),
    ((azclierror.InvalidArgumentValueError, azclierror.RequiredArgumentMissingError,
      azclierror.MutuallyExclusiveArgumentError, azclierror.ArgumentUsageError, azclierror.ValidationError,
      azclierror.FileOperationError), BAD_INPUT),
    ((azclierror.AzureConnectionError, azclierror.AuthenticationError), NO_SERVICE),
)


def exit_code_of(error, default):
    """The exit code of an error raised by one of this group's commands; `default` (az's) when it has no class here."""
    code = getattr(error, 'exit_code', None)
    if isinstance(code, int):
        return code
    for classes, code in _CLASS_CODES:
        if isinstance(error, classes):
            return code
    return default


def install(cli_ctx):
    """Wrap the CLI's exception handler once: az prints the error and picks its code, then a command of this group
    gets the code of its outcome class. Other groups' commands keep az's codes."""
    handler = getattr(cli_ctx, 'exception_handler', None)
    if handler is None or getattr(handler, 'batchai_sweep_exit_codes', False):
        return

    def exception_handler(ex):
        code = handler(ex)
        command = (getattr(cli_ctx, 'data', None) or {}).get('command') or ''
        if command == GROUP or command.startswith(GROUP + ' '):
            return exit_code_of(ex, code)
        return code
    exception_handler.batchai_sweep_exit_codes = True
    cli_ctx.exception_handler = exception_handler
