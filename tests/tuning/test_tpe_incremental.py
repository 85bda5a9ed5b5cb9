"""A sampler asked again (issue 44): it reads only the trials that changed since its last suggestion and edits its
Parzen estimators where the observations differ (core/tuning/samplers/tpe._History, parzen.ParzenEstimator's
``previous``). The rule: a warm sampler suggests exactly what a new one suggests for the same trials, its densities
are the same floats, over a sweep that grows, where jobs finish, fail, join and leave the good group, and where a
job's reported fields change; and its work follows what changed, not the number of jobs. Not timed
(bench/suggest.py measures the time). The estimators count as large here from 40 kernels (PRUNE_KERNELS), so that
a few hundred jobs take the paths 10,000 take."""
import dataclasses
import random

import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.objectives import Objectives
from azext_batchai_sweep.core.tuning.samplers import parzen, tpe
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

from .scale_spaces import SPACES, objective


@pytest.fixture(autouse=True)
def _small_large_estimators(monkeypatch):
    monkeypatch.setattr(parzen, 'PRUNE_KERNELS', 40)


def _finished(trial, rng):
    """The job done: mostly succeeded (its value, a second metric), some failed, some stopped early."""
    roll = rng.random()
    if roll < 0.1:
        return dataclasses.replace(trial, state='failed', reports=())
    value = objective(trial.params)
    if roll < 0.2:
        return dataclasses.replace(trial, state='terminated', stopped_early=True, reports=(Report(1, value + 1),))
    return dataclasses.replace(trial, state='succeeded', reports=(Report(1, value),),
                               metrics={'b': 1.0 / (1.0 + abs(value))})


def _sweep(specs, seed, start, steps, slots=4):
    """The trials a run sees at each of its polls: `start` random finished jobs, then at each poll one to three of
    the running jobs finish and new ones (half of them the sampler's earlier suggestions, half random) start."""
    rng = random.Random(seed)
    trials = []
    for index in range(start):
        params = {spec.name: spec.sample(rng) for spec in specs}
        trials.append(_finished(Trial(name='j%d' % index, index=index, params=params, state='running'), rng))
    for _ in range(steps):
        running = [k for k, t in enumerate(trials) if t.state == 'running']
        for k in rng.sample(running, min(len(running), rng.randint(1, 3))):
            trials[k] = _finished(trials[k], rng)
        while sum(t.state == 'running' for t in trials) < slots:
            params = {spec.name: spec.sample(rng) for spec in specs}
            trials.append(Trial(name='j%d' % len(trials), index=len(trials), params=params, state='running'))
        # A new poll: new Trial objects, new dicts with the same items.
        yield [dataclasses.replace(t, params=dict(t.params), metrics=dict(t.metrics)) for t in trials]


def _densities(sampler, trials, seed):
    """Each model's log l and log g at points drawn from its own l and g."""
    found = []
    for _, below, above in sampler.models(trials):
        points = below.sample(random.Random(seed), 8) + above.sample(random.Random(seed + 1), 8)
        found.append([(below.log_pdf(p), above.log_pdf(p)) for p in points])
    return found


@pytest.mark.parametrize('space', sorted(SPACES))
def test_a_warm_sampler_suggests_what_a_new_one_suggests_over_a_growing_sweep(space):
    specs = SPACES[space]
    warm = TPESampler(specs, goal='min', seed=3)
    rebuilt = 0
    for trials in _sweep(specs, seed=len(space), start=150, steps=40):
        assert warm.suggest(trials, 2) == TPESampler(specs, goal='min', seed=3).suggest(trials, 2)
        rebuilt += 1
    assert rebuilt == 40


@pytest.mark.parametrize('space', sorted(SPACES))
def test_a_warm_samplers_densities_are_the_same_floats(space):
    specs = SPACES[space]
    warm = TPESampler(specs, goal='min', seed=5)
    for step, trials in enumerate(_sweep(specs, seed=10 + len(space), start=120, steps=15)):
        warm.suggest(trials, 1)
        assert _densities(warm, trials, step) == _densities(TPESampler(specs, goal='min', seed=5), trials, step)


def test_motpe_warm_and_new_suggest_the_same():
    specs = SPACES['continuous 2']
    objectives = Objectives([('a', 'min'), ('b', 'max')])
    warm = MOTPESampler(specs, objectives, seed=2)
    for trials in _sweep(specs, seed=4, start=150, steps=25):
        trials = [dataclasses.replace(t, reports=tuple(Report(1, (t.params['X'] + 5) / 15) for _ in t.reports))
                  for t in trials]
        assert warm.suggest(trials, 2) == MOTPESampler(specs, objectives, seed=2).suggest(trials, 2)
    assert warm.split.partial > 10  # its split kept from one poll to the next (motpe._Split)


