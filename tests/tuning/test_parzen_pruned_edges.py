"""A large Parzen estimator's density (parzen._Pruned: the kernels that can matter at a point) where the scale tests'
spaces do not go: it must be the whole mixture's wherever its kernels lie and however wide they are.

- one dimension with at most one narrow kernel (the others much wider, evaluated at every point), or none left
  after an edit, on the range 1 and on one far wider (bandwidths above 1);
- a continuous dimension then a categorical one (the partial sums are the terms: no second pass);
- four continuous dimensions of a tiny range (kernels of huge peak densities, one dimension outside the box);
- an estimator edited from the previous one (``previous=``) where it must be built whole instead: too many
  observations changed, or too few observations to edit.
"""
import random

import pytest

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.samplers import parzen
from azext_batchai_sweep.core.tuning.samplers.space import dimensions

# pylint: disable=protected-access


def _whole(estimator, points):
    """The densities at ``points`` summed over every kernel (the pruned sum switched off)."""
    pruned = estimator._pruned
    estimator._pruned = False
    try:
        return [estimator.log_pdf(p) for p in points]
    finally:
        estimator._pruned = pruned


def _assert_same(fast, whole):
    assert len(fast) == len(whole)
    for a, b in zip(fast, whole):
        assert abs(a - b) <= 1e-12 * max(1.0, abs(b)), (a, b)


def _pruned_densities(estimator, points):
    fast = [estimator.log_pdf(p) for p in points]
    assert estimator._pruned, 'the pruned sum is on here'
    return fast


# ---- one dimension: the narrow kernels on a line (_Pruned._log_pdf_1d) -------------------------------------------

ONE_NARROW = [0.0, 0.3, 0.3000001, 0.3000002, 0.7, 1.0]  # the middle one's bandwidth 1e-7 of the range, the others'
# more than 0.29. The range 1 (the narrow kernel's peak density e^15) and 1e9 (bandwidths far above 1 in the dimension's
# own units).
SCALES = [1.0, 1e9]
LINES = {scale: dimensions([NumParamSpec('X', 0, scale, 'REAL', 'LINEAR')]) for scale in SCALES}


def _line_estimator(scale, points, ids=None, previous=None):
    # Without the magic clip's floor, a tight cluster's middle kernel is far narrower than the others.
    return parzen.ParzenEstimator(LINES[scale], [(x * scale,) for x in points], [1.0] * len(points),
                                  magic_clip=False, ids=ids, previous=previous)


def _line_probes(scale):
    rng = random.Random(5)
    near = [0.3000001 + 5e-8 * k for k in range(-30, 31)]  # up to 15 bandwidths from the narrow kernel
    return [(x * scale,) for x in near + [rng.random() for _ in range(20)] + [0.0, 1.0]]


@pytest.mark.parametrize('scale', SCALES)
def test_a_line_of_one_narrow_kernel_among_wide_ones_gives_the_whole_mixtures_density(monkeypatch, scale):
    monkeypatch.setattr(parzen, 'PRUNE_KERNELS', 4)
    estimator = _line_estimator(scale, ONE_NARROW)
    probes = _line_probes(scale)
    fast = _pruned_densities(estimator, probes)
    assert len(estimator._pruned.wide) == len(ONE_NARROW) - 1, 'one narrow kernel only'
    _assert_same(fast, _whole(estimator, probes))


@pytest.mark.parametrize('scale', SCALES)
def test_a_line_left_with_no_narrow_kernel_by_an_edit_gives_the_whole_mixtures_density(monkeypatch, scale):
    """The narrow kernel's neighbour leaves: edited from the previous estimator, it is wider than the line's
    widest bandwidth (evaluated at every point now), and no narrow kernel is left on the line."""
    monkeypatch.setattr(parzen, 'PRUNE_KERNELS', 4)
    ids = list(range(len(ONE_NARROW)))
    previous = _line_estimator(scale, ONE_NARROW, ids=ids)
    probes = _line_probes(scale)
    _pruned_densities(previous, probes)
    kept = [k for k in ids if k != 3]  # 0.3000002 leaves
    edited = _line_estimator(scale, [ONE_NARROW[k] for k in kept], ids=kept, previous=previous)
    fast = _pruned_densities(edited, probes)
    assert not edited._pruned._line[0], 'no narrow kernel left on the line'
    built = _line_estimator(scale, [ONE_NARROW[k] for k in kept], ids=kept)
    _assert_same(fast, _whole(built, probes))
    _assert_same(fast, _whole(edited, probes))


def test_a_line_of_many_kernels_with_bandwidths_above_1_gives_the_whole_mixtures_density():
    rng = random.Random(3)
    dims = dimensions([NumParamSpec('X', 0, 1000, 'REAL', 'LINEAR')])
    points = [(rng.random() * 1000,) for _ in range(700)]
    estimator = parzen.ParzenEstimator(dims, points, [1.0] * len(points))
    probes = [(rng.random() * 1000,) for _ in range(60)] + [(0.0,), (1000.0,)]
    _assert_same(_pruned_densities(estimator, probes), _whole(estimator, probes))


# ---- several dimensions: the partial sums of _Pruned._filter ------------------------------------------------------

