"""The TPE sampler's local phase on a finite space (tpe.py): from ``local_share`` of the sweep's ``count`` jobs on,
each suggestion is an untried grid neighbour of the best ``local_jobs`` jobs, the one with the best l/g ratio."""
import math

import pytest

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.samplers.space import dimensions
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

GRID = [NumParamSpec('A', 0, 9, 'INTEGER', 'LINEAR'), NumParamSpec('B', 0, 9, 'INTEGER', 'LINEAR'),
        DiscreteParamSpec('C', ['x', 'y', 'z'])]


def objective(params):
    """Minimised; best at A=7, B=2, C='y', with a second basin at A=1, B=8."""
    main = (params['A'] - 7) ** 2 + (params['B'] - 2) ** 2
    other = 1.5 + 0.5 * ((params['A'] - 1) ** 2 + (params['B'] - 8) ** 2)
    return min(main, other) + {'x': 0.6, 'y': 0.0, 'z': 0.3}[params['C']]


def sweep(sampler, jobs, sign=1):
    """`jobs` suggestions one at a time; returns the finished Trials (their values: sign x the objective)."""
    trials = []
    for index in range(jobs):
        params = sampler.suggest(trials, 1)[0].params
        trials.append(Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                            reports=(Report(1.0, sign * float(objective(params))),)))
    return trials


def one_step_apart(first, second):
    """True when two configurations differ in one parameter only: a grid step for A and B, any value for C."""
    differ = [name for name in first if first[name] != second[name]]
    if len(differ) != 1:
        return False
    name = differ[0]
    return name == 'C' or abs(first[name] - second[name]) == 1


def best_jobs(trials, count, sign=1):
    """The best `count` jobs, values read as sign x the objective (minimised), ties by index."""
    return sorted(trials, key=lambda t: (sign * t.reports[-1].value, t.index))[:count]


def untried_neighbours(trials, count, sign=1):
    """The configurations one step from the best `count` jobs that no job has had."""
    neighbours = []
    for best in best_jobs(trials, count, sign):
        for name in ('A', 'B'):
            for step in (-1, 1):
                if 0 <= best.params[name] + step <= 9:
                    neighbours.append(dict(best.params, **{name: best.params[name] + step}))
        neighbours.extend(dict(best.params, C=c) for c in 'xyz' if c != best.params['C'])
    tried = [t.params for t in trials]
    return [n for n in neighbours if n not in tried]


def test_grid_neighbours_of_each_dimension_kind():
    linear, log_int, categorical, stepped, real = dimensions([
        NumParamSpec('L', 0, 9, 'INTEGER', 'LINEAR'), NumParamSpec('G', 1, 100, 'INTEGER', 'LOG'),
        DiscreteParamSpec('C', ['x', 'y', 'z']), NumParamSpec('S', 0.0, 1.0, 'REAL', 'LINEAR', step=0.25),
        NumParamSpec('R', 0.0, 1.0, 'REAL', 'LINEAR')])
    assert linear.neighbours(0.0) == [1.0]
    assert linear.neighbours(5.0) == [4.0, 6.0]
    assert linear.neighbours(9.0) == [8.0]
    assert [log_int.to_value(x) for x in log_int.neighbours(log_int.to_internal(1))] == [2]
    assert [log_int.to_value(x) for x in log_int.neighbours(log_int.to_internal(50))] == [49, 51]
    assert categorical.neighbours(1) == [0, 2]
    assert stepped.neighbours(0.75) == [0.5, 1.0]
    assert real.neighbours(0.5) == []


def test_late_suggestions_are_untried_neighbours_of_the_best_jobs():
    checked = 0
    for seed in range(4):
        sampler = TPESampler(GRID, goal='min', seed=seed, count=30, startup_jobs=5)
        trials = sweep(sampler, 30)
        for k in range(21, 30):  # from 0.7 x 30 = 21 jobs on
            before = trials[:k]
            tried = {tuple(sorted(t.params.items())) for t in before}
            assert tuple(sorted(trials[k].params.items())) not in tried
            if untried_neighbours(before, 3):
                assert trials[k].params in untried_neighbours(before, 3), (seed, k)
                checked += 1
    assert checked >= 30


@pytest.mark.parametrize('goal', ['min', 'max'])
def test_the_local_phase_picks_the_neighbour_with_the_best_ratio(goal):
    # goal max: the objective negated, so the best jobs are the largest values (the same jobs as for min)
    sampler = TPESampler(GRID, goal=goal, seed=3, count=30, startup_jobs=5)
    trials = sweep(sampler, 25, sign=1 if goal == 'min' else -1)
    models = sampler.models(trials)
    untried = untried_neighbours(trials, 3, sign=1 if goal == 'min' else -1)
    assert len(untried) > 1
    dims = sampler.dims

    def ratio(params):
        point = tuple(dim.to_internal(params[dim.name]) for dim in dims)
        return sum(below.log_pdf(tuple(point[d] for d in group)) - above.log_pdf(tuple(point[d] for d in group))
                   for group, below, above in models)
    suggestion = sampler.suggest(trials, 1)[0].params
    assert suggestion in untried
    assert math.isclose(ratio(suggestion), max(ratio(n) for n in untried))


