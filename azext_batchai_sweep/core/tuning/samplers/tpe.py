"""Bayesian sampling: a Tree-structured Parzen Estimator (Bergstra et al. 2011) in pure Python.

The formulation is Optuna's TPESampler (4.x-5.x, ``multivariate=True, constant_liar=True``, its defaults in 5.0),
re-derived here without numpy:

1. the jobs that taught something (``Trial.objective()`` is not None: succeeded jobs with their last report, jobs
   a policy stopped early with their last intermediate value) are ranked by objective; the best
   ``gamma(n) = min(ceil(0.1 n), 25)`` of them are "good", the rest "bad";
2. pending jobs (queued or running) join the bad ones (the constant liar): a suggestion made while jobs run is
   pushed away from the points they test, so parallel suggestions spread instead of piling on one point;
3. a Parzen estimator (parzen.py) is fitted to each group, l(x) to the good and g(x) to the bad, with weights that
   ramp down the oldest observations once a group has more than 25 (Optuna's ``default_weights``); two departures
   from Optuna, both in l alone:

   - the floor of l's bandwidths (range / min(100, count + 2), the "magic clip") counts 35% of all the jobs with
     an objective instead of the good group's own size, so l narrows where the good jobs cluster; on a grid (a
     stepped parameter) it stops at half a cell (range / number of values), never narrower than Optuna's own;
   - l's weights also fall with rank: of m good jobs the k-th best (k = 0, 1, ...) weighs (m - k)^2 times its
     age weight, rescaled so that the good jobs together weigh what they weigh in Optuna (the prior's share is
     unchanged); with 6 good jobs the best is 36 times the sixth;

4. ``candidates`` points are drawn from l(x) and the one with the largest log l(x) - log g(x) (the expected
   improvement ratio) is suggested.

Why the floor: Optuna counts the good group alone, 10% of the jobs, so after 60 jobs l's kernels are never
narrower than an eighth of each range, and the last suggestions of a sweep sample the good region no finer than the
first ones did. Counting 35% of the jobs lets the bandwidths follow the evidence: at 60 jobs the floor is a 23rd of
the range, from about 280 jobs on Optuna's own cap (a hundredth).

Why it stops at half a cell on a grid: a grid cannot be searched finer than its values, so a narrower kernel gains
nothing there, and it loses the neighbours: with 35 of 100 jobs counted, a 3-valued grid's kernels are a twelfth of
a cell wide and put no mass on the next value; the candidates then only recombine the values the good jobs already
have, and the sweep stalls on a local optimum of the grid (HPOLib's protein_structure in bench-hpo stopped
improving after 50 jobs on every seed set). Half a cell keeps about a sixth of a kernel's mass on each neighbour.

Why the rank weights: Optuna's l weighs its good jobs alike, so the sixth-best job of 60 draws as many candidates
as the best one. Weighting by rank makes the draws lean on the best results known. It matters most with jobs in
flight, where each suggestion sees results some jobs old: with the floor alone, a narrower l cost sweeps with 4 jobs
in flight in 6 dimensions (hartmann6) as much as it gained elsewhere, and with the rank weights it no longer does
(the same idea as MOTPE's weighting of its good group by each trial's contribution). The two were chosen together
on seed sets kept apart from the issue's. With ``good_floor_share=None, good_rank_power=None`` the sampler is
Optuna's formulation exactly (the oracle test compares both models' densities, pending jobs included).
docs/benchmarks.md has the figures and the variants tried.

The local phase (finite spaces only, single objective): once the sweep has had ``local_share`` of its ``count`` jobs,
each suggestion is the untried grid neighbour (one parameter moved one grid step, or a categorical parameter set to
another of its values) of the best ``local_jobs`` jobs with the largest log l(x) - log g(x); when they have all
been tried, the candidates from l as before. Why: late in a sweep on a grid, the configurations that can still beat
the best ones found usually differ from them in one parameter (on HPOBench's tables 100 jobs reach the top ten of
30,000 configurations, and kc1's four best differ in alpha only), while a draw from l moves every parameter at once
(each kernel at least half a cell wide): most of the 24 candidates are tried already or two or more steps away.
On the tables of bench-hpo (tuning seeds) the best job of a 100-job sweep ranked 1.14x higher on HPOBench and
1.28x higher on HPOLib and NAS-Bench-201 with the phase than without; it costs phoneme, whose best configurations
lie apart in a corner of the grid. A sampler without a ``count`` (or with ``local_share=None``) has no local phase,
and neither has a space with a continuous parameter; a sweep file without a count tells it limits.maxTotalJobs
(bayesian_settings.jobs_to_run).

Until ``startup_jobs`` jobs have taught something, suggestions are uniform random draws. Failed jobs, jobs the user
terminated and jobs without a report never enter the model and are never "best", but their configurations count as
tried: a finite space (every parameter discrete, INTEGER or stepped) never gets the same configuration twice, and
when every configuration has been tried (pending ones included) the sampler is exhausted.

Determinism: the random stream of each suggestion is seeded by (seed, number of jobs before it), and the history
is read in ``Trial.index`` order, so suggestions are a pure function of the seed and the history. A controller
killed after submitting k of a batch of suggestions and restarted asks again with those k jobs pending: it gets the
rest of the same batch, because suggest(trials, 2) is suggest(trials, 1) followed by suggest(trials + [that one
pending], 1). A sampler asked again (a run asks after every poll) keeps what it read of each job and its estimators:
it reads again only the jobs whose fields changed and edits the estimators where the observations differ, which
gives the same floats, so a warm sampler suggests what a new one does (tests/tuning/test_tpe_incremental.py).
"""
import bisect
import heapq
import itertools
import math
import operator
import random

