"""The samplers at thousands of jobs (issue 44): a Parzen estimator of many kernels evaluates a point on the kernels
that can matter only (core/tuning/samplers/parzen._Pruned). The rule: the suggestions are the ones of evaluating every
kernel, on fixed seeds, for TPE, MOTPE and BOHB's model, and each density is the whole mixture's to 1e-12.
Not timed (bench/suggest.py measures the time)."""
import math
import random

import pytest

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.objectives import Objectives
from azext_batchai_sweep.core.tuning.samplers import parzen
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

SPACES = {
    'continuous 2': [NumParamSpec('X', -5, 10, 'REAL', 'LINEAR'), NumParamSpec('Y', 0, 15, 'REAL', 'LINEAR')],
    'continuous 6': [NumParamSpec('X%d' % i, 0, 1, 'REAL', 'LINEAR') for i in range(6)],
    'mixed': [DiscreteParamSpec('OPT', ['adam', 'sgd', 'rmsprop']), NumParamSpec('LAYERS', 1, 20, 'INTEGER', 'LINEAR'),
              NumParamSpec('UNITS', 1, 64, 'INTEGER', 'LOG'), NumParamSpec('LR', 1e-5, 1e-1, 'REAL', 'LOG'),
              NumParamSpec('DROP', 0.0, 0.5, 'REAL', 'LINEAR')],
}


def _objective(params):
    """A smooth function with a clear optimum, so that the good group clusters (as in a real sweep)."""
    total = 0.0
    for name, value in sorted(params.items()):
        if isinstance(value, str):
            total += {'adam': 0.0, 'sgd': 0.3, 'rmsprop': 0.1}[value]
        elif name in ('LR', 'UNITS'):
            total += (math.log10(value) + 3) ** 2 / 4
        else:
            total += math.sin(3 * value) + 0.05 * value ** 2
    return total


def _trials(specs, count, seed, pending=0):
    rng = random.Random(seed)
    trials = []
    for index in range(count + pending):
        params = {spec.name: spec.sample(rng) for spec in specs}
        if index < count:
            trials.append(Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                                reports=(Report(1, _objective(params)),)))
        else:
            trials.append(Trial(name='j%d' % index, index=index, params=params, state='running'))
    return trials


def _every_kernel(monkeypatch):
    monkeypatch.setattr(parzen, 'PRUNE_KERNELS', 10 ** 9)


@pytest.mark.parametrize('space', sorted(SPACES))
@pytest.mark.parametrize('seed', [0, 1])
def test_tpe_suggests_what_evaluating_every_kernel_suggests(space, seed, monkeypatch):
    specs = SPACES[space]
    trials = _trials(specs, 1500, seed, pending=3)
    fast = TPESampler(specs, goal='min', seed=seed).suggest(trials, 3)
    models = TPESampler(specs, goal='min', seed=seed).models(trials)
    assert any(above._pruned is None or above._pruned for _, _, above in models)  # the fast path is on here
    _every_kernel(monkeypatch)
    assert [s.params for s in TPESampler(specs, goal='min', seed=seed).suggest(trials, 3)] == [s.params for s in fast]


@pytest.mark.parametrize('space', sorted(SPACES))
def test_a_large_estimator_gives_the_whole_mixtures_density(space, monkeypatch):
    specs = SPACES[space]
    trials = _trials(specs, 1200, 5)
    sampler = TPESampler(specs, goal='min', seed=5)
    (_, below, above), = sampler.models(trials)
    points = below.sample(random.Random(3), 40) + above.sample(random.Random(4), 40)
    fast = [above.log_pdf(p) for p in points]
    assert above._pruned  # pylint: disable=protected-access
    above._pruned = False  # pylint: disable=protected-access
    whole = [above.log_pdf(p) for p in points]
    for a, b in zip(fast, whole):
        assert abs(a - b) <= 1e-12 * max(1.0, abs(b)), (a, b)
    # A point far from every observation: the prior and the wide kernels carry it.
    far = tuple(kernel.dim.snap(kernel.dim.low) if hasattr(kernel, 'mus') else 0 for kernel in above.kernels)
    above._pruned = None  # pylint: disable=protected-access
    value = above.log_pdf(far)
    above._pruned = False  # pylint: disable=protected-access
    assert abs(value - above.log_pdf(far)) <= 1e-12 * max(1.0, abs(value))


def test_motpe_with_two_objectives_suggests_what_evaluating_every_kernel_suggests(monkeypatch):
    specs = SPACES['continuous 2']
    objectives = Objectives([('a', 'min'), ('b', 'min')])
    rng = random.Random(2)
    trials = []
    for index in range(1200):
        params = {spec.name: spec.sample(rng) for spec in specs}
        x, y = (params['X'] + 5) / 15, params['Y'] / 15
        trials.append(Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                            reports=(Report(1, x),), metrics={'b': 1 - math.sqrt(x) + y}))
    fast = MOTPESampler(specs, objectives, seed=2).suggest(trials, 2)
    _every_kernel(monkeypatch)
    assert [s.params for s in MOTPESampler(specs, objectives, seed=2).suggest(trials, 2)] == [s.params for s in fast]


def test_bohbs_model_suggests_what_evaluating_every_kernel_suggests(monkeypatch):
    specs = SPACES['continuous 6']
    trials = _trials(specs, 1200, 9)
    model = BudgetModel(specs, 'min', 9, values_at=lambda trial: {81.0: trial.last} if trial.reports else {},
                        random_fraction=0.0)
    fast = [model.suggest(trials, 'b{}'.format(k))[0] for k in range(3)]
    assert all(fast)
    _every_kernel(monkeypatch)
    assert [model.suggest(trials, 'b{}'.format(k))[0] for k in range(3)] == fast
