"""Retries with exponential backoff and full jitter, honouring Retry-After.

Every service call of the experiment operations goes through `call_with_retries` with the SDK's own retry policy
switched off (`NO_SDK_RETRY` per call): retry counts and timing are then ours alone, predictable and testable,
instead of the product of two nested policies.
"""
import email.utils
import logging
import random
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Optional

from azure.core.exceptions import HttpResponseError, ServiceRequestError, ServiceResponseError

logger = logging.getLogger(__name__)

# Keyword arguments for every SDK call: no retries inside azure-core's RetryPolicy.
NO_SDK_RETRY = {'retry_total': 0}

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})

# Output files are downloaded through SAS URLs: their query string is a credential and never goes into a message.
_URL_QUERY = re.compile(r'(https?://[^\s?#]+)\?[^\s#]*')


# A SAS signature anywhere else: requests names the failed URL by its path and query alone ("Max retries exceeded
# with url: /share/f.txt?...&sig=...").
_SIGNATURE_VALUE = re.compile(r'(?i)\bsig=[^&\s"\']+')


def redact_urls(text: str) -> str:
    """The text with the query string of every URL replaced, and any other `sig=` value, so no SAS token reaches a
    log or an error."""
    return _SIGNATURE_VALUE.sub('sig=<redacted>', _URL_QUERY.sub(r'\1?<redacted>', text))


def status_of(exc) -> Optional[int]:
    """The HTTP status of a failed call, or None when no response came back."""
    if isinstance(exc, HttpResponseError):
        return exc.status_code
    response = getattr(exc, 'response', None)  # requests.HTTPError
    return getattr(response, 'status_code', None)


def is_retryable(exc) -> bool:
    """True for throttling, server errors and connections dropped before or after the request was sent."""
    if isinstance(exc, (ServiceRequestError, ServiceResponseError)):
        return True
    status = status_of(exc)
    if status is not None:
        return status in RETRYABLE_STATUS or status >= 500
    # requests' ConnectionError / ChunkedEncodingError / Timeout when downloading output files.
    try:
        import requests  # pylint: disable=import-outside-toplevel
    except ImportError:  # pragma: no cover - requests ships with az
        return False
    return isinstance(exc, (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError))


def response_is_lost(exc) -> bool:
    """True when the request may have reached the service but its answer did not reach us."""
    return isinstance(exc, ServiceResponseError) or (status_of(exc) or 0) >= 500


def retry_after_seconds(exc, now=None) -> Optional[float]:
    """The delay a throttled or failed response asks for (`retry-after-ms`, `Retry-After` seconds or HTTP date)."""
    response = getattr(exc, 'response', None)
    headers = getattr(response, 'headers', None)
    if not headers:
        return None
    for name in ('retry-after-ms', 'x-ms-retry-after-ms'):
        value = headers.get(name)
        if value:
            try:
                return max(0.0, float(value) / 1000.0)
            except ValueError:
                pass
    value = headers.get('Retry-After')
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


@dataclass
class RetrySettings:
    """How often and how long to retry. `sleep` and `random` are injectable so tests need not wait."""
    max_retries: int = 12
    base_delay: float = 0.5
    max_delay: float = 30.0
    # A Retry-After beyond this is capped: the operation must stay bounded in time.
    max_retry_after: float = 120.0
    sleep: Callable[[float], None] = time.sleep
    random: Callable[[], float] = field(default=random.random)

    def backoff(self, attempt: int, exc=None) -> float:
        """The delay before retry number `attempt` (0-based): Retry-After if given, else full jitter."""
        hinted = retry_after_seconds(exc) if exc is not None else None
        if hinted is not None:
            return min(hinted, self.max_retry_after)
        return self.random() * min(self.max_delay, self.base_delay * (2 ** attempt))


class Stopped(Exception):
    """The caller asked to stop (should_stop) while an operation was waiting to retry."""


def interruptible_sleep(seconds: float, settings: RetrySettings, should_stop=None, step=0.25):
    """Sleep, waking up regularly to honour should_stop; raises Stopped when asked to stop."""
    # Counted in requested sleeps rather than by the clock, so an injected sleep makes tests instant.
    left = seconds
    while True:
        if should_stop is not None and should_stop():
            raise Stopped()
        if left <= 0:
            return
        pause = min(left, step) if should_stop is not None else left
        settings.sleep(pause)
        left -= pause


def call_with_retries(fn, *, settings: RetrySettings, retryable=is_retryable, should_stop=None, on_error=None,
                      what='call'):
    """Call fn() until it succeeds, retrying retryable failures at most settings.max_retries times.

    on_error(exc) is called for every failure (retried or not), before the decision, so callers can remember
    e.g. that a response was lost. The last exception is raised when it is not retryable or retries ran out.
    """
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:  # pylint: disable=broad-except
            if on_error is not None:
                on_error(exc)
            if not retryable(exc) or attempt >= settings.max_retries:
                raise
            delay = settings.backoff(attempt, exc)
            logger.debug('%s failed (%s, status %s); retry %d in %.2fs', what, type(exc).__name__, status_of(exc),
                         attempt + 1, delay)
            attempt += 1
            interruptible_sleep(delay, settings, should_stop)


def describe_error(exc) -> str:
    """A one-line message for a failed call: the ARM error code and message when the service sent one."""
    error = getattr(exc, 'error', None)
    code = getattr(error, 'code', None)
    message = getattr(error, 'message', None)
    if code or message:
        text = '{}: {}'.format(code, message) if code and message else str(code or message)
        return redact_urls(text)
    status = status_of(exc)
    text = (getattr(exc, 'message', None) or str(exc) or type(exc).__name__).strip().splitlines()[0]
    text = '{} ({})'.format(text, status) if status and str(status) not in text else text
    return redact_urls(text)
