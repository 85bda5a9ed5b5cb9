"""Pareto ranks, hypervolume (against Optuna's, the reference implementation, test-only), the MOTPE split on fixed
results, constraints, and the front `run`/`status` show; all in-process and deterministic."""
import math
import random

import numpy
import pytest
from optuna._hypervolume import compute_hypervolume

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.front import front_figures, front_rows
from azext_batchai_sweep.core.tuning.objectives import Constraint, Objectives
from azext_batchai_sweep.core.tuning.pareto import (contributions, dominates, greedy_hypervolume_subset, hypervolume,
                                                     nondominated_ranks)
from azext_batchai_sweep.core.tuning.reports import LogReader, ReportParser
from azext_batchai_sweep.core.tuning.result import best_trial
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler, pareto_select
from azext_batchai_sweep.core.tuning.trial import Report, Trial


def test_dominance_and_ranks():
    assert dominates((1, 2), (1, 3)) and not dominates((1, 3), (1, 3)) and not dominates((0, 4), (1, 3))
    points = [(1, 5), (2, 2), (5, 1), (3, 3), (4, 4), (2, 2), (6, 6)]
    assert nondominated_ranks(points) == [0, 0, 0, 1, 2, 0, 3]
    # three objectives: (1,1,1) dominates all; the rest trade off
    assert nondominated_ranks([(2, 1, 3), (1, 1, 1), (3, 2, 1), (1, 3, 2)]) == [1, 0, 1, 1]


@pytest.mark.parametrize('objectives, size', [(2, 1), (2, 12), (2, 40), (3, 1), (3, 15), (3, 40), (4, 20), (5, 12)])
def test_hypervolume_equals_optunas(objectives, size):
    for seed in range(3):
        rng = random.Random(objectives * 1000 + size * 10 + seed)
        points = [tuple(rng.random() for _ in range(objectives)) for _ in range(size)]
        if seed == 2:  # points on a sphere: every one on the front, the hard case for the recursion
            points = [tuple(x / math.sqrt(sum(v * v for v in p)) for x in p) for p in points]
        reference = tuple(1.2 for _ in range(objectives))
        expected = compute_hypervolume(numpy.array(points), numpy.array(reference))
        assert hypervolume(points, reference) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_hypervolume_by_hand_and_points_outside():
    assert hypervolume([(1, 2), (2, 1)], (3, 3)) == 3.0
    assert hypervolume([(1, 1, 1)], (2, 3, 4)) == 6.0
    assert hypervolume([(5, 0), (1, 1)], (3, 3)) == 4.0  # (5, 0) is beyond the reference: adds nothing
    assert hypervolume([], (1, 1)) == 0.0


def test_contributions_and_greedy_subset():
    points = [(1, 4), (2, 2), (4, 1), (3, 3)]
    assert contributions(points, (5, 5)) == [1.0, 3.0, 1.0, 0.0]  # (3, 3) is dominated
    assert greedy_hypervolume_subset(points, 2, (5, 5)) == [1, 0]  # (2,2) adds 9, then (1,4) and (4,1) tie: earlier


def test_pareto_select_fills_by_front_then_hypervolume():
    losses = [(1, 4), (2, 2), (4, 1), (3, 3), (5, 5), (2.5, 2.5)]
    # the front (0, 1, 2) fits; of the next rank (3 and 5, both dominated by 1 only) the one adding more volume
    chosen = pareto_select(losses, 4)
    assert sorted(chosen[:3]) == [0, 1, 2] and chosen[3] == 5
    assert chosen[0] == 1  # within the front, the largest contribution first
    assert sorted(pareto_select(losses, 2)) == [0, 1] or sorted(pareto_select(losses, 2)) == [1, 2]


SPECS = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
TWO = Objectives([('acc', 'max'), ('lat', 'min')], [Constraint('mem', maximum=7)])


def _trial(index, x, acc, lat, mem, state='succeeded', stopped=False):
    metrics = {k: v for k, v in (('lat', lat), ('mem', mem)) if v is not None}
    return Trial(name='j%d' % index, index=index, params={'X': x}, state=state, stopped_early=stopped,
                 reports=(Report(1, acc),) if acc is not None else (), metrics=metrics)


def test_motpe_split_for_fixed_results():
    """20 jobs: gamma = 2 good. The two front jobs are good, never an infeasible one though it dominates them."""
    trials = [_trial(i, i / 20, acc=0.5, lat=50, mem=1) for i in range(16)]
    trials += [_trial(16, 0.81, acc=0.9, lat=10, mem=9),   # dominates all, but infeasible
               _trial(17, 0.85, acc=0.8, lat=20, mem=5),   # front
               _trial(18, 0.9, acc=0.6, lat=15, mem=5),    # front
               _trial(19, 0.95, acc=0.7, lat=30, mem=5)]   # dominated by 17
    sampler = MOTPESampler(SPECS, TWO, seed=0, startup_jobs=5)
    history = sampler._make_history(trials)  # pylint: disable=protected-access
    good, ranks, bad = sampler._split(history)  # pylint: disable=protected-access
    assert sorted(good) == [(0.85,), (0.9,)] and sorted(ranks) == [0, 1]
    assert len(bad) == 18 and (0.81,) in bad


