"""Benchmark of Bayesian sampling: our pure-Python TPE beside Optuna's TPESampler and random search.

Usage: python bench/tpe.py [--seeds 30] [--seed-offset 0] [--evals 60] [--functions branin,hartmann6,mixed]
                          [--history 1000] [--blocks N]

The issue's functions are branin, hartmann6 and mixed; ackley5, rosenbrock4, styblinski4, camel and levy_mixed are
a check on functions that no setting of the sampler was chosen on.

For each function and seed, three searches of ``--evals`` evaluations each, side by side in one run:

- *ours*: core/tuning/samplers/tpe.py (multivariate, constant liar, 10 startup jobs, l's bandwidth floor over a
  quarter of the jobs, l's weights by rank, a local phase on finite spaces), through its Sampler interface, told
  the number of evaluations as a sweep's ``sampling.count``;
- *optuna*: ``optuna.samplers.TPESampler(seed=s)``, Optuna's defaults (in 5.0: multivariate, constant liar);
- *random*: uniform draws of the same specs (spec.sample, as a random sweep draws them).

Sequential runs evaluate one suggestion at a time. Parallel runs keep 4 jobs in flight: each suggestion is made with
the 3 earlier ones still pending, and the oldest pending job finishes next (ours sees them as queued/running Trials,
Optuna as RUNNING trials with ``constant_liar=True``). The figure is the simple regret (best value found minus the
known optimum), median and quartiles over the seeds. Optuna is a test/benchmark-only dependency.

The p column is the two-sided Mann-Whitney U test of ours against Optuna's regrets: a small p (< 0.05) says the two
differ beyond what the seeds' spread explains. The 95% column is a bootstrap interval of the ratio of the medians
(the seeds of each method resampled 2,000 times): how far that ratio could move on other seeds. Then the suggestion
time: one suggestion with ``--history`` finished random jobs in the history, per function (median of 5).

With ``--blocks 30`` and many seeds (``--seeds 600 --seed-offset 10000``), the issue's targets are also checked on
each block of 30 consecutive seeds: how often a 30-seed run meets them.
"""
import argparse
import math
import os
import platform
import random
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=wrong-import-position
from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec  # noqa: E402
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler  # noqa: E402
from azext_batchai_sweep.core.tuning.trial import Report, Trial  # noqa: E402


# -- test functions (minimised) ------------------------------------------------------------------------------------

def branin(p):
    x, y = p['X'], p['Y']
    return ((y - 5.1 / (4 * math.pi ** 2) * x * x + 5 / math.pi * x - 6) ** 2
            + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10)


_H6_ALPHA = (1.0, 1.2, 3.0, 3.2)
_H6_A = ((10, 3, 17, 3.5, 1.7, 8), (0.05, 10, 17, 0.1, 8, 14), (3, 3.5, 1.7, 10, 17, 8), (17, 8, 0.05, 10, 0.1, 14))
_H6_P = ((0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886), (0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991),
         (0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650), (0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381))


def hartmann6(p):
    x = [p['X%d' % i] for i in range(6)]
    return -sum(alpha * math.exp(-sum(a * (xi - pi) ** 2 for a, xi, pi in zip(row, x, prow)))
                for alpha, row, prow in zip(_H6_ALPHA, _H6_A, _H6_P))


_OPTIMIZER_PENALTY = {'sgd': 0.6, 'adam': 0.0, 'rmsprop': 0.3, 'adagrad': 0.9}
_ACTIVATION_PENALTY = {'relu': 0.0, 'tanh': 0.4, 'sigmoid': 1.0}


def mixed(p):
    """2 categorical, 2 INTEGER (linear), 2 LOG-scale REAL parameters; the log-scale ones interact."""
    lr, wd = math.log10(p['LR']), math.log10(p['WD'])
    return (_OPTIMIZER_PENALTY[p['OPTIMIZER']] + _ACTIVATION_PENALTY[p['ACTIVATION']]
            + ((p['LAYERS'] - 13) / 5.0) ** 2 + ((p['UNITS'] - 40) / 16.0) ** 2
            + (lr + 3.2) ** 2 + (wd + 1.7 - 0.5 * (lr + 3.2)) ** 2)


def ackley5(p):
    x = [p['X%d' % i] for i in range(5)]
    return (-20 * math.exp(-0.2 * math.sqrt(sum(v * v for v in x) / 5)) - math.exp(sum(math.cos(2 * math.pi * v)
                                                                                         for v in x) / 5)
            + 20 + math.e)


