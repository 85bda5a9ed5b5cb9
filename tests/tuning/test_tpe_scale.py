"""The samplers at thousands of jobs (issue 44): a Parzen estimator of many kernels evaluates a point on the kernels
that can matter only (core/tuning/samplers/parzen._Pruned). The rule: the suggestions are the ones of evaluating every
kernel, on fixed seeds, for TPE, MOTPE and BOHB's model, and each density is the whole mixture's to 1e-12.
Not timed (bench/suggest.py measures the time)."""
import math
import random

import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.objectives import Objectives
from azext_batchai_sweep.core.tuning.samplers import parzen
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

from .scale_spaces import SPACES, objective


def _trials(specs, count, seed, pending=0):
    rng = random.Random(seed)
    trials = []
    for index in range(count + pending):
        params = {spec.name: spec.sample(rng) for spec in specs}
        if index < count:
            trials.append(Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                                reports=(Report(1, objective(params)),)))
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


@pytest.mark.parametrize('space', sorted(SPACES))
@pytest.mark.parametrize('jobs', [1200, 90])
def test_a_large_estimator_gives_the_whole_mixtures_density_anywhere_in_the_space(space, jobs, monkeypatch):
    """Points drawn uniformly from the space (between the clusters, at the range's ends, on a log scale's negative
    coordinates), not from the estimator: the kernels that carry the density are found by the boxes and the cells
    of the pruned sum wherever they lie. 90 jobs (the pruned sum from 40 kernels here): few wide kernels, a box
    wider than the cells there are."""
    if jobs < 100:
        monkeypatch.setattr(parzen, 'PRUNE_KERNELS', 40)
    specs = SPACES[space]
    trials = _trials(specs, jobs, 6)
    sampler = TPESampler(specs, goal='min', seed=6)
    (_, below, above), = sampler.models(trials)
    rng = random.Random(8)
    points = [tuple(dim.draw(rng) for dim in sampler.dims) for _ in range(150)]
    points += [tuple(dim.snap(dim.high if k % 2 else dim.low) if dim.kind != 'categorical' else 0
                     for k, dim in enumerate(sampler.dims))]
    for estimator in (above, below):
        fast = [estimator.log_pdf(p) for p in points]
        estimator._pruned = False  # pylint: disable=protected-access
        whole = [estimator.log_pdf(p) for p in points]
        for a, b in zip(fast, whole):
            assert abs(a - b) <= 1e-12 * max(1.0, abs(b)), (a, b)


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


def _ranks_by_peeling(points):
    """Non-domination ranks from the definition: rank 0 is what no point dominates, rank k what only the ranks
    before it dominate (the reference the O(N log N) two-objective sort must equal)."""
    from azext_batchai_sweep.core.tuning.pareto import dominates  # pylint: disable=import-outside-toplevel
    ranks, left, rank = [None] * len(points), set(range(len(points))), 0
    while left:
        front = [i for i in left if not any(dominates(points[j], points[i]) for j in left)]
        for i in front:
            ranks[i] = rank
        left -= set(front)
        rank += 1
    return ranks


@pytest.mark.parametrize('levels', [2, 4, 30, None])
def test_two_objective_ranks_are_the_definitions_with_ties_and_repeats(levels):
    from azext_batchai_sweep.core.tuning.pareto import nondominated_ranks  # pylint: disable=import-outside-toplevel
    rng = random.Random(levels or 0)
    for _ in range(60):
        count = rng.randint(1, 50)
        points = [(float(rng.randint(0, levels)), float(rng.randint(0, levels))) if levels else
                  (rng.random(), rng.random()) for _ in range(count)]
        assert nondominated_ranks(points) == _ranks_by_peeling(points), points


def test_two_objective_ranks_of_many_points_take_no_quadratic_step(monkeypatch):
    """10,000 jobs: a quadratic sort compares 50 million pairs; this one never calls dominates."""
    from azext_batchai_sweep.core.tuning import pareto  # pylint: disable=import-outside-toplevel
    monkeypatch.setattr(pareto, 'dominates', lambda a, b: pytest.fail('a pairwise comparison'))
    rng = random.Random(3)
    points = [(rng.random(), rng.random()) for _ in range(10000)]
    ranks = pareto.nondominated_ranks(points)
    assert min(ranks) == 0 and len(set(ranks)) > 10


