"""Bayesian sampling with several objectives and/or constraints: MOTPE (Ozaki et al. 2020/2022) on our TPE.

Everything but the good/bad split is tpe.py's TPESampler (Parzen estimators, candidates, constant liar, startup
jobs, l's bandwidth floor and rank weights, determinism); this module only decides which finished jobs are "good",
and in which order (the order is the rank that tpe.rank_weights weighs them by). The split follows Optuna 5.0's
TPESampler with several objectives and a ``constraints_func``:

1. feasible jobs with every objective come first: they are ranked by non-domination rank (pareto.py, each goal
   max negated), whole fronts while they fit in the good group; the front that does not fit is cut by greedy
   hypervolume subset selection (the points that add the most hypervolume, Optuna's HSSP tie-break, with
   Optuna's reference point: each objective's worst value of that front, 10% further out); within a front that fits
   whole, points are ordered by their exclusive hypervolume contribution (largest first), so l leans on the points
   that hold the front up (MOTPE's contribution weighting, folded into tpe.py's rank weights);
   past 40 points in a front to order (60 to cut) with 3 objectives or more, each point's box volume (its
   hypervolume alone) ranks it instead, so that a suggestion stays fast in pure Python;
2. then jobs stopped early (or missing a later objective) by their first objective (Optuna's pruned trials);
3. then infeasible jobs by their total violation, smallest first (Optuna's ``_split_infeasible_trials``): the
   feasible-first split that makes l avoid the infeasible region while feasible jobs are known, and steer towards
   the least infeasible while none are.

The good group's size is 10% of the jobs that taught something (Optuna's ``default_gamma_multiobjective``,
uncapped) with several objectives, tpe.default_gamma (capped at 25) with one objective and constraints. With several
objectives each parameter has its own pair of estimators (``multivariate=False``, Optuna's default there), with one
objective and constraints one joint model (TPE's default).

A sampler asked again (a run asks after every poll) keeps its 2-objective split (_Split): the new jobs are ranked
with the points of the first fronts it kept, not with every job, and the fronts whose points are unchanged keep their
order; it gives the split of all the jobs (tests/tuning/test_suggest_kept.py).
"""
import bisect
import itertools
import math
import operator

from ..pareto import box, contributions, greedy_hypervolume_subset, nondominated_ranks, reference_point
from .tpe import TPESampler

# A job's standing in the split, best first.
_COMPLETE, _PARTIAL, _INFEASIBLE = 0, 1, 2


# Exact hypervolume work grows fast with the objectives: past these sizes of a front (with 3 objectives or more) its
# order and its cut use each point's box volume (its hypervolume alone, Optuna's first bound) instead, so that one
# suggestion stays under a second or so in pure Python (a front of 40 points in 5 objectives: 0.5 s exact).
_EXACT_ORDER_POINTS = 40
_EXACT_CUT_POINTS = 60


def _by_box(points, reference):
    """Indices by box volume, largest first (ties: the earlier index)."""
    return sorted(range(len(points)), key=lambda k: (-box(points[k], reference), k))


def gamma_multiobjective(n):
    """How many of n observations count as good with several objectives: 10%, uncapped (Optuna's default)."""
    return int(math.ceil(0.1 * n))


def _fronts(losses):
    """The indices of ``losses`` front by front (non-domination rank 0, 1, ...), each in index order."""
    rank = nondominated_ranks(losses).__getitem__
    # One sort (stable: each front in index order), grouped in C: a scan per front was quadratic in a 10,000-job split.
    for _, members in itertools.groupby(sorted(range(len(losses)), key=rank), key=rank):
        yield list(members)


def pareto_order(losses):
    """Indices of ``losses`` (points to minimise), best first: by non-domination rank, and within a rank by
    exclusive hypervolume contribution (ties: the earlier index)."""
    if not losses:
        return []
    order = []
    for members in _fronts(losses):
        order.extend(members[k] for k in _front_order([losses[i] for i in members]))
    return order


def _front_order(points):
    """Indices of ``points``, one front (no point dominates another), by exclusive hypervolume contribution,
    largest first (ties: the earlier index): pareto_order of a front, whose ranks are all 0 (not computed again)."""
    if len(points[0]) == 1 or len(points) == 1:  # one objective: a front's points are equal, kept in index order
        return list(range(len(points)))
    reference = reference_point(points)
    if len(points[0]) > 2 and len(points) > _EXACT_ORDER_POINTS:
        return _by_box(points, reference)
    gains = contributions(points, reference)
    return [k for _, k in sorted(zip((-g for g in gains), range(len(points))))]


def pareto_select(losses, size):
    """Indices of the ``size`` best of ``losses`` (Optuna's multi-objective split), best first: whole fronts while
    they fit, the next cut by greedy hypervolume subset selection."""
    if size >= len(losses):
        return pareto_order(losses)
    return _select_by_rank(losses, size, nondominated_ranks(losses))[0]