def test_bohbs_model_warm_and_new_suggest_the_same():
    specs = SPACES['continuous 6']

    def model():
        return BudgetModel(specs, 'min', 9, values_at=lambda t: {81.0: t.last} if t.reports else {},
                           random_fraction=0.0)
    warm = model()
    for step, trials in enumerate(_sweep(specs, seed=6, start=150, steps=20)):
        assert warm.suggest(trials, 'b%d' % step)[0] == model().suggest(trials, 'b%d' % step)[0]


def test_a_job_whose_fields_change_is_read_again():
    """The same index with other parameters, another type of an equal value (1 and True), another state, another
    last value, another metric: each is a different job to the model, as to a new sampler."""
    specs = [NumParamSpec('N', 1, 5, 'INTEGER', 'LINEAR'), NumParamSpec('X', 0, 1, 'REAL', 'LINEAR')]
    rng = random.Random(1)
    trials = [Trial(name='j%d' % i, index=i, params={'N': rng.randint(1, 5), 'X': rng.random()}, state='succeeded',
                    reports=(Report(1, rng.random()),)) for i in range(200)]
    changes = [
        lambda t: dataclasses.replace(t, params={'N': t.params['N'], 'X': 1 - t.params['X']}),
        lambda t: dataclasses.replace(t, params={'N': True if t.params['N'] == 1 else t.params['N'], 'X': 0.5}),
        lambda t: dataclasses.replace(t, params={'N': float(t.params['N']), 'X': t.params['X']}),
        lambda t: dataclasses.replace(t, state='running', reports=()),
        lambda t: dataclasses.replace(t, reports=(Report(1, -5.0),)),
        lambda t: dataclasses.replace(t, state='terminated'),
        lambda t: dataclasses.replace(t, params={'N': 3, 'X': 0.25, 'EXTRA': 'kept'}),
    ]
    warm = TPESampler(specs, goal='min', seed=0)
    for step, change in enumerate(changes):
        warm.suggest(trials, 1)
        picked = random.Random(step).sample(range(len(trials)), 20)
        trials = [change(t) if k in picked else t for k, t in enumerate(trials)]
        assert warm.suggest(trials, 3) == TPESampler(specs, goal='min', seed=0).suggest(trials, 3)
        history = warm._make_history(trials)  # pylint: disable=protected-access
        fresh = TPESampler(specs, goal='min', seed=0)._make_history(trials)  # pylint: disable=protected-access
        assert (history.scored, history.pending, history.tried) == (fresh.scored, fresh.pending, fresh.tried)


def test_a_warm_sampler_works_on_what_changed(monkeypatch):
    """Asked again after a few jobs finished and a few started, the sampler scores only those, and computes the
    bandwidths of the kernels next to them only: no dimension of the bad group is sorted or fitted again."""
    specs = SPACES['continuous 6']
    polls = list(_sweep(specs, seed=8, start=3000, steps=3))
    sampler = TPESampler(specs, goal='min', seed=1)
    sampler.suggest(polls[0], 2)
    counts = {'score': 0, 'fitted': 0, 'bandwidths': 0}
    # pylint: disable=protected-access
    score, fit, bandwidth = TPESampler.score, parzen._Numeric.__init__, parzen._bandwidth

    def counted(name, call):
        def wrapper(*args, **kwargs):
            counts[name] += len(args[2]) if name == 'fitted' else 1
            return call(*args, **kwargs)
        return wrapper
    monkeypatch.setattr(TPESampler, 'score', counted('score', score))
    monkeypatch.setattr(parzen._Numeric, '__init__', counted('fitted', fit))  # pylint: disable=protected-access
    monkeypatch.setattr(parzen, '_bandwidth', counted('bandwidths', bandwidth))
    for trials in polls[1:]:
        counts.update(score=0, fitted=0, bandwidths=0)
        sampler.suggest(trials, 2)
        assert counts['score'] <= 6  # the jobs that finished since the last poll
        assert counts['fitted'] <= 6 * 2 * 26  # the good groups' few kernels only (l: at most 25 points)
        assert 0 < counts['bandwidths'] <= 6 * 2 * 30  # a few neighbours of each change, in each dimension
    # A new sampler reads and fits everything.
    counts.update(score=0, fitted=0, bandwidths=0)
    TPESampler(specs, goal='min', seed=1).suggest(polls[-1], 1)
    assert counts['score'] > 2500 and counts['fitted'] > 6 * 2500


