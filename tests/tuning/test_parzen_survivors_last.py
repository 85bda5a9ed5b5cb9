"""Rules the last survivors of the samplers-tpe mutation run (bench/mutation-samplers-tpe.md, "The 13 left") showed
untested: a categorical kernel's draws follow its density; a prior weight of 0 (no smoothing) gives a categorical
dimension the observed categories' frequencies; a large estimator's density is the whole mixture's where the first
observation's kernel is the widest; a warm start's inherited jobs do not bring the local phase forward; among
candidates of equal scores the first drawn is suggested."""
import math
import random

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.samplers import parzen
from azext_batchai_sweep.core.tuning.samplers.space import dimensions
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.simulation import warm_start
from azext_batchai_sweep.core.tuning.trial import Report, Trial

from .test_parzen_pruned_edges import _assert_same, _pruned_densities, _whole

# pylint: disable=protected-access

OPT = dimensions([DiscreteParamSpec('OPT', ['adam', 'sgd', 'rmsprop', 'lamb'])])


def test_a_categorical_estimators_draws_follow_its_density():
    """Each category is drawn as often as exp(log_pdf) says: an observation's kernel gives its own category the mass
    (1 + fill) / (1 + 4 fill) (fill = prior_weight / kernels), each other one fill / (1 + 4 fill); a draw that always
    returned the kernel's category (a hit share above 1) gives 'adam' 0.89 here instead of 0.70."""
    for points, prior_weight in (([(0,)] * 5, 1.0), ([(0,), (0,), (1,), (3,)], 2.0)):
        estimator = parzen.ParzenEstimator(OPT, points, [1.0] * len(points), prior_weight=prior_weight)
        rng = random.Random(3)
        drawn = estimator.sample(rng, 40000)
        for c in range(4):
            share = sum(1 for (x,) in drawn if x == c) / len(drawn)
            assert abs(share - math.exp(estimator.log_pdf((c,)))) < 0.01, (points, c, share)
        # the densities themselves, by hand (the first case): 5/6 of (7/6) / 1.5 + 1/6 of 1/4 for 'adam'
        if prior_weight == 1.0:
            assert math.isclose(math.exp(estimator.log_pdf((0,))), 5 / 6 * (7 / 6) / (5 / 3) + 1 / 24)
            assert math.isclose(math.exp(estimator.log_pdf((2,))), 5 / 6 * (1 / 6) / (5 / 3) + 1 / 24)


def test_no_prior_weight_gives_the_observed_categories_frequencies():
    """prior_weight=0: no smoothing, no prior kernel; a category never observed has density 0 (log -inf), not an
    error."""
    points = [(0,), (0,), (1,)]
    estimator = parzen.ParzenEstimator(OPT, points, [1.0] * len(points), prior_weight=0.0)
    assert math.isclose(estimator.log_pdf((0,)), math.log(2 / 3))
    assert math.isclose(estimator.log_pdf((1,)), math.log(1 / 3))
    assert estimator.log_pdf((2,)) == -math.inf
    assert all(x in (0, 1) for (x,) in estimator.sample(random.Random(1), 200))


def test_a_first_observation_wider_than_the_others_in_every_dimension_gives_the_whole_mixtures_density():
    """The pruned sum's bound of a continuous dimension is the largest peak of its kernels, not the first one's:
    here the first observation lies alone in a corner (bandwidths 0.2 to 0.9: peaks 2.3 to 4.5 below the others' in
    each of 14 dimensions, 47 in all), the others on a lattice of the bandwidth floor's step (0.01) in X0 and X3 and
    at 0.9 in the other 12. Bounds from the first kernel alone would shrink the box the kernels are looked for in to a
    few bandwidths around the point and filter out kernels of terms well within PRUNE_MARGIN of the largest."""
    count = 14
    dims = dimensions([NumParamSpec('X%d' % i, 0, 1, 'REAL', 'LINEAR') for i in range(count)])

    def at(x0, x3):
        point = [0.9] * count
        point[0], point[3] = x0, x3
        return tuple(point)

    points = [(0.0,) * count] + [at(0.3 + 0.01 * j, 0.2 + 0.01 * k) for j in range(11) for k in range(60)]
    estimator = parzen.ParzenEstimator(dims, points, [1.0] * len(points))
    rng = random.Random(6)
    probes = [at(0.3 + 0.1 * rng.random(), 0.2 + 0.59 * rng.random()) for _ in range(40)] + points[:5]
    fast = _pruned_densities(estimator, probes)
    assert sum(k.consts[0] for k in estimator.kernels) < sum(max(k.consts[:-1]) for k in estimator.kernels) - 45
    _assert_same(fast, _whole(estimator, probes))


# ---- the local phase with a warm start ----------------------------------------------------------------------------

GRID = [NumParamSpec('A', 0, 9, 'INTEGER', 'LINEAR'), NumParamSpec('B', 0, 9, 'INTEGER', 'LINEAR')]


def _objective(params):
    return (params['A'] - 7) ** 2 + (params['B'] - 2) ** 2


def _sweep(sampler, jobs):
    trials = []
    for index in range(jobs):
        params = sampler.suggest(trials, 1)[0].params
        trials.append(Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                            reports=(Report(1.0, float(_objective(params))),)))
    return trials


def test_inherited_jobs_do_not_bring_the_local_phase_forward():
    """The phase starts at local_share of this sweep's own count (0.7 x 20 = 14 jobs): 30 inherited jobs change the
    model, not when the phase starts, so the first 14 suggestions are those of the same sampler without the phase."""
    rng = random.Random(2)
    configs = [{'A': rng.randrange(10), 'B': rng.randrange(10)} for _ in range(30)]
    old = [Trial(name='o%d' % k, index=k, params=p, state='succeeded', reports=(Report(1.0, float(_objective(p))),))
           for k, p in enumerate(configs)]
    inherited, _ = warm_start({'old': old}, GRID)
    assert len(inherited) >= 20
    later_differ = []
    for seed in range(4):
        kwargs = dict(goal='min', seed=seed, count=20, startup_jobs=5, inherited=inherited)
        with_phase = _sweep(TPESampler(GRID, **kwargs), 20)
        without = _sweep(TPESampler(GRID, local_share=None, **kwargs), 20)
        assert [t.params for t in with_phase[:14]] == [t.params for t in without[:14]]
        later_differ.append([t.params for t in with_phase] != [t.params for t in without])
    assert any(later_differ), 'the phase does start at 14'


# ---- candidates of equal scores ----------------------------------------------------------------------------------

def test_among_candidates_of_equal_scores_the_first_drawn_is_suggested():
    """Categories no job has tried score alike (each estimator gives every unobserved category the same density), so
    every untried candidate here ties: the first drawn wins (as Optuna's argmax), and drawing more candidates, which
    extends the same stream of draws, cannot change the suggestion unless a strictly better one appears."""
    values = ['a', 'b', 'c', 'd', 'e', 'f', 'g']
    specs = [DiscreteParamSpec('C', values)]
    trials = [Trial(name='j%d' % k, index=k, params={'C': c}, state='succeeded', reports=(Report(1.0, float(k)),))
              for k, c in enumerate(values[:4])]
    picked = []
    for seed in range(12):
        few, many = (TPESampler(specs, 'max', seed=seed, startup_jobs=4, candidates=n).suggest(trials, 1)[0].params['C']
                     for n in (24, 80))
        assert few == many, seed
        picked.append(few)
    assert set(picked) == set(values[4:])  # (untried only, and not always the same one)
