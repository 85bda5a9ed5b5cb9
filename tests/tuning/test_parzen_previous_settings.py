"""An estimator edited from the previous one (parzen.ParzenEstimator's ``previous``) only where both have the same
dimensions and settings: a bandwidth floor of another count, or a dimension of another kind over the same range, gives
the estimator built whole, never the previous kernels edited (mutation testing, issue 49: these two were untested).

The floor (Optuna's magic clip: range / min(100, count + 2)) depends on the count of observations the caller gives
(``clip_count``) below 98, and on the range, here symmetric about 0 (-1..1) as well as 0..1."""
import random

import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.samplers import parzen
from azext_batchai_sweep.core.tuning.samplers.space import dimensions

# pylint: disable=protected-access


@pytest.fixture(autouse=True)
def _small_large_estimators(monkeypatch):
    monkeypatch.setattr(parzen, 'PRUNE_KERNELS', 40)


def _no_edits(monkeypatch):
    monkeypatch.setattr(parzen._Numeric, 'updated', lambda *args: (_ for _ in ()).throw(AssertionError('edited')))


def _same(built, whole, probes):
    assert [k.sigmas for k in built.kernels] == [k.sigmas for k in whole.kernels]
    assert [built.log_pdf(p) for p in probes] == [whole.log_pdf(p) for p in probes]


@pytest.mark.parametrize('low', [0.0, -1.0])
def test_another_bandwidth_floor_gives_the_estimator_built_whole(low, monkeypatch):
    rng = random.Random(3)
    dims = dimensions([NumParamSpec('X', low, 1.0, 'REAL', 'LINEAR'), NumParamSpec('Y', low, 1.0, 'REAL', 'LINEAR')])
    points = [(low + rng.random() * (1 - low), low + rng.random() * (1 - low)) for _ in range(60)]
    ids = list(range(60))
    previous = parzen.ParzenEstimator(dims, points, [1.0] * 60, ids=ids, clip_count=60)
    previous.log_pdf(points[0])
    _no_edits(monkeypatch)
    points2, ids2 = points[:-1] + [(low, 1.0)], ids[:-1] + [100]
    built = parzen.ParzenEstimator(dims, points2, [1.0] * 60, ids=ids2, clip_count=90, previous=previous)
    whole = parzen.ParzenEstimator(dims, points2, [1.0] * 60, ids=ids2, clip_count=90)
    assert min(whole.kernels[0].sigmas) < min(previous.kernels[0].sigmas), 'a lower floor: narrower kernels'
    _same(built, whole, points2[:5])


def test_a_dimension_of_another_kind_over_the_same_range_gives_the_estimator_built_whole(monkeypatch):
    """REAL -0.5..30.5 and INTEGER 0..30 (its cells: -0.5..30.5) have the same range and floor; an INTEGER kernel's
    mass is over the point's cell."""
    rng = random.Random(4)
    real = dimensions([NumParamSpec('N', -0.5, 30.5, 'REAL', 'LINEAR'), NumParamSpec('Y', 0, 1, 'REAL', 'LINEAR')])
    integer = dimensions([NumParamSpec('N', 0, 30, 'INTEGER', 'LINEAR'), NumParamSpec('Y', 0, 1, 'REAL', 'LINEAR')])
    points = [(float(rng.randint(0, 30)), rng.random()) for _ in range(60)]
    ids = list(range(60))
    previous = parzen.ParzenEstimator(real, points, [1.0] * 60, ids=ids)
    previous.log_pdf(points[0])
    _no_edits(monkeypatch)
    built = parzen.ParzenEstimator(integer, points, [1.0] * 60, ids=ids, previous=previous)
    whole = parzen.ParzenEstimator(integer, points, [1.0] * 60, ids=ids)
    assert (real[0].low, real[0].high, real[0].kind) == (integer[0].low, integer[0].high, 'continuous')
    assert integer[0].kind != real[0].kind
    _same(built, whole, points[:5])