@pytest.mark.parametrize('consider_endpoints', [False, True])
def test_a_large_estimator_edited_is_the_one_built_whole(consider_endpoints):
    """parzen.ParzenEstimator(previous=...) over removals, insertions, changed points and appends: every list of
    every dimension is the same floats as a new estimator's, and so is every density (the range's ends counted as
    the outer kernels' neighbours or not: Optuna's consider_endpoints)."""
    specs = SPACES['mixed']
    sampler = TPESampler(specs, goal='min', seed=0)
    dims = sampler.dims
    rng = random.Random(7)
    points = [tuple(dim.draw(rng) for dim in dims) for _ in range(300)]
    ids = list(range(0, 600, 2))
    previous = parzen.ParzenEstimator(dims, points, [1.0] * len(points), ids=ids, consider_endpoints=consider_endpoints)
    previous.log_pdf(points[0])  # builds the pruned structure that the next one adopts
    for step in range(12):
        ids, points = list(ids), list(points)
        for _ in range(rng.randint(0, 3)):
            k = rng.randrange(len(ids))
            del ids[k], points[k]
        for _ in range(rng.randint(0, 3)):
            key = rng.randrange(1200)
            if key not in ids:
                at = sum(i < key for i in ids)
                ids.insert(at, key)
                points.insert(at, tuple(dim.draw(rng) for dim in dims))
        if step % 3 == 0:
            k = rng.randrange(len(points))
            points[k] = tuple(dim.draw(rng) for dim in dims)
        weights = tpe.default_weights(len(points))
        edited = parzen.ParzenEstimator(dims, points, weights, ids=ids, previous=previous,
                                        consider_endpoints=consider_endpoints)
        whole = parzen.ParzenEstimator(dims, points, weights, ids=ids, consider_endpoints=consider_endpoints)
        for mine, theirs in zip(edited.kernels, whole.kernels):
            for name in ('mus', 'sigmas', 'inv', 'log_norm', 'consts', 'observed', 'ranked'):
                assert getattr(mine, name, None) == getattr(theirs, name, None), (step, name)
        probes = [tuple(dim.draw(rng) for dim in dims) for _ in range(10)] + points[:5]
        assert [edited.log_pdf(p) for p in probes] == [whole.log_pdf(p) for p in probes]
        previous = edited


@pytest.mark.parametrize('consider_endpoints', [False, True])
def test_edits_at_either_end_of_the_observations_are_the_estimator_built_whole(consider_endpoints, monkeypatch):
    """The outer kernels' bandwidths (the range's ends as their neighbours, or their one neighbour's gap) after a
    point is added below the lowest, above the highest, and the lowest or highest removed: the observations sit in
    the middle of the range, far from its ends, so that the two rules give other bandwidths."""
    dims = TPESampler([NumParamSpec('X', 0.0, 10.0, 'REAL', 'LINEAR')], goal='min').dims
    rng = random.Random(3)
    # 150 points: past 98, the bandwidth floor (range / min(100, n + 2)) is the same after each edit (else: built whole)
    points = [(rng.uniform(4.0, 6.0),) for _ in range(150)]
    ids = list(range(150))
    previous = parzen.ParzenEstimator(dims, points, [1.0] * 150, ids=ids, consider_endpoints=consider_endpoints)
    edits = [('add', 3.0), ('add', 7.5), ('remove', min), ('remove', max), ('add', 3.9), ('remove', min)]
    bandwidths, bandwidth = [], parzen._bandwidth  # pylint: disable=protected-access
    monkeypatch.setattr(parzen, '_bandwidth', lambda *args: bandwidths.append(args[1]) or bandwidth(*args))
    for number, (kind, what) in enumerate(edits):
        ids, points = list(ids), list(points)
        if kind == 'add':
            ids.append(1000 + number)
            points.append((what,))
        else:
            k = points.index(what(points))
            del ids[k], points[k]
        weights = [1.0] * len(points)
        edited = parzen.ParzenEstimator(dims, points, weights, ids=ids, previous=previous,
                                        consider_endpoints=consider_endpoints)
        whole = parzen.ParzenEstimator(dims, points, weights, ids=ids, consider_endpoints=consider_endpoints)
        assert bandwidths, 'built whole, not edited'
        bandwidths.clear()
        assert edited.kernels[0].sigmas == whole.kernels[0].sigmas, (number, kind)
        probes = [(x / 4.0,) for x in range(41)]
        assert [edited.log_pdf(p) for p in probes] == [whole.log_pdf(p) for p in probes]
        previous = edited
    # the ends' rule matters here: the outer kernels are wider when the range's ends count
    other = parzen.ParzenEstimator(dims, points, weights, ids=ids, consider_endpoints=not consider_endpoints)
    assert other.kernels[0].sigmas != whole.kernels[0].sigmas