def rosenbrock4(p):
    x = [p['X%d' % i] for i in range(4)]
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))


def styblinski4(p):
    """Styblinski-Tang in 4 dimensions, shifted so that its optimum is 0."""
    return sum(v ** 4 - 16 * v * v + 5 * v for v in (p['X%d' % i] for i in range(4))) / 2 + 39.16616570377142 * 4


def camel(p):
    """Six-hump camel, shifted so that its two global optima are 0."""
    x, y = p['X'], p['Y']
    return (4 - 2.1 * x * x + x ** 4 / 3) * x * x + x * y + (-4 + 4 * y * y) * y * y + 1.0316284534898774


def levy_mixed(p):
    """Levy's function over an INTEGER, a LOG-scale INTEGER and a REAL parameter, plus a categorical penalty."""
    w = [1 + (p['A'] - 7) / 4.0, 1 + (math.log2(p['B']) - 6) / 4.0, 1 + (p['C'] - 0.3) * 3]
    inner = sum((wi - 1) ** 2 * (1 + 10 * math.sin(math.pi * wi + 1) ** 2) for wi in w[:-1])
    return (math.sin(math.pi * w[0]) ** 2 + inner + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)
            + {'x': 0.0, 'y': 0.5, 'z': 0.8}[p['K']])


# The issue's three functions; the others are a check on functions no sampler setting was chosen on.
ISSUE_FUNCTIONS = ('branin', 'hartmann6', 'mixed')
FUNCTIONS = {
    'branin': (branin, 0.397887357729739,
               [NumParamSpec('X', -5, 10, 'REAL', 'LINEAR'), NumParamSpec('Y', 0, 15, 'REAL', 'LINEAR')]),
    'hartmann6': (hartmann6, -3.32236801141551,
                  [NumParamSpec('X%d' % i, 0, 1, 'REAL', 'LINEAR') for i in range(6)]),
    'mixed': (mixed, 0.0,
              [DiscreteParamSpec('OPTIMIZER', list(_OPTIMIZER_PENALTY)),
               DiscreteParamSpec('ACTIVATION', list(_ACTIVATION_PENALTY)),
               NumParamSpec('LAYERS', 1, 20, 'INTEGER', 'LINEAR'), NumParamSpec('UNITS', 1, 64, 'INTEGER', 'LINEAR'),
               NumParamSpec('LR', 1e-5, 1e-1, 'REAL', 'LOG'), NumParamSpec('WD', 1e-5, 1e-1, 'REAL', 'LOG')]),
    'ackley5': (ackley5, 0.0, [NumParamSpec('X%d' % i, -32.768, 32.768, 'REAL', 'LINEAR') for i in range(5)]),
    'rosenbrock4': (rosenbrock4, 0.0, [NumParamSpec('X%d' % i, -2.048, 2.048, 'REAL', 'LINEAR') for i in range(4)]),
    'styblinski4': (styblinski4, 0.0, [NumParamSpec('X%d' % i, -5, 5, 'REAL', 'LINEAR') for i in range(4)]),
    'camel': (camel, 0.0, [NumParamSpec('X', -3, 3, 'REAL', 'LINEAR'), NumParamSpec('Y', -2, 2, 'REAL', 'LINEAR')]),
    'levy_mixed': (levy_mixed, 0.0,
                   [NumParamSpec('A', 1, 20, 'INTEGER', 'LINEAR'), NumParamSpec('B', 2, 1024, 'INTEGER', 'LOG'),
                    NumParamSpec('C', 0.0, 1.0, 'REAL', 'LINEAR'), DiscreteParamSpec('K', ['x', 'y', 'z'])]),
}


# -- searches ------------------------------------------------------------------------------------------------------

def run_ours(func, specs, seed, evals, in_flight, **options):
    return [trial.reports[-1].value for trial in ours_trials(func, specs, seed, evals, in_flight, **options)]


def ours_trials(func, specs, seed, evals, in_flight, **options):
    """Our sampler's sweep as its Trials, in the order they finished (a warm start's source, bench/warmstart.py).
    The sampler knows the sweep's number of jobs, as a sweep file's ``sampling.count`` tells it (its local phase on a
    finite space, tpe.py, starts from a share of it)."""
    options.setdefault('count', evals)
    sampler = TPESampler(specs, goal='min', seed=seed, **options)
    trials, queue, finished = [], [], []
    while len(finished) < evals:
        while len(queue) < in_flight and len(trials) < evals:
            suggestion = sampler.suggest(trials, 1)[0]
            trial = Trial(name='j%d' % len(trials), index=len(trials), params=suggestion.params, state='running')
            trials.append(trial)
            queue.append(trial)
        trial = queue.pop(0)
        trial.state, trial.reports = 'succeeded', (Report(1, func(trial.params)),)
        finished.append(trial)
    return finished


