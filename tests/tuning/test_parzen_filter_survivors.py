"""A large estimator's pruned density (parzen._Pruned._filter) in the two layouts its partial sums were untested in
(mutation testing, issue 49): it must be the whole mixture's.

- a stepped (INTEGER) dimension before the box's continuous one: the dimensions are added in their own order, so the
  partial sums are the kernels' terms, a stepped term (the log of the kernel's mass in the point's cell, below 0)
  added as the whole mixture adds it;
- four continuous dimensions of a wide range (bandwidths far above 1 in the dimension's units): the dimension outside
  the box is added first, its bound from ``z = (x - mean) / bandwidth`` (a kernel 100 units from the point with a
  bandwidth of 1,000 is 0.1 bandwidths away, not 100,000).
"""
import random

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.samplers import parzen
from azext_batchai_sweep.core.tuning.samplers.space import dimensions

from .test_parzen_pruned_edges import _assert_same, _pruned_densities, _whole

# pylint: disable=protected-access


def test_a_stepped_then_a_continuous_dimension_gives_the_whole_mixtures_density():
    rng = random.Random(8)
    dims = dimensions([NumParamSpec('N', 0, 40, 'INTEGER', 'LINEAR'), NumParamSpec('X', 0, 1, 'REAL', 'LINEAR')])
    points = [(rng.randint(0, 40), rng.random() ** 2) for _ in range(700)]
    estimator = parzen.ParzenEstimator(dims, points, [1.0] * len(points))
    probes = [(n, rng.random()) for n in (0, 3, 17, 40) for _ in range(10)] + points[:10]
    fast = _pruned_densities(estimator, probes)
    assert estimator._pruned.in_order, 'the stepped dimension first, then the box: their own order'
    # the stepped terms are not all 0 (a kernel wider than its cell has less than all its mass there)
    stepped, n = estimator.kernels[0], probes[0][0]
    assert min(stepped.stepped_terms(range(len(points)), n, stepped.cell(n))) < -0.01
    _assert_same(fast, _whole(estimator, probes))


def test_four_continuous_dimensions_of_a_wide_range_give_the_whole_mixtures_density():
    rng = random.Random(9)
    dims = dimensions([NumParamSpec('X%d' % i, 0, 10000, 'REAL', 'LINEAR') for i in range(4)])
    points = [tuple(rng.random() * 10000 for _ in range(4)) for _ in range(700)]
    estimator = parzen.ParzenEstimator(dims, points, [1.0] * len(points))
    probes = [tuple(rng.random() * 10000 for _ in range(4)) for _ in range(40)] + points[:10]
    fast = _pruned_densities(estimator, probes)
    assert not estimator._pruned.in_order, 'the dimension outside the box first'
    assert min(estimator.kernels[3].sigmas) > 10, 'bandwidths far above 1'
    _assert_same(fast, _whole(estimator, probes))
