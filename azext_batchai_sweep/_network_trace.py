# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Secrets out of az's `--debug` network trace.

With `--debug`, the logging policy az gives every client it builds (azure.cli.core.sdk.policies'
SafeNetworkTraceLoggingPolicy) logs each request and response body whole. It masks the Authorization header, not
what Batch AI bodies carry: a job's `secrets` values and storage account keys in the PUT of every job `submit` and
`resubmit` send, and the SAS signatures of the download links listOutputFiles answers with. az's keyword arguments
win over an extension's when it builds a client, so the policy cannot be swapped; its records are redacted instead,
by a filter on its logger. The local service's client uses the same policy (_targeting.py), so the tests of `--debug`
output against it (tests/reliability/test_secrets.py) cover this path.
"""
import json
import logging

from .core.service.retry import redact_urls

NETWORK_TRACE_LOGGER = 'cli.azure.cli.core.sdk.policies'
MASK = '*****'
# Fields of Batch AI bodies whose values are credentials (accountKey: file shares and blob containers;
# password: private registries and file servers; adminUserPassword: cluster users).
SECRET_FIELDS = frozenset({'accountKey', 'password', 'adminUserPassword'})


def _mask_secrets(node):
    """The JSON value with every credential field and every `secrets[].value` masked; True if anything was."""
    changed = False
    if isinstance(node, dict):
        for key, value in node.items():
            if key in SECRET_FIELDS and isinstance(value, str):
                node[key] = MASK
                changed = True
            elif key == 'secrets' and isinstance(value, list):
                for item in value:
                    if isinstance(item, dict) and isinstance(item.get('value'), str):
                        item['value'] = MASK
                        changed = True
            else:
                changed = _mask_secrets(value) or changed
    elif isinstance(node, list):
        for value in node:
            changed = _mask_secrets(value) or changed
    return changed


def redact_trace(text):
    """A logged request or response line with Batch AI's secrets and every SAS signature masked."""
    stripped = text.lstrip()
    if stripped.startswith(('{', '[')):
        try:
            body = json.loads(stripped)
        except ValueError:
            body = None
        if body is not None and _mask_secrets(body):
            text = json.dumps(body)
    return redact_urls(text)


def _will_be_emitted(logger, record):
    """Whether a handler of the logger or of its ancestors takes the record (what Logger.callHandlers checks).

    az sets its loggers to DEBUG and lets the handlers choose, so without --debug the policy still logs every body
    to handlers that drop it: redacting those (parsing each listing page again) would cost more than the request.
    """
    return level_is_emitted(logger, record.levelno)


def level_is_emitted(logger, level):
    """Whether a record of this level on the logger reaches a handler that takes it (what Logger.callHandlers
    checks; the loggers' own levels are az's, all DEBUG)."""
    if not logger.isEnabledFor(level):
        return False
    while logger is not None:
        if any(level >= handler.level for handler in logger.handlers):
            return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return logging.lastResort is not None and level >= logging.lastResort.level


def network_trace_policy():
    """az's SafeNetworkTraceLoggingPolicy, writing its records only when a handler takes them (--debug).

    Without --debug the policy still makes about ten DEBUG records a request (its URL, method, every header, the
    body; the same of the response), which az's handlers then drop: a quarter of the client's CPU for a GET to the
    local service, paid for every job's GET, create and terminate of a `sweep run`. Whether a handler would take a
    DEBUG record of its logger is asked at each request, so a handler added later is served as before.
    """
    from azure.cli.core.sdk.policies import SafeNetworkTraceLoggingPolicy  # pylint: disable=import-outside-toplevel

    class NetworkTraceWhenShown(SafeNetworkTraceLoggingPolicy):
        def on_request(self, request):
            if level_is_emitted(logging.getLogger(NETWORK_TRACE_LOGGER), logging.DEBUG):
                super().on_request(request)
                return
            # What the policy does with the option, then nothing to log: on_response sees logging_enable False.
            request.context.options.pop('logging_enable', None)
            request.context['logging_enable'] = False

    return NetworkTraceWhenShown()


class RedactNetworkTrace(logging.Filter):
    """Rewrites a record whose message holds a secret, when some handler will emit it; every record passes."""

    def __init__(self, logger):
        super().__init__()
        self._logger = logger

    def filter(self, record):
        if not _will_be_emitted(self._logger, record):
            return True
        message = record.getMessage()
        redacted = redact_trace(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def redact_network_trace():
    """Put the filter on az's network-trace logger (once per process)."""
    trace_logger = logging.getLogger(NETWORK_TRACE_LOGGER)
    if not any(isinstance(f, RedactNetworkTrace) for f in trace_logger.filters):
        trace_logger.addFilter(RedactNetworkTrace(trace_logger))
