"""The TPE sampler on a finite space when l(x) draws only tried configurations (tpe.py's ``_best_untried`` and
``_untried_points``): it scores the untried configurations by l/g and suggests the best; past _SCORED_UNTRIED of them
it scores a sample; past _ENUMERATION_LIMIT configurations it draws them instead of listing them. A warm start with
rank weights off weighs the inherited good jobs by their ages alone.

Written from mutation testing (issue 49): the fallback was exercised by a test that checked only that it ran."""
import itertools
import random

import pytest

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.samplers import tpe
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler, default_weights, inherited_weight
from azext_batchai_sweep.core.tuning.trial import Report, Trial

SPECS = [DiscreteParamSpec('A', ['p', 'q', 'r', 's', 't']), NumParamSpec('B', 1, 4, 'INTEGER', 'LINEAR')]


def objective(params):
    """Maximised; best at A='r', B=3: the best configurations are neither first nor last in any order."""
    return -abs('pqrst'.index(params['A']) - 2) - 0.7 * abs(params['B'] - 3)


def finished(trials_so_far, params, value=None):
    index = len(trials_so_far)
    value = objective(params) if value is None else value
    return Trial(name='j%d' % index, index=index, params=params, state='succeeded', reports=(Report(1.0, value),))


def tried_sweep(configurations):
    trials = []
    for a, b in configurations:
        trials.append(finished(trials, {'A': a, 'B': b}))
    return trials


# Eight configurations tried, twelve not: the untried ones have distinct l/g ratios.
TRIED = [('p', 1), ('t', 4), ('r', 2), ('q', 3), ('s', 1), ('r', 4), ('p', 3), ('t', 2)]


def ratios(sampler, trials):
    """{untried point: log l - log g}, computed here from the sampler's estimators (sampler.models)."""
    models = sampler.models(trials)
    history = sampler._make_history(trials)  # pylint: disable=protected-access
    points = [tuple(dim.point_at(i) for dim, i in zip(sampler.dims, indices))
              for indices in itertools.product(*[range(dim.size) for dim in sampler.dims])]
    untried = [p for p in points if history.key(p) not in history.tried]
    result = {}
    for point in untried:
        result[point] = sum(below.log_pdf(tuple(point[d] for d in group)) -
                            above.log_pdf(tuple(point[d] for d in group)) for group, below, above in models)
    return result


def test_when_l_draws_only_tried_configurations_the_untried_one_with_the_best_ratio_is_suggested():
    sampler = TPESampler(SPECS, goal='max', seed=4, startup_jobs=2)
    sampler._best_candidate = lambda *args: None  # l(x) drew only tried configurations (pylint: disable=W0212)
    trials = tried_sweep(TRIED)
    scores = ratios(TPESampler(SPECS, goal='max', seed=4, startup_jobs=2), trials)
    best = max(scores, key=scores.get)
    assert sorted(scores.values())[-1] > sorted(scores.values())[-2]  # one best
    assert best != max(scores) and best != min(scores) and best != list(scores)[0]  # not an order's end
    suggestion = sampler.suggest(trials, 1)[0].params
    assert (suggestion['A'], suggestion['B']) == (sampler.dims[0].to_value(best[0]), sampler.dims[1].to_value(best[1]))
    # each suggestion of a batch is untried (the earlier ones pending), the best ratio first
    batch = sampler.suggest(trials, 3)
    keys = [(s.params['A'], s.params['B']) for s in batch]
    assert len(set(keys)) == 3 and not set(keys) & set(TRIED)