def test_motpe_split_without_feasible_jobs_takes_the_least_infeasible():
    trials = [_trial(i, i / 10, acc=0.5, lat=50, mem=8 + i) for i in range(10)]
    sampler = MOTPESampler(SPECS, TWO, seed=0, startup_jobs=5)
    good, _, _ = sampler._split(sampler._make_history(trials))  # pylint: disable=protected-access
    assert good == [(0.0,)]  # mem 8: the smallest violation


def _feasible_share(constraints, seed):
    """Feasible only for X <= 0.3 (mem = 10 X <= 3), both objectives best at X = 1: the share of jobs 20-39 the
    sampler puts in the feasible part."""
    objectives = Objectives([('acc', 'max'), ('lat', 'min')], constraints)
    sampler = MOTPESampler(SPECS, objectives, seed=seed, startup_jobs=10)
    trials = []
    for index in range(40):
        x = sampler.suggest(trials, 1)[0].params['X']
        trials.append(_trial(index, x, acc=x, lat=1 - x * x, mem=10 * x))
    return sum(t.params['X'] <= 0.3 for t in trials[20:]) / 20


def test_motpe_learns_the_feasible_region():
    with_constraint = [_feasible_share([Constraint('mem', maximum=3)], seed) for seed in range(3)]
    without = [_feasible_share([], seed) for seed in range(3)]
    # random draws put 30% there; told of the constraint, the sampler goes there (and to its edge, where the best
    # feasible jobs are); not told, it leaves for X = 1
    assert min(with_constraint) >= 0.5 and max(without) <= 0.1, (with_constraint, without)


def test_motpe_is_deterministic_and_says_what_it_does():
    trials = [_trial(i, i / 12, acc=i / 12, lat=i, mem=1) for i in range(12)]
    first = MOTPESampler(SPECS, TWO, seed=5, startup_jobs=10).suggest(trials, 3)
    second = MOTPESampler(SPECS, TWO, seed=5, startup_jobs=10).suggest(trials, 3)
    assert first == second
    assert first[0].note.startswith('bayesian: MOTPE (2 objectives, 1 constraint(s)) over 12 jobs')


def test_front_rows_and_figures_never_put_an_infeasible_job_first():
    trials = [_trial(0, 0.1, 0.99, 10, 9), _trial(1, 0.2, 0.8, 20, 5), _trial(2, 0.3, 0.6, 15, 5),
              _trial(3, 0.4, 0.7, 30, 5), _trial(4, 0.5, 0.95, None, 1), _trial(5, 0.6, None, None, None, 'failed')]
    figures = front_figures(trials, trials, TWO)
    assert [e['name'] for e in figures['front']] == ['j1', 'j2']
    assert [(e['name'], e['rank']) for e in figures['ranked']] == [('j1', 0), ('j2', 0), ('j3', 1)]
    assert [(e['name'], e['failed']) for e in figures['infeasible']] == [('j0', 'mem <= 7 (9)')]
    rows = front_rows(trials, TWO)
    assert rows['j0']['infeasible'] == 'mem <= 7 (9)' and rows['j0']['paretoRank'] is None
    assert rows['j1']['onFront'] and rows['j3']['paretoRank'] == 1
    assert rows['j4']['objectives'] is None  # latency never reported: not ranked
    # the best is by the first objective among the feasible: j0 has the best accuracy but is infeasible
    assert best_trial(trials, 'max', TWO).name == 'j4'
    assert best_trial(trials, 'max').name == 'j0'  # without the constraints: the old rule


def test_constraint_bounds_and_unreported_metric():
    both = Constraint('m', maximum=2, minimum=1)
    assert [both.violation(v) for v in (0.5, 1, 1.5, 2, 3)] == [0.5, 0, 0, 0, 1]
    assert both.violation(None) == math.inf
    assert both.describe() == 'm >= 1 and <= 2'


def test_extra_metrics_are_read_from_the_log_lines():
    parser = ReportParser({'metric': 'acc', 'step': 'epoch'}, ['lat', 'mem'])
    reader = LogReader(parser)
    reader.feed(b'epoch=1 acc=0.5 lat=20 mem=3\nepoch=2 acc=0.6 lat=25\nlat=nan mem=4 mem_peak=9\n', final=True)
    assert [r.value for r in reader.reports] == [0.5, 0.6]
    assert reader.metrics == {'lat': 25.0, 'mem': 4.0}  # the last finite value of each, not mem_peak's


