"""A large Parzen estimator's caches of stepped terms (parzen._Numeric.stepped_terms' pairs and rows, _Pruned._term's
masses) emptied when they pass their bound (_MOST_MASSES, made small here so that a test reaches it): the densities
stay the whole mixture's, in an estimator and in the one edited from it; and a large estimator without a continuous
dimension (nothing to prune on) is evaluated whole. Written from mutation testing (issue 49): no test reached the
bound, nor a large estimator of only stepped and categorical parameters."""
import random

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.samplers import parzen
from azext_batchai_sweep.core.tuning.samplers.space import dimensions

SPECS = [DiscreteParamSpec('OPT', ['a', 'b', 'c']), NumParamSpec('LAYERS', 1, 20, 'INTEGER', 'LINEAR'),
         NumParamSpec('UNITS', 1, 64, 'INTEGER', 'LOG'), NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]


def _space(specs, seed):
    """(the dimensions of specs, a function drawing a random point of them in internal coordinates)"""
    dims = dimensions(specs)
    rng = random.Random(seed)
    return dims, lambda: tuple(dim.to_internal(spec.sample(rng)) for dim, spec in zip(dims, specs))


def test_stepped_caches_emptied_at_their_bound_give_the_whole_mixtures_density(monkeypatch):
    monkeypatch.setattr(parzen, '_MOST_MASSES', 40)
    dims, point = _space(SPECS, 8)
    count = parzen.PRUNE_KERNELS + 100
    points = [point() for _ in range(count)]
    ids = list(range(count))
    first = parzen.ParzenEstimator(dims, points, [1.0] * count, ids=ids)
    whole = parzen.ParzenEstimator(dims, points, [1.0] * count, prune=False)
    probes = [point() for _ in range(30)]
    for p in probes:
        assert first.log_pdf(p) == whole.log_pdf(p)
    assert first._pruned  # pylint: disable=protected-access
    points2 = points[:50] + points[51:] + [point(), point()]
    ids2 = ids[:50] + ids[51:] + [count, count + 1]
    edited = parzen.ParzenEstimator(dims, points2, [1.0] * (count + 1), ids=ids2, previous=first)
    whole2 = parzen.ParzenEstimator(dims, points2, [1.0] * (count + 1), prune=False)
    for p in probes + [point() for _ in range(30)]:
        assert edited.log_pdf(p) == whole2.log_pdf(p)


def test_a_large_estimator_without_a_continuous_dimension_gives_the_whole_mixtures_density():
    # nothing to sort kernels on: every kernel is evaluated, at every point
    dims, point = _space(SPECS[:3], 2)
    count = parzen.PRUNE_KERNELS + 20
    points = [point() for _ in range(count)]
    estimator = parzen.ParzenEstimator(dims, points, [1.0] * count)
    whole = parzen.ParzenEstimator(dims, points, [1.0] * count, prune=False)
    for p in [point() for _ in range(20)]:
        assert estimator.log_pdf(p) == whole.log_pdf(p)