from ..trial import PENDING_STATES, Sampler, Suggestion
from .changes import INDEX as _INDEX, differences, replaced, same_types
from .parzen import ParzenEstimator
from .space import dimensions, space_size

DEFAULT_STARTUP_JOBS = 10
DEFAULT_CANDIDATES = 24
# The share of the jobs with an objective that the floor of l's bandwidths counts (None: the good group's size).
DEFAULT_GOOD_FLOOR_SHARE = 0.35
# On a grid (a stepped parameter: INTEGER, or REAL with a step), l's floor stops narrowing at this share of a cell.
DEFAULT_GOOD_GRID_FLOOR = 0.5
# The power of the rank weights of l's observations: the k-th best of m good jobs weighs (m - k) ** power.
DEFAULT_GOOD_RANK_POWER = 2.0
# The last part of a sweep on a finite space, from this share of its ``count`` jobs on, suggests the untried grid
# neighbour of its best DEFAULT_LOCAL_JOBS jobs with the best l/g ratio (the module's "local phase"; measured in
# docs/benchmarks.md, "Variants tried on HPOBench (session 9)").
DEFAULT_LOCAL_SHARE = 0.7
DEFAULT_LOCAL_JOBS = 3
# Warm start: an inherited job weighs 3 / (3 + the sweep's own results) (inherited_weight()): half of an own job's
# weight at 3 results, a sixth at 15 (bench-warmstart in docs/benchmarks.md; 1, 2, 3, 5, 10 and 30 were tried).
DEFAULT_INHERITED_HALF_WEIGHT = 3
# Past this many configurations a finite space is searched by rejection instead of being listed.
_ENUMERATION_LIMIT = 100000
_REJECTION_ROUNDS = 8
# At most this many untried configurations are scored when the candidates drawn from l(x) were all tried.
_SCORED_UNTRIED = 2000
_VALUE, _FIRST, _LAST = operator.itemgetter(1), operator.itemgetter(0), operator.itemgetter(-1)


def default_gamma(n):
    """How many of n observations count as good: 10%, at most 25 (Optuna's default)."""
    return min(int(math.ceil(0.1 * n)), 25)


def default_weights(n):
    """Observation weights, oldest first: flat for the newest 25, a linear ramp from 1/n below them."""
    if n < 25:
        return [1.0] * n
    ramp = n - 25
    if ramp == 1:
        head = [1.0 / n]
    else:
        head = [1.0 / n + (1.0 - 1.0 / n) * i / (ramp - 1) for i in range(ramp)]
    return head + [1.0] * 25


def inherited_weight(own_results, half_weight):
    """Each inherited job's weight (warm start) against 1 for the sweep's own: half_weight / (half_weight + own
    results), 1 before the sweep has results, a half at half_weight of them, a sixth at five times as many. The
    earlier sweep steers the first suggestions and gives way as this sweep's own evidence arrives."""
    return half_weight / float(half_weight + own_results)


def rank_weights(ranks, ages, power):
    """l's observation weights: each good job's age weight times (m - rank) ** power, m good jobs, rank 0 the best,
    rescaled to sum to what the age weights sum to (so the prior's share of l is Optuna's)."""
    m = len(ranks)
    raw = [age * (m - rank) ** power for rank, age in zip(ranks, ages)]
    total = sum(raw)
    return [w * sum(ages) / total for w in raw] if total > 0 else list(ages)


