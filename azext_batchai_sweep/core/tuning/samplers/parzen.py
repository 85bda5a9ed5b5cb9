"""A Parzen estimator over mixed dimensions: a weighted mixture of product kernels, one kernel per observation plus
a prior kernel, the density TPE compares between its good and bad observations.

It follows the formulation of Optuna's ``_ParzenEstimator`` (Optuna 4-5), which TPE's figures are measured
against (tests/tuning/test_tpe_oracle.py compares densities on the same observations):

- continuous and stepped dimensions: a normal kernel truncated to the range, centred on the observation, with an
  adaptive bandwidth: the larger distance to its sorted neighbours (the range's ends count as neighbours; the
  outermost observations use their inner neighbour only), clipped to [range / min(100, n + 2), range] (the "magic
  clip"; a caller may count more observations than the n points in that floor, as the TPE sampler does for its
  good group, ``clip_count``, and may stop that narrowing at a share of a grid's cell, ``grid_floor``); the prior
  kernel is centred on the range with the whole range as its bandwidth; a stepped dimension's probability of a
  grid value is the kernel's mass on the value's cell;
- categorical dimensions: each observation's kernel puts 1 on the observed category plus prior_weight / (n + 1) on
  every category (normalised); the prior kernel is uniform;
- weights: the caller's per-observation weights plus ``prior_weight`` for the prior, normalised; without
  observations the prior alone.

Pure Python: the per-point cost is a few arithmetic operations per kernel and dimension, with the kernels' constant
terms computed once per estimator and stepped/categorical terms computed once per distinct value. An estimator of
many kernels (the bad group of a sweep of thousands of jobs) evaluates a point on the kernels that can matter only
(_Pruned): the sum is over exactly the terms within e^-50 of the largest, so the density is the whole mixture's to
the last bits or so, and the suggestions are the same (tests/tuning/test_tpe_scale.py). A large estimator can be
built from the previous one of a few observations less or more (``previous``, ``ids``: a sampler asked again after
a few jobs finished): it copies that one's kernels and computes again only those whose sorted neighbours changed,
the same floats as a new estimator's (tests/tuning/test_tpe_incremental.py).
"""
import bisect
import itertools
import math
import operator

from . import _normal
from .changes import first_difference
from .space import CATEGORICAL, STEPPED

_NEG_INF = -math.inf
# A standard normal's tail beyond this many standard deviations is below half an ulp of 1 (Phi(-8.5) = 9.5e-18 <
# 2^-54): a kernel whose mean lies this far inside both ends of the range has the mass 1.0 there exactly, and log 0.0.
_WHOLE_MASS_Z = 8.5
# Past this many kernels, log_pdf evaluates the kernels that can matter only (_Pruned) ...
PRUNE_KERNELS = 512
# ... leaving out those whose term is below the largest by this much (e^-50 = 2e-22: ten thousand of them change the
# sum by 2e-18 of itself, under a double's resolution); the slack covers rounding in the bounds.
PRUNE_MARGIN = 50.0
_BOUND_SLACK = 1.0
# The stepped kernels' terms kept (_Numeric.masses) at most.
_MOST_MASSES = 100000
# At most this many continuous dimensions bound the kernels looked at (_Pruned's box): in 6 dimensions a third one
# keeps a quarter of the second's kernels (hartmann6 at 10,000 jobs: ~190 of ~770).
_BOX_DIMS = 3
# An estimator whose observations differ from the previous one's in more than this many is built whole.
_MOST_EDITS = 64
# The box (in kernel bandwidths: sqrt(2 x this)) whose kernels give the first lower bound of the largest term.
_NEAR_ROOM = 2.0


