"""Benchmark of one suggestion at many finished jobs: our TPE, MOTPE and BOHB's model beside Optuna's TPESampler.

Usage: python bench/suggest.py [--jobs 10000] [--repeat 3] [--new 4] [--only tpe,motpe,bohb] [--floor]

For each case the same finished jobs (uniform random configurations, their values by the function) are given to
ours and to Optuna (its trials added with ``study.add_trials``), and one suggestion is timed in CPU seconds
(``time.process_time``: the machine is shared), interleaved, median of ``--repeat``:

- *ours, cold*: a new sampler object (the first suggestion of a resumed `sweep run`);
- *ours, warm*: the sampler of a run, asked a poll earlier while the last ``--new`` jobs still ran (untimed), now
  asked with them finished (every later suggestion of a run: it reads the jobs that changed, edits its model);
- *again*: the same sampler asked again with the same jobs;
- *Optuna*: ``study.ask()`` and its parameters suggested, with ``TPESampler(seed=1)`` (multivariate, constant liar:
  its 5.0 defaults; with two objectives its multi-objective TPE).

Cases: TPE on bench/tpe.py's branin (2 REAL), hartmann6 (6 REAL) and mixed (2 categorical, 2 INTEGER, 2 LOG REAL);
MOTPE on ZDT1 with 2 objectives and 6 variables (bench/mo.py's); BOHB's model (samplers/bohb.BudgetModel: TPE fitted
at one budget) on hartmann6's jobs, all at that budget. Goal (issue 44): at most 50 ms each and at most 0.5x Optuna's.
Each warm suggestion is checked to be the cold one (the run stops otherwise).

``--floor``: MOTPE's floor instead. A density sums every kernel term within e^-50 of its largest (parzen.py); the
exact terms of one warm suggestion (24 candidates x 12 one-parameter densities) are counted, and the CPU time of
summing them alone is measured (each term computed, the largest found, fsum of their exponentials: nothing else, the
terms known in advance, the garbage collector paused), beside the warm suggestion's own time.
"""
import argparse
import dataclasses
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
from azext_batchai_sweep.core.tuning.objectives import Objectives  # noqa: E402
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel  # noqa: E402
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler  # noqa: E402
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler  # noqa: E402
from azext_batchai_sweep.core.tuning.trial import Report, Trial  # noqa: E402
from bench.mo import zdt1  # noqa: E402
from bench.tpe import FUNCTIONS, _optuna_params  # noqa: E402

MO_SPECS = [NumParamSpec('X%d' % i, 0, 1, 'REAL', 'LINEAR') for i in range(6)]


def _history(specs, values_of, count):
    rng = random.Random(0)
    rows = []
    for _ in range(count):
        params = {spec.name: spec.sample(rng) for spec in specs}
        rows.append((params, values_of(params)))
    return rows


def _trials(rows):
    return [Trial(name='j%d' % i, index=i, params=params, state='succeeded', reports=(Report(1, values[0]),),
                  metrics={'f%d' % k: v for k, v in enumerate(values[1:], start=2)})
            for i, (params, values) in enumerate(rows)]


def _distributions(specs):
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
    dists = {}
    for spec in specs:
        if isinstance(spec, NumParamSpec):
            kind = IntDistribution if spec.data_type == 'INTEGER' else FloatDistribution
            dists[spec.name] = kind(spec.start, spec.end, log=spec.scale == 'LOG')
        else:
            dists[spec.name] = CategoricalDistribution(spec.values())
    return dists


def _optuna_study(specs, rows, objectives):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=['minimize'] * objectives, sampler=optuna.samplers.TPESampler(seed=1))
    dists = _distributions(specs)
    study.add_trials([optuna.trial.create_trial(params=params, distributions=dists, values=list(values))
                      for params, values in rows])
    return study


def _cpu(call):
    started = time.process_time()
    call()
    return time.process_time() - started


def cases(only):
    """(name, specs, rows, make_ours(trials) -> a callable suggesting once, objectives for Optuna)."""
    found = []
    for name in ('branin', 'hartmann6', 'mixed'):
        func, _, specs = FUNCTIONS[name]
        if 'tpe' in only:
            found.append(('TPE ' + name, specs, (lambda f: lambda p: (f(p),))(func),
                          (lambda s: lambda: (lambda sampler: lambda trials: sampler.suggest(trials, 1))(
                              TPESampler(s, goal='min', seed=1)))(specs), 1))
    if 'motpe' in only:
        objectives = Objectives([('f1', 'min'), ('f2', 'min')])
        found.append(('MOTPE zdt1 (2 objectives, 6 REAL)', MO_SPECS,
                      lambda p: tuple(zdt1([p[s.name] for s in MO_SPECS])),
                      lambda: (lambda sampler: lambda trials: sampler.suggest(trials, 1))(
                          MOTPESampler(MO_SPECS, objectives, seed=1)), 2))
    if 'bohb' in only:
        func, _, specs = FUNCTIONS['hartmann6']
        found.append(('BOHB model hartmann6', specs, lambda p: (func(p),),
                      lambda: (lambda model: lambda trials: model.suggest(trials, 'b1'))(
                          BudgetModel(specs, 'min', 1, values_at=lambda t: {81.0: t.last} if t.reports else {},
                                      random_fraction=0.0)), 1))
    return found


