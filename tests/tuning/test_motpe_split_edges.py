"""MOTPE's split at the edges mutation testing found untested (motpe.py; issue 49): a 2-objective front cut by
greedy hypervolume (small or large, never by index or box volume), a front of two points ordered by contribution, a
kept split whose cut reaches its last kept front or whose kept points are exactly the good group's size, a split
asked again after one where every point fitted, a stopped job whose first loss is exactly 0, the good group in index
order, and pending jobs without the constant liar. The oracles: pareto_select from scratch, pareto.py's greedy
subset and contributions (tested against Optuna in test_pareto.py), orders written by hand."""
import math

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning import pareto
from azext_batchai_sweep.core.tuning.objectives import Constraint, Objectives
from azext_batchai_sweep.core.tuning.samplers import motpe
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler, pareto_order, pareto_select
from azext_batchai_sweep.core.tuning.trial import Report, Trial

# pylint: disable=protected-access


def _greedy(front, wanted):
    return pareto.greedy_hypervolume_subset(front, wanted, pareto.reference_point(front))


def _by_box(front):
    reference = pareto.reference_point(front)
    return sorted(range(len(front)), key=lambda k: (-math.prod(r - x for x, r in zip(front[k], reference)), k))


def test_a_two_objective_front_is_cut_greedily_not_in_index_order():
    front = [(0.0, 1.0), (0.05, 0.96), (0.5, 0.5), (0.96, 0.05), (1.0, 0.0)]
    chosen = pareto_select(front + [(2.0, 2.0)], 2)
    assert chosen == _greedy(front, 2)
    assert sorted(chosen) != [0, 1]  # the first two by index hold little hypervolume together
    assert 2 in chosen  # the knee adds the most


def test_a_large_two_objective_front_is_cut_greedily_not_by_box_volume():
    count = motpe._EXACT_CUT_POINTS + 10  # past the size where 3 objectives or more use box volumes
    front = [(k / (count - 1.0), (1 - k / (count - 1.0)) ** 2) for k in range(count)]  # convex: boxes differ
    wanted = count // 3
    chosen = pareto_select(front + [(5.0, 5.0)], wanted)
    assert chosen == _greedy(front, wanted) != _by_box(front)[:wanted]


def test_a_front_of_two_points_is_ordered_by_contribution_not_by_index():
    # reference (2.2, 3.3): the first point's exclusive box is 1.2 x 0.3 less the shared 0.2 x 0.3, the second's
    # 0.2 x 2.3 less the same: the second holds more
    front = [(1.0, 3.0), (2.0, 1.0)]
    gains = pareto.contributions(front, pareto.reference_point(front))
    assert gains[1] > gains[0]
    assert pareto_order(front) == [1, 0]
    assert pareto_order(front + [(3.0, 4.0)]) == [1, 0, 2]
    assert pareto_select(front + [(3.0, 4.0)], 2) == [1, 0]


def _layers(count, per_front, shift=0.0):
    """``count`` fronts of ``per_front`` points: the points of front r on the line x + y = r + 1 (rank r)."""
    points = []
    for rank in range(count):
        for k in range(per_front):
            t = (k + 0.5 + shift) / per_front
            points.append((t * (rank + 1), (1 - t) * (rank + 1)))
    return points


def test_a_kept_split_whose_cut_reaches_its_last_kept_front_is_the_whole_split():
    losses = _layers(8, 5)  # 40 points, ranks 0 to 7
    indices = list(range(len(losses)))
    split = motpe._Split()
    assert split.select(indices, losses, 3) == pareto_select(losses, 3)  # cut at rank 0: kept up to rank 3
    assert split.limit == motpe._KEPT_FRONTS
    # new points of rank 3 exactly: dominated by points of rank 2, by none of rank 3
    new = [(t * 3.5, (1 - t) * 3.5) for t in (0.3, 0.5, 0.7)]
    assert [pareto.nondominated_ranks(losses + new)[-k] for k in (1, 2, 3)] == [3, 3, 3]
    losses += new
    indices += [40, 41, 42]
    size = 15 + 4  # ranks 0 to 2 whole, rank 3 (5 points and the 3 new) cut
    found = split.select(indices, losses, size)
    assert split.partial == 1  # from the kept points
    assert found == pareto_select(losses, size)
    assert set(found) & {40, 41, 42}  # the new points compete in the cut front


