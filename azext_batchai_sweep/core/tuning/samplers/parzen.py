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
terms computed once per estimator and stepped/categorical terms computed once per distinct value.
"""
import bisect
import math

from . import _normal
from .space import CATEGORICAL, STEPPED

_NEG_INF = -math.inf


class _Numeric:
    """The kernels of one continuous or stepped dimension."""

    def __init__(self, dim, points, magic_clip, consider_endpoints, clip_count):
        low, high = dim.low, dim.high
        span = high - low
        sigmas = _adaptive_bandwidths(points, low, high, consider_endpoints)
        minsigma = span / min(100.0, clip_count + 2.0) if magic_clip else 1e-12
        sigmas = [min(max(s, minsigma), span) for s in sigmas]
        self.mus = list(points) + [0.5 * (low + high)]
        self.sigmas = sigmas + [span]
        self.low, self.high = low, high
        self.dim = dim
        self.inv = [1.0 / s for s in self.sigmas]
        # log of each kernel's mass on the range: the truncation's normalising constant.
        self.log_norm = [_normal.log_mass((low - m) * i, (high - m) * i) for m, i in zip(self.mus, self.inv)]
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

    def _cell_terms(self, x):
        # The grid value's cell, [value - step/2, value + step/2] (in log coordinates for an integer LOG parameter).
        if self.dim.log:
            value = round(math.exp(x))
            left, right = math.log(value - 0.5), math.log(value + 0.5)
        else:
            left, right = x - self.dim.step / 2, x + self.dim.step / 2
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


def _adaptive_bandwidths(points, low, high, consider_endpoints):
    """Each point's distance to the farther of its two sorted neighbours, the range's ends counting as neighbours."""
    n = len(points)
    if n == 0:
        return []
    order = sorted(range(n), key=points.__getitem__)
    ends = [low] + [points[i] for i in order] + [high]
    sorted_sigmas = [max(ends[k + 1] - ends[k], ends[k + 2] - ends[k + 1]) for k in range(n)]
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
                 clip_count=None, grid_floor=None):
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
        acc = self.log_weights
        for kernel, x in zip(self.kernels, point):
            acc = kernel.add_terms(acc, x)
        return _normal.log_sum_exp(acc)
