"""What mattered: each parameter's importance for the objective, from the finished jobs alone (PED-ANOVA).

PED-ANOVA (Watanabe, Bansal and Hutter, IJCAI 2023; Optuna 4-5's default, ``PedAnovaImportanceEvaluator``) asks,
for each parameter on its own, how differently the best jobs' values of it are spread from every job's: the Pearson
divergence between two one-dimensional Parzen estimates over the parameter's range, the "top" one of the jobs whose
objective is in the best ``target quantile`` and the "local" one of all the jobs. A parameter whose good values
cluster where the sweep did not has a large divergence; one whose best jobs are spread like all jobs has none.
Importances are the divergences normalised to sum to 1, top parameters first.

Why PED-ANOVA over fANOVA on a random forest: it is exact for what it measures in closed form (no forest to grow,
no randomness in the estimate), it costs two 50-point density evaluations per parameter (so a bootstrap of it is
affordable in pure Python), it reads mixed spaces (linear, log, integer, categorical) as TPE does, and it is what
Optuna computes by default, so its numbers are checkable: tests/report/test_importance.py compares them with Optuna
5.0's evaluator on the same jobs (equal to 1e-9) and the ranking with the known truth of synthetic functions;
bench/importance.py puts it beside Optuna's fANOVA (as often right from 100 jobs; fANOVA is better with 20-30 jobs
and a categorical parameter, at the cost of a forest az does not ship: docs/benchmarks.md).

This follows Optuna's formulation step by step (its defaults: a 50-step grid per numeric parameter, Scott's rule
bandwidths with a floor, a prior kernel of weight 1, ties at the quantile's cut kept, ``evaluate_on_local``), with
two additions of ours:

- uncertainty: the whole estimate again on BOOTSTRAP resamples of the jobs (with replacement, seeded: the same
  sweep gives the same interval on every run); ``low``/``high`` are the 5% and 95% quantiles of each parameter's
  share over the resamples. Few jobs give wide intervals, which is the point;
- few jobs: below MIN_JOBS finished jobs with a value there is no estimate (``tooFewJobs``); above it the target
  quantile is at least MIN_TOP jobs (Optuna's 10% needs 50 jobs for that; its own docs ask for at least 5).

Here, in report/, because it explains finished results and steers nothing. The parameter space is the axes the
report draws (axes.py): ``{name, kind: linear|log|categorical, min, max}`` or
``{..., categories}``, optionally ``integer`` (whole-number values) and ``step`` (a grid's step).
"""
import functools
import math
import random
import statistics
from collections import Counter
from itertools import compress
from operator import itemgetter

from ..floats import fraction
from ..tuning.samplers._normal import log_mass, lower_tail
from .axes import category_text, flat_values, is_number, parameter_axes

METHOD = 'ped-anova'
MIN_JOBS = 10            # fewer finished jobs with a value: no estimate ("too few jobs")
MIN_TOP = 5              # the best-jobs group holds at least this many jobs
TARGET_QUANTILE = 0.1    # Optuna's default: which parameters mattered to reach the best 10%
GRID_STEPS = 50          # Optuna's discretisation of a numeric parameter's range
PRIOR_WEIGHT = 1.0       # Optuna's: the uniform prior kernel's weight (the regularisation of a small group)
BOOTSTRAP = 200          # resamples for the interval
MIN_RESAMPLES = 40       # ... at least, however many jobs
RESAMPLED_JOBS = 200000  # ... and at most this many jobs drawn in all, above MIN_RESAMPLES
INTERVALS = 20           # the interval: from the first to the last of 20 quantiles, 5% to 95%
_FLOOR = 1e-12           # Optuna adds it to both densities before the divergence
_MIN_SIGMA = 0.5 / 1.64  # Optuna's bandwidth floor, in grid steps: 90% of a kernel within its own cell's reach


def _float(number):
    """A parameter's number as a float, or None for an integer beyond any float (10**400 is a valid JSON number)."""
    try:
        return float(number)
    except OverflowError:
        return None