def _optuna_params(trial, specs):
    params = {}
    for spec in specs:
        if isinstance(spec, NumParamSpec):
            suggest = trial.suggest_int if spec.data_type == 'INTEGER' else trial.suggest_float
            params[spec.name] = suggest(spec.name, spec.start, spec.end, log=spec.scale == 'LOG')
        else:
            params[spec.name] = trial.suggest_categorical(spec.name, spec.values())
    return params


def run_optuna(func, specs, seed, evals, in_flight):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction='minimize', sampler=optuna.samplers.TPESampler(seed=seed))
    queue, values, asked = [], [], 0
    while len(values) < evals:
        while len(queue) < in_flight and asked < evals:
            trial = study.ask()
            queue.append((trial, _optuna_params(trial, specs)))
            asked += 1
        trial, params = queue.pop(0)
        value = func(params)
        study.tell(trial, value)
        values.append(value)
    return values


def run_random(func, specs, seed, evals, in_flight):  # pylint: disable=unused-argument
    rng = random.Random(seed)
    return [func({spec.name: spec.sample(rng) for spec in specs}) for _ in range(evals)]


METHODS = {'ours': run_ours, 'optuna': run_optuna, 'random': run_random}


def mann_whitney_p(first, second):
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, ties averaged): how likely a difference
    between the two samples' regrets at least this large is when both methods are in fact equally good."""
    pooled = sorted((value, which) for which, values in enumerate((first, second)) for value in values)
    ranks, ties, i = {0: 0.0}, 0.0, 0
    while i < len(pooled):
        j = i
        while j < len(pooled) and pooled[j][0] == pooled[i][0]:
            j += 1
        rank = (i + j + 1) / 2.0
        ranks[0] += sum(rank for _, which in pooled[i:j] if which == 0)
        ties += (j - i) ** 3 - (j - i)
        i = j
    n1, n2 = len(first), len(second)
    n = n1 + n2
    u = ranks[0] - n1 * (n1 + 1) / 2.0
    sigma = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1))))
    if sigma == 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2.0) - 0.5) / sigma
    return min(1.0, 2 * (1 - statistics.NormalDist().cdf(max(z, 0.0))))


def median_ratio_interval(first, second, resamples=2000):
    """95% bootstrap interval of median(first) / median(second), each sample resampled on its own."""
    rng = random.Random(0)
    ratios = []
    for _ in range(resamples):
        top = statistics.median(rng.choices(first, k=len(first)))
        bottom = statistics.median(rng.choices(second, k=len(second)))
        ratios.append(top / bottom if bottom else math.inf)
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def quartiles(values):
    q1, median, q3 = statistics.quantiles(values, n=4, method='inclusive')
    return q1, median, q3


def median_cell(values):
    """A table cell: 'median [q1, q3]'."""
    q1, median, q3 = quartiles(values)
    return '{:.4g} [{:.3g}, {:.3g}]'.format(median, q1, q3)


def regret_table(args):
    rows = []
    for name in args.functions:
        func, optimum, specs = FUNCTIONS[name]
        for in_flight in (1, 4):
            regrets = {method: [] for method in METHODS}
            seconds = {method: 0.0 for method in METHODS}
            for seed in range(args.seed_offset, args.seed_offset + args.seeds):
                for method, run in METHODS.items():
                    start = time.perf_counter()
                    values = run(func, specs, seed, args.evals, in_flight)
                    seconds[method] += time.perf_counter() - start
                    regrets[method].append(min(values) - optimum)
            rows.append((name, in_flight, {m: quartiles(r) for m, r in regrets.items()}, seconds,
                         mann_whitney_p(regrets['ours'], regrets['optuna']),
                         median_ratio_interval(regrets['ours'], regrets['optuna']), regrets))
            print_row(rows[-1])
    return rows


def print_row(row):
    name, in_flight, stats, seconds, p_value, interval, _ = row
    ours, optuna, rand = stats['ours'][1], stats['optuna'][1], stats['random'][1]
    cells = ['{:.4g} [{:.3g}, {:.3g}]'.format(stats[m][1], stats[m][0], stats[m][2]) for m in METHODS]
    print('| {} | {} | {} | {:.2f}x | {:.2f}-{:.2f} | {:.2f} | {:.2f}x | {:.1f} / {:.1f} s |'.format(
        name, in_flight, ' | '.join(cells), ours / optuna if optuna else math.inf, interval[0], interval[1], p_value,
        ours / rand if rand else math.inf, seconds['ours'], seconds['optuna']), flush=True)


