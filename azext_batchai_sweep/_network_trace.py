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
    while logger is not None:
        if any(record.levelno >= handler.level for handler in logger.handlers):
            return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return logging.lastResort is not None and record.levelno >= logging.lastResort.level


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
