"""Fault injection for the ARM API (never for download links, the files API or jobs).

SPEC is a comma-separated list of key=value: `5xx=RATE` (500/503 answers), `429=RATE` (throttling with
Retry-After), `drop=RATE` (close the connection without answering), `latency-ms=N` (added to every request),
`writes-per-s=N` (token bucket on PUT/POST/DELETE, burst of N; 429 + Retry-After when empty), `seed=N`.
"""
import math
import random
import threading
import time
from dataclasses import dataclass

KEYS = {'5xx': float, '429': float, 'drop': float, 'latency-ms': float, 'writes-per-s': float, 'seed': int}
WRITE_METHODS = ('PUT', 'POST', 'DELETE', 'PATCH')


@dataclass(frozen=True)
class Fault:
    """What to do with a request: `drop` the connection, or answer `status` with `retry_after` seconds."""
    drop: bool = False
    status: int = None
    retry_after: int = None


def parse_spec(spec):
    """Dict of the settings of a SPEC string; ValueError naming the bad part."""
    settings = {}
    for part in filter(None, (p.strip() for p in (spec or '').split(','))):
        key, sep, value = part.partition('=')
        key = key.strip().lower()
        if not sep or key not in KEYS:
            raise ValueError("bad fault setting '{}': expected one of {}".format(part, ', '.join(KEYS)))
        try:
            settings[key] = KEYS[key](value.strip())
        except ValueError:
            raise ValueError("bad value in fault setting '{}'".format(part)) from None
        if key in ('5xx', '429', 'drop') and not 0 <= settings[key] <= 1:
            raise ValueError("fault rate '{}' must be between 0 and 1".format(part))
        if settings[key] < 0:
            raise ValueError("fault setting '{}' must not be negative".format(part))
    return settings


class FaultInjector:
    """Draws the fault (if any) of each ARM request, reproducibly when the SPEC has a seed."""

    def __init__(self, spec=None, clock=time.monotonic):
        self.settings = parse_spec(spec)
        self._rng = random.Random(self.settings.get('seed'))
        self._lock = threading.Lock()
        self._clock = clock
        rate = self.settings.get('writes-per-s')
        self._rate = rate if rate else None
        self._tokens = rate or 0.0
        self._refilled = clock()

    @property
    def enabled(self):
        return bool(self.settings)

    @property
    def latency(self):
        return self.settings.get('latency-ms', 0.0) / 1000.0

    def _take_write_token(self):
        """Token bucket: False (and the seconds until the next token) when the write budget is spent."""
        now = self._clock()
        self._tokens = min(self._rate, self._tokens + (now - self._refilled) * self._rate)
        self._refilled = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True, 0
        return False, max(1, math.ceil((1.0 - self._tokens) / self._rate))

    def draw(self, method):
        """The Fault for a request, or None to serve it normally."""
        if not self.settings:
            return None
        with self._lock:
            roll = self._rng.random()
            drop, error, throttle = (self.settings.get(k, 0.0) for k in ('drop', '5xx', '429'))
            if roll < drop:
                return Fault(drop=True)
            if roll < drop + error:
                return Fault(status=self._rng.choice((500, 503)))
            if roll < drop + error + throttle:
                return Fault(status=429, retry_after=1)
            if self._rate and method in WRITE_METHODS:
                ok, wait = self._take_write_token()
                if not ok:
                    return Fault(status=429, retry_after=wait)
        return None
