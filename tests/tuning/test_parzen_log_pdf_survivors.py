"""A large Parzen estimator's density over one continuous dimension and a categorical one (parzen._Pruned.log_pdf:
the kernels sorted on the continuous dimension alone) at points far from every narrow kernel, where the box of the
kernels right around the point is empty and the first lower bound of the largest term comes from the kernels next
to the point in the sorted means. Written from mutation testing (issue 49): the scale tests' points are never far
from a narrow kernel, and their estimators have several continuous dimensions."""
from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.samplers import parzen
from azext_batchai_sweep.core.tuning.samplers.space import dimensions

from .test_parzen_pruned_edges import _assert_same, _pruned_densities, _whole

# pylint: disable=protected-access


def test_a_point_far_from_every_narrow_kernel_of_one_continuous_dimension_gives_the_whole_mixtures_density():
    # Two clusters of 300 narrow kernels (spacing 1e-4) at both ends of the range, each of the three categories in
    # turn; the probes lie in the gap between them, thousands of bandwidths from every narrow kernel, and at the ends.
    dims = dimensions([NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR'), DiscreteParamSpec('C', ['a', 'b', 'c'])])
    points = [(k * 1e-4, k % 3) for k in range(300)] + [(1.0 - k * 1e-4, k % 3) for k in range(300)]
    points.sort()
    estimator = parzen.ParzenEstimator(dims, points, [1.0] * len(points), magic_clip=False)
    probes = [(x, c) for x in (0.2, 0.5, 0.8, 0.0, 1.0, 0.0301) for c in range(3)]
    fast = _pruned_densities(estimator, probes)
    assert estimator._pruned.box_dims == [0]
    assert not estimator._pruned._box((0.5, 0), parzen._NEAR_ROOM)  # nothing right around the point
    _assert_same(fast, _whole(estimator, probes))