def test_an_estimator_of_other_settings_or_dimensions_is_built_whole_not_edited(monkeypatch):
    """parzen.ParzenEstimator(previous=...) edits the previous kernels only when both have the same dimensions and
    settings (prior weight, the ends' rule, bandwidth floor): here each differs in turn, and the result is the one
    built whole."""
    specs = SPACES['continuous 2']
    dims = TPESampler(specs, goal='min').dims
    other_dims = TPESampler(SPACES['continuous 6'][:2], goal='min').dims
    rng = random.Random(5)
    points = [tuple(dim.draw(rng) for dim in dims) for _ in range(150)]
    ids = list(range(150))
    previous = parzen.ParzenEstimator(dims, points, [1.0] * 150, ids=ids)
    previous.log_pdf(points[0])
    edited = []
    monkeypatch.setattr(parzen._Numeric, 'updated', lambda *args: edited.append(1) or (_ for _ in ()).throw(
        AssertionError('edited')))  # pylint: disable=protected-access
    points2, ids2 = points[:-1] + [tuple(dim.draw(rng) for dim in dims)], ids[:-1] + [200]
    for options in ({'prior_weight': 2.0}, {'consider_endpoints': True}, {'magic_clip': False}):
        built = parzen.ParzenEstimator(dims, points2, [1.0] * 150, ids=ids2, previous=previous, **options)
        whole = parzen.ParzenEstimator(dims, points2, [1.0] * 150, ids=ids2, **options)
        assert [k.sigmas for k in built.kernels] == [k.sigmas for k in whole.kernels], options
        assert built.log_pdf(points2[3]) == whole.log_pdf(points2[3])
    moved = [tuple(other.low + (x - dim.low) / (dim.high - dim.low) * (other.high - other.low)
                   for x, dim, other in zip(p, dims, other_dims)) for p in points2]
    built = parzen.ParzenEstimator(other_dims, moved, [1.0] * 150, ids=ids2, previous=previous)
    assert [k.sigmas for k in built.kernels] == [k.sigmas for k in
                                                 parzen.ParzenEstimator(other_dims, moved, [1.0] * 150).kernels]
    assert not edited


def _fits_counted(monkeypatch):
    """A list that gets the number of kernels of every numeric estimator fitted from now on."""
    fitted = []
    fit = parzen._Numeric.__init__  # pylint: disable=protected-access

    def counted(self, dim, points, *args, **kwargs):
        fitted.append(len(points))
        fit(self, dim, points, *args, **kwargs)
    monkeypatch.setattr(parzen._Numeric, '__init__', counted)  # pylint: disable=protected-access
    return fitted


def test_bohbs_model_keeps_its_estimators_from_one_suggestion_to_the_next(monkeypatch):
    """Each BOHB suggestion builds a new TPE sampler (its own seed); the model at a budget is still the last one's,
    edited: no dimension of the bad group is fitted again a poll later."""
    specs = SPACES['continuous 6']
    polls = list(_sweep(specs, seed=12, start=1500, steps=3))
    model = BudgetModel(specs, 'min', 9, values_at=lambda t: {81.0: t.last} if t.reports else {},
                        random_fraction=0.0)
    model.suggest(polls[0], 'b0')
    fitted = _fits_counted(monkeypatch)
    for step, trials in enumerate(polls[1:]):
        del fitted[:]
        assert model.suggest(trials, 'b%d' % (step + 1))[0]
        assert fitted and max(fitted) <= 25  # the good group's estimator only


def test_motpe_keeps_its_estimators_from_one_poll_to_the_next(monkeypatch):
    """MOTPE's one-parameter estimators (good and bad groups, both large here) are edited a poll later, not fitted."""
    specs = SPACES['continuous 2']
    objectives = Objectives([('a', 'min'), ('b', 'max')])
    polls = list(_sweep(specs, seed=14, start=2000, steps=3))
    sampler = MOTPESampler(specs, objectives, seed=3)
    sampler.suggest(polls[0], 2)
    fitted = _fits_counted(monkeypatch)
    for trials in polls[1:]:
        del fitted[:]
        assert sampler.suggest(trials, 2)
        assert fitted == []
    assert MOTPESampler(specs, objectives, seed=3).suggest(polls[-1], 2) and min(fitted) > 100