def test_a_sampler_asked_again_converts_no_parameters_again(monkeypatch):
    """The conversion of a job's parameters to the sampler's coordinates is kept per parameter set (a run asks after
    every poll with the same jobs): asked again, none is converted; True, 1 and 1.0 stay apart."""
    from azext_batchai_sweep.core.tuning.samplers import space  # pylint: disable=import-outside-toplevel
    specs = SPACES['mixed']
    trials = _trials(specs, 300, 4)
    sampler = TPESampler(specs, goal='min', seed=4)
    first = sampler.suggest(trials, 2)
    calls = []
    original = space.Dimension.to_internal
    monkeypatch.setattr(space.Dimension, 'to_internal', lambda self, value: calls.append(value) or original(self, value))
    again = [dict(t.params) for t in trials]  # other dicts with the same items, as a new poll builds them
    trials = [Trial(name=t.name, index=t.index, params=p, state=t.state, reports=t.reports) for t, p in zip(trials, again)]
    assert sampler.suggest(trials, 2) == first
    assert calls == []
    ints = TPESampler([NumParamSpec('N', 1, 5, 'INTEGER', 'LINEAR')], goal='min', seed=0)
    odd = [Trial(name='a', index=0, params={'N': 1}, state='succeeded', reports=(Report(1, 1.0),)),
           Trial(name='b', index=1, params={'N': True}, state='succeeded', reports=(Report(1, 2.0),))]
    history = ints._make_history(odd)  # pylint: disable=protected-access
    assert [index for index, _, _ in history.scored] == [0]  # True is no INTEGER value, whatever 1 converted to


@pytest.mark.parametrize('levels', [2, 5, None])
def test_two_objective_nondominated_points_are_the_definitions_in_their_first_order(levels):
    from azext_batchai_sweep.core.tuning.pareto import dominates, nondominated  # pylint: disable=import-outside-toplevel
    rng = random.Random(7 + (levels or 0))
    for _ in range(80):
        points = [(float(rng.randint(0, levels)), float(rng.randint(0, levels))) if levels else
                  (rng.random(), rng.random()) for _ in range(rng.randint(1, 40))]
        unique = list(dict.fromkeys(points))
        assert nondominated(points) == [p for p in unique if not any(dominates(q, p) for q in unique)]


@pytest.mark.parametrize('seed', range(6))
def test_a_two_objective_fronts_contributions_are_the_general_computations_floats(seed):
    """pareto.contributions of a 2-objective front (MOTPE orders each front by them) by its neighbours only: the
    same floats as each point's exclusive hypervolume against all the others, with repeats, negative and integer
    values, points on or past the reference, and a set that is not a front (computed the general way)."""
    from azext_batchai_sweep.core.tuning import pareto  # pylint: disable=import-outside-toplevel
    rng = random.Random(seed)
    for _ in range(40):
        xs = sorted(rng.sample(range(-50, 50), rng.randint(1, 30)))
        ys = sorted(rng.sample(range(-50, 50), len(xs)), reverse=True)
        scale = rng.choice([1, 0.37, 1e-3])
        front = [(x * scale, y * scale) for x, y in zip(xs, ys)]  # integers when the scale is 1
        front += [rng.choice(front) for _ in range(rng.randint(0, 3))]  # repeats
        rng.shuffle(front)
        reference = pareto.reference_point(front) if rng.random() < 0.7 else (rng.choice(front)[0], 60.0)
        general = [pareto.exclusive(p, front[:i] + front[i + 1:], reference) for i, p in enumerate(front)]
        assert pareto._front_contributions_2d(front, reference) == general  # pylint: disable=protected-access
        assert pareto.contributions(front, reference) == general
    dominated = [(0.0, 0.0), (1.0, 1.0), (0.5, 2.0)]
    assert pareto._front_contributions_2d(dominated, (3.0, 3.0)) is None  # pylint: disable=protected-access


def test_a_one_dimensional_estimators_density_is_the_whole_mixtures():
    """MOTPE's one-parameter estimators take their own path (_Pruned._log_pdf_1d): the whole mixture's density."""
    from azext_batchai_sweep.core.tuning.samplers.space import dimensions  # pylint: disable=import-outside-toplevel
    dims = dimensions([NumParamSpec('X', 0, 1, 'REAL', 'LINEAR')])
    rng = random.Random(11)
    points = [(rng.random() ** 2,) for _ in range(3000)]
    estimator = parzen.ParzenEstimator(dims, points, [1.0] * len(points))
    probes = [(rng.random(),) for _ in range(30)] + [(0.0,), (1.0,)] + points[:5]
    fast = [estimator.log_pdf(p) for p in probes]
    assert estimator._pruned and len(estimator.kernels) == 1  # pylint: disable=protected-access
    estimator._pruned = False  # pylint: disable=protected-access
    for a, b in zip(fast, [estimator.log_pdf(p) for p in probes]):
        assert abs(a - b) <= 1e-12 * max(1.0, abs(b)), (a, b)
