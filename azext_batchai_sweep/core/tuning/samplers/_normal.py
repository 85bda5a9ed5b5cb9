"""Truncated-normal numerics in pure Python (the extension installs without numpy or scipy).

A Parzen kernel is a normal distribution truncated to the parameter's range, and its mean always lies inside that
range, so the standardised bounds satisfy ``a <= 0 <= b``. Every probability below is therefore computed from the
two tails (each at most 1/2, taken from ``erfc``, which is accurate deep into the tails) instead of as a difference
of two values close to 1, and the inverse CDF is only ever asked for a tail probability.
"""
import math
from statistics import NormalDist

_STANDARD = NormalDist()
LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_SQRT_HALF = math.sqrt(0.5)
# The smallest tail probability handed to the inverse CDF (it refuses 0); ~37.5 standard deviations.
_TINY = 1e-300


def lower_tail(z):
    """P(Z <= z) for a standard normal Z, accurate for very negative z."""
    return 0.5 * math.erfc(-z * _SQRT_HALF)


def log_pdf(z):
    """log of the standard normal density at z."""
    return -0.5 * z * z - LOG_SQRT_2PI


def log_mass(a, b):
    """log P(a <= Z <= b) for a standard normal Z and a < b, without cancellation in either tail."""
    if a >= 0:  # both in the upper tail: mirror into the lower one
        a, b = -b, -a
    if b <= 0:
        mass = lower_tail(b) - lower_tail(a)
    else:
        mass = 1.0 - lower_tail(a) - lower_tail(-b)
    if mass > 0:
        return math.log(mass)
    # Beyond ~37 standard deviations the tails underflow: the density at the nearer end times the width is an
    # upper bound that keeps ratios finite and ordered (such kernels weigh nothing next to the others anyway).
    near = b if b <= 0 else a
    return log_pdf(near) + math.log(min(b - a, 1.0 / max(abs(near), 1e-12)))


def sample(rng, a, b):
    """One draw of a standard normal truncated to [a, b], with a <= 0 <= b, by inverting the CDF.

    The uniform draw is split at the mode: below it the lower tail's mass is inverted, above it the upper tail's
    (by symmetry), so the inverse CDF never sees a probability close to 1, where doubles have no resolution.
    """
    low_tail, high_tail = lower_tail(a), lower_tail(-b)
    total = 1.0 - low_tail - high_tail
    draw = rng.random() * total
    below_mode = 0.5 - low_tail
    if draw < below_mode:
        return max(a, _STANDARD.inv_cdf(max(low_tail + draw, _TINY)))
    return min(b, -_STANDARD.inv_cdf(max(high_tail + (total - draw), _TINY)))


def log_sum_exp(values):
    """log(sum(exp(v) for v in values)), safe when some (or all) are -inf."""
    top = max(values)
    if top == -math.inf:
        return top
    exp = math.exp
    return top + math.log(sum([exp(v - top) for v in values]))
