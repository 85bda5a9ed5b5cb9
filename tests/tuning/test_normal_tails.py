"""The standard normal helpers of the Parzen estimators (core/tuning/samplers/_normal.py): a kernel's mass over a
cell, exact where doubles hold it and, past ~37 standard deviations where both tails underflow, the density at the
nearer end times the width (a tight upper bound), so that far kernels keep finite, ordered log masses.

Oracle: statistics.NormalDist (another computation of the CDF) where the mass is representable, the Mills ratio's
asymptotic series, log P(Z >= a) = log phi(a) - log a + log(1 - 1/a^2 + 3/a^4), in the far tails."""
import math
import statistics

import pytest

from azext_batchai_sweep.core.tuning.samplers import _normal

STANDARD = statistics.NormalDist()
LOG_PHI = -0.5 * math.log(2 * math.pi)


@pytest.mark.parametrize('a, b', [(-1.0, 0.5), (-3.0, -2.0), (0.2, 2.5), (-0.1, 0.1), (1.0, 8.0), (-8.0, -1.0)])
def test_the_log_mass_of_a_representable_interval_is_the_cdfs_difference(a, b):
    assert _normal.log_mass(a, b) == pytest.approx(math.log(STANDARD.cdf(b) - STANDARD.cdf(a)), rel=1e-9)


@pytest.mark.parametrize('a', [38.0, 40.0, 45.0, 60.0])
def test_past_the_underflow_the_log_mass_is_the_tails_asymptotic_value(a):
    exact = -0.5 * a * a + LOG_PHI - math.log(a) + math.log(1 - 1 / a ** 2 + 3 / a ** 4)
    for b in (a + 1.0, a + 5.0):  # the upper end adds nothing at this depth
        value = _normal.log_mass(a, b)
        assert exact - 1e-7 <= value <= exact + 1e-3  # a subnormal mass, or an upper bound: tight (the series: ~1e-8)
        assert _normal.log_mass(-b, -a) == value  # the lower tail mirrors it


def test_a_narrow_far_cell_is_its_width_times_the_density_and_far_cells_stay_ordered():
    width = 1e-3
    value = _normal.log_mass(40.0, 40.0 + width)
    # the density falls by e^-(40 x width) across the cell: within 4% of its value at the nearer end
    assert -0.5 * 1600 + LOG_PHI + math.log(width) - 0.05 <= value <= -0.5 * 1600 + LOG_PHI + math.log(width)
    masses = [_normal.log_mass(a, a + 1.0) for a in (37.5, 40.0, 50.0, 80.0, 200.0)]
    assert all(math.isfinite(m) for m in masses) and masses == sorted(masses, reverse=True)


def test_the_log_density():
    for z in (0.0, 1.0, -2.5, 40.0):
        assert _normal.log_pdf(z) == pytest.approx(math.log(STANDARD.pdf(z)) if abs(z) < 30 else -0.5 * z * z + LOG_PHI)


@pytest.mark.parametrize('a, b', [(0.0, 0.7), (0.3, 0.9), (0.5, 2.0), (0.999, 1.5), (0.1, 6.0), (1.0, 3.0)])
def test_a_cell_and_its_mirror_image_have_the_same_log_mass_to_the_last_bit(a, b):
    """P(a <= Z <= b) = P(-b <= Z <= -a): a cell in the upper half is mirrored into the lower one, where both ends'
    masses come from the lower tail (no 1 - P close to 1), so the two give the same float."""
    assert _normal.log_mass(a, b) == _normal.log_mass(-b, -a)
