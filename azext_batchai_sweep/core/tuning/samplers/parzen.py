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
(_Pruned): every kernel left out is provably below e^-50 of the largest term, so the density is the same to the last
bits or so, and the suggestions are the same (tests/tuning/test_tpe_scale.py).
"""
import bisect
import math

from . import _normal
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
# The box (in kernel bandwidths: sqrt(2 x this)) whose kernels give the first lower bound of the largest term.
_NEAR_ROOM = 2.0


class _Numeric:
    """The kernels of one continuous or stepped dimension."""

    def __init__(self, dim, points, magic_clip, consider_endpoints, clip_count):
        low, high = dim.low, dim.high
        span = high - low
        sigmas = _adaptive_bandwidths(points, low, high, consider_endpoints)
        minsigma = span / min(100.0, clip_count + 2.0) if magic_clip else 1e-12
        sigmas = [minsigma if s < minsigma else span if s > span else s for s in sigmas]  # min(max(s, floor), span)
        self.mus = list(points) + [0.5 * (low + high)]
        self.sigmas = sigmas + [span]
        self.low, self.high = low, high
        self.dim = dim
        self.inv = [1.0 / s for s in self.sigmas]
        # log of each kernel's mass on the range: the truncation's normalising constant.
        self.log_norm = _log_norms(low, high, self.mus, self.inv)
        # Continuous kernels' constant terms: -log sigma - log sqrt(2 pi) - log mass.
        self.consts = [-math.log(s) - _normal.LOG_SQRT_2PI - n for s, n in zip(self.sigmas, self.log_norm)]
        self._cells = {}

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
        n_kernels = len(points) + 1
        fill = prior_weight / n_kernels
        row_sum = fill * self.size + 1.0
        self.hit = 1.0 / row_sum  # the observed category's extra mass, of the kernel's whole
        self.log_hit = math.log(fill + 1.0) - math.log(row_sum)
        self.log_miss = math.log(fill) - math.log(row_sum) if fill > 0 else _NEG_INF
        self.log_uniform = -math.log(self.size)
        self._terms = {}

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


def _adaptive_bandwidths(points, low, high, consider_endpoints):
    """Each point's distance to the farther of its two sorted neighbours, the range's ends counting as neighbours."""
    n = len(points)
    if n == 0:
        return []
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
    return sigmas


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
                 clip_count=None, grid_floor=None, prune=True):
        self.dims = dims
        columns = list(zip(*points)) if points else [()] * len(dims)
        if points:
            raw = list(weights) + [prior_weight]
        else:
            raw = [1.0]
        total = sum(raw)
        self.weights = [w / total for w in raw]
        self.log_weights = [math.log(w) if w > 0 else _NEG_INF for w in self.weights]
        self._cumulative = []
        running = 0.0
        for w in self.weights:
            running += w
            self._cumulative.append(running)
        self.kernels = [
            _Categorical(dim, column, prior_weight) if dim.kind == CATEGORICAL
            else _Numeric(dim, column, magic_clip, consider_endpoints,
                          _floor_count(dim, len(points), clip_count, grid_floor))
            for dim, column in zip(dims, columns)]
        # Many kernels: points are evaluated on those that can matter (built at the first point; None: not here).
        self._pruned = False if not prune or len(self.weights) <= PRUNE_KERNELS else None

    def sample(self, rng, size):
        """``size`` points drawn from the mixture, each a tuple of internal coordinates."""
        last = len(self._cumulative) - 1
        drawn = []
        for _ in range(size):
            component = min(bisect.bisect_right(self._cumulative, rng.random() * self._cumulative[-1]), last)
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
    below the bound left out at each. The survivors' terms are then summed exactly as the whole mixture sums them
    (same operations, same order), so each is the same float, and only terms under e^-50 of the largest are missing.
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
        if len(box_dims) == 2:  # cells of the lead dimension, each sorted on the second one
            self.width = 4.0 * self.widest[0]
            second_mus = self.kernels[box_dims[1]].mus
            cells = {}
            for m, j in zip(self.sorted_mus, self.sorted_index):
                cells.setdefault(int(m // self.width), []).append(j)
            self.buckets = {}
            for cell, members in cells.items():
                members.sort(key=second_mus.__getitem__)
                self.buckets[cell] = ([second_mus[j] for j in members], members)
        log_weights = estimator.log_weights
        self.max_log_weight = max(log_weights[:count])
        self.bounds = [self._bound(kernel) for kernel in self.kernels]
        self.total_bound = sum(self.bounds)
        self.always = [count] + self.wide  # evaluated whole at every point
        # Continuous dimensions first (their terms are cheap and narrow the kernels fastest), then categorical ones,
        # stepped ones last (each term a normal mass); when that is the dimensions' own order, the partial sums are
        # the terms themselves.
        rank = {d: (0 if isinstance(k, _Numeric) and k.dim.kind != STEPPED else 1 if isinstance(k, _Categorical)
                    else 2) for d, k in enumerate(self.kernels)}
        self.order = sorted(range(len(self.kernels)), key=lambda d: (rank[d], d))
        self.in_order = self.order == list(range(len(self.kernels)))

    @classmethod
    def of(cls, estimator):
        continuous = [d for d, kernel in enumerate(estimator.kernels)
                      if isinstance(kernel, _Numeric) and kernel.dim.kind != STEPPED]
        if not continuous:
            return False  # no continuous dimension to sort on: every kernel is evaluated
        return cls(estimator, continuous[:2])

    def _box(self, point, room):
        """The narrow kernels whose means lie within the box where their terms can reach a floor `room` below the
        largest possible term: sqrt(2 room) of the widest bandwidth around the point in each box dimension."""
        reach = [math.sqrt(2.0 * room) * w for w in self.widest]
        x_lead = point[self.box_dims[0]]
        if self.buckets is None:
            low = bisect.bisect_left(self.sorted_mus, x_lead - reach[0])
            return self.sorted_index[low:bisect.bisect_right(self.sorted_mus, x_lead + reach[0], low)]
        x_second = point[self.box_dims[1]]
        found = []
        first, last = int((x_lead - reach[0]) // self.width), int((x_lead + reach[0]) // self.width)
        cells = range(first, last + 1) if last - first < len(self.buckets) else sorted(self.buckets)
        for cell in cells:
            bucket = self.buckets.get(cell)
            if bucket is not None and first <= cell <= last:
                mus, index = bucket
                low = bisect.bisect_left(mus, x_second - reach[1])
                found.extend(index[low:bisect.bisect_right(mus, x_second + reach[1], low)])
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
            left, right = cells[d]
            m, i = kernel.mus[j], kernel.inv[j]
            return _normal.log_mass((left - m) * i, (right - m) * i) - kernel.log_norm[j]
        return None  # continuous: added in value() with its own operations

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
        cells = [kernel.cell(x) if isinstance(kernel, _Numeric) and kernel.dim.kind == STEPPED else None
                 for kernel, x in zip(self.kernels, point)]
        values = {j: self.value(j, point, cells) for j in self.always}
        # A few kernels right around the point: their largest term is a lower bound of the largest of all.
        near = self._box(point, _NEAR_ROOM)
        if not near:
            position = bisect.bisect_left(self.sorted_mus, point[self.box_dims[0]])
            near = self.sorted_index[max(0, position - 4):position + 4]
        values.update(self._terms(near, point, cells, -math.inf))
        floor = max(values.values()) - PRUNE_MARGIN - _BOUND_SLACK
        room = self.max_log_weight + self.total_bound - floor
        if room > 0:
            seen = set(near)
            values.update(self._terms([j for j in self._box(point, room) if j not in seen], point, cells, floor))
        return _normal.log_sum_exp([values[j] for j in sorted(values)])

    def _terms(self, survivors, point, cells, floor):
        """{kernel: its log term} of the kernels of `survivors` whose terms reach the floor (_filter)."""
        if not survivors:
            return {}
        survivors, partial = self._filter(survivors, point, cells, floor)
        if not self.in_order:  # the partial sums were added in another order: each term again, in order
            partial = [self.value(j, point, cells) for j in survivors]
        return zip(survivors, partial)

    def _filter(self, survivors, point, cells, floor):
        """(the kernels whose partial sums, plus the bounds of the dimensions not added yet, still reach the floor,
        their sums); a continuous dimension's term and a categorical one's are added as add_terms adds them."""
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
                partial = [p + self._term(d, j, x, cells) for p, j in zip(partial, survivors)]
            else:
                consts, mus, inv = kernel.consts, kernel.mus, kernel.inv
                partial = [p + consts[j] - 0.5 * ((x - mus[j]) * inv[j]) ** 2 for p, j in zip(partial, survivors)]
            need = floor - rest
            kept = [k for k, p in enumerate(partial) if p >= need]
            if len(kept) < len(partial):
                survivors = [survivors[k] for k in kept]
                partial = [partial[k] for k in kept]
            if not survivors:
                break
        return survivors, partial
