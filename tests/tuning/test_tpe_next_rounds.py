"""The TPE sampler on a finite space whose first draws from l(x) are all tried configurations (tpe.py's
``TPESampler._next``): it draws again from l(x), up to _REJECTION_ROUNDS rounds, and suggests the best untried
candidate of the first round that has one; only when every round drew tried ones does it score every untried
configuration (test_tpe_untried.py). Drawing again is what keeps a finite space's suggestions samples of l(x)
rather than the one untried configuration of the largest l/g ratio each time.

Written from mutation testing (issue 49): mutants giving a finite space one round survived."""
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler

from .test_tpe_untried import SPECS, TRIED, ratios, tried_sweep

# pylint: disable=protected-access


def _recorded_sampler(seed):
    """A sampler (one candidate a round: a round often draws a tried configuration) whose rounds of candidates from
    l(x) are recorded: each round's result of the real _best_candidate, None when it drew only tried ones."""
    sampler = TPESampler(SPECS, goal='max', seed=seed, startup_jobs=2, candidates=1)
    real, rounds = sampler._best_candidate, []

    def recorded(*args):
        result = real(*args)
        rounds.append(result)
        return result
    sampler._best_candidate = recorded
    return sampler, rounds


def test_when_the_first_draws_are_all_tried_a_finite_space_draws_again_and_suggests_the_first_untried_draw():
    trials = tried_sweep(TRIED)
    scores = ratios(TPESampler(SPECS, goal='max', seed=0, startup_jobs=2, candidates=1), trials)
    best_ratio = max(scores, key=scores.get)
    drawn_again, not_the_best_ratio = 0, 0
    for seed in range(12):
        sampler, rounds = _recorded_sampler(seed)
        params = sampler.suggest(trials, 1)[0].params
        suggestion = ('pqrst'.index(params['A']), float(params['B']))
        assert (params['A'], params['B']) not in TRIED
        found = [r for r in rounds if r is not None]
        assert found, 'some round of up to eight draws an untried configuration here'
        assert rounds[:-1] == [None] * (len(rounds) - 1), 'the rounds stop at the first that finds one'
        assert tuple(sampler.dims[d].to_value(x) for d, x in enumerate(found[0])) == (params['A'], params['B'])
        if rounds[0] is None:
            drawn_again += 1
            not_the_best_ratio += suggestion != best_ratio
    # several seeds' first round drew a tried configuration; a later round's draw, not the best ratio, was suggested
    assert drawn_again >= 2 and not_the_best_ratio >= 2, (drawn_again, not_the_best_ratio)