class TPESampler(Sampler):  # pylint: disable=too-many-instance-attributes
    """Suggests parameters from the jobs' objectives (implements core.tuning.trial.Sampler).

    :param specs: the sweep's parameter specs (core/spec/params.py), in file order.
    :param goal: "max" or "min".
    :param seed: an integer; suggestions are a pure function of it and the trials.
    :param count: the number of jobs to try in all (None: until the space is exhausted or a limit stops the sweep).
    :param startup_jobs: jobs with an objective needed before the model is used; until then, random draws.
    :param candidates: draws from l(x) compared per suggestion.
    :param multivariate: one joint model over all parameters (True, the default) or one per parameter.
    :param constant_liar: count pending jobs among the bad observations.
    :param prior_weight: weight of the prior kernel.
    :param good_floor_share: l's bandwidth floor counts this share of the jobs with an objective (at least the good
        group's size); None counts the good group alone, as Optuna does.
    :param good_rank_power: l's weights fall with rank, the k-th best of m good jobs weighing (m - k) ** power; None
        weighs them alike, as Optuna does.
    :param good_grid_floor: on a grid (a stepped parameter), the share above never narrows l's floor below this
        share of a grid cell (range / number of values); None: no such limit (narrower than a cell).
    :param local_share: from this share of ``count`` jobs on (finite spaces, ``count`` given), suggest the best
        untried grid neighbour of the best ``local_jobs`` jobs (see the module); None: never.
    :param local_jobs: how many of the best jobs' neighbours the local phase scores.
    :param inherited: finished jobs of earlier sweeps (warm start, core/tuning/warmstart.py) as Trials with negative
        indices: the model learns from them as from the oldest jobs, a finite space never suggests their
        configurations again, and they do not count toward ``count``.
    :param inherited_half_weight: how the inherited jobs weigh as the sweep's own results arrive (inherited_weight());
        None: like the sweep's own jobs, ranked with them (the first warm start's rule: 100 inherited jobs kept a
        sweep of 50 centred on the earlier sweep's optimum).
    """

    # pylint: disable=too-many-arguments
    def __init__(self, specs, goal='max', seed=0, count=None, startup_jobs=DEFAULT_STARTUP_JOBS,
                 candidates=DEFAULT_CANDIDATES, multivariate=True, constant_liar=True, prior_weight=1.0,
                 gamma=default_gamma, weights=default_weights, good_floor_share=DEFAULT_GOOD_FLOOR_SHARE,
                 good_rank_power=DEFAULT_GOOD_RANK_POWER, good_grid_floor=DEFAULT_GOOD_GRID_FLOOR, inherited=(),
                 inherited_half_weight=DEFAULT_INHERITED_HALF_WEIGHT, local_share=DEFAULT_LOCAL_SHARE,
                 local_jobs=DEFAULT_LOCAL_JOBS):
        if goal not in ('max', 'min'):
            raise ValueError('goal must be "max" or "min", not {!r}'.format(goal))
        self.dims = dimensions(specs)
        self.goal = goal
        self.seed = seed
        self.count = count
        self.startup_jobs = startup_jobs
        self.candidates = candidates
        self.constant_liar = constant_liar
        self.prior_weight = prior_weight
        self.gamma = gamma
        self.weights = weights
        self.good_floor_share = good_floor_share
        self.good_rank_power = good_rank_power
        self.good_grid_floor = good_grid_floor
        self.local_share = local_share
        self.local_jobs = local_jobs
        self.size = space_size(self.dims)
        self.inherited = sorted(inherited, key=lambda t: t.index)
        self.inherited_half_weight = inherited_half_weight
        all_dims = list(range(len(self.dims)))
        self.groups = [all_dims] if multivariate else [[d] for d in all_dims]
        # {the items of a job's parameters: (its point,)}: a sweep asks after every poll with the same jobs and a few
        # more, and converting 10,000 jobs' parameters again each time was a fifth of a suggestion (issue 44).
        self.points_seen = {}
        self.singles = {}  # {a point: its one-tuples, one per parameter} (_columns)
        # What the last suggestion read of each job (_History's records), and its Parzen estimators by role
        # ({(group, 'below'/'above'): estimator}): the next suggestion, a few jobs later, checks each job against
        # its record instead of reading it again, and edits the estimators where the observations differ
        # (parzen.ParzenEstimator's ``previous``) instead of fitting 10,000 kernels again. Both give the floats a
        # new sampler computes (tests/tuning/test_tpe_incremental.py).
        self.trial_records = None
        self.model_cache = {}
        # (the trial_records it applies to, the positions of the trials that differ from those it read) when a caller
        # knows which trials changed (BOHB's model view, a private copy a job: bohb.BudgetModel._view): the next
        # history reads those again instead of comparing every trial's fields; used once.
        self.view_changes = None
        self.split_kept = None  # ((the scored items' list, the pending items, n_good, goal), _groups' lists)

    # -- the Sampler interface ----------------------------------------------------------------------------------

    def suggest(self, trials, count):
        history = self._make_history(trials)
        suggestions = []
        for _ in range(max(0, min(count, self._budget_left(len(trials))))):
            point = self._next(history)
            if point is None:
                break
            suggestions.append(Suggestion(params=self._params(point), note=self._note(history)))
            history.add_pending(point)
        return suggestions

    def exhausted(self, trials):
        if self._budget_left(len(trials)) <= 0:
            return True
        if self.size is None:
            return False
        return len(self._make_history(trials).tried) >= self.size

    # -- internals -----------------------------------------------------------------------------------------------

    def _budget_left(self, total):
        return math.inf if self.count is None else self.count - total

    def _make_history(self, trials):
        # Inherited jobs (warm start) come first: their indexes are negative. A run's trials come in index order:
        # sorted only when they are not (a key a trial for 10,000 at each poll was a twentieth of a suggestion).
        ordered = list(trials)
        indices = [t.index for t in ordered]
        if sorted(indices) != indices:
            ordered.sort(key=_INDEX)
            indices = [t.index for t in ordered]
            self.view_changes = None  # (its positions are those of the trials as given)
        if self.inherited:
            return _History(self, self.inherited + ordered, [t.index for t in self.inherited] + indices)
        return _History(self, ordered, indices)

    @staticmethod
    def score_inputs_of(trials):
        """What score() reads of the trials besides their states (a job whose state and these are unchanged scores the
        same), compared with == (a later poll's equal values count as unchanged): [(a list of one field of each
        trial, whether the history keeps a copy of each value: a dict the caller may change)]; here stopped_early
        and the reports (the same tuple a poll later, compared by identity first)."""
        return [([t.stopped_early for t in trials], False), ([t.reports for t in trials], False)]

    def score(self, trial):
        """What the model learns of a finished job (its objective as a float), or None when it taught nothing; the
        multi-objective sampler (motpe.py) scores a job by its objectives and constraints instead."""
        value = trial.objective()
        if value is not None and isinstance(value, (int, float)) and math.isfinite(value):
            return float(value)
        return None

    def _params(self, point):
        return {dim.name: dim.to_value(x) for dim, x in zip(self.dims, point)}

    def _note(self, history):
        if len(history.scored) < self.startup_jobs:
            return 'bayesian: random startup job ({} of {} with an objective)'.format(len(history.scored),
                                                                                      self.startup_jobs)
        return 'bayesian: TPE over {} jobs with an objective, {} pending'.format(len(history.scored),
                                                                              len(history.pending))

    def _rng(self, history):
        # A string seed is hashed with SHA-512 by random.Random: the same stream in every process and Python run.
        return random.Random('tpe/{}/{}'.format(self.seed, history.total))

    def _next(self, history):
        """The next point (a tuple of internal coordinates), or None when a finite space is exhausted."""
        if self.size is not None and len(history.tried) >= self.size:
            return None
        rng = self._rng(history)
        if len(history.scored) < self.startup_jobs:
            return self._random_point(rng, history)
        models = self._models(history)
        if self._local_phase(history):
            neighbours = self._untried_neighbours(history)
            if neighbours:
                return max(neighbours, key=lambda point: _log_ratio(models, point))
        for _ in range(_REJECTION_ROUNDS if self.size is not None else 1):
            best = self._best_candidate(rng, models, history)
            if best is not None:
                return best
        # A finite space whose untried configurations l(x) rarely draws: score every untried one.
        return self._best_untried(rng, models, history)

    def models(self, trials):
        """The (dimension indices, l, g) Parzen estimators a suggestion after ``trials`` compares (for tests and
        diagnostics; the dimension indices are those of ``self.dims``)."""
        return self._models(self._make_history(trials))

    def _models(self, history):
        if self.inherited and self.inherited_half_weight is not None:
            return self._fit(*self._split_inherited(history))
        good, good_ranks, bad, good_ids, bad_ids = self._groups(history)
        good_weights = self.weights(len(good))
        if self.good_rank_power is not None:
            good_weights = rank_weights(good_ranks, good_weights, self.good_rank_power)
        bad_weights = self.model_cache.get(('weights', len(bad)))
        if bad_weights is None:  # the same list as the last suggestion's when the count is the same
            for key in [key for key in self.model_cache if key[0] == 'weights']:
                del self.model_cache[key]
            bad_weights = self.model_cache['weights', len(bad)] = self.weights(len(bad))
        return self._fit(good, good_weights, bad, bad_weights, len(history.scored), (good_ids, bad_ids))

    def _fit(self, good, good_weights, bad, bad_weights, scored_count, ids=(None, None)):
        # The estimator never counts fewer than its own points: below the good group's size the share changes nothing.
        clip_count = None if self.good_floor_share is None else int(self.good_floor_share * scored_count)
        models = []
        columns = None
        if len(self.groups) > 1 and all(len(group) == 1 for group in self.groups):  # one model per parameter
            columns = self._columns(good, bad)
        for group in self.groups:
            dims = [self.dims[d] for d in group]
            key = tuple(group)
            if columns is not None:
                good_points, bad_points = columns[0][group[0]], columns[1][group[0]]
            else:  # one joint model (the groups are the whole or one parameter each): the points as they are
                good_points, bad_points = good, bad
            below = ParzenEstimator(dims, good_points, good_weights,
                                    self.prior_weight, clip_count=clip_count, grid_floor=self.good_grid_floor,
                                    ids=ids[0], previous=self.model_cache.get((key, 'below')))
            above = ParzenEstimator(dims, bad_points, bad_weights,
                                    self.prior_weight, ids=ids[1], previous=self.model_cache.get((key, 'above')))
            self.model_cache[key, 'below'], self.model_cache[key, 'above'] = below, above
            models.append((group, below, above))
        return models

    def _columns(self, *groups):
        """Each group's points projected on each parameter (one-tuples), ``[group][dimension]``; a point's one-tuples
        are made once and kept (``singles``): the same objects a poll later, which the estimators compare with their
        last ones by identity (one model per parameter: MOTPE's 10,000 jobs were 60,000 new tuples a suggestion, and
        as many steps of the garbage collector's count)."""
        singles = self.singles
        if len(singles) > 2 * sum(map(len, groups)) + 64:  # points of jobs long gone: kept no longer
            singles = self.singles = {}
        found = []
        for points in groups:
            known = list(map(singles.get, points))
            if None in known:
                for k, point in enumerate(points):
                    if known[k] is None:
                        known[k] = singles[point] = tuple((x,) for x in point)
            found.append([list(map(operator.itemgetter(d), known)) for d in range(len(self.dims))])
        return found

    def _split(self, history):
        """The good observations' points and ranks (0: the best) and the bad observations' points, each in index order
        (pending jobs among the bad)."""
        return self._groups(history)[:3]

    def _groups(self, history, scored=None, pending=True):
        """_split's three lists, then the good and the bad observations' job indices. A history's split is kept
        (``split_kept``): while its scored items are the same list object (_History._keep: no entry changed) and its
        pending items are equal, it is the last one; when they are the last ones and a few more (jobs that finished
        since), the n best are those of the last n best and the new ones (each other old item has n better before it),
        and the bad group's scored items the last ones edited (the heap and the bad group's list over 10,000 jobs were
        a sixth of a warm suggestion)."""
        whole = scored is None
        scored = history.scored if whole else scored
        n_good = self.gamma(len(scored))
        liar = self.constant_liar and pending
        key = (scored, list(history.pending) if liar else None, n_good, self.goal)
        kept = self.split_kept if whole else None
        if kept is not None and kept[0][0] is scored and kept[0][1:] == key[1:]:
            return kept[1]
        split = None if kept is None else self._split_appended(history, scored, n_good, kept)
        if split is None:
            split = self._split_whole(scored, n_good)
        best, bad_scored, _, _ = split
        good = sorted((index, rank, point) for rank, (index, _, point) in enumerate(best))
        bad = list(bad_scored)
        if liar:
            bad.extend((index, None, point) for index, point in history.pending)
            bad.sort(key=_FIRST)  # stable: two runs in index order are merged
        found = ([item[2] for item in good], [item[1] for item in good], list(map(_LAST, bad)),
                 [item[0] for item in good], list(map(_FIRST, bad)))
        if whole:
            self.split_kept = (key, found, split)
        return found

    def _split_whole(self, scored, n_good):
        """(the n_good best scored items, the others in index order, their indices, whether the items' indices are
        unique)."""
        # A history's observations are in index order: the best by a heap (_best), the others left in index order.
        best = self._best(n_good, scored)
        # The bad are the items not chosen, told apart by identity: two jobs of one index (not a run's, whose indices
        # are unique; a caller's) are two observations, one good and one bad when so ranked.
        chosen = set(map(id, best))
        bad = [item for item in scored if id(item) not in chosen]
        indices = list(map(_FIRST, bad))
        return best, bad, indices, len(set(map(_FIRST, best)).union(indices)) == len(scored)

    def _best(self, n_good, items):
        """The n_good best of ``items`` (in index order), best first: heapq's n best are the n first of a stable sort,
        as _ranked sorts (ties by index)."""
        return (heapq.nlargest if self.goal == 'max' else heapq.nsmallest)(n_good, items, key=_VALUE)

    def _split_appended(self, history, scored, n_good, kept):
        """_split_whole's answer from the last one (``kept``) when ``scored`` is its scored items and a few more after
        them (the history tells: ``scored_after``) and every index is unique (the items' order is their indices'); else
        None."""
        (last, _, last_good, goal), _, (best, bad, indices, unique) = kept
        before, count = history.scored_after or (None, 0)
        if not unique or before is not last or count != len(last) or n_good != last_good or goal != self.goal:
            return None
        new = scored[count:]
        new_indices = [item[0] for item in new]
        if new_indices != sorted(set(new_indices)) or (last and new and new_indices[0] <= last[-1][0]):
            return None
        ordered = sorted(best, key=_FIRST) + new  # (the last best in index order: their positions')
        best = self._best(n_good, ordered)
        good_indices = {item[0] for item in best}
        bad, indices = list(bad), list(indices)
        for item in ordered[:len(ordered) - len(new)]:
            if item[0] not in good_indices:  # back among the bad, at its index
                at = bisect.bisect_left(indices, item[0])
                bad.insert(at, item)
                indices.insert(at, item[0])
        for item in new:
            if item[0] not in good_indices:
                bad.append(item)
                indices.append(item[0])
        return best, bad, indices, True

    def _ranked(self, scored):
        """Scored observations (index, value, point) in index order (a history's), best first, ties by index (a stable
        sort keeps them in order, reversed or not)."""
        return sorted(scored, key=_VALUE, reverse=self.goal == 'max')

    @staticmethod
    def _own(history):
        """The sweep's own scored observations (inherited ones have negative indices)."""
        return [item for item in history.scored if item[0] >= 0]

    def _split_inherited(self, history):
        """A warm start's groups: the inherited jobs and the sweep's own are each split into good and bad on their own
        (an earlier sweep on other data may have another scale: its values are not ranked against this sweep's),
        each group's weights computed as without the other, the inherited ones' then times inherited_weight(own)."""
        own = self._own(history)
        old = [item for item in history.scored if item[0] < 0]
        share = inherited_weight(len(own), self.inherited_half_weight)
        parts = []
        for items, factor, pending in ((old, share, False), (own, 1.0, True)):
            good, ranks, bad, _, _ = self._groups(history, items, pending)
            good_weights = self.weights(len(good))
            if self.good_rank_power is not None and good:
                good_weights = rank_weights(ranks, good_weights, self.good_rank_power)
            parts.append((good, [w * factor for w in good_weights], bad,
                          [w * factor for w in self.weights(len(bad))]))
        (old_good, old_gw, old_bad, old_bw), (good, gw, bad, bw) = parts
        return (old_good + good, old_gw + gw, old_bad + bad, old_bw + bw,
                len(own) + int(share * len(old)))  # no ids: the estimators are fitted whole

    def _best_candidate(self, rng, models, history):
        """The candidate with the largest l/g ratio among draws from l, untried ones only in a finite space."""
        candidates = [[None] * len(self.dims) for _ in range(self.candidates)]
        scores = [0.0] * self.candidates
        for group, below, above in models:
            for candidate, drawn in zip(range(self.candidates), below.sample(rng, self.candidates)):
                for d, x in zip(group, drawn):
                    candidates[candidate][d] = x
                scores[candidate] += below.log_pdf(drawn) - above.log_pdf(drawn)
        best, best_score = None, -math.inf
        for candidate, score in zip(candidates, scores):
            point = tuple(candidate)
            if self.size is not None and history.key(point) in history.tried:
                continue
            if best is None or score > best_score:
                best, best_score = point, score
        return best

    def _local_phase(self, history):
        if self.local_share is None or not self.count or self.size is None or not self.local_jobs:
            return False
        own_jobs = history.total - len(self.inherited)  # jobs of this sweep, pending ones and this one's batch included
        return own_jobs >= self.local_share * self.count

    def _untried_neighbours(self, history):
        """The untried configurations one grid step (or one other category) from the best ``local_jobs`` of this
        sweep's jobs, best job first, each parameter in order."""
        neighbours, seen = [], set()
        for _, _, point in self._ranked(self._own(history))[:self.local_jobs]:
            for d, dim in enumerate(self.dims):
                for x in dim.neighbours(point[d]):
                    candidate = point[:d] + (x,) + point[d + 1:]
                    key = history.key(candidate)
                    if key not in history.tried and key not in seen:
                        seen.add(key)
                        neighbours.append(candidate)
        return neighbours

    def _best_untried(self, rng, models, history):
        untried = self._untried_points(rng, history)
        if not untried:
            return None
        if len(untried) > _SCORED_UNTRIED:
            untried = rng.sample(untried, _SCORED_UNTRIED)  # bounded cost: a few thousand densities at most

        return max(untried, key=lambda point: _log_ratio(models, point))

    def _random_point(self, rng, history):
        for _ in range(100):
            point = tuple(dim.draw(rng) for dim in self.dims)
            if self.size is None or history.key(point) not in history.tried:
                return point
        untried = self._untried_points(rng, history)
        return rng.choice(untried) if untried else None

    def _untried_points(self, rng, history):
        """Untried configurations of a finite space: all of them when it is small, else up to 10,000 drawn."""
        if self.size <= _ENUMERATION_LIMIT:
            ranges = [range(dim.size) for dim in self.dims]
            points = (tuple(dim.point_at(i) for dim, i in zip(self.dims, indices))
                      for indices in itertools.product(*ranges))
            return [p for p in points if history.key(p) not in history.tried]
        drawn = (tuple(dim.draw(rng) for dim in self.dims) for _ in range(10000))
        return [p for p in drawn if history.key(p) not in history.tried]