def _params(found):
    """The suggested parameters (a list of Suggestions, or BOHB's (params, choice))."""
    return found[0] if isinstance(found, tuple) else [s.params for s in found]


def motpe_floor(jobs, repeat, new):
    """Prints the exact terms of one warm MOTPE suggestion and the CPU time of summing them alone (see the module)."""
    import math
    from azext_batchai_sweep.core.tuning.samplers import parzen
    (name, specs, values_of, make_ours, _), = cases(['motpe'])
    trials = _trials(_history(specs, values_of, jobs))
    earlier = trials[:len(trials) - new] + [dataclasses.replace(t, state='running', reports=(), metrics={})
                                            for t in trials[len(trials) - new:]]
    calls, original = [], parzen._Pruned._log_pdf_1d  # pylint: disable=protected-access

    def recorded(self, point):
        value = original(self, point)
        calls.append((self, point[0], value))
        return value
    warm = []
    for _ in range(repeat):
        suggest = make_ours()
        suggest(earlier)
        warm.append(_cpu(lambda: suggest(trials)))  # noqa: B023
    suggest(earlier)
    parzen._Pruned._log_pdf_1d = recorded  # pylint: disable=protected-access
    try:
        suggest(trials)
    finally:
        parzen._Pruned._log_pdf_1d = original  # pylint: disable=protected-access
    kept = []  # per density: the (log weight + constant, mean, 1 / bandwidth) of its exact terms, and x
    for pruned, x, value in calls:
        mus, heads, inv, _, _ = pruned._line  # pylint: disable=protected-access
        always = [(pruned.estimator.log_weights[j] + pruned.kernels[0].consts[j], pruned.kernels[0].mus[j],
                   pruned.kernels[0].inv[j]) for j in pruned.always]
        lines = list(zip(heads, mus, inv)) + always
        terms = [h - 0.5 * ((x - m) * i) ** 2 for h, m, i in lines]
        top = max(terms)
        exact = [line for line, t in zip(lines, terms) if t >= top - parzen.PRUNE_MARGIN]
        kept.append((tuple(map(list, zip(*exact))), x, value))  # (heads, means, 1 / bandwidths): lists, as parzen's

    def sums():
        exp, fsum, log = math.exp, math.fsum, math.log
        for (heads, mus, inv), x, _ in kept:
            terms = [h - 0.5 * ((x - m) * i) ** 2 for h, m, i in zip(heads, mus, inv)]
            top = max(terms)
            log(fsum([exp(t - top) for t in terms]))
    import gc
    gc.disable()  # the arithmetic alone: no collector pauses (the suggestions above had theirs)
    try:
        floor = min(_cpu(sums) for _ in range(max(3, repeat)))
    finally:
        gc.enable()
    count = sum(len(exact[0]) for exact, _, _ in kept)
    print('{}: {} densities, {} exact terms ({:.0f} per density); summing them alone {:.1f} ms ({:.0f} ns a term); '
          'the warm suggestion {:.0f} ms (median of {})'.format(name, len(kept), count, count / len(kept),
                                                                1000 * floor, 1e9 * floor / count,
                                                                1000 * statistics.median(warm), repeat))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--jobs', type=int, default=10000)
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--new', type=int, default=4, help='jobs finished since the warm sampler was last asked')
    parser.add_argument('--only', default='tpe,motpe,bohb')
    parser.add_argument('--floor', action='store_true', help="MOTPE's exact terms and the time of summing them alone")
    args = parser.parse_args()
    if args.floor:
        motpe_floor(args.jobs, args.repeat, args.new)
        return
    import optuna
    print('# {} finished jobs; Python {}, optuna {}, {} CPUs, load average {}, {}'.format(
        args.jobs, platform.python_version(), optuna.__version__, os.cpu_count(),
        ' '.join('{:.1f}'.format(x) for x in os.getloadavg()), platform.platform()), flush=True)
    print('\n| case | ours, cold (CPU ms) | warm | again | Optuna | cold / Optuna | warm / Optuna |')
    print('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    for name, specs, values_of, make_ours, objectives in cases(args.only.split(',')):
        rows = _history(specs, values_of, args.jobs)
        trials = _trials(rows)
        study = _optuna_study(specs, rows, objectives)
        earlier = trials[:len(trials) - args.new] + [dataclasses.replace(t, state='running', reports=(), metrics={})
                                                      for t in trials[len(trials) - args.new:]]
        cold, warm, again, peer = [], [], [], []
        for _ in range(args.repeat):
            suggest = make_ours()
            found = []
            cold.append(_cpu(lambda: found.append(suggest(trials))))  # noqa: B023
            suggest = make_ours()
            suggest(earlier)
            warm.append(_cpu(lambda: found.append(suggest(trials))))  # noqa: B023
            again.append(_cpu(lambda: found.append(suggest(trials))))  # noqa: B023
            peer.append(_cpu(lambda: _optuna_params(study.ask(), specs)))
            if any(_params(f) != _params(found[0]) for f in found):
                raise SystemExit('{}: a warm suggestion differs from the cold one: {}'.format(name, found))
        c, w, a, o = (1000 * statistics.median(x) for x in (cold, warm, again, peer))
        print('| {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.2f}x | {:.2f}x |'.format(name, c, w, a, o, c / o, w / o),
              flush=True)
    print('\nload average after: {}'.format(' '.join('{:.1f}'.format(x) for x in os.getloadavg())))


if __name__ == '__main__':
    main()