def test_past_the_scored_limit_a_seeded_sample_of_the_untried_configurations_is_scored(monkeypatch):
    monkeypatch.setattr(tpe, '_SCORED_UNTRIED', 5)  # 12 untried: a sample of 5 scored
    sampler = TPESampler(SPECS, goal='max', seed=4, startup_jobs=2)
    trials = tried_sweep(TRIED)
    scores = ratios(sampler, trials)
    models = sampler.models(trials)
    history = sampler._make_history(trials)  # pylint: disable=protected-access
    for seed in range(6):
        sample = random.Random(seed).sample(list(scores), 5)
        chosen = sampler._best_untried(random.Random(seed), models, history)  # pylint: disable=protected-access
        assert chosen in sample
        assert scores[chosen] == max(scores[p] for p in sample)
    picks = {sampler._best_untried(random.Random(s), models, history) for s in range(6)}  # pylint: disable=W0212
    assert len(picks) > 1  # the sample, not the whole list, decides


@pytest.mark.parametrize('limit', [19, 20])
def test_a_space_at_the_enumeration_limit_is_listed_and_one_past_it_is_drawn(monkeypatch, limit):
    monkeypatch.setattr(tpe, '_ENUMERATION_LIMIT', limit)
    sampler = TPESampler(SPECS, goal='max', seed=4, startup_jobs=2)
    assert sampler.size == 20
    trials = tried_sweep(TRIED)
    history = sampler._make_history(trials)  # pylint: disable=protected-access
    untried = sampler._untried_points(random.Random(7), history)  # pylint: disable=protected-access
    if limit == 20:  # listed: each untried configuration once, in the space's order
        assert untried == list(ratios(sampler, trials))
    else:  # drawn: 10,000 draws of the seeded stream, the tried ones left out
        rng = random.Random(7)
        draws = [tuple(dim.draw(rng) for dim in sampler.dims) for _ in range(10000)]
        assert untried == [p for p in draws if history.key(p) not in history.tried]
        assert len(untried) > 1000 and set(untried) == set(ratios(sampler, trials))


def test_a_large_space_drawn_is_scored_from_the_suggestions_own_stream(monkeypatch):
    monkeypatch.setattr(tpe, '_ENUMERATION_LIMIT', 10)
    sampler = TPESampler(SPECS, goal='max', seed=4, startup_jobs=2)
    sampler._best_candidate = lambda *args: None  # pylint: disable=protected-access
    trials = tried_sweep(TRIED)
    scores = ratios(sampler, trials)
    suggestion = sampler.suggest(trials, 1)[0].params
    best = max(scores, key=scores.get)  # 10,000 draws of a 20-point space reach every untried one
    assert (suggestion['A'], suggestion['B']) == (sampler.dims[0].to_value(best[0]), sampler.dims[1].to_value(best[1]))


def test_a_warm_start_without_rank_weights_weighs_the_inherited_good_jobs_by_age_alone():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    inherited = [Trial(name='old%d' % k, index=-30 + k, params={'X': (k + 0.5) / 30}, state='succeeded',
                       reports=(Report(1.0, -((k + 0.5) / 30 - 0.8) ** 2),)) for k in range(30)]
    own = [Trial(name='j%d' % k, index=k, params={'X': (k + 0.5) / 12}, state='succeeded',
                 reports=(Report(1.0, -((k + 0.5) / 12 - 0.2) ** 2),)) for k in range(12)]
    for power in (None, 2.0):
        sampler = TPESampler(specs, 'max', seed=1, inherited=inherited, good_rank_power=power, good_floor_share=None)
        (_, below, _), = sampler.models(own)
        share = inherited_weight(12, tpe.DEFAULT_INHERITED_HALF_WEIGHT)
        n_old, n_own = tpe.default_gamma(30), tpe.default_gamma(12)
        expected = [w * share for w in default_weights(n_old)] + list(default_weights(n_own)) + [1.0]  # the prior
        expected = [w / sum(expected) for w in expected]
        assert len(below.weights) == n_old + n_own + 1
        if power is None:
            assert below.weights == pytest.approx(expected)
        else:  # rank weights: not the ages alone
            assert below.weights != pytest.approx(expected)
        assert sampler.suggest(own, 1)