def _log_ratio(models, point):
    """log l(x) - log g(x) of a whole configuration, summed over the models' parameter groups."""
    return sum(below.log_pdf(_project(point, group)) - above.log_pdf(_project(point, group))
               for group, below, above in models)


def _project(point, group):
    return tuple(point[d] for d in group)


_SIMPLE_TYPES = frozenset((str, int, float, bool))
_SCORED, _PENDING, _UNSCORED = 0, 1, 2


def _positions(entries, first, kind):
    """The positions, from ``first`` on, of the history entries of this kind (_History._keep)."""
    return [p for p in range(first, len(entries)) if entries[p] is not None and entries[p][0] == kind]


def _copy(values):
    """A copy of a dict of values kept to compare the next poll's with, or None (never equal: read again) when a
    value is not of a simple type (equal lists may hold values of other types: [1] == [True])."""
    try:
        return dict(values) if set(map(type, values.values())) <= _SIMPLE_TYPES else None
    except (AttributeError, TypeError):
        return None


class _Readings:  # pylint: disable=too-few-public-methods
    """What a history read of each trial, by position (a sampler's ``trial_records``): the fields compared, and what
    was made of them, (kind, the history's item, the tried key) or None (a job from another version of the file)."""

    def __init__(self, indices=(), states=(), params=(), inputs=(), entries=()):
        self.indices, self.states, self.params = indices, states, params
        self.inputs = inputs  # [(a list of one field of each trial, whether it is kept as a copy)] (score_inputs_of)
        self.entries = entries
        # (the scored items, their entries' positions, the pending items, their positions) listed from the entries
        # (_History._keep): the next history lists again only those from its first changed entry on.
        self.listed = None


