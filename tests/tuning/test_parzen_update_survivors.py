"""A Parzen estimator made from the previous suggestion's (parzen.ParzenEstimator's ``previous``, issue 44), where
mutation testing found its rules untested (issue 49): a sampler whose groups grow from small estimators (every kernel
evaluated, no ids kept) to large ones suggests what a new sampler suggests; and an estimator of the same observations
as the previous one keeps the previous one's index of its kernels (the means sorted on the box dimensions,
parzen._Pruned) instead of sorting every dimension again, with the densities of one built whole. The estimators count
as large here from 40 kernels (PRUNE_KERNELS), so that a few hundred observations take the paths 10,000 take."""
import random

import pytest

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.samplers import parzen
from azext_batchai_sweep.core.tuning.samplers.space import dimensions
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

from .helpers import CountedId

# pylint: disable=protected-access


@pytest.fixture(autouse=True)
def _small_large_estimators(monkeypatch):
    monkeypatch.setattr(parzen, 'PRUNE_KERNELS', 40)


def _built(monkeypatch):
    """A list that gets one item for each index of kernels (parzen._Pruned) built from now on."""
    built = []
    init = parzen._Pruned.__init__

    def counted(self, *args, **kwargs):
        built.append(1)
        return init(self, *args, **kwargs)
    monkeypatch.setattr(parzen._Pruned, '__init__', counted)
    return built


@pytest.mark.parametrize('multivariate', [False, True])
def test_a_sampler_whose_groups_grow_large_suggests_what_a_new_one_does(multivariate):
    """Over choices only (an estimator's settings are then the same at every count, so only its size tells a small
    previous one from a large one)."""
    specs = [DiscreteParamSpec('C%d' % i, ['a', 'b', 'c', 'd', 'e', 'f']) for i in range(3)]
    rng = random.Random(11)
    score = {'a': 0.0, 'b': 0.4, 'c': 0.1, 'd': 0.9, 'e': 0.3, 'f': 0.6}

    def sampler():
        return TPESampler(specs, goal='min', seed=2, multivariate=multivariate, startup_jobs=5)
    warm, trials = sampler(), []
    for step in range(12):  # 8 finished jobs a poll: the bad group passes 40 (large) a few polls in
        for _ in range(8):
            params = {s.name: rng.choice('abcdef') for s in specs}
            trials.append(Trial(name='j%d' % len(trials), index=len(trials), params=params, state='succeeded',
                                reports=(Report(1, sum(score[v] for v in params.values())),)))
        assert warm.suggest(trials, 2) == sampler().suggest(trials, 2), step
    assert all(above.ids is not None for _, _, above in warm.models(trials))  # large ones were made


def test_an_estimator_of_the_same_observations_keeps_its_index_of_kernels(monkeypatch):
    dims = dimensions([NumParamSpec('X%d' % i, 0.0, 1.0, 'REAL', 'LINEAR') for i in range(3)])
    rng = random.Random(5)
    points = [tuple(rng.random() for _ in dims) for _ in range(300)]
    ids, weights = list(range(300)), [1.0] * 300
    probes = [tuple(rng.random() for _ in dims) for _ in range(8)]
    built = _built(monkeypatch)
    previous = parzen.ParzenEstimator(dims, points, weights, ids=ids)
    densities = [previous.log_pdf(p) for p in probes]
    assert len(built) == 1
    for poll in range(3):  # polls that move no job between the groups
        same = parzen.ParzenEstimator(dims, list(points), weights, ids=list(ids), previous=previous)
        assert [same.log_pdf(p) for p in probes] == densities, poll
        assert len(built) == 1, poll
        previous = same
    whole = parzen.ParzenEstimator(dims, points, weights, prune=False)
    assert [whole.log_pdf(p) for p in probes] == densities


@pytest.mark.parametrize('moved', [False, True], ids=['the same observations', 'one moved'])
def test_the_previous_estimator_asked_again_builds_its_index_again(monkeypatch, moved):
    """Its index moved to the new estimator (_Pruned.adopted); asked again, it builds another: its densities are
    the ones it gave before, still summed over the kernels that can matter (a large estimator's density), not over
    every kernel."""
    dims = dimensions([NumParamSpec('X%d' % i, 0.0, 1.0, 'REAL', 'LINEAR') for i in range(3)])
    rng = random.Random(7)
    points = [tuple(rng.random() for _ in dims) for _ in range(300)]
    ids, weights = list(range(300)), [1.0] * 300
    probes = [tuple(rng.random() for _ in dims) for _ in range(8)]
    previous = parzen.ParzenEstimator(dims, points, weights, ids=ids)
    densities = [previous.log_pdf(p) for p in probes]
    changed = list(points)
    if moved:
        changed[150] = (0.5, 0.5, 0.5)
    parzen.ParzenEstimator(dims, changed, weights, ids=list(ids), previous=previous).log_pdf(probes[0])
    built, evaluated = _built(monkeypatch), []
    add_terms = parzen._Numeric.add_terms
    monkeypatch.setattr(parzen._Numeric, 'add_terms', lambda *a: evaluated.append(1) or add_terms(*a))
    assert [previous.log_pdf(p) for p in probes] == densities
    assert len(built) == 1 and not evaluated


@pytest.mark.parametrize('change', ['moved', 'left and joined'])
def test_too_many_changes_are_given_up_on_past_the_most_edits(change):
    """parzen._changes answers None (the estimator built whole) once more than _MOST_EDITS observations differ,
    without walking the rest of the changes: 1,000 of 3,000 jobs moved (each removed and added), or 500 left and 500
    joined between them."""
    rng = random.Random(4)
    ids = [CountedId(2 * k) for k in range(3000)]
    points = [(rng.random(),) for _ in ids]
    new_ids, new_points = list(ids), list(points)
    for k in range(0, 3000, 3):
        if change == 'moved':
            new_points[k] = (rng.random(),)
        elif k % 2:
            new_ids[k] = CountedId(2 * k + 1)  # job 2k left, job 2k + 1 joined
    CountedId.asked[0] = 0
    assert parzen._changes(ids, points, new_ids, new_points) is None
    # (a moved job: 2 ids looked at; a job that left or joined: ~25, the halving search of the ids; walking all
    # 1,000 changes was ~2,000 and ~23,000)
    per_change = 2 if change == 'moved' else 30
    assert CountedId.asked[0] <= per_change * (parzen._MOST_EDITS + 2), CountedId.asked[0]


@pytest.mark.parametrize('where', ['moved inside', 'joined at the end'])
def test_exactly_the_most_edits_are_edited_and_one_more_is_built_whole(where):
    """_MOST_EDITS is the most edits an estimator takes from the previous one: at exactly that many it is edited,
    one more and it is built whole. A moved observation is 2 edits (removed and added); a job that joined after the
    others, 1."""
    rng = random.Random(6)
    ids = list(range(0, 2000, 2))
    points = [(rng.random(),) for _ in ids]
    for edits in (parzen._MOST_EDITS, parzen._MOST_EDITS + 1, parzen._MOST_EDITS + 2):
        new_ids, new_points = list(ids), list(points)
        if where == 'moved inside':
            if edits % 2:
                continue
            for k in range(0, edits // 2 * 7, 7):
                new_points[k] = (rng.random(),)
        else:
            new_ids += [2000 + k for k in range(edits)]
            new_points += [(rng.random(),) for _ in range(edits)]
        found = parzen._changes(ids, points, new_ids, new_points)
        if edits > parzen._MOST_EDITS:
            assert found is None, edits
        else:
            removed, added = found
            assert len(removed) + len(added) == edits