def _select_by_rank(losses, size, ranks, memo=None):
    """(pareto_select's indices, the rank of the front cut) from the points' non-domination ranks (size < the number
    of points). ``memo`` ({(the front's points, how many of it): its order} of the last split, and the dict that
    collects this one's): a front whose points are the last split's is ordered as it was, not computed again."""
    rank = ranks.__getitem__
    chosen = []
    for cut, members in itertools.groupby(sorted(range(len(losses)), key=rank), key=rank):
        members = list(members)
        whole = len(chosen) + len(members) <= size
        points = [losses[i] for i in members]
        wanted = len(members) if whole else size - len(chosen)
        key = (tuple(points), wanted)
        picked = None if memo is None else memo[0].get(key)
        if picked is None:
            picked = _front_order(points) if whole else _front_cut(points, wanted)
        if memo is not None:
            memo[1][key] = picked
        chosen.extend(members[k] for k in picked)
        if not whole:
            return chosen, cut
    return chosen, None


def _front_cut(points, wanted):
    """The ``wanted`` points of a front that does not fit whole, in the order chosen (pareto_select's cut)."""
    if len(points[0]) == 1:  # one objective: a front's points are equal, the first ones in index order
        return list(range(wanted))
    if len(points[0]) > 2 and len(points) > _EXACT_CUT_POINTS:
        return _by_box(points, reference_point(points))[:wanted]
    return greedy_hypervolume_subset(points, wanted, reference_point(points))


# An incremental split (_Split) keeps this many fronts past the one it cuts: it is computed whole again once the cut
# reaches past them (at 10,000 random jobs of ZDT1, fronts of ~80 points, every ~2,000 jobs or so).
_KEPT_FRONTS = 3


class _Split:  # pylint: disable=too-few-public-methods
    """pareto_select of a sampler's complete jobs, kept from one suggestion to the next (issue 44): a run asks after
    every poll with the same jobs and a few more, and ranking and ordering 10,000 points each time was a quarter of a
    suggestion. Two objectives, finite losses, only jobs added since the last split (else it is computed whole).

    It keeps the points of rank <= ``limit`` (``kept``: every point that dominates one of them is among them) and a
    staircase of the others (the front of rank limit + 1: every other point is dominated by or equal to one of its
    points). Adding points only raises ranks. A new point dominated by or equal to a staircase point ranks past the
    limit, and dominates no kept point (the staircase point would then dominate it, and it ranked past the limit
    before). Every other new point, and every kept one, has all its dominators among the kept and those new points:
    ranked among them alone, their ranks are the whole set's, and every point of rank <= limit is among them. So
    when the front cut is within the limit, pareto_select of them is pareto_select of all (the same fronts, each in
    index order); else the split is computed whole. A front whose points were the last split's keeps its order
    (``memo``)."""

    def __init__(self):
        self.losses = None  # {job index: its losses} of the complete jobs the last split saw (None: not incremental)
        self.kept = None  # [(job index, losses)] of the points of rank <= limit, by index
        self.limit = None
        self.stairs = None  # ([first objective], [second]) of the staircase, by the first (the second decreasing)
        self.memo = {}
        self.whole = self.partial = 0  # how many splits were computed whole, how many from the kept points (tests)

    def select(self, indices, losses, size):
        """pareto_select(losses, size) of the jobs ``indices`` (increasing) with these ``losses``."""
        if size >= len(losses):
            self.losses = None
            return pareto_order(losses)
        memo = (self.memo, {})
        found = self._partial(indices, losses, size, memo) if self.losses is not None else None
        if found is None:
            found = self._whole(indices, losses, size, memo)
        self.memo = memo[1]
        return found

    def _whole(self, indices, losses, size, memo):
        self.whole += 1
        ranks = nondominated_ranks(losses)
        chosen, cut = _select_by_rank(losses, size, ranks, memo)
        self.losses = None
        if len(losses[0]) == 2 and all(map(math.isfinite, itertools.chain.from_iterable(losses))):
            limit = cut + _KEPT_FRONTS
            self._keep(indices, losses, ranks, limit, [p for p, r in zip(losses, ranks) if r == limit + 1])
            self.losses = dict(zip(indices, losses))
        return chosen

    def _keep(self, indices, losses, ranks, limit, outside):
        """Keeps the points of rank <= limit, and the staircase of the others (``outside``: the front of rank
        limit + 1 of a whole split; a partial one's points past the limit, with the last staircase's)."""
        self.limit = limit
        self.kept = [(i, p) for i, p, r in zip(indices, losses, ranks) if r <= limit]
        firsts, seconds, lowest = [], [], math.inf
        for x, y in sorted(set(outside)):
            if y < lowest:  # not dominated by (nor equal to) a point before it
                firsts.append(x)
                seconds.append(y)
                lowest = y
        self.stairs = (firsts, seconds)

    def _partial(self, indices, losses, size, memo):
        """The split from the kept points and the new ones, or None when it must be computed whole."""
        old, new = self.losses, dict(zip(indices, losses))
        if len(new) != len(indices) or not old.items() <= new.items():
            return None  # a job left, or its losses changed
        firsts, seconds = self.stairs
        fresh = []
        for index in sorted(new.keys() - old.keys()):
            point = new[index]
            if len(point) != 2 or not all(map(math.isfinite, point)):
                return None
            at = bisect.bisect_right(firsts, point[0])
            if at and seconds[at - 1] <= point[1]:
                continue  # dominated by or equal to a point past the limit: past it too
            fresh.append((index, point))
        points = sorted(self.kept + fresh)
        if size >= len(points):
            return None
        ranks = nondominated_ranks([p for _, p in points])
        chosen, cut = _select_by_rank([p for _, p in points], size, ranks, memo)
        if cut > self.limit:
            return None
        self.partial += 1
        subset = [i for i, _ in points]
        self._keep(subset, [p for _, p in points], ranks, self.limit,
                   [p for (_, p), r in zip(points, ranks) if r > self.limit] + list(zip(*self.stairs)))
        self.losses = new
        return [bisect.bisect_left(indices, subset[k]) for k in chosen]