def test_a_kept_split_of_exactly_the_good_groups_size_is_the_whole_split():
    losses = _layers(8, 5)
    indices = list(range(len(losses)))
    split = motpe._Split()
    split.select(indices, losses, 3)
    kept = len(split.kept)  # ranks 0 to 3: 20 points
    assert kept == 20
    # new points dominated by the staircase (rank 5 and past): never ranked with the kept ones
    for k in range(6):
        losses.append((3.0 + k * 0.1, 4.0))
        indices.append(len(indices))
    assert split.select(indices, losses, kept) == pareto_select(losses, kept)


def test_a_split_asked_again_after_every_point_fitted_is_the_whole_split():
    losses = _layers(4, 3)
    split = motpe._Split()
    assert split.select(list(range(12)), losses, 12) == pareto_order(losses)
    losses += _layers(2, 3, shift=0.25)
    indices = list(range(len(losses)))
    assert split.select(indices, losses, 4) == pareto_select(losses, 4)
    assert split.select(indices + [18], losses + [(0.5, 0.5)], 4) == pareto_select(losses + [(0.5, 0.5)], 4)


SPECS = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]


def _trial(index, first, second=None, state='succeeded', stopped=False):
    metrics = {} if second is None else {'b': second}
    return Trial(name='j%d' % index, index=index, params={'X': index / 100.0}, state=state, stopped_early=stopped,
                 reports=(Report(1, first),) if first is not None else (), metrics=metrics)


def test_a_stopped_job_whose_first_loss_is_zero_is_a_partial_one():
    sampler = MOTPESampler(SPECS, Objectives([('a', 'min'), ('b', 'min')], []), seed=0)
    trials = [_trial(0, 0.5, 0.5)] + [_trial(k, 0.1 * k, state='terminated', stopped=True) for k in range(1, 20)]
    trials.append(_trial(20, 0.0, state='terminated', stopped=True))  # the best partial job: loss 0
    good, ranks, _ = sampler._split(sampler._make_history(trials))
    assert len(good) == motpe.gamma_multiobjective(21) == 3
    assert [good[ranks.index(r)] for r in range(3)] == [(0.0,), (0.2,), (0.01,)]  # complete, then 0.0, then 0.1


def test_the_good_group_is_in_index_order_with_its_ranks():
    sampler = MOTPESampler(SPECS, Objectives([('a', 'min'), ('b', 'min')], []), seed=0)
    # later jobs hold the better losses: the split's order is not the index order
    trials = [_trial(k, 1.0 - 0.04 * k, 1.0 - 0.04 * k) for k in range(25)]
    good, ranks, _ = sampler._split(sampler._make_history(trials))
    assert good == [(0.22,), (0.23,), (0.24,)]  # by index
    assert ranks == [2, 1, 0]  # job 24 (the best) first


def test_pending_jobs_are_not_bad_ones_without_the_constant_liar():
    objectives = Objectives([('a', 'min'), ('b', 'min')], [])
    finished = [_trial(k, (k * 7 % 11) / 11.0, (k * 5 % 13) / 13.0) for k in range(20)]
    running = [_trial(k, None, state='running') for k in range(20, 24)]
    for liar in (False, True):
        sampler = MOTPESampler(SPECS, objectives, seed=0, constant_liar=liar)
        with_pending = sampler._split(sampler._make_history(finished + running))
        alone = sampler._split(sampler._make_history(finished))
        assert with_pending[:2] == alone[:2]
        assert (len(with_pending[2]) - len(alone[2])) == (4 if liar else 0)


def test_a_succeeded_job_stopped_early_is_judged_by_the_constraints_it_reported():
    # A job the controller stopped that had already succeeded, or BOHB's view of a job at a rung before its
    # constraints are known (bohb.model_view): state succeeded, stopped early. An unreported constraint is not broken.
    objectives = Objectives([('a', 'min'), ('b', 'min')], [Constraint('mem', maximum=7)])
    sampler = MOTPESampler(SPECS, objectives, seed=0)
    unreported = _trial(0, 0.3, 0.4, stopped=True)
    assert unreported.state == 'succeeded' and 'mem' not in unreported.metrics
    assert sampler.score(unreported) == (motpe._PARTIAL, 0.3, None)
    broken = _trial(1, 0.3, 0.4, stopped=True)
    broken.metrics['mem'] = 9
    assert sampler.score(broken)[:2] == (motpe._INFEASIBLE, 2.0)
    finished = _trial(2, 0.3, 0.4)  # the same job not stopped: every constraint must be reported
    assert sampler.score(finished)[0] == motpe._INFEASIBLE
