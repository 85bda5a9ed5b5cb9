"""TPESampler's documented defaults (core users construct it in Python): the goal is "max" and the seed 0, so a
sampler made without them suggests what one made with them does, and another seed or goal does not."""
import dataclasses
import random

from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

from .scale_spaces import SPACES, objective

SPECS = SPACES['continuous 6']


def _trials(count=40):
    rng = random.Random(2)
    trials = []
    for index in range(count):
        params = {spec.name: spec.sample(rng) for spec in SPECS}
        trials.append(Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                            reports=(Report(1, objective(params)),)))
    return trials


def test_a_sampler_made_without_a_goal_or_seed_maximises_with_seed_0():
    trials = _trials()
    plain = TPESampler(SPECS)
    assert plain.goal == 'max'
    suggested = plain.suggest(trials, 3)
    assert suggested == TPESampler(SPECS, goal='max', seed=0).suggest(trials, 3)
    assert suggested != TPESampler(SPECS, goal='max', seed=1).suggest(trials, 3)
    assert suggested != TPESampler(SPECS, goal='min', seed=0).suggest(trials, 3)


def test_the_default_goal_counts_the_largest_objectives_as_good():
    """With one job far above the others, the default sampler's good group holds it (its objective is the best)."""
    trials = _trials()
    trials[7] = dataclasses.replace(trials[7], reports=(Report(1, 1e9),))
    [(_, below, above)] = TPESampler(SPECS).models(trials)
    point = tuple(trials[7].params[spec.name] for spec in SPECS)  # (0..1 LINEAR: the coordinates are the values)
    assert point in zip(*[kernel.mus for kernel in below.kernels])  # a kernel of l(x), the good jobs' density
    assert point not in zip(*[kernel.mus for kernel in above.kernels])