class MOTPESampler(TPESampler):
    """TPESampler whose good group is chosen by Pareto rank, hypervolume and feasibility (see the module).

    :param objectives: an objectives.Objectives (its first goal is the sampler's ``goal``).
    Other parameters: TPESampler's.
    """

    def __init__(self, specs, objectives, **kwargs):
        if objectives.several:
            kwargs.setdefault('gamma', gamma_multiobjective)
            # One model per parameter, as Optuna does by default with several objectives: on the benchmarks'
            # problems a joint model lost 5-15% of hypervolume (docs/benchmarks.md).
            kwargs.setdefault('multivariate', False)
        # Inherited jobs rank with the sweep's own: their objectives and constraints are compared jointly (the
        # single-objective down-weighting, tpe.inherited_weight, is not measured for several objectives).
        kwargs.setdefault('inherited_half_weight', None)
        # No local phase (tpe.py): "the best jobs" whose grid neighbours it scores are a single objective's; with
        # several objectives the best ones form a front, and the phase was measured on one objective only.
        kwargs.setdefault('local_share', None)
        super().__init__(specs, goal=objectives.goals[0], **kwargs)
        self.objectives = objectives
        self.split = _Split()  # the complete jobs' split, kept from one suggestion to the next

    def score(self, trial):
        """(standing, key, losses): _COMPLETE with the losses of every objective, _PARTIAL with the first objective's
        loss, _INFEASIBLE with the violation; None for a job that taught nothing."""
        first = super().score(trial)
        if first is None:
            return None
        if trial.state == 'succeeded' and not trial.stopped_early:
            violation = self.objectives.violation(trial)
        else:  # stopped early: only the constraints it reported can be broken
            violation = self.objectives.reported_violation(trial)
        if violation > 0:
            return (_INFEASIBLE, violation, None)
        values = self.objectives.values(trial, first=first)
        if values is None or trial.stopped_early:
            return (_PARTIAL, -first if self.goal == 'max' else first, None)
        return (_COMPLETE, 0.0, self.objectives.losses(values))

    @staticmethod
    def score_inputs_of(trials):
        """What score() reads besides the states: TPE's, and the metrics (objectives and constraints)."""
        return TPESampler.score_inputs_of(trials) + [([trial.metrics for trial in trials], True)]

    def _groups(self, history):  # pylint: disable=arguments-differ
        scored = history.scored
        n_good = self.gamma(len(scored))
        complete = [item for item in scored if item[1][0] == _COMPLETE]
        chosen = self.split.select([item[0] for item in complete], [item[1][2] for item in complete],
                                   min(n_good, len(complete)))
        ordered = [complete[k] for k in chosen]
        for standing in (_PARTIAL, _INFEASIBLE):
            if len(ordered) < n_good:
                rest = [item for item in scored if item[1][0] == standing]
                # stable: ties in index order (the history's)
                ordered.extend(sorted(rest, key=lambda item: item[1][1])[:n_good - len(ordered)])
        ordered = ordered[:n_good]
        good_indices = {item[0] for item in ordered}
        good = sorted((item[0], rank, item[2]) for rank, item in enumerate(ordered))
        bad = [item for item in scored if item[0] not in good_indices]  # the history's items: no new tuple each
        if self.constant_liar and history.pending:
            bad.extend(history.pending)
            bad.sort(key=operator.itemgetter(0))  # stable: two runs in index order are merged
        return [g[2] for g in good], [g[1] for g in good], [b[-1] for b in bad], [g[0] for g in good], \
            [b[0] for b in bad]

    def _note(self, history):
        note = super()._note(history)
        what = '{} objectives'.format(len(self.objectives.objectives)) if self.objectives.several else 'one objective'
        if self.objectives.constraints:
            what += ', {} constraint(s)'.format(len(self.objectives.constraints))
        return note.replace('bayesian: TPE', 'bayesian: MOTPE ({})'.format(what), 1)
