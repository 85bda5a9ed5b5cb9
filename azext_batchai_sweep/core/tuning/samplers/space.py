"""The sweep's parameters as the dimensions a model-based sampler works in.

Each parameter spec (core/spec/params.py) becomes one :class:`Dimension`, which maps a job's parameter value to the
sampler's internal number and back:

- numeric REAL, LINEAR (or RANDOM_UNIFORM, which a random search also draws uniformly): continuous on [start, end];
- numeric REAL, LOG: continuous on [log start, log end];
- numeric with a ``step`` (REAL) or INTEGER on a linear scale: a grid ``low + k * step``; a kernel's probability
  of a grid value is its mass on [value - step/2, value + step/2] (Optuna's discrete truncated normal);
- numeric INTEGER, LOG: the integers, each with the mass of [log(value - 1/2), log(value + 1/2)];
- discrete, dict and file parameters: categorical over their values (internal number: the value's index).

A grid's number of values is what makes a space finite: a sampler must not suggest a configuration twice there.
``numValues`` describes a grid search and is ignored here (as a random search ignores it).
"""
import math
from decimal import Decimal

from ...spec.params import NumParamSpec, _decimal, _round_half_up
from ...spec.naming import canonical_json

CONTINUOUS, STEPPED, CATEGORICAL = 'continuous', 'stepped', 'categorical'


def value_key(value):
    """A hashable key under which equal parameter values meet (1 and 1.0 alike; dicts by their canonical JSON)."""
    if isinstance(value, bool):
        return ('b', value)
    if isinstance(value, (int, float)):
        return ('n', float(value))
    if isinstance(value, str):
        return ('s', str(value))
    return ('j', canonical_json(value))


class Dimension:  # pylint: disable=too-many-instance-attributes
    """One parameter in the sampler's coordinates.

    :ivar name: the parameter name.
    :ivar kind: CONTINUOUS, STEPPED or CATEGORICAL.
    :ivar low, high: the kernel's range in internal coordinates (for STEPPED, widened by half a step each side).
    :ivar log: True when internal coordinates are logarithms of the values.
    :ivar size: how many values the parameter can take (None when continuous).
    """

    def __init__(self, spec):
        self.name = spec.name
        self.log = False
        self.step = None
        if not isinstance(spec, NumParamSpec):
            self.kind = CATEGORICAL
            self.choices = spec.values()
            self._index = {value_key(v): i for i, v in enumerate(self.choices)}
            self.size = len(self.choices)
            return
        self.integer = spec.data_type == 'INTEGER'
        if spec.scale == 'LOG':
            self.log = True
            if self.integer:
                self.kind, self.step = STEPPED, 1
                self.first, self.last = math.ceil(spec.start), math.floor(spec.end)
                self.low, self.high = math.log(self.first - 0.5), math.log(self.last + 0.5)
                self.size = self.last - self.first + 1
            else:
                self.kind, self.size = CONTINUOUS, None
                self.low, self.high = math.log(spec.start), math.log(spec.end)
            return
        if self.integer:
            self.kind = STEPPED
            step = max(1, _round_half_up(spec.step)) if spec.step is not None else 1
            self.first = math.ceil(spec.start)
            self._start, self._step = Decimal(self.first), Decimal(step)
            count = (math.floor(spec.end) - self.first) // step
        elif spec.step is not None:
            self.kind = STEPPED
            self._start, self._step = _decimal(spec.start), _decimal(spec.step)
            count = int((_decimal(spec.end) - self._start) / self._step)
        else:
            self.kind, self.size = CONTINUOUS, None
            self.low, self.high = float(spec.start), float(spec.end)
            return
        self.step = float(self._step)
        self.size = count + 1
        self.low = float(self._start) - self.step / 2
        self.high = float(self._start + self._step * count) + self.step / 2

    # -- values <-> internal coordinates -------------------------------------------------------------------------

    def to_internal(self, value):
        """The internal coordinate of a job's value, or None when the value does not belong to this parameter."""
        if self.kind == CATEGORICAL:
            return self._index.get(value_key(value))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        if self.log:
            if value <= 0:
                return None
            point = math.log(value)
        elif self.kind == STEPPED:
            point = float(self._grid(self._grid_index(value)))
            if abs(point - value) > self.step / 2:
                return None
            return point
        else:
            point = float(value)
        slack = 1e-9 * (self.high - self.low)
        return point if self.low - slack <= point <= self.high + slack else None

    def to_value(self, point):
        """The job's value for an internal coordinate (rounded to the grid, within the range)."""
        if self.kind == CATEGORICAL:
            return self.choices[int(point)]
        if self.log:
            value = math.exp(point)
            if self.kind == STEPPED:
                return min(max(_round_half_up(value), self.first), self.last)
            return min(max(value, math.exp(self.low)), math.exp(self.high))
        if self.kind == STEPPED:
            grid = self._grid(self._grid_index(point))
            return int(grid) if self.integer else float(grid)
        return min(max(point, self.low), self.high)

    def key(self, point):
        """A hashable identity of the value at ``point``: equal keys, equal jobs (finite spaces only)."""
        if self.kind == CATEGORICAL:
            return int(point)
        return value_key(self.to_value(point))

    def snap(self, point):
        """The internal coordinate of the value a job would get for ``point`` (grid points for STEPPED)."""
        if self.kind == CATEGORICAL:
            return int(point)
        if self.kind == STEPPED:
            value = self.to_value(point)
            return math.log(value) if self.log else float(value)
        return min(max(point, self.low), self.high)

    def _grid_index(self, value):
        index = round((value - float(self._start)) / self.step)
        return min(max(index, 0), self.size - 1)

    def _grid(self, index):
        # Decimal, as core/spec/params.py computes a grid: 0.1 + 2 * 0.1 is 0.3 here, not 0.30000000000000004.
        return self._start + self._step * index

    # -- uniform draws (startup jobs) ----------------------------------------------------------------------------

    def draw(self, rng):
        """One uniform draw, in internal coordinates (log-uniform for LOG, uniform over the grid when STEPPED)."""
        if self.kind == CATEGORICAL:
            return rng.randrange(self.size)
        if self.kind == STEPPED:
            if self.log:
                return math.log(rng.randint(self.first, self.last))
            return float(self._grid(rng.randrange(self.size)))
        return rng.uniform(self.low, self.high)

    def neighbours(self, point):
        """The internal coordinates one step from ``point``: the grid values next to it (STEPPED: one step below,
        then above, within the range), every other category (CATEGORICAL), none for a continuous dimension."""
        if self.kind == CATEGORICAL:
            return [index for index in range(self.size) if index != int(point)]
        if self.kind != STEPPED:
            return []
        if self.log:
            value = self.to_value(point)
            return [math.log(v) for v in (value - 1, value + 1) if self.first <= v <= self.last]
        index = self._grid_index(point)
        return [float(self._grid(i)) for i in (index - 1, index + 1) if 0 <= i < self.size]

    def point_at(self, index):
        """The internal coordinate of the index-th value of a finite dimension (for enumerating a small space)."""
        if self.kind == CATEGORICAL:
            return index
        if self.log:
            return math.log(self.first + index)
        return float(self._grid(index))


def dimensions(specs):
    """The Dimension of each parameter spec, in the specs' order."""
    return [Dimension(spec) for spec in specs]


def space_size(dims):
    """How many configurations the space holds, or None when any dimension is continuous."""
    size = 1
    for dim in dims:
        if dim.size is None:
            return None
        size *= dim.size
    return size