class _Grid:
    """One parameter's values as cells of a grid (Optuna's discretisation), and the Parzen estimate over it."""

    def __init__(self, axis):
        self.name = axis['name']
        self.categorical = axis['kind'] == 'categorical'
        if self.categorical:
            self.index = {category: i for i, category in enumerate(axis['categories'])}
            self.size = len(self.index)
            return
        low, high = _float(axis['min']), _float(axis['max'])
        self.log = axis['kind'] == 'log'
        step = 1 if axis.get('integer') and axis.get('step') is None else axis.get('step')
        if low is None or high is None:  # an integer beyond any float: no grid of it
            self.low = self.high = 0.0
            self.size, self.cell = 1, 0.0
            return
        if step is not None and not math.isfinite((high - low) / step):
            steps = GRID_STEPS  # a range of -1e308 to 1e308 (the values are whatever the sweep gave): no grid of it
        elif self.log and step is not None:  # integers on a log scale: one cell per doubling, as Optuna
            steps = min(math.ceil(math.log(high - low + 1) / math.log(2)) + 1, GRID_STEPS)
        elif step is not None:
            steps = min(round((high - low) / step) + 1, GRID_STEPS)
        else:
            steps = GRID_STEPS
        self.low, self.high = (math.log(low), math.log(high)) if self.log else (low, high)
        self.size = steps if high > low else 1
        self.cell = (self.high - self.low) / (self.size - 1) if self.size > 1 else 0.0

    def cell_of(self, value):
        """The grid cell of a job's value, or None when the value is not one of this parameter's."""
        if self.categorical:
            return self.index.get(category_text(value)) if value is not None else None
        value = _float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if value is None or not math.isfinite(value) or (self.log and value <= 0):
            return None
        if self.size == 1:
            return 0
        point = math.log(value) if self.log else value
        cells = (point - self.low) / self.cell if math.isfinite(self.cell) and math.isfinite(point - self.low) \
            else fraction(point, self.low, self.high) * (self.size - 1)  # a range too wide to subtract in
        # Optuna's rounding: a value midway between two cells goes to the lower one.
        return min(max(math.ceil(cells - 0.5), 0), self.size - 1)

    def density(self, counts):
        """The Parzen estimate's probability of each cell, from the number of jobs in each cell."""
        return _categorical_density(counts) if self.categorical else _numeric_density(counts)


def _categorical_density(counts):
    """Optuna's categorical kernels: each observed category's kernel puts 1 on it plus prior / kernels on every
    category; the prior kernel is uniform; the kernels weigh their counts and the prior its weight."""
    size = len(counts)
    observed = [i for i, n in enumerate(counts) if n]
    fill = PRIOR_WEIGHT / (len(observed) + 1)
    row = fill * size + 1.0
    total = sum(counts) + PRIOR_WEIGHT
    base = (sum(counts) * fill / row + PRIOR_WEIGHT / size) / total
    return [base + (counts[i] / row / total if counts[i] else 0.0) for i in range(size)]


def _scott_sigma(observed, weights):
    """Scott's rule on the cell indices weighted by their counts (Optuna's ScottParzenEstimator, floor included)."""
    total = sum(weights)
    mean = sum(o * w for o, w in zip(observed, weights)) / total
    sigma = math.sqrt(sum((o - mean) ** 2 * w for o, w in zip(observed, weights)) / max(1, total - 1))
    cumulative, running = [], 0
    for w in weights:
        running += w
        cumulative.append(running)
    first_quarter, third_quarter = total // 4, total * 3 // 4
    q1 = next((i for i, c in enumerate(cumulative) if c >= first_quarter), len(cumulative))  # searchsorted left
    q3 = next((i for i, c in enumerate(cumulative) if c > third_quarter), len(cumulative))   # searchsorted right
    iqr = observed[min(len(observed) - 1, q3)] - observed[q1]
    return max(1.059 * min(iqr / 1.34, sigma) * total ** -0.2, _MIN_SIGMA)


def _numeric_density(counts):
    """Normal kernels on the occupied cells (one per cell, weighed by its count), truncated to the grid, each
    cell's mass; plus a prior kernel centred on the grid as wide as it."""
    size = len(counts)
    observed = [i for i, n in enumerate(counts) if n]
    weights = [counts[i] for i in observed]
    sigma = _scott_sigma(observed, weights)
    total = sum(weights) + PRIOR_WEIGHT
    # Kernels share sigma and sit on whole cells: a cell's mass depends on its offset from the centre only, so the
    # kernel on cell c has mass[size - 1 - c + i] on cell i (offsets -(size - 1) to size - 1).
    mass = _offset_masses(sigma, size)
    prior_share = PRIOR_WEIGHT / total
    density = [prior_share * p for p in _prior(size)]
    for centre, weight in zip(observed, weights):
        share = weight / total / math.exp(log_mass((-0.5 - centre) / sigma, (size - 0.5 - centre) / sigma))
        density = [d + share * m for d, m in zip(density, mass[size - 1 - centre:2 * size - 1 - centre])]
    return density