class _Numeric:
    """The kernels of one continuous or stepped dimension."""

    def __init__(self, dim, points, magic_clip, consider_endpoints, clip_count, ids=None):
        low, high = dim.low, dim.high
        span = high - low
        sigmas, order = _adaptive_bandwidths(points, low, high, consider_endpoints)
        minsigma = _min_sigma(span, magic_clip, clip_count)
        sigmas = [minsigma if s < minsigma else span if s > span else s for s in sigmas]  # min(max(s, floor), span)
        self.mus = list(points) + [0.5 * (low + high)]
        self.sigmas = sigmas + [span]
        self.low, self.high = low, high
        self.dim = dim
        self.minsigma, self.consider_endpoints = minsigma, consider_endpoints
        self.inv = [1.0 / s for s in self.sigmas]
        # log of each kernel's mass on the range: the truncation's normalising constant.
        self.log_norm = _log_norms(low, high, self.mus, self.inv)
        # Continuous kernels' constant terms: -log sigma - log sqrt(2 pi) - log mass.
        self.consts = [-math.log(s) - _normal.LOG_SQRT_2PI - n for s, n in zip(self.sigmas, self.log_norm)]
        self._cells = {}
        # {(grid value, mean, 1 / bandwidth): a kernel's term}: many kernels of a grid share their mean and bandwidth
        # (and the estimators updated from this one share it: the term depends on nothing else).
        self.masses = {}
        # A stepped kernel's term depends on its (mean, 1 / bandwidth) pair alone, and 10,000 kernels on a grid have a
        # few hundred pairs: each kernel's pair's number (``classes``, made at the first point, edited by updated()),
        # the pairs by number (``pairs``: (mean, 1 / bandwidth, log mass on the range)) and, per grid value, the
        # pairs' terms by number (``rows``), so that a point's terms are two list look-ups a kernel, in C (a dict
        # look-up keyed by a new (value, mean, bandwidth) tuple a kernel was most of a mixed suggestion's candidates).
        # The pairs and rows are shared with the estimators updated from this one (numbers never change meaning).
        self.classes, self.pair_ids, self.pairs, self.rows = None, {}, [], {}
        # (value, id) of the observations, sorted (ties in kernel order, as the bandwidths sort them): what an
        # estimator updated from this one (_Numeric.updated) edits instead of sorting again.
        self.ranked = None if ids is None else [(points[i], ids[i]) for i in order]

    def updated(self, removed, added, ids):
        """This dimension's kernels after removing the observations ``removed`` ((old position, value, id), by
        position) and adding ``added`` ((new position, value, id), by position): the floats a new _Numeric of the
        new observations computes (a bandwidth depends on the sorted neighbours only: those of each change are
        computed again, the other kernels copied). ``ids``: the new observations' ids, increasing."""
        new = object.__new__(_Numeric)
        new.__dict__.update(self.__dict__)
        new._cells = {}
        lists = [self.mus[:-1], self.sigmas[:-1], self.inv[:-1], self.log_norm[:-1], self.consts[:-1]]
        ranked = list(self.ranked)
        touched = set()
        for position, value, key in reversed(removed):
            for values in lists:
                del values[position]
            rank = bisect.bisect_left(ranked, (value, key))
            del ranked[rank]
            touched.update(pair[1] for pair in ranked[max(0, rank - 1):rank + 1])
        for position, value, key in added:
            for values in lists:
                values.insert(position, value)
            rank = bisect.bisect_left(ranked, (value, key))
            ranked.insert(rank, (value, key))
            touched.update(pair[1] for pair in ranked[max(0, rank - 1):rank + 2])
        mus, sigmas, inv, log_norm, consts = lists
        low, high, span, minsigma, whole = self.low, self.high, self.high - self.low, self.minsigma, _WHOLE_MASS_Z
        count = len(ranked)
        changed = []
        for key in touched:
            position = bisect.bisect_left(ids, key)
            if position == len(ids) or ids[position] != key:
                continue  # removed
            m = mus[position]
            rank = bisect.bisect_left(ranked, (m, key))
            s = _bandwidth(ranked, rank, count, low, high, self.consider_endpoints)
            s = minsigma if s < minsigma else span if s > span else s
            i = 1.0 / s
            n = 0.0 if (low - m) * i < -whole and (high - m) * i > whole else _normal.log_mass((low - m) * i,
                                                                                            (high - m) * i)
            sigmas[position], inv[position], log_norm[position] = s, i, n
            consts[position] = -math.log(s) - _normal.LOG_SQRT_2PI - n
            changed.append(position)
        for values, old in zip(lists, (self.mus, self.sigmas, self.inv, self.log_norm, self.consts)):
            values.append(old[-1])  # the prior kernel, the same at every size
        new.mus, new.sigmas, new.inv, new.log_norm, new.consts = lists
        if self.classes is not None:  # edited as the lists were, the changed kernels' pairs numbered again
            classes = self.classes[:-1]
            for position, _, _ in reversed(removed):
                del classes[position]
            for position, _, _ in added:
                classes.insert(position, None)
            classes.append(self.classes[-1])
            for position in changed:
                classes[position] = new._pair_number(mus[position], inv[position], log_norm[position])
            new.classes = classes
        new.ranked = ranked
        return new, changed

    def sample(self, rng, component):
        mu, sigma = self.mus[component], self.sigmas[component]
        z = _normal.sample(rng, (self.low - mu) / sigma, (self.high - mu) / sigma)
        point = mu + sigma * z
        return self.dim.snap(point) if self.dim.kind == STEPPED else min(max(point, self.low), self.high)

    def add_terms(self, acc, x):
        """acc[j] += log kernel_j(x), for every kernel j."""
        if self.dim.kind != STEPPED:
            return [a + c - 0.5 * ((x - m) * i) ** 2 for a, c, m, i in zip(acc, self.consts, self.mus, self.inv)]
        terms = self._cells.get(x)
        if terms is None:
            terms = self._cells[x] = self._cell_terms(x)
        return [a + t for a, t in zip(acc, terms)]

    def _pair_number(self, m, i, n):
        number = self.pair_ids.get((m, i))
        if number is None:
            number = self.pair_ids[m, i] = len(self.pairs)
            self.pairs.append((m, i, n))
        return number

    def stepped_terms(self, survivors, x, cell):
        """The terms of the kernels ``survivors`` at the grid value x (whose cell is ``cell``), the floats _cell_terms
        computes: each (mean, bandwidth) pair's computed once per grid value, kept."""
        if len(self.pairs) > _MOST_MASSES:  # pairs of kernels long gone: numbered again
            self.classes, self.pair_ids, self.pairs, self.rows = None, {}, [], {}
        if self.classes is None:
            number = self._pair_number
            self.classes = list(map(number, self.mus, self.inv, self.log_norm))
        row = self.rows.get(x)
        if row is None:
            if len(self.rows) * len(self.pairs) > _MOST_MASSES:
                self.rows.clear()
            row = self.rows[x] = []
        if len(row) < len(self.pairs):  # pairs numbered since: their terms added
            left, right = cell
            log_mass = _normal.log_mass
            row.extend(log_mass((left - m) * i, (right - m) * i) - n for m, i, n in self.pairs[len(row):])
        if len(survivors) < 2:  # (itemgetter of one item gives it alone)
            return [row[self.classes[j]] for j in survivors]
        return list(operator.itemgetter(*operator.itemgetter(*survivors)(self.classes))(row))

    def cell(self, x):
        """The grid value's cell, [value - step/2, value + step/2] (in log coordinates for an integer LOG parameter)."""
        if self.dim.log:
            value = round(math.exp(x))
            return math.log(value - 0.5), math.log(value + 0.5)
        return x - self.dim.step / 2, x + self.dim.step / 2

    def _cell_terms(self, x):
        left, right = self.cell(x)
        log_mass = _normal.log_mass
        return [log_mass((left - m) * i, (right - m) * i) - n
                for m, i, n in zip(self.mus, self.inv, self.log_norm)]