def test_a_continuous_then_a_categorical_dimension_gives_the_whole_mixtures_density():
    """In this order the pruned sum's partial sums are the kernels' terms (no second pass in the dimensions' order):
    a categorical term counted as a hit where the point's category is the kernel's, a miss elsewhere."""
    rng = random.Random(4)
    dims = dimensions([NumParamSpec('X', 0, 1, 'REAL', 'LINEAR'), DiscreteParamSpec('OPT', ['adam', 'sgd', 'rmsprop'])])
    points = [(rng.random() ** 2, rng.choice([0, 0, 0, 1, 2])) for _ in range(800)]
    estimator = parzen.ParzenEstimator(dims, points, [1.0] * len(points))
    probes = [(rng.random(), c) for c in range(3) for _ in range(15)] + points[:10]
    fast = _pruned_densities(estimator, probes)
    assert estimator._pruned.in_order
    _assert_same(fast, _whole(estimator, probes))


def test_four_continuous_dimensions_of_a_tiny_range_give_the_whole_mixtures_density():
    """Bandwidths of 1e-8 give kernel peaks of e^17.5 in each dimension. The dimension outside the box (X3) is added
    first: a kernel 3 bandwidths from the point in X0 and 6 in X3 (outside the box of the first kernels looked at) has
    a term about 22 below the largest, so the bound of the dimensions not added yet after X3 must be all of theirs
    (52), not X3's own (17.5). 660 observations on a lattice of a bandwidth's step: 11 in X0 by 60 in X3."""
    specs = [NumParamSpec('X%d' % i, 0, 1e-6, 'REAL', 'LINEAR') for i in range(4)]
    dims = dimensions(specs)
    x0, x1, x2, x3 = 3e-7, 5e-7, 7e-7, 2e-7
    points = [(x0 + 1e-8 * j, x1, x2, x3 + 1e-8 * k) for j in range(11) for k in range(60)]
    estimator = parzen.ParzenEstimator(dims, points, [1.0] * len(points))
    probes = [(x0 + 5e-9 * j, x1, x2, x3 + 2.5e-9 * k) for j in range(0, 20, 3) for k in range(0, 240, 13)]
    rng = random.Random(6)
    probes += [tuple(rng.random() * 1e-6 for _ in range(4)) for _ in range(5)]
    fast = _pruned_densities(estimator, probes)
    assert not estimator._pruned.in_order, 'the dimension outside the box first'
    _assert_same(fast, _whole(estimator, probes))


# ---- an estimator edited from the previous one, or built whole ----------------------------------------------------

def _mixed_points(rng, count):
    return [(rng.random(), rng.random() ** 3) for _ in range(count)]


def test_an_estimator_whose_observations_changed_too_much_is_built_whole():
    """More than _MOST_EDITS observations differ from the previous estimator's: the new one is built whole, and its
    densities are those of one built without ``previous``."""
    rng = random.Random(7)
    dims = dimensions([NumParamSpec('X', 0, 1, 'REAL', 'LINEAR'), NumParamSpec('Y', 0, 1, 'REAL', 'LINEAR')])
    points = _mixed_points(rng, 700)
    ids = list(range(700))
    previous = parzen.ParzenEstimator(dims, points, [1.0] * 700, ids=ids)
    probes = [(rng.random(), rng.random()) for _ in range(30)]
    _pruned_densities(previous, probes)
    changed = list(points)
    for k in range(100, 100 + parzen._MOST_EDITS + 10):
        changed[k] = (rng.random(), rng.random())
    edited = parzen.ParzenEstimator(dims, changed, [1.0] * 700, ids=ids, previous=previous)
    built = parzen.ParzenEstimator(dims, changed, [1.0] * 700, ids=ids)
    _assert_same([edited.log_pdf(p) for p in probes], [built.log_pdf(p) for p in probes])
    _assert_same([edited.log_pdf(p) for p in probes], _whole(built, probes))


@pytest.mark.parametrize('before, after', [(1, 3), (3, 1)])
def test_an_estimator_of_a_single_observation_is_never_edited(monkeypatch, before, after):
    """An estimator is edited from the previous one only when both have at least 2 observations (here, every
    estimator keeps its observations: PRUNE_KERNELS 1); else it is built whole, as if there were no previous."""
    monkeypatch.setattr(parzen, 'PRUNE_KERNELS', 1)
    rng = random.Random(8)
    dims = dimensions([NumParamSpec('X', 0, 1, 'REAL', 'LINEAR'), NumParamSpec('Y', 0, 1, 'REAL', 'LINEAR')])
    points = _mixed_points(rng, 3)
    # (the same bandwidth floor at every count: clip_count)
    previous = parzen.ParzenEstimator(dims, points[:before], [1.0] * before, ids=list(range(before)), clip_count=200)
    probes = [(rng.random(), rng.random()) for _ in range(10)]
    _pruned_densities(previous, probes)
    edited = parzen.ParzenEstimator(dims, points[:after], [1.0] * after, ids=list(range(after)), previous=previous,
                                    clip_count=200)
    built = parzen.ParzenEstimator(dims, points[:after], [1.0] * after, ids=list(range(after)), clip_count=200)
    _assert_same([edited.log_pdf(p) for p in probes], _whole(built, probes))
