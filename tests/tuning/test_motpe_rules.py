"""MOTPE's split rules that mutation testing found untested (motpe.py; issue 49): one objective's order, the box
volume that orders and cuts a large front of 3 objectives or more (and the exact hypervolume up to that size), a
front that fits exactly, the standing of a job stopped early or still running, and a warm sampler seeing a job's
metrics changed in place. The oracles: sorted() by hand, box volumes computed here, pareto.py's contributions and
greedy subset (tested against Optuna in test_pareto.py)."""
import math
import random

import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning import pareto
from azext_batchai_sweep.core.tuning.objectives import Constraint, Objectives
from azext_batchai_sweep.core.tuning.samplers import motpe
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler, pareto_order, pareto_select
from azext_batchai_sweep.core.tuning.trial import Report, Trial


def test_one_objectives_order_and_select_are_by_value_then_index():
    losses = [(3.0,), (1.0,), (2.0,), (1.0,), (5.0,), (2.0,)]
    by_hand = sorted(range(6), key=lambda k: (losses[k][0], k))  # [1, 3, 2, 5, 0, 4]
    assert pareto_order(losses) == by_hand
    for size in range(1, 6):
        assert pareto_select(losses, size) == by_hand[:size]
    assert pareto_order([(4.0,)]) == [0] and pareto_order([(2.0, 1.0)]) == [0]


def _plane(count, objectives, seed):
    """`count` points with positive coordinates summing to 1: no one dominates another (one front)."""
    rng = random.Random(seed)
    points = []
    for _ in range(count):
        raw = [rng.random() + 0.05 for _ in range(objectives)]
        points.append(tuple(x / sum(raw) for x in raw))
    return points


def _by_box_by_hand(points):
    reference = pareto.reference_point(points)
    volumes = [math.prod(r - x for x, r in zip(p, reference)) for p in points]
    return sorted(range(len(points)), key=lambda k: (-volumes[k], k))


def _by_contribution(points):
    gains = pareto.contributions(points, pareto.reference_point(points))
    return sorted(range(len(points)), key=lambda k: (-gains[k], k))


@pytest.mark.parametrize('objectives', [3, 4])
def test_a_front_of_three_objectives_or_more_is_ordered_exactly_up_to_its_limit_then_by_box_volume(objectives):
    limit = motpe._EXACT_ORDER_POINTS  # pylint: disable=protected-access
    exact = _plane(limit, objectives, seed=objectives)
    assert set(pareto.nondominated_ranks(exact)) == {0}
    assert pareto_order(exact) == _by_contribution(exact) != _by_box_by_hand(exact)
    large = _plane(limit + 1, objectives, seed=objectives)
    assert pareto_order(large) == _by_box_by_hand(large) != _by_contribution(large)


def test_two_objectives_are_ordered_exactly_at_any_size():
    points = [(k / 60.0, (1 - k / 60.0) ** 2) for k in range(61)]  # one convex front of 61 points
    assert pareto_order(points) == _by_contribution(points)


@pytest.mark.parametrize('objectives', [3, 4])
def test_a_large_front_of_three_objectives_or_more_is_cut_by_box_volume_a_smaller_one_greedily(objectives):
    limit = motpe._EXACT_CUT_POINTS  # pylint: disable=protected-access
    dominated = tuple(2.0 for _ in range(objectives))  # a second front: the first is cut
    for count, rule in ((limit, 'greedy'), (limit + 1, 'box')):
        front = _plane(count, objectives, seed=10 + objectives)
        wanted = count // 3
        chosen = pareto_select(front + [dominated], wanted)
        if rule == 'box':
            assert chosen == _by_box_by_hand(front)[:wanted]
        else:
            expected = pareto.greedy_hypervolume_subset(front, wanted, pareto.reference_point(front))
            assert chosen == expected != _by_box_by_hand(front)[:wanted]


def test_a_front_that_fits_exactly_is_taken_whole_in_contribution_order():
    front = [(0.1, 0.9), (0.3, 0.5), (0.5, 0.3), (0.9, 0.1), (0.45, 0.45)]
    losses = front + [(0.95, 0.95), (0.99, 0.99)]
    chosen = pareto_select(losses, len(front))
    assert chosen == _by_contribution(front)
    # greedy selection of the same front gives another order: the rule matters
    assert chosen != pareto.greedy_hypervolume_subset(front, len(front), pareto.reference_point(front))