def _offset_masses(sigma, size):
    """A kernel's mass on the cell at each offset from its centre, -(size - 1) to size - 1: symmetric, so computed
    for the offsets from 0 (the centre's cell straddles the mean, the others lie in the upper tail)."""
    half = [1.0 - 2.0 * lower_tail(-0.5 / sigma)]
    half += [lower_tail(-(offset - 0.5) / sigma) - lower_tail(-(offset + 0.5) / sigma) for offset in range(1, size)]
    return half[:0:-1] + half


@functools.lru_cache(maxsize=64)
def _prior(size):
    """The prior kernel's mass on each cell: a normal centred on the grid with the grid's width, truncated to it."""
    middle, wide = (size - 1) / 2.0, float(size)
    norm = math.exp(log_mass((-0.5 - middle) / wide, (size - 0.5 - middle) / wide))
    return tuple(math.exp(log_mass((i - 0.5 - middle) / wide, (i + 0.5 - middle) / wide)) / norm
                 for i in range(size))


def _pearson_divergence(top, local):
    """sum local * (top / local - 1)^2 over the cells: how far the best jobs' spread is from all jobs'."""
    total = 0.0
    for p, q in zip(top, local):
        p, q = p + _FLOOR, q + _FLOOR
        total += q * (p / q - 1.0) ** 2
    return total


def _top_mask(losses, quantile):
    """Which jobs are in the best `quantile` (lower loss is better), ties at the cut kept (Optuna's filter)."""
    cut = sorted(losses)[int(math.ceil(quantile * len(losses))) - 1]
    return [loss <= cut for loss in losses]


def _raw_importances(grids, cells, losses, quantile):
    """PED-ANOVA's unnormalised importance of each parameter for one set of jobs (cells[p][j]: job j's cell of
    parameter p, None when it has no value of it: that job is outside the parameter's active regime)."""
    top = _top_mask(losses, quantile)
    n_top, n_all = sum(top), len(losses)
    raw = []
    for grid, column in zip(grids, cells):
        counted_all = Counter(column)  # Counter and compress count in C: a bootstrap of 10,000 jobs stays quick
        counted_top = Counter(compress(column, top))
        active, active_top = n_all - counted_all.pop(None, 0), n_top - counted_top.pop(None, 0)
        if grid.size < 2 or active < 2 or not active_top or len(counted_all) < 2:
            # A parameter that took one value among these jobs explains nothing: no share, ever (the prior
            # kernel alone would give it one).
            raw.append(0.0)
            continue
        counts_all = [counted_all.get(i, 0) for i in range(grid.size)]
        counts_top = [counted_top.get(i, 0) for i in range(grid.size)]
        alpha, beta = active_top / n_top, active / n_all
        divergence = _pearson_divergence(grid.density(counts_top), grid.density(counts_all))
        raw.append(alpha ** 2 / beta * divergence * (n_top / n_all) ** 2)
    return raw


def _normalised(raw):
    """Shares summing to 1; all 0 when nothing diverges (no parameter can be ranked: none gets an equal share)."""
    total = sum(raw)
    return [value / total for value in raw] if total > 0 else [0.0] * len(raw)