class _Categorical:
    """The kernels of one categorical dimension."""

    def __init__(self, dim, points, prior_weight):
        self.size = dim.size
        self.observed = [int(p) for p in points]
        self._scalars(prior_weight)

    def _scalars(self, prior_weight):
        self.prior_weight = prior_weight
        n_kernels = len(self.observed) + 1
        fill = prior_weight / n_kernels
        row_sum = fill * self.size + 1.0
        self.hit = 1.0 / row_sum  # the observed category's extra mass, of the kernel's whole
        self.log_hit = math.log(fill + 1.0) - math.log(row_sum)
        self.log_miss = math.log(fill) - math.log(row_sum) if fill > 0 else _NEG_INF
        self.log_uniform = -math.log(self.size)
        self._terms = {}

    def updated(self, removed, added, ids):  # pylint: disable=unused-argument
        """This dimension's kernels after the changes (see _Numeric.updated)."""
        new = object.__new__(_Categorical)
        new.size = self.size
        new.observed = list(self.observed)
        for position, _, _ in reversed(removed):
            del new.observed[position]
        for position, value, _ in added:
            new.observed.insert(position, int(value))
        new._scalars(self.prior_weight)  # pylint: disable=protected-access
        return new, []

    def sample(self, rng, component):
        if component < len(self.observed) and rng.random() < self.hit:
            return self.observed[component]
        return rng.randrange(self.size)

    def add_terms(self, acc, x):
        terms = self._terms.get(x)
        if terms is None:
            hit, miss = self.log_hit, self.log_miss
            terms = [hit if o == x else miss for o in self.observed] + [self.log_uniform]
            self._terms[x] = terms
        return [a + t for a, t in zip(acc, terms)]


def _log_norms(low, high, mus, inv):
    """_normal.log_mass of each kernel on the range [low, high]: 0.0 at once where it is exactly 0.0 (the mean more
    than _WHOLE_MASS_Z bandwidths inside both ends)."""
    log_mass, whole = _normal.log_mass, _WHOLE_MASS_Z
    return [0.0 if (low - m) * i < -whole and (high - m) * i > whole else log_mass((low - m) * i, (high - m) * i)
            for m, i in zip(mus, inv)]


def _min_sigma(span, magic_clip, clip_count):
    """The bandwidths' floor: range / min(100, count + 2) (Optuna's "magic clip"), else next to nothing."""
    return span / min(100.0, clip_count + 2.0) if magic_clip else 1e-12


def _adaptive_bandwidths(points, low, high, consider_endpoints):
    """(each point's distance to the farther of its two sorted neighbours, the range's ends counting as neighbours;
    the points' positions in sorted order)."""
    n = len(points)
    if n == 0:
        return [], []
    order = sorted(range(n), key=points.__getitem__)
    ends = [low] + [points[i] for i in order] + [high]
    gaps = [b - a for a, b in zip(ends, ends[1:])]
    sorted_sigmas = [left if left >= right else right for left, right in zip(gaps, gaps[1:])]  # max, the left first
    if not consider_endpoints and n >= 2:
        sorted_sigmas[0] = ends[2] - ends[1]
        sorted_sigmas[-1] = ends[-2] - ends[-3]
    sigmas = [0.0] * n
    for rank, index in enumerate(order):
        sigmas[index] = sorted_sigmas[rank]
    return sigmas, order


def _bandwidth(ranked, rank, n, low, high, consider_endpoints):
    """_adaptive_bandwidths' value of the observation at ``rank`` of the sorted (value, id) pairs ``ranked``: the
    same operations on the same floats."""
    if not consider_endpoints and n >= 2:
        if rank == 0:
            return ranked[1][0] - ranked[0][0]
        if rank == n - 1:
            return ranked[n - 1][0] - ranked[n - 2][0]
    value = ranked[rank][0]
    left = value - (ranked[rank - 1][0] if rank > 0 else low)
    right = (ranked[rank + 1][0] if rank < n - 1 else high) - value
    return left if left >= right else right