SPECS = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
TWO = Objectives([('acc', 'max'), ('lat', 'min')], [Constraint('mem', maximum=7)])


def _trial(index, acc, lat=None, mem=1, state='succeeded', stopped=False):
    metrics = {k: v for k, v in (('lat', lat), ('mem', mem)) if v is not None}
    return Trial(name='j%d' % index, index=index, params={'X': index / 100.0}, state=state, stopped_early=stopped,
                 reports=(Report(1, acc),) if acc is not None else (), metrics=metrics)


def test_the_standing_of_a_complete_a_stopped_and_an_infeasible_job():
    sampler = MOTPESampler(SPECS, TWO, seed=0)
    complete = sampler.score(_trial(0, acc=0.8, lat=20))
    assert complete[0] == motpe._COMPLETE and complete[2] == (-0.8, 20.0)  # pylint: disable=protected-access
    # stopped early with both objectives reported: still partial, by its first objective (max: negated)
    stopped = sampler.score(_trial(1, acc=0.7, lat=10, stopped=True, state='terminated'))
    assert stopped == (motpe._PARTIAL, -0.7, None)  # pylint: disable=protected-access
    # a succeeded job without the second objective: partial
    assert sampler.score(_trial(2, acc=0.6))[:2] == (motpe._PARTIAL, -0.6)  # pylint: disable=protected-access
    # an unreported constraint counts against a finished job only
    assert sampler.score(_trial(3, acc=0.5, lat=5, mem=None))[0] == motpe._INFEASIBLE  # pylint: disable=W0212
    assert sampler.score(_trial(4, acc=0.5, lat=5, mem=None, stopped=True,
                                state='terminated'))[0] == motpe._PARTIAL  # pylint: disable=protected-access
    assert sampler.score(_trial(5, acc=0.5, lat=5, mem=9))[:2] == (motpe._INFEASIBLE, 2.0)  # pylint: disable=W0212
    # goal min: the partial key is the value itself
    low = MOTPESampler(SPECS, Objectives([('lat', 'min'), ('acc', 'max')], []), seed=0)
    assert low.score(_trial(6, acc=3.0, stopped=True, state='terminated'))[:2] == (motpe._PARTIAL, 3.0)  # noqa


@pytest.mark.parametrize('goal', ['max', 'min'])
def test_partial_jobs_fill_the_good_group_best_first_after_the_complete_ones(goal):
    objectives = Objectives([('acc', goal), ('lat', 'min')], [])
    sampler = MOTPESampler(SPECS, objectives, seed=0)
    sign = 1 if goal == 'max' else -1
    trials = [_trial(0, acc=sign * 0.9, lat=1.0)]  # complete: good first
    values = [0.3, 0.8, 0.5, 0.8, 0.1, 0.6, 0.2, 0.4, 0.7, 0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85,
              0.95, 0.02]
    trials += [_trial(k + 1, acc=sign * v, stopped=True, state='terminated') for k, v in enumerate(values)]
    good, ranks, _ = sampler._split(sampler._make_history(trials))  # pylint: disable=protected-access
    n_good = motpe.gamma_multiobjective(len(trials))  # 3 of 21
    assert len(good) == n_good
    ordered = [good[ranks.index(r)] for r in range(n_good)]
    # the complete job, then the partial ones by their first objective, best first, ties by index
    best_partial = sorted(range(len(values)), key=lambda k: (-values[k], k))[:n_good - 1]
    assert ordered == [(0.0,)] + [((k + 1) / 100.0,) for k in best_partial]


def test_a_warm_sampler_sees_a_jobs_metrics_changed_in_place():
    trials = [_trial(k, acc=0.1 * (k % 7), lat=float(k % 5), mem=1) for k in range(30)]
    warm = MOTPESampler(SPECS, TWO, seed=3, startup_jobs=5)
    warm.suggest(trials, 1)
    for trial in trials[:10]:
        trial.metrics['lat'] = 100.0 - trial.metrics['lat']  # the same dicts, changed
        trial.metrics['mem'] = 9  # now infeasible
    cold = MOTPESampler(SPECS, TWO, seed=3, startup_jobs=5)
    good = cold._split(cold._make_history(trials))[0]  # pylint: disable=protected-access
    assert warm._split(warm._make_history(trials))[0] == good  # pylint: disable=protected-access
    assert (0.06,) not in good  # job 6 (best before) is infeasible now: the change is seen
    assert [s.params for s in warm.suggest(trials, 2)] == [s.params for s in cold.suggest(trials, 2)]
