"""Means and medians of untrusted finite floats that never overflow, never raise, and stay exact where they can.

A job prints what it likes: 1e308 six times has the finite mean 1e308, yet a plain sum overflows to inf (and
``statistics.fmean``, ``math.fsum`` raise OverflowError), and the median of 1e308 and 1e308 is not (a + b) / 2 = inf.
Values here are finite (parsing drops NaN and infinities); these functions keep every result finite too.
"""
import math

# Values are also summed scaled by 2**-_SHIFT: that sum cannot overflow for any realistic count (each term is below
# 2**(1024 - _SHIFT)), and it is only used when the plain sum did overflow, where values too small to survive the
# scaling (below about 2**-(1074 - _SHIFT)) cannot change the result.
_SHIFT = 600
_SCALE = 2.0 ** -_SHIFT


def _fsum(values):
    try:
        return math.fsum(values)
    except OverflowError:  # an intermediate partial overflowed
        return math.inf


class RunningMean:
    """The mean of values fed a few (or one) at a time, in constant memory."""

    def __init__(self):
        self.count = 0
        self.total = 0.0    # the plain sum (exact-ish: fsum per batch); inf or nan once it overflowed
        self.scaled = 0.0   # the sum of the values times _SCALE

    def add_all(self, values):
        values = list(values)
        if not values:
            return
        self.count += len(values)
        self.total += _fsum(values)
        self.scaled += math.fsum(v * _SCALE for v in values)

    def add(self, value):
        self.add_all((value,))

    def result(self):
        """The mean, or None without values."""
        if not self.count:
            return None
        if math.isfinite(self.total):
            return self.total / self.count
        return _clamp(self.scaled / self.count / _SCALE)


def mean(values):
    """The mean of finite floats (None for none), finite whatever their size."""
    running = RunningMean()
    running.add_all(values)
    return running.result()


def midpoint(a, b):
    """(a + b) / 2 without overflow, exact for equal values (5e-324 too)."""
    if a == b:
        return a
    total = a + b
    if math.isfinite(total):
        return total / 2
    return a / 2 + b / 2  # both huge with the same sign: halving each is exact


def median(values):
    """The median of finite floats (None for none): the middle one, or the midpoint of the two middle ones."""
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return midpoint(ordered[middle - 1], ordered[middle])


def _clamp(value):
    """A mean of finite values is finite: rounding at the very edge of the range must not make it inf."""
    return max(-1.7976931348623157e308, min(1.7976931348623157e308, value))


def fraction(value, low, high):
    """Where `value` lies between low and high, (value - low) / (high - low), without overflow (high > low)."""
    span = high - low
    if math.isfinite(span) and math.isfinite(value - low):
        return (value - low) / span
    # The span (or the distance) overflowed: the halves are exact for such magnitudes and their differences fit.
    return (value / 2 - low / 2) / (high / 2 - low / 2)


def lerp(a, b, t):
    """a + (b - a) * t for t in [0, 1], without overflow (and exactly a at t = 0)."""
    if t == 0:
        return a
    difference = b - a
    if math.isfinite(difference):
        return a + difference * t
    return _clamp(a * (1 - t) + b * t)


def clamped(value):
    """value, or the nearest finite float when it overflowed (NaN stays NaN)."""
    return _clamp(value) if value == value else value
