"""Retry classification, Retry-After parsing and backoff, with an injected clock (no real waiting)."""
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from types import SimpleNamespace

import pytest
from azure.core.exceptions import HttpResponseError, ServiceRequestError, ServiceResponseError

from azext_batchai_sweep.core.service.retry import (RetrySettings, call_with_retries, describe_error, is_retryable,
                                                    redact_urls, retry_after_seconds)


def http_error(status, headers=None):
    response = SimpleNamespace(status_code=status, headers=headers or {}, reason='x', text=lambda: '',
                               content_type='text/plain')
    error = HttpResponseError(message='status {}'.format(status), response=response)
    error.status_code = status
    return error


@pytest.mark.parametrize('exc, expected', [
    (ServiceRequestError('refused'), True),
    (ServiceResponseError('reset'), True),
    (http_error(429), True), (http_error(500), True), (http_error(503), True),
    (http_error(400), False), (http_error(401), False), (http_error(403), False), (http_error(404), False),
    (ValueError('bug'), False),
])
def test_retryable_classification(exc, expected):
    assert is_retryable(exc) is expected


def test_retry_after_seconds_and_http_date():
    assert retry_after_seconds(http_error(429, {'Retry-After': '3'})) == 3.0
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    date = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert retry_after_seconds(http_error(503, {'Retry-After': date}), now=now) == 7.0
    assert retry_after_seconds(http_error(503, {'Retry-After': 'soon'})) is None
    assert retry_after_seconds(http_error(429, {'retry-after-ms': '250'})) == 0.25
    assert retry_after_seconds(ServiceResponseError('reset')) is None


def test_backoff_is_full_jitter_capped_and_retry_after_wins():
    settings = RetrySettings(base_delay=1.0, max_delay=10.0, random=lambda: 1.0)
    assert [settings.backoff(n) for n in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert RetrySettings(random=lambda: 0.25, base_delay=4.0).backoff(0) == 1.0
    assert settings.backoff(0, http_error(429, {'Retry-After': '5'})) == 5.0
    assert RetrySettings(max_retry_after=2.0).backoff(0, http_error(429, {'Retry-After': '500'})) == 2.0


def test_call_with_retries_counts_and_gives_up():
    sleeps = []
    settings = RetrySettings(max_retries=3, sleep=sleeps.append, random=lambda: 0.5, base_delay=1.0)
    calls = []

    def always_503():
        calls.append(1)
        raise http_error(503)

    with pytest.raises(HttpResponseError):
        call_with_retries(always_503, settings=settings)
    assert len(calls) == 4 and sleeps == [0.5, 1.0, 2.0]

    calls.clear()

    def bad_request():
        calls.append(1)
        raise http_error(400)

    with pytest.raises(HttpResponseError):
        call_with_retries(bad_request, settings=settings)
    assert len(calls) == 1


def test_messages_never_carry_a_sas_token():
    text = redact_urls('404 Client Error for url: http://127.0.0.1:1/f/stdout.txt?sv=2020&sig=SECRET')
    assert 'SECRET' not in text and 'stdout.txt?<redacted>' in text

    class Fake(Exception):
        response = SimpleNamespace(status_code=403)

    assert 'SECRET' not in describe_error(Fake('403 for url: https://a/b?sig=SECRET'))
