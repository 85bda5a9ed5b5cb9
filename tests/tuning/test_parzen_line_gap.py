"""A large one-dimensional Parzen estimator's density (parzen._Pruned._log_pdf_1d) at a point in a gap between two
clusters of narrow kernels, far from every one of them: its first estimate of the largest term (a lower bound, from
the kernels around the point) must never exceed the true one, or the window of kernels summed is too narrow. Written
from mutation testing (issue 49): the scale tests' points are never far from a narrow kernel."""
import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.samplers import parzen
from azext_batchai_sweep.core.tuning.samplers.space import dimensions

from .test_parzen_pruned_edges import _assert_same, _pruned_densities, _whole

# pylint: disable=protected-access


@pytest.mark.parametrize('low, left_end, right_start', [(0.0, 0.33, 0.6),  # positive coordinates
                                                        (-1.0, -0.33, 0.33 - 7.2e-4)])  # a mean opposite the point
def test_a_point_in_a_gap_far_from_every_narrow_kernel_gives_the_whole_mixtures_density(low, left_end, right_start):
    # Two clusters of 301 narrow kernels (spacing g); the kernels at the gap's ends are wide (their bandwidth is the
    # gap) and weigh next to nothing, as does the prior: at a point 6 to 8 g into the gap the density is the left
    # cluster's kernels' tails alone, some 30 below their peaks, and kernels 10 to 13 bandwidths away still count
    # (more than 1e-12 of it). The kernels just right of the point are far away in their own bandwidths.
    g = 1e-4
    dims = dimensions([NumParamSpec('X', low, 1.0, 'REAL', 'LINEAR')])
    points = [left_end - (300 - k) * g for k in range(301)] + [right_start + k * g for k in range(301)]
    weights = [1.0] * len(points)
    weights[300] = weights[301] = 1e-30
    estimator = parzen.ParzenEstimator(dims, [(x,) for x in points], weights, prior_weight=1e-30, magic_clip=False)
    probes = [(left_end + k * g,) for k in (5.0, 6.5, 7.2, 8.0)] + [(right_start - 7.2 * g,)]
    fast = _pruned_densities(estimator, probes)
    assert estimator._pruned.always == [602, 300, 301]  # the prior and the gap's two ends: the rest on the line
    _assert_same(fast, _whole(estimator, probes))