def _remove(mus, index, m, j):
    """Removes kernel j, whose mean is m, from the sorted means ``mus`` and their kernels ``index`` (if there)."""
    for k in range(bisect.bisect_left(mus, m), bisect.bisect_right(mus, m)):
        if index[k] == j:
            del mus[k], index[k]
            return


def _changes(old_ids, old_points, ids, points):
    """(positions of the old observations removed, positions of the new ones added), an id whose point changed
    being both; None when there are more than _MOST_EDITS. Observations are compared by id and point (==); the ids
    increase. Both lists are walked together, a merge on the ids: each stretch they share is found by comparing
    slices in C (first_difference), so the steps in Python are one a change, however many positions a change shifts
    (a job leaving the bad group in its middle shifted ~5,000 of 10,000; compared one by one, they were a tenth of a
    suggestion)."""
    removed, added = [], []
    i, j, old_count, count = 0, 0, len(old_ids), len(ids)
    while i < old_count and j < count:
        run = min(first_difference(old_ids[i:], ids[j:]), first_difference(old_points[i:], points[j:]))
        i, j = i + run, j + run
        if i == old_count or j == count:
            break
        if old_ids[i] == ids[j]:  # the same observation at another point
            removed.append(i)
            added.append(j)
            i, j = i + 1, j + 1
        elif old_ids[i] < ids[j]:  # (the ids increase: this one is not among the new ones)
            removed.append(i)
            i += 1
        else:
            added.append(j)
            j += 1
        if len(removed) + len(added) > _MOST_EDITS:
            return None
    removed.extend(range(i, old_count))
    added.extend(range(j, count))
    return None if len(removed) + len(added) > _MOST_EDITS else (removed, added)


def _increasing(ids):
    return all(map(operator.lt, ids, ids[1:]))


def _floor_count(dim, own, clip_count, grid_floor):
    """How many observations a dimension's bandwidth floor counts: the points' own number, or the caller's larger
    count; on a grid, at most the count whose floor is ``grid_floor`` of a cell (range / (count + 2) = grid_floor *
    range / size), so that a kernel keeps mass on the neighbouring values however many jobs the count includes."""
    count = own if clip_count is None else max(clip_count, own)
    if grid_floor is not None and dim.kind == STEPPED:
        count = max(own, min(count, dim.size / grid_floor - 2.0))
    return count


class ParzenEstimator:
    """A mixture of product kernels over ``dims`` from ``points`` (tuples of internal coordinates).

    :param dims: the space.Dimension objects the points' coordinates belong to, in order.
    :param points: the observations, each a tuple with one internal coordinate per dimension.
    :param weights: one non-negative weight per point (before normalisation).
    :param prior_weight: the prior kernel's weight, and the categorical kernels' smoothing.
    :param clip_count: the number of observations the bandwidth floor counts, range / min(100, clip_count + 2);
        None: the points' own number (Optuna's). A larger count lets the kernels narrow further where points cluster.
    :param grid_floor: on a stepped dimension, a larger ``clip_count`` never narrows the floor below this share of
        the grid's mean cell (range / number of values); None: no such limit. Never below Optuna's own floor.
    """

    def __init__(self, dims, points, weights, prior_weight=1.0, magic_clip=True, consider_endpoints=False,
                 clip_count=None, grid_floor=None, prune=True, ids=None, previous=None):
        self.dims = dims
        if points:
            raw = list(weights) + [prior_weight]
        else:
            raw = [1.0]
        if previous is not None and previous.raw == raw:  # a few pending jobs finished: the same weights
            self.weights, self.log_weights = previous.weights, previous.log_weights
        else:
            total = sum(raw)
            self.weights = [w / total for w in raw]
            self.log_weights = [math.log(w) if w > 0 else _NEG_INF for w in self.weights]
        self.raw = raw if len(raw) > PRUNE_KERNELS else None
        self._cumulative = None  # the weights' running sums, for sample() (built at its first call)
        counts = [_floor_count(dim, len(points), clip_count, grid_floor) for dim in dims]
        self.settings = (prior_weight, magic_clip, consider_endpoints,
                         [None if dim.kind == CATEGORICAL else _min_sigma(dim.high - dim.low, magic_clip, count)
                          for dim, count in zip(dims, counts)])
        large = prune and len(points) + 1 > PRUNE_KERNELS
        # A large estimator keeps its observations' ids (increasing: job indices), so that the next one, a few
        # observations apart, is this one edited (_update): the same floats, without sorting every dimension again.
        self.ids = list(ids) if ids is not None and large and _increasing(ids) else None
        self.points = points if self.ids is not None else None
        self._pruned = False if not large else None
        # Many kernels: points are evaluated on those that can matter (built at the first point; None: not here).
        if self.ids is not None and previous is not None and self._update(previous):
            return
        columns = list(zip(*points)) if points else [()] * len(dims)
        self.kernels = [
            _Categorical(dim, column, prior_weight) if dim.kind == CATEGORICAL
            else _Numeric(dim, column, magic_clip, consider_endpoints, count, self.ids)
            for dim, column, count in zip(dims, columns, counts)]

    def _update(self, previous):
        """This estimator's kernels as ``previous``'s edited where the observations differ (by id; an id whose point
        differs counts as removed and added), when it has the same dimensions and settings and few observations
        differ; False when they must be built whole."""
        # pylint: disable=protected-access
        if previous.ids is None or previous.dims != self.dims or previous.settings != self.settings:
            return False
        old_ids, old_points, ids, points = previous.ids, previous.points, self.ids, self.points
        if len(old_ids) < 2 or len(ids) < 2:
            return False
        changes = _changes(old_ids, old_points, ids, points)
        if changes is None:
            return False
        removed, added = changes
        if not removed and not added:
            # The same observations: the same kernels (most polls of a long sweep change no job's group; each
            # dimension's lists were copied).
            self.kernels = list(previous.kernels)
            if previous._pruned:
                self._pruned = previous._pruned.adopted(previous, self, removed, added, set())
                previous._pruned = None
            return True
        self.kernels, changed = [], set()
        for d, kernel in enumerate(previous.kernels):
            kernel, touched = kernel.updated([(k, old_points[k][d], old_ids[k]) for k in removed],
                                             [(k, points[k][d], ids[k]) for k in added], ids)
            self.kernels.append(kernel)
            changed.update(touched)
        if previous._pruned:
            self._pruned = previous._pruned.adopted(previous, self, removed, added, changed)
            previous._pruned = None  # it moved here: the previous estimator builds another if asked again
        return True

    @property
    def cumulative(self):
        if self._cumulative is None:
            self._cumulative = []
            running = 0.0
            for w in self.weights:
                running += w
                self._cumulative.append(running)
        return self._cumulative

    def sample(self, rng, size):
        """``size`` points drawn from the mixture, each a tuple of internal coordinates."""
        cumulative = self.cumulative
        last = len(cumulative) - 1
        drawn = []
        for _ in range(size):
            component = min(bisect.bisect_right(cumulative, rng.random() * cumulative[-1]), last)
            drawn.append(tuple(kernel.sample(rng, component) for kernel in self.kernels))
        return drawn

    def log_pdf(self, point):
        """log density of the mixture at ``point`` (a tuple of internal coordinates)."""
        if self._pruned is None:
            self._pruned = _Pruned.of(self)
        if self._pruned:
            return self._pruned.log_pdf(point)
        acc = self.log_weights
        for kernel, x in zip(self.kernels, point):
            acc = kernel.add_terms(acc, x)
        return _normal.log_sum_exp(acc)