def median_ratio(first, second):
    """median(first) / median(second); 1.0 when both are 0 (neither did better: both found an optimum)."""
    top, bottom = statistics.median(first), statistics.median(second)
    if bottom == 0:
        return 1.0 if top == 0 else math.inf
    return top / bottom


def targets_by_block(rows, size, first_seed):
    """The issue's targets checked on each block of ``size`` consecutive seeds, as if each block were the protocol's
    30 seeds: one job at a time at most 1.1x Optuna on every function and at most 1.0x on two, 4 jobs in flight at
    most 1.2x, at most 0.5x random search everywhere. How often a block misses says how reliably a 30-seed run
    meets them, which one run's ratios cannot."""
    seeds = len(rows[0][-1]['ours'])
    print('\n| seeds | ' + ' | '.join('{} {}'.format(r[0], r[1]) for r in rows) + ' | targets met |')
    print('| --- | ' + ' | '.join('---:' for _ in rows) + ' | --- |')
    met = 0
    for start in range(0, seeds - size + 1, size):
        ratios, ok, at_most_one = [], True, 0
        for _, in_flight, *_, regrets in rows:
            block = {m: r[start:start + size] for m, r in regrets.items()}
            ratio = median_ratio(block['ours'], block['optuna'])
            ratios.append(ratio)
            ok = (ok and ratio <= (1.1 if in_flight == 1 else 1.2)
                  and median_ratio(block['ours'], block['random']) <= 0.5)
            at_most_one += in_flight == 1 and ratio <= 1.0
        ok = ok and at_most_one >= min(2, sum(1 for r in rows if r[1] == 1))
        met += ok
        print('| {}..{} | {} | {} |'.format(first_seed + start, first_seed + start + size - 1,
                                            ' | '.join('{:.2f}x'.format(r) for r in ratios), 'yes' if ok else 'no'),
              flush=True)
    print('\nTargets met in {} of {} blocks of {} seeds.'.format(met, seeds // size, size))


def suggestion_times(args):
    print('\n| function | finished jobs | suggestion (median of 5) |')
    print('| --- | ---: | ---: |')
    for name in args.functions:
        func, _, specs = FUNCTIONS[name]
        rng = random.Random(0)
        trials = []
        for index in range(args.history):
            params = {spec.name: spec.sample(rng) for spec in specs}
            trials.append(Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                                reports=(Report(1, func(params)),)))
        sampler = TPESampler(specs, goal='min', seed=1)
        times = []
        for _ in range(5):
            start = time.perf_counter()
            sampler.suggest(trials, 1)
            times.append(time.perf_counter() - start)
        print('| {} | {:,} | {:.1f} ms |'.format(name, args.history, 1000 * statistics.median(times)), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, default=30)
    parser.add_argument('--seed-offset', type=int, default=0, help='the first seed (seeds offset .. offset+seeds-1)')
    parser.add_argument('--evals', type=int, default=60)
    parser.add_argument('--functions', default=','.join(ISSUE_FUNCTIONS), type=lambda s: s.split(','),
                        help='comma-separated, of: ' + ', '.join(FUNCTIONS))
    parser.add_argument('--history', type=int, default=1000)
    parser.add_argument('--no-regret', action='store_true', help='only the suggestion times')
    parser.add_argument('--blocks', type=int, default=0, metavar='N',
                        help="also check the issue's targets on each block of N consecutive seeds")
    args = parser.parse_args()
    import optuna
    print('# seeds {}..{} x {} evaluations; Python {}, optuna {}, {} CPUs, {}'.format(
        args.seed_offset, args.seed_offset + args.seeds - 1, args.evals, platform.python_version(),
        optuna.__version__, os.cpu_count(), platform.platform()))
    if not args.no_regret:
        print('\n| function | jobs in flight | ours: median [q1, q3] | optuna TPE | random | ours / optuna '
              '| 95% | p (ours vs optuna) | ours / random | time ours / optuna |')
        print('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
        rows = regret_table(args)
        if args.blocks:
            targets_by_block(rows, args.blocks, args.seed_offset)
    suggestion_times(args)


if __name__ == '__main__':
    main()