class _History:
    """The trials in the sampler's coordinates: scored observations, pending points, tried configurations.

    A run asks after every poll with the same jobs and a few more (issue 44): each trial's fields (index, state,
    parameters, score_inputs) are compared with the last history's, a list at a time, and only the trials that differ
    (or are new) are read again; the others' readings are the last ones. A parameter dict that is the object the last
    history read holds the same parameters: a job's parameters never change, and a job read again is read into a new
    dict (loop.trial_of; a finished job keeps its Trial and its dict). Only the dicts that are other objects are
    compared, by value and by their values' types (1, 1.0 and True are equal and read differently): listing the types
    of 10,000 jobs' values at each poll was a tenth of a suggestion."""

    def __init__(self, sampler, trials, indices):
        self.dims = sampler.dims
        self.memo = sampler.points_seen
        self.finite = sampler.size is not None
        self.total = len(trials)
        old = sampler.trial_records if isinstance(sampler.trial_records, _Readings) else _Readings()
        told, sampler.view_changes = sampler.view_changes, None
        count, common = len(trials), min(len(trials), len(old.indices))
        if told is not None and told[0] is old and old.entries is not None:
            self._told(sampler, trials, indices, old, common, told[1])
            return
        if old.states is None:  # the last history was told what changed (_told): its fields were not kept
            old, common = _Readings(), 0
        # (columns by list comprehensions: a third of the instructions of map(attrgetter) over 10,000 trials)
        new = _Readings(indices, [t.state for t in trials], [t.params for t in trials], sampler.score_inputs_of(trials))
        if len(old.inputs) != len(new.inputs):
            common = 0
        changed = set()
        for mine, theirs in [(new.indices, old.indices), (new.states, old.states), (new.params, old.params)] + [
                (mine, theirs) for (mine, _), (theirs, _) in zip(new.inputs, old.inputs)]:
            changed.update(differences(mine, theirs, common))
        mine, theirs = new.params, old.params
        changed.update(position for position in replaced(mine, theirs, common)
                       if position not in changed and not same_types(mine[position], theirs[position]))
        entries = list(old.entries[:common])
        # The inputs a caller may change in place (a dict: MOTPE's metrics) are kept as copies, the equal ones' copies
        # the last ones.
        theirs = [column for column, _ in old.inputs] if common else [()] * len(new.inputs)
        kept = [(mine, list(column[:common])) for (mine, copied), column in zip(new.inputs, theirs) if copied]
        for position in itertools.chain(sorted(changed), range(common, count)):
            entry = self._read(sampler, trials[position])
            if position < common:
                entries[position] = entry
                for mine, copies in kept:
                    copies[position] = _copy(mine[position])
            else:
                entries.append(entry)
                for mine, copies in kept:
                    copies.append(_copy(mine[position]))
        new.entries = entries
        copies = iter(kept)
        new.inputs = [(next(copies)[1], True) if copied else (mine, False) for mine, copied in new.inputs]
        self._keep(sampler, new, old, min(changed, default=common))

    def _told(self, sampler, trials, indices, old, common, changed):
        """The history when the caller told which trials differ from those the last one read (``changed``, below
        ``common``; the trials from ``common`` on are new): the others' readings are the last ones. The fields are not
        kept: the next history not told compares nothing, and reads every trial."""
        entries = list(old.entries[:common])
        for position in changed:
            entries[position] = self._read(sampler, trials[position])
        entries.extend(self._read(sampler, trials[position]) for position in range(common, len(trials)))
        self._keep(sampler, _Readings(indices, None, None, (), entries), old, min(changed, default=common))

    def _keep(self, sampler, readings, old, first):
        """Keeps the readings for the next history, and lists what they hold. The entries before ``first`` are the
        ``old`` readings' (the same objects): their scored and pending items are the old lists' (a slice, in C), and
        only the entries from ``first`` on are listed again (two passes over 10,000 entries were ~8% of a warm
        suggestion; a run's polls change a few entries near the end). When nothing changed, the old lists themselves
        (the split, _groups, is then kept by their identity)."""
        sampler.trial_records = readings
        entries = readings.entries
        listed = old.listed if first > 0 else None
        if listed is None:
            first, listed = 0, ([], [], [], [])
        old_scored, old_scored_at, old_pending, old_pending_at = listed
        k, m = bisect.bisect_left(old_scored_at, first), bisect.bisect_left(old_pending_at, first)
        scored_at, pending_at = _positions(entries, first, _SCORED), _positions(entries, first, _PENDING)
        if k < len(old_scored_at) or scored_at:
            old_scored = old_scored[:k] + [entries[p][1] for p in scored_at]  # (index, score, point)
            old_scored_at = old_scored_at[:k] + scored_at
        if m < len(old_pending_at) or pending_at:
            old_pending = old_pending[:m] + [entries[p][1] for p in pending_at]  # (index, point)
            old_pending_at = old_pending_at[:m] + pending_at
        readings.listed = (old_scored, old_scored_at, old_pending, old_pending_at)
        self.scored = old_scored  # (never changed: a history's scored items are read only)
        # (a list and a count: the scored items begin with that list's first ones, the same objects; TPESampler._groups)
        self.scored_after = (listed[0], k)
        self.pending = list(old_pending)  # (add_pending appends to it)
        # keys of every configuration a job has had (finite spaces only)
        self.tried = {e[2] for e in entries if e is not None} if self.finite else set()

    def _read(self, sampler, trial):
        point = self._point(trial.params)
        if point is None:
            return None  # a job from another version of the sweep file: nothing to learn from it
        key = self.key(point) if self.finite else None
        if trial.state in PENDING_STATES:  # trial.pending
            return (_PENDING, (trial.index, point), key)
        value = sampler.score(trial)
        if value is None:
            return (_UNSCORED, None, key)
        return (_SCORED, (trial.index, value, point), key)

    def _point(self, params):
        try:
            key = (tuple(params.items()), tuple(map(type, params.values())))  # True, 1 and 1.0 are equal keys
            known = self.memo.get(key)
        except TypeError:  # a value that cannot be hashed (a dict parameter): converted every time
            key, known = None, None
        if known is not None:
            return known[0]
        point = self._convert(params)
        if key is not None:
            self.memo[key] = (point,)
        return point

    def _convert(self, params):
        point = []
        for dim in self.dims:
            if dim.name not in params:
                return None
            x = dim.to_internal(params[dim.name])
            if x is None:
                return None
            point.append(x)
        return tuple(point)

    def key(self, point):
        return tuple(dim.key(x) for dim, x in zip(self.dims, point))

    def add_pending(self, point):
        index = self.total
        self.total += 1
        self.pending.append((index, point))
        if self.finite:
            self.tried.add(self.key(point))