class _Pruned:
    """log_pdf over the kernels that can matter at a point, for an estimator of many kernels.

    The log of a kernel's term is its log weight plus one term per dimension; each dimension's term has an upper
    bound (a continuous kernel's peak, 0 for a stepped one's share of its mass, a categorical one's larger value).
    Kernels are sorted on a continuous "lead" dimension. For a point, the terms of a few kernels next to it (and of
    the prior and of every wide kernel) are computed whole: the largest, L, is a lower bound of the largest term.
    A kernel whose term cannot reach L - PRUNE_MARGIN adds less than e^-50 of the sum: only those within the window
    of the lead dimension where it can are looked at, and their dimensions are added one at a time, those that fall
    below the bound left out at each. Of the terms found, those within PRUNE_MARGIN of the largest are then summed
    exactly as the whole mixture sums them (same operations, same order): each is the same float, and the set does
    not depend on which kernels the boxes looked at (an estimator edited from the previous one keeps looser boxes).
    """

    def __init__(self, estimator, box_dims):
        self.estimator = estimator
        self.kernels = estimator.kernels
        count = len(estimator.weights) - 1  # the prior kernel is the last
        self.prior = count
        self.box_dims = box_dims
        # Kernels much wider than most (sparse regions, the ends) are always evaluated: they would widen every box.
        wide = set()
        for d in box_dims:
            sigmas = self.kernels[d].sigmas
            floor = min(sigmas[:count])
            wide.update(j for j in range(count) if sigmas[j] > 4.0 * floor)
        self.wide = sorted(wide)
        narrow = [j for j in range(count) if j not in wide] if wide else list(range(count))
        self.widest = [max([self.kernels[d].sigmas[j] for j in narrow], default=1.0) for d in box_dims]
        lead_mus = self.kernels[box_dims[0]].mus
        self.sorted_index = sorted(narrow, key=lead_mus.__getitem__)
        self.sorted_mus = [lead_mus[j] for j in self.sorted_index]
        self.buckets = None
        if len(box_dims) >= 2:  # cells of the box dimensions but the last, each cell's kernels sorted on the last one
            self.widths = [4.0 * w for w in self.widest[:-1]]
            last_mus = self.kernels[box_dims[-1]].mus
            cells = {}
            for j in self.sorted_index:
                cells.setdefault(self._cell(self.kernels, j), []).append(j)
            self.buckets = {}
            for cell, members in cells.items():
                members.sort(key=last_mus.__getitem__)
                self.buckets[cell] = ([last_mus[j] for j in members], members)
        log_weights = estimator.log_weights
        self.max_log_weight = max(log_weights[:count])
        self.bounds = [self._bound(kernel) for kernel in self.kernels]
        self.total_bound = sum(self.bounds)
        self.always = [count] + self.wide  # evaluated whole at every point
        # Continuous dimensions outside the box first (their terms are cheap, and a kernel in the box is mostly far
        # from the point in them), then stepped ones (a term kept per grid value, mean and bandwidth: a look-up; a
        # kernel a few cells away falls far), then the box's own (it has already narrowed those), categorical ones
        # last (a miss costs little); when that is the dimensions' own order, the partial sums are the terms.
        rank = {d: (0 if d not in box_dims else 2) if isinstance(k, _Numeric) and k.dim.kind != STEPPED
                else 3 if isinstance(k, _Categorical) else 1 for d, k in enumerate(self.kernels)}
        self.order = sorted(range(len(self.kernels)), key=lambda d: (rank[d], d))
        self.in_order = self.order == list(range(len(self.kernels)))
        self._line = None  # a one-dimensional estimator's kernels on a line (_log_pdf_1d)

    def _cell(self, kernels, j):
        """The cell of kernel j (of ``kernels``) in the box dimensions but the last."""
        return tuple(int(kernels[d].mus[j] // w) for d, w in zip(self.box_dims, self.widths))

    def _renumber(self, previous, removed, added, count):
        """The kernels' positions after ``removed`` (old positions) left and ``added`` (new ones) came in."""
        bounds = [0] + [p + 1 for p in added], added + [count]
        table = list(itertools.chain.from_iterable(range(a, b) for a, b in zip(*bounds)))  # the kept ones' positions
        for position in removed:
            table.insert(position, -1)
        lead, last = previous.kernels[self.box_dims[0]].mus, previous.kernels[self.box_dims[-1]].mus
        for position in removed:
            _remove(self.sorted_mus, self.sorted_index, lead[position], position)
            if self.buckets is not None:
                bucket = self.buckets.get(self._cell(previous.kernels, position))
                if bucket is not None:
                    _remove(bucket[0], bucket[1], last[position], position)
        renumbered = table.__getitem__  # (the lists read in C)
        self.sorted_index = list(map(renumbered, self.sorted_index))
        if self.buckets is not None:
            for _, index in self.buckets.values():
                index[:] = map(renumbered, index)
        self.wide = [table[j] for j in self.wide if table[j] >= 0]

    @classmethod
    def of(cls, estimator):
        continuous = [d for d, kernel in enumerate(estimator.kernels)
                      if isinstance(kernel, _Numeric) and kernel.dim.kind != STEPPED]
        if not continuous:
            return False  # no continuous dimension to sort on: every kernel is evaluated
        return cls(estimator, continuous[:_BOX_DIMS])

    def _box(self, point, room):
        """The narrow kernels whose means lie within the box where their terms can reach a floor `room` below the
        largest possible term: sqrt(2 room) of the widest bandwidth around the point in each box dimension."""
        reach = [math.sqrt(2.0 * room) * w for w in self.widest]
        x_lead = point[self.box_dims[0]]
        if self.buckets is None:
            low = bisect.bisect_left(self.sorted_mus, x_lead - reach[0])
            return self.sorted_index[low:bisect.bisect_right(self.sorted_mus, x_lead + reach[0], low)]
        ranges = [range(int((point[d] - r) // w), int((point[d] + r) // w) + 1)
                  for d, r, w in zip(self.box_dims, reach, self.widths)]
        if math.prod(len(r) for r in ranges) <= len(self.buckets):
            cells = itertools.product(*ranges)
        else:  # a box wider than the cells there are: the cells in it
            cells = [cell for cell in self.buckets if all(c in r for c, r in zip(cell, ranges))]
        x_last, reach_last = point[self.box_dims[-1]], reach[-1]
        found = []
        for cell in cells:
            bucket = self.buckets.get(cell)
            if bucket is not None:
                mus, index = bucket
                low = bisect.bisect_left(mus, x_last - reach_last)
                found.extend(index[low:bisect.bisect_right(mus, x_last + reach_last, low)])
        return found

    @staticmethod
    def _bound(kernel):
        """An upper bound of any non-prior kernel's term in this dimension."""
        if isinstance(kernel, _Categorical):
            return max(kernel.log_hit, kernel.log_miss)
        if kernel.dim.kind == STEPPED:
            return 0.0  # a cell's mass over the range's
        return max(kernel.consts[:-1])

    def _term(self, d, j, x, cells):
        """Kernel j's term in dimension d at x, computed as add_terms computes it."""
        kernel = self.kernels[d]
        if isinstance(kernel, _Categorical):
            if j == self.prior:
                return kernel.log_uniform
            return kernel.log_hit if kernel.observed[j] == x else kernel.log_miss
        if kernel.dim.kind == STEPPED:
            cached = kernel._cells.get(x)  # pylint: disable=protected-access
            if cached is not None:
                return cached[j]
            m, i = kernel.mus[j], kernel.inv[j]
            term = kernel.masses.get((x, m, i))
            if term is None:
                if len(kernel.masses) > _MOST_MASSES:
                    kernel.masses.clear()
                left, right = cells[d]
                term = kernel.masses[x, m, i] = _normal.log_mass((left - m) * i, (right - m) * i) - kernel.log_norm[j]
            return term
        return None  # continuous: added in value() with its own operations

    def _stepped_terms(self, d, survivors, x, cells):
        """_term of each of ``survivors`` in the stepped dimension d, most of them found in the kernel's masses."""
        return self.kernels[d].stepped_terms(survivors, x, cells[d])

    def value(self, j, point, cells):
        """Kernel j's log term at point: add_terms' operations, in its order."""
        acc = self.estimator.log_weights[j]
        for d, x in enumerate(point):
            kernel = self.kernels[d]
            if isinstance(kernel, _Numeric) and kernel.dim.kind != STEPPED:
                acc = acc + kernel.consts[j] - 0.5 * ((x - kernel.mus[j]) * kernel.inv[j]) ** 2
            else:
                acc = acc + self._term(d, j, x, cells)
        return acc

    def log_pdf(self, point):
        if len(self.kernels) == 1:
            return self._log_pdf_1d(point)
        cells = [kernel.cell(x) if isinstance(kernel, _Numeric) and kernel.dim.kind == STEPPED else None
                 for kernel, x in zip(self.kernels, point)]
        values = {j: self.value(j, point, cells) for j in self.always}
        # A few kernels right around the point: their largest term is a lower bound of the largest of all.
        near = self._box(point, _NEAR_ROOM)
        if not near:
            position = bisect.bisect_left(self.sorted_mus, point[self.box_dims[0]])
            near = self.sorted_index[max(0, position - 4):position + 4]
        # (every term of these, in order: no floor to filter them by; a NaN is dropped, as _filter drops it)
        values.update((j, v) for j, v in zip(near, self._in_order(near, point, cells)) if v >= _NEG_INF)
        floor = max(values.values()) - PRUNE_MARGIN - _BOUND_SLACK
        room = self.max_log_weight + self.total_bound - floor
        if room > 0:
            # (the near kernels are in this box too: found again, the same floats; leaving them out cost a set look-up
            # a kernel of the box, more than filtering the few of them again)
            values.update(self._terms(self._box(point, room), point, cells, floor))
        # Every term within PRUNE_MARGIN of the largest of all (M) is among those found (each reaches the floor,
        # which is below M - PRUNE_MARGIN), and M is the largest found: the sum is over exactly those terms, in kernel
        # order, whichever kernels the boxes looked at (they differ between an estimator built whole and one updated
        # from the previous: _Pruned.adopted), so both give the same float.
        cut = max(values.values()) - PRUNE_MARGIN
        return _normal.log_sum_exp([values[j] for j in sorted(values) if values[j] >= cut])

    def _log_pdf_1d(self, point):
        """log_pdf of a one-dimensional continuous estimator (MOTPE's, one per parameter): the same terms, the narrow
        kernels' read from lists sorted on their means (each kernel's log weight plus constant added once, the same
        float: the sum adds them first), the window of those that can reach the largest term less PRUNE_MARGIN one
        slice; the terms within PRUNE_MARGIN of the largest summed by math.fsum (exactly rounded: in any order, the
        same float), so that no kernel order is restored per point."""
        if self._line is None:
            self._line = self._sorted_line()
        mus, heads, inv, top_head, widest = self._line
        x = point[0]
        always = [self.value(j, point, None) for j in self.always]
        # A few kernels right around the point: their largest term is a lower bound of the largest of all.
        position = bisect.bisect_left(mus, x)
        top = max([heads[k] - 0.5 * ((x - mus[k]) * inv[k]) ** 2
                   for k in range(max(0, position - 4), min(len(mus), position + 4))] + always)
        # A narrow kernel farther than this from x falls below that bound less PRUNE_MARGIN (and the slack).
        reach = math.sqrt(2.0 * max(0.0, top_head - top + PRUNE_MARGIN + _BOUND_SLACK)) * widest
        low = bisect.bisect_left(mus, x - reach)
        high = bisect.bisect_right(mus, x + reach, low)
        window = slice(low, high)
        terms = [h - 0.5 * ((x - m) * i) ** 2 for h, m, i in zip(heads[window], mus[window], inv[window])]
        terms.extend(always)  # (the terms' order does not matter: fsum below)
        top = max(terms)
        if top == _NEG_INF:
            return top
        cut, exp = top - PRUNE_MARGIN, math.exp
        return top + math.log(math.fsum([exp(t - top) for t in terms if t >= cut]))

    def _sorted_line(self):
        """(means, log weight + constant, 1 / bandwidth) of the narrow kernels not evaluated at every point, sorted on
        the mean; the largest of the second; the widest bandwidth among them."""
        kernel, log_weights, always = self.kernels[0], self.estimator.log_weights, set(self.always)
        mus, consts, inv = kernel.mus, kernel.consts, kernel.inv
        index = [j for j in self.sorted_index if j not in always] if len(always) > 1 else self.sorted_index
        if len(index) < 2:
            return [mus[j] for j in index], [log_weights[j] + consts[j] for j in index], [inv[j] for j in index], \
                max([log_weights[j] + consts[j] for j in index], default=_NEG_INF), \
                1.0 / min([inv[j] for j in index]) if index else 0.0
        pick = operator.itemgetter(*index)  # the lists read in C
        heads = list(map(operator.add, pick(log_weights), pick(consts)))
        inverse = pick(inv)
        return pick(mus), heads, inverse, max(heads), 1.0 / min(inverse)

    def adopted(self, previous, estimator, removed, added, changed):
        """This structure (of ``previous``), moved to ``estimator``: the previous kernels but those ``removed`` (their
        old positions), the kernels ``added`` (their new positions), and ``changed`` ones (new bandwidths, their new
        positions). The boxes stay valid upper bounds: a kernel wider than the box's bandwidth joins the ones
        evaluated at every point, the bounds rise to the new constants."""
        count = len(estimator.weights) - 1
        if removed or (added and added[0] < self.prior):
            self._renumber(previous, removed, added, count)
        self.estimator, self.kernels = estimator, estimator.kernels
        self.prior = count
        self._line = None
        wide = set(self.wide)
        for j in changed:
            if j not in wide and any(self.kernels[d].sigmas[j] > w for d, w in zip(self.box_dims, self.widest)):
                wide.add(j)  # it stays in the sorted lists too: found twice, the same term
        lead_mus = self.kernels[self.box_dims[0]].mus
        for j in added:
            if any(self.kernels[d].sigmas[j] > w for d, w in zip(self.box_dims, self.widest)):
                wide.add(j)
                continue
            m = lead_mus[j]
            at = bisect.bisect_right(self.sorted_mus, m)
            self.sorted_mus.insert(at, m)
            self.sorted_index.insert(at, j)
            if self.buckets is not None:
                value = self.kernels[self.box_dims[-1]].mus[j]
                mus, index = self.buckets.setdefault(self._cell(self.kernels, j), ([], []))
                at = bisect.bisect_right(mus, value)
                mus.insert(at, value)
                index.insert(at, j)
        self.wide = sorted(wide)
        self.always = [count] + self.wide
        self.max_log_weight = max(estimator.log_weights[:count])
        bounds = []
        for d, (kernel, bound) in enumerate(zip(self.kernels, self.bounds)):
            if isinstance(kernel, _Numeric) and kernel.dim.kind != STEPPED:
                consts = kernel.consts
                bound = max([bound] + [consts[j] for j in changed] + [consts[j] for j in added])
            else:
                bound = self._bound(kernel)
            bounds.append(bound)
        self.bounds, self.total_bound = bounds, sum(bounds)
        return self

    def _terms(self, survivors, point, cells, floor):
        """{kernel: its log term} of the kernels of `survivors` whose terms reach the floor (_filter)."""
        if not survivors:
            return {}
        survivors, partial = self._filter(survivors, point, cells, floor)
        if not self.in_order:  # the partial sums were added in another order: each term again, in order
            partial = self._in_order(survivors, point, cells)
        return zip(survivors, partial)

    def _in_order(self, survivors, point, cells):
        """value() of each of the narrow kernels ``survivors``: the same operations in the same order, a dimension at
        a time."""
        log_weights = self.estimator.log_weights
        acc = [log_weights[j] for j in survivors]
        for d, (kernel, x) in enumerate(zip(self.kernels, point)):
            if isinstance(kernel, _Categorical):
                observed, hit, miss = kernel.observed, kernel.log_hit, kernel.log_miss
                acc = [a + (hit if observed[j] == x else miss) for a, j in zip(acc, survivors)]
            elif kernel.dim.kind == STEPPED:
                acc = [a + t for a, t in zip(acc, kernel.stepped_terms(survivors, x, cells[d]))]
            else:
                consts, mus, inv = kernel.consts, kernel.mus, kernel.inv
                acc = [a + consts[j] - 0.5 * ((x - mus[j]) * inv[j]) ** 2 for a, j in zip(acc, survivors)]
        return acc

    def _filter(self, survivors, point, cells, floor):
        """(the kernels whose partial sums, plus the bounds of the dimensions not added yet, still reach the floor,
        their sums); when the dimensions are added in their own order (``in_order``) the sums are the terms, each
        dimension's added as add_terms adds it; otherwise they are bounds only, and a continuous term's square is
        ``z * z`` (within an ulp of add_terms' ``z ** 2``, which is glibc's pow, ~2.3x the cost; the floor's
        _BOUND_SLACK covers far more than that rounding, as it covers the sums' other order)."""
        log_weights = self.estimator.log_weights
        partial = [log_weights[j] for j in survivors]
        rest = self.total_bound
        for d in self.order:
            kernel, x = self.kernels[d], point[d]
            rest -= self.bounds[d]
            if isinstance(kernel, _Categorical):
                observed, hit, miss = kernel.observed, kernel.log_hit, kernel.log_miss
                partial = [p + (hit if observed[j] == x else miss) for p, j in zip(partial, survivors)]
            elif kernel.dim.kind == STEPPED:
                partial = [p + t for p, t in zip(partial, self._stepped_terms(d, survivors, x, cells))]
            else:
                consts, mus, inv = kernel.consts, kernel.mus, kernel.inv
                if self.in_order:  # the partial sums are the terms: add_terms' operations
                    partial = [p + consts[j] - 0.5 * ((x - mus[j]) * inv[j]) ** 2 for p, j in zip(partial, survivors)]
                else:  # bounds only (the terms are computed again, in order): z * z, not z ** 2 (glibc's pow)
                    partial = [p + consts[j] - 0.5 * (z := (x - mus[j]) * inv[j]) * z
                               for p, j in zip(partial, survivors)]
            need = floor - rest
            kept = [p >= need for p in partial]
            if not all(kept):
                survivors = list(itertools.compress(survivors, kept))
                partial = list(itertools.compress(partial, kept))
            if not survivors:
                break
        return survivors, partial