def _resamples(asked, count):
    """How many resamples: those asked for, fewer for a large sweep (at most RESAMPLED_JOBS jobs drawn in all, and
    at least MIN_RESAMPLES), whose interval is narrow anyway: the importance of 10,000 jobs stays within 0.5 s."""
    return min(asked, max(MIN_RESAMPLES, RESAMPLED_JOBS // count))


def target_quantile(count):
    """The best-jobs quantile for `count` jobs: Optuna's 10%, but never fewer than MIN_TOP jobs."""
    return min(0.5, max(TARGET_QUANTILE, MIN_TOP / count)) if count else TARGET_QUANTILE


def importance(jobs, params_space, objective_values, goal='max', *, quantile=None, bootstrap=BOOTSTRAP, seed=0,
               normalise=True):
    """Each parameter's importance for one objective, top first, with its bootstrap interval.

    :param jobs: the jobs' parameter values, one flat dict each ({name: value}, dict parameters as NAME.KEY).
    :param params_space: the parameters' axes (the report's: name, kind, min/max or categories; integer, step).
    :param objective_values: one value per job (None, or not a finite number: the job is left out).
    :param goal: "max" or "min".
    :param quantile: the best jobs' share (default: target_quantile of the jobs' number).
    :param bootstrap: how many resamples give the interval (0: none).
    :param normalise: shares summing to 1 (False: PED-ANOVA's raw divergences, for comparing with Optuna's raw).
    :returns: {method, goal, jobs, targetQuantile, topJobs (the best group's size, ties at its cut included),
        resamples, tooFewJobs, message, parameters: [{name, importance, low, high}]}.
    """
    pairs = [(values, value) for values, value in zip(jobs, objective_values) if is_number(value)]
    result = {'method': METHOD, 'goal': goal, 'jobs': len(pairs), 'targetQuantile': None, 'topJobs': None,
              'resamples': 0,
              'tooFewJobs': False, 'nothingRanked': False, 'message': None, 'parameters': []}
    grids = [_Grid(axis) for axis in params_space]
    if len(pairs) < MIN_JOBS or not grids:
        result['tooFewJobs'] = bool(grids)
        result['message'] = ('{} finished job(s) with a value: importance needs at least {}'.format(
            len(pairs), MIN_JOBS) if grids else 'the sweep has no parameters')
        result['parameters'] = [{'name': grid.name, 'importance': None, 'low': None, 'high': None} for grid in grids]
        return result
    quantile = quantile or target_quantile(len(pairs))
    sign = -1.0 if goal == 'max' else 1.0
    losses = [sign * value for _, value in pairs]
    cells = [[grid.cell_of(values.get(grid.name)) for values, _ in pairs] for grid in grids]
    raw = _raw_importances(grids, cells, losses, quantile)
    point = _normalised(raw) if normalise else raw
    rng = random.Random(seed)
    draws = []
    for _ in range(_resamples(bootstrap, len(pairs))):
        pick = itemgetter(*rng.choices(range(len(pairs)), k=len(pairs)))
        again = _raw_importances(grids, [pick(column) for column in cells], pick(losses), quantile)
        draws.append(_normalised(again) if normalise else again)
    rows = []
    for p, grid in enumerate(grids):
        # The 5% and 95% cuts of the resampled shares, interpolated between order statistics (numpy's default).
        cuts = statistics.quantiles([draw[p] for draw in draws], n=INTERVALS, method='inclusive') if draws else None
        rows.append({'name': grid.name, 'importance': point[p],
                     'low': cuts[0] if cuts else None, 'high': cuts[-1] if cuts else None})
    rows.sort(key=lambda row: -row['importance'])  # stable: equal importances keep the sweep's order
    result.update(targetQuantile=quantile, topJobs=sum(_top_mask(losses, quantile)), resamples=len(draws),
                  parameters=rows)
    if not sum(raw):  # nothing diverges: say so, rather than share the importance out equally
        result['nothingRanked'] = True
        result['message'] = ('every one of the {} jobs has the same value: no parameter can be ranked'.format(
            len(pairs)) if len(set(losses)) == 1 else 'no parameter took more than one value among the {} jobs, '
            'or none changed the best jobs\' values: no parameter can be ranked'.format(len(pairs)))
    return result


def counted_value(state, value, stopped_early):
    """The value a job's importance counts with, as the samplers learn (core/tuning/trial.Trial.objective): a job
    that ran to the end with its last value, a job a decision stopped early with its last value before it (evidence
    that the configuration is poor); a failed job, one still running, one the user stopped: None."""
    if state == 'succeeded' or (state == 'terminated' and stopped_early):
        return value
    return None


def importance_per_objective(jobs, params_space, objectives, **options):
    """One importance result per objective, each with its `objective` (name) added: the hook a sweep with several
    objectives (issue 29's ``objectives:``) calls with each objective's values.

    :param objectives: [(name, goal, values)], values aligned with `jobs` as importance() takes them.
    """
    return [dict(importance(jobs, params_space, values, goal, **options), objective=name)
            for name, goal, values in objectives]


def report_importance(job_rows, axes, objective, pareto=None):
    """The report's importance (data.py's job rows and parameter axes): one entry per objective, from the Pareto
    figures of a `sweep run` with several objectives (`pareto`, core/tuning/front.py), else from the jobs' rows
    (of a Hyperband sweep: those at one resource, at_one_resource)."""
    if len((pareto or {}).get('objectives') or ()) > 1:
        resource = resource_parameter(job_rows)
        return front_importance(pareto, [axis for axis in axes if axis['name'] != resource])
    values = [counted_value(row['state'], row['objective'], row['stoppedEarly']) for row in job_rows]
    return _single_importance(job_rows, values, lambda jobs: axes, objective.label, objective.goal)


def _single_importance(job_rows, values, axes_of, name, goal):
    """The importance for one objective of rows ({values, resource}) with their counted values, at one resource
    (at_one_resource) and without the resource's placeholder among the axes; axes_of(jobs) gives the axes."""
    resource = resource_parameter(job_rows)
    job_rows, values, said = at_one_resource(job_rows, values, resource)
    jobs = [row['values'] for row in job_rows]
    axes = [axis for axis in with_integers(axes_of(jobs), jobs) if axis['name'] != resource]
    entries = importance_per_objective(jobs, axes, [(name, goal, values)])
    return [dict(entry, resource=said) for entry in entries] if said else entries


def resource_parameter(job_rows):
    """The name of Hyperband's resource placeholder among the jobs' parameters (EPOCHS: each job's value of it is
    the resource it ran to), or None: a sweep without a resource. It is no parameter the sweep tuned."""
    with_resource = [row for row in job_rows if row.get('resource') is not None]
    if not with_resource:
        return None
    names = set(with_resource[0]['values'])
    for row in with_resource:
        names = {name for name in names
                 if is_number(row['values'].get(name)) and _float(row['values'][name]) == row['resource']}
    return min(names) if names else None


def at_one_resource(job_rows, values, resource_name):
    """(rows, values, said) of the jobs whose values are compared: a Hyperband sweep's jobs ran to several
    resources (1 epoch, 3, 9...), and a value after 1 epoch does not rank a configuration as one after 9 does, so
    only the jobs at one resource count, the largest with at least MIN_JOBS values (BOHB's rule for its model,
    core/tuning/samplers/bohb.py), else the largest; `said` ({name, value, jobs, leftOut}) names it (None: a sweep
    without a resource, every job counted)."""
    resources = [row.get('resource') for row in job_rows]
    counts = Counter(r for r, v in zip(resources, values) if r is not None and is_number(v))
    if resource_name is None or not counts:
        return job_rows, values, None
    enough = [r for r, n in counts.items() if n >= MIN_JOBS]
    chosen = max(enough) if enough else max(counts)
    keep = [k for k, r in enumerate(resources) if r == chosen]
    said = {'name': resource_name, 'value': chosen, 'jobs': counts[chosen],
            'leftOut': sum(counts.values()) - counts[chosen]}
    return [job_rows[k] for k in keep], [values[k] for k in keep], said


def front_importance(pareto, axes=None, infos=()):
    """One entry per objective of a sweep with several (`sweep run`'s figures' ``pareto``): the jobs that count for
    its front (ran to the end, at Hyperband's largest resource), feasible or not, each with its value of the objective.

    :param axes: the parameters' axes (the report's); None: from these jobs' values and the plan's `infos`.
    """
    entries = list(pareto.get('ranked') or ()) + [e for e in pareto.get('infeasible') or () if e.get('values')]
    jobs = [flat_values(entry['parameters']) for entry in entries]
    axes = with_integers(parameter_axes(jobs, infos) if axes is None else axes, jobs)
    return importance_per_objective(jobs, axes, [
        (spec['metric'], spec['goal'], [entry['values'].get(spec['metric']) for entry in entries])
        for spec in pareto['objectives']])


def metrics_importance(rows, goal, metric, infos=(), stopped=(), resources=None):
    """`metrics --importance`: the importance from the rows of core/outputs/metrics.get_metrics (each job's value as
    --reduce made it), on the axes the report draws (the plan's scales in `infos`, where known).

    :param stopped: the names of the jobs a `sweep run` decision stopped early (they count with their value).
    :param resources: {job name: the resource it ran to} of a `sweep run` with Hyperband (at_one_resource), or None.
    """
    job_rows = [{'values': flat_values(row.get('parameters')), 'resource': (resources or {}).get(row['name'])}
                for row in rows]
    values = [counted_value(row['state'], row['metric'], row['name'] in stopped) for row in rows]
    return _single_importance(job_rows, values, lambda jobs: parameter_axes(jobs, infos), metric or 'metric', goal)


def with_integers(axes, jobs):
    """The axes, each numeric one marked ``integer`` when every job's value of it is a whole number (an INTEGER
    parameter: Optuna's integer grid)."""
    def whole(axis):
        present = [values.get(axis['name']) for values in jobs]
        return axis['kind'] != 'categorical' and all(isinstance(v, int) and not isinstance(v, bool)
                                                     for v in present if v is not None)
    return [dict(axis, integer=whole(axis)) for axis in axes]
