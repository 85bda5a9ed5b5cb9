"""One draw of a truncated standard normal (core/tuning/samplers/_normal.sample, a kernel's draw on a bounded range)
at the ends of the uniform draw, for kernels truncated at or just below their mean (an observation at the range's
low end: a = 0). The draw above the mode is inverted through the upper tail, so no probability rounds to 1 (where the
inverse CDF is undefined): every uniform draw random() can return, the largest (1 - 2^-53) and the smallest (0)
included, gives a value within [a, b], on the side of the mode its draw is. Written from mutation testing (issue 49).
The uniform draws are given (a stand-in for random.Random's random(), the one thing the sampler asks of it)."""
import statistics

import pytest

from azext_batchai_sweep.core.tuning.samplers import _normal

LARGEST = 1.0 - 2.0 ** -53  # the largest float random.random() returns
STANDARD = statistics.NormalDist()


class _Uniforms:  # pylint: disable=too-few-public-methods
    def __init__(self, values):
        self.values = iter(values)

    def random(self):
        return next(self.values)


@pytest.mark.parametrize('a', [0.0, -1e-3, -0.3])
@pytest.mark.parametrize('b', [3.0, 9.0, 40.0])
def test_every_uniform_draw_gives_a_value_within_the_truncation(a, b):
    uniforms = [0.0, 2.0 ** -53, 0.25, 0.5, 0.75, 1.0 - 2.0 ** -40, 1.0 - 2.0 ** -52, LARGEST]
    drawn = [_normal.sample(_Uniforms([u]), a, b) for u in uniforms]
    assert all(a <= x <= b for x in drawn), drawn
    assert drawn == sorted(drawn)  # the inverse CDF: increasing in the uniform draw
    assert drawn[-1] > 2.5  # the largest draw is far in the upper tail (or b)
    # the draws above the mode: P(Z >= x) is the mass left above them
    for u, x in zip(uniforms[3:6], drawn[3:6]):
        low, high = STANDARD.cdf(a), STANDARD.cdf(-b)
        assert STANDARD.cdf(-x) == pytest.approx(high + (1.0 - u) * (1.0 - low - high), rel=1e-9, abs=1e-15)