def test_hostile_values_never_break_the_split_or_the_front():
    """A job's output is untrusted: values at the float range's ends make volumes inf - inf; the sampler still
    suggests, the front still forms, the figures stay JSON-finite."""
    import json
    trials = [_trial(i, i / 15, acc=v, lat=w, mem=1) for i, (v, w) in enumerate(
        [(1e308, -1e308), (-1e308, 1e308), (1e308, 1e308), (-1e308, -1e308), (5e-324, 0.0)] * 3)]
    sampler = MOTPESampler(SPECS, TWO, seed=0, startup_jobs=5)
    assert len(sampler.suggest(trials, 2)) == 2
    figures = front_figures(trials, trials, TWO)
    assert {e['name'] for e in figures['front']} == {'j0', 'j5', 'j10'}  # (1e308 acc, -1e308 latency)
    json.dumps(figures, allow_nan=False)
    assert hypervolume([(1e308, -1e308), (-1e308, 1e308)], (1.7e308, 1.7e308)) == math.inf


def test_large_fronts_in_many_objectives_are_cut_by_box_volume_in_time():
    import time
    rng = random.Random(4)
    points = []
    for _ in range(80):  # 80 points on a 4-objective sphere: all on the front
        v = [abs(rng.gauss(0, 1)) for _ in range(4)]
        points.append(tuple(x / math.sqrt(sum(y * y for y in v)) for x in v))
    start = time.perf_counter()
    chosen = pareto_select(points, 10)
    assert time.perf_counter() - start < 1.0
    reference = tuple(1.1 * max(p[k] for p in points) for k in range(4))
    volumes = [math.prod(r - x for x, r in zip(p, reference)) for p in points]
    assert chosen == sorted(range(80), key=lambda k: (-volumes[k], k))[:10]
    # a small front in 4 objectives is still cut exactly, by hypervolume
    assert pareto_select(points[:12], 4) == greedy_hypervolume_subset(
        points[:12], 4, tuple(1.1 * max(p[k] for p in points[:12]) for k in range(4)))


@pytest.mark.parametrize('objectives', [2, 3, 4])
def test_lazy_greedy_subset_is_the_plain_greedy(objectives):
    for seed in range(4):
        rng = random.Random(seed)
        points = [tuple(rng.random() for _ in range(objectives)) for _ in range(14)]
        reference = (1.1,) * objectives
        plain, chosen = [], []
        for _ in range(6):
            base = hypervolume(chosen, reference)
            best = max((i for i in range(14) if i not in plain),
                       key=lambda i: (hypervolume(chosen + [points[i]], reference) - base, -i))
            plain.append(best)
            chosen.append(points[best])
        assert greedy_hypervolume_subset(points, 6, reference) == plain


def test_jobs_stopped_early_come_after_complete_ones_and_before_infeasible_ones():
    """Optuna's order: complete feasible jobs by Pareto rank, then pruned ones by their last value, then infeasible
    ones by violation. 30 jobs: gamma = 3 good; 26 of them infeasible (memory 9)."""
    trials = [_trial(i, i / 40, acc=0.1, lat=90, mem=9) for i in range(26)]
    trials += [_trial(26, 0.70, acc=0.9, lat=10, mem=None, state='terminated', stopped=True),  # stopped, no lat yet
               _trial(27, 0.75, acc=0.5, lat=None, mem=None, state='terminated', stopped=True),
               _trial(28, 0.80, acc=0.99, lat=1, mem=8),  # infeasible
               _trial(29, 0.85, acc=0.3, lat=50, mem=2)]  # the one complete feasible job
    sampler = MOTPESampler(SPECS, TWO, seed=0, startup_jobs=5)
    good, ranks, _ = sampler._split(sampler._make_history(trials))  # pylint: disable=protected-access
    by_rank = [point for _, point in sorted(zip(ranks, good))]
    assert by_rank == [(0.85,), (0.70,), (0.75,)]  # complete, then stopped by their accuracy; no infeasible one
    trials[29] = _trial(29, 0.85, acc=0.3, lat=50, mem=7.5)  # now infeasible too: the least infeasible fills in
    good, ranks, _ = sampler._split(sampler._make_history(trials))  # pylint: disable=protected-access
    assert [point for _, point in sorted(zip(ranks, good))] == [(0.70,), (0.75,), (0.85,)]


def test_hyperband_front_counts_the_largest_resource_only():
    from azext_batchai_sweep.core.tuning.result import sweep_figures
    from dataclasses import replace
    low = [replace(_trial(i, i / 10, acc=0.9, lat=1, mem=1), resource=1) for i in range(2)]
    top = [replace(_trial(2, 0.5, acc=0.5, lat=5, mem=1), resource=9)]
    figures = sweep_figures(low + top, {}, 'max', objectives=TWO)
    assert [e['name'] for e in figures['pareto']['front']] == ['j2'] and figures['best']['name'] == 'j2'
    assert 'pareto' not in sweep_figures(low + top, {}, 'max')  # a sweep without objectives: as before