def test_no_local_phase_before_its_share_without_a_count_or_when_switched_off():
    seeds = range(4)
    with_phase = [sweep(TPESampler(GRID, goal='min', seed=s, count=30, startup_jobs=5), 30) for s in seeds]
    without = [sweep(TPESampler(GRID, goal='min', seed=s, count=30, startup_jobs=5, local_share=None), 30)
               for s in seeds]
    no_count = [sweep(TPESampler(GRID, goal='min', seed=s, startup_jobs=5), 30) for s in seeds]
    for a, b, c in zip(with_phase, without, no_count):
        assert [t.params for t in a[:21]] == [t.params for t in b[:21]]  # the same sweep until 0.7 x count
        assert [t.params for t in b] == [t.params for t in c]  # no count: no local phase
    # Without the phase, late suggestions are draws from l, some of them more than one step from every best job.
    assert any(not any(one_step_apart(t.params, best.params) for best in best_jobs(trials[:k], 3))
               for trials in without for k, t in enumerate(trials) if k >= 21)


def test_the_local_phase_finds_the_optimum_more_often_on_the_grid():
    found = {}
    for share in (0.7, None):
        found[share] = sum(min(t.reports[-1].value for t in sweep(
            TPESampler(GRID, goal='min', seed=s, count=30, startup_jobs=5, local_share=share), 30)) == 0.0
            for s in range(12))
    assert found[0.7] > found[None], found


def test_when_every_neighbour_was_tried_it_falls_back_to_the_draws_from_l():
    specs = [NumParamSpec('A', 0, 4, 'INTEGER', 'LINEAR'), NumParamSpec('B', 0, 4, 'INTEGER', 'LINEAR')]
    sampler = TPESampler(specs, goal='min', seed=0, count=10, startup_jobs=3, local_jobs=1)
    # The best job (2, 2) and its four neighbours are all tried: the 9th job comes from l, still untried.
    points = [(2, 2), (1, 2), (3, 2), (2, 1), (2, 3), (0, 0), (4, 4), (0, 4)]
    trials = [Trial(name='j%d' % i, index=i, params={'A': a, 'B': b}, state='succeeded',
                    reports=(Report(1.0, float(abs(a - 2) + abs(b - 2))),)) for i, (a, b) in enumerate(points)]
    suggestion = sampler.suggest(trials, 1)[0].params
    assert (suggestion['A'], suggestion['B']) not in points


def test_continuous_spaces_have_no_local_phase():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR'), NumParamSpec('N', 1, 20, 'INTEGER', 'LINEAR')]

    def value(params):
        return (params['X'] - 0.3) ** 2 + (params['N'] - 12) ** 2 / 100.0
    runs = []
    for share in (0.7, None):
        sampler = TPESampler(specs, goal='min', seed=5, count=20, startup_jobs=5, local_share=share)
        trials = []
        for index in range(20):
            params = sampler.suggest(trials, 1)[0].params
            trials.append(Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                                reports=(Report(1.0, value(params)),)))
        runs.append([t.params for t in trials])
    assert runs[0] == runs[1]


def test_motpe_has_no_local_phase():
    from azext_batchai_sweep.core.tuning.objectives import Objectives
    from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler
    two = Objectives([('acc', 'max'), ('lat', 'min')], [])
    sampler = MOTPESampler(GRID, two, seed=1, count=30, startup_jobs=5)
    assert sampler.local_share is None
    trials = []
    for index in range(30):  # past 0.7 x count with tuple scores: no local phase to rank them
        params = sampler.suggest(trials, 1)[0].params
        value = objective(params)
        trials.append(Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                            reports=(Report(1.0, -value),), metrics={'lat': params['A'] + params['B']}))
    assert len({tuple(sorted(t.params.items())) for t in trials}) == 30


def test_a_batch_in_the_local_phase_spreads_over_distinct_neighbours():
    sampler = TPESampler(GRID, goal='min', seed=2, count=30, startup_jobs=5)
    trials = sweep(sampler, 24)
    batch = [s.params for s in sampler.suggest(trials, 4)]
    keys = {tuple(sorted(p.items())) for p in batch}
    assert len(keys) == 4 and not keys & {tuple(sorted(t.params.items())) for t in trials}
    neighbours = untried_neighbours(trials, 3)
    assert all(params in neighbours for params in batch[:min(4, len(neighbours))])
    # Resumed after submitting two of them, the controller gets the other two.
    pending = [Trial(name='j%d' % (24 + k), index=24 + k, params=batch[k], state='running') for k in range(2)]
    assert [s.params for s in sampler.suggest(trials + pending, 2)] == batch[2:]
