"""Benchmark of `sweep run`'s controller: compute saved by early termination, Hyperband and ASHA on synthetic learning
curves, side by side with Optuna's pruners; and the cost of one poll of 1,000 running jobs' logs on the local service.

Usage: python bench/tuning.py [--seeds 20] [--configs 81] [--epochs 27] [--jobs 1000] [--skip-poll]

1. Curves (in-process, the pure controller of core/tuning on a virtual cluster, core/tuning/simulation.py): per seed,
   `--configs` configurations with a deterministic learning curve each (tests/tuning/curves.py: they cross early, and
   their final ranking is known). For each method: job-steps (epochs) run versus running every configuration it
   tried to the end, whether the truly best configuration is among the final survivors (the jobs that ran to the
   end), and the regret (truly best final value minus the best final value found). Optuna's SuccessiveHalvingPruner
   and HyperbandPruner (test-only oracle) run the same curves one trial after another (Optuna's own model).
2. Poll (`--jobs` jobs running on a local service with as many slots; the benchmark appends lines to their logs):
   one LogFollower.update() of all of them (an open-ended HTTP Range GET per job, 16 threads) against the same
   Range GETs without parsing, side by side; bytes read versus new log bytes.
"""
import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=wrong-import-position
from azext_batchai_sweep.core.spec.params import DiscreteParamSpec  # noqa: E402
from azext_batchai_sweep.core.tuning.controller import Controller, Limits  # noqa: E402
from azext_batchai_sweep.core.tuning.policies import make_policy  # noqa: E402
from azext_batchai_sweep.core.tuning.samplers import GridSampler, HyperbandSampler  # noqa: E402
from azext_batchai_sweep.core.tuning.simulation import simulate  # noqa: E402
from tests.tuning.curves import make_curves  # noqa: E402


def ours(method, curves, epochs, seed, concurrency, min_resource=1):
    spec = DiscreteParamSpec(parameterName='C', values=list(curves))
    if method == 'hyperband':
        controller = Controller(HyperbandSampler([spec], 'max', min_resource, epochs, 3, seed), None,
                                Limits(max_concurrent_jobs=concurrency))
    else:
        settings = {'asha': {'policy': 'asha', 'minResource': min_resource, 'maxResource': epochs, 'eta': 3},
                    'bandit': {'policy': 'bandit', 'slackFactor': 0.1, 'delayEvaluation': 3},
                    'median': {'policy': 'median', 'delayEvaluation': 3},
                    'truncation': {'policy': 'truncation', 'truncationPercentage': 30, 'delayEvaluation': 3},
                    'none': None}[method]
        controller = Controller(GridSampler([spec]), make_policy(settings, 'max'),
                                Limits(max_concurrent_jobs=concurrency))
    trials, _, end = simulate(controller, lambda params: curves[params['C']])
    assert end == 'exhausted', end
    trials = controller.as_seen_by_policies(trials)
    used = sum(len(t.reports) for t in trials)
    tried = {t.params['C'] for t in trials}
    survivors = {t.params['C'] for t in trials if t.state == 'succeeded' and not t.stopped_early
                 and (t.resource is None or t.resource == epochs)}
    return used, len(tried) * epochs, tried, survivors


def optuna_run(pruner, curves):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction='maximize', pruner=pruner)
    used, survivors = 0, set()
    for c, values in curves.items():
        trial = study.ask()
        for step, value in enumerate(values, 1):
            used += 1
            trial.report(value, step)
            if trial.should_prune():
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                break
        else:
            study.tell(trial, values[-1])
            survivors.add(c)
    return used, len(curves) * len(next(iter(curves.values()))), set(curves), survivors


def curves_benchmark(seeds, configs, epochs, concurrency, crossing):
    import optuna
    warnings.filterwarnings('ignore', category=optuna.exceptions.ExperimentalWarning)
    methods = {
        'hyperband min 1 (ours)': lambda c, s: ours('hyperband', c, epochs, s, concurrency),
        'hyperband min 3 (ours)': lambda c, s: ours('hyperband', c, epochs, s, concurrency, 3),
        'asha min 1 (ours)': lambda c, s: ours('asha', c, epochs, s, concurrency),
        'asha min 9 (ours)': lambda c, s: ours('asha', c, epochs, s, concurrency, 9),
        'bandit 0.1 (ours)': lambda c, s: ours('bandit', c, epochs, s, concurrency),
        'median (ours)': lambda c, s: ours('median', c, epochs, s, concurrency),
        'truncation 30% (ours)': lambda c, s: ours('truncation', c, epochs, s, concurrency),
        'Optuna SuccessiveHalvingPruner min 1': lambda c, s: optuna_run(optuna.pruners.SuccessiveHalvingPruner(
            min_resource=1, reduction_factor=3), c),
        'Optuna SuccessiveHalvingPruner min 9': lambda c, s: optuna_run(optuna.pruners.SuccessiveHalvingPruner(
            min_resource=9, reduction_factor=3), c),
        'Optuna HyperbandPruner min 1': lambda c, s: optuna_run(optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=epochs, reduction_factor=3), c),
        'Optuna HyperbandPruner min 3': lambda c, s: optuna_run(optuna.pruners.HyperbandPruner(
            min_resource=3, max_resource=epochs, reduction_factor=3), c),
    }
    rows = {name: {'saved': [], 'best_kept': 0, 'regret': [], 'tried_best': 0} for name in methods}
    for seed in range(seeds):
        curves, best = make_curves(configs, epochs, seed, crossing=crossing)
        finals = {c: values[-1] for c, values in curves.items()}
        for name, method in methods.items():
            used, full, tried, survivors = method(curves, seed)
            row = rows[name]
            row['saved'].append(1 - used / full)
            truly_best_tried = max(tried, key=finals.get)
            row['best_kept'] += truly_best_tried in survivors
            row['tried_best'] += best in tried
            row['regret'].append(finals[best] - max((finals[c] for c in survivors), default=0.0))
    print('\n### Curves ({} crossing): {} seeds, {} configurations, {} epochs, {} jobs at once\n'.format(
        crossing, seeds, configs, epochs, concurrency))
    print('| method | job-steps saved (mean, min) | truly best tried kept to the end | best of all tried '
          '| final regret (mean, max) |')
    print('| --- | ---: | ---: | ---: | ---: |')
    for name, row in rows.items():
        print('| {} | {:.1%}, {:.1%} | {}/{} ({:.0%}) | {}/{} | {:.4f}, {:.4f} |'.format(
            name, statistics.fmean(row['saved']), min(row['saved']), row['best_kept'], seeds,
            row['best_kept'] / seeds, row['tried_best'], seeds, statistics.fmean(row['regret']),
            max(row['regret'])))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--seeds', type=int, default=20)
    parser.add_argument('--configs', type=int, default=81)
    parser.add_argument('--epochs', type=int, default=81)
    parser.add_argument('--concurrency', type=int, default=8)
    parser.add_argument('--jobs', type=int, default=1000)
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--skip-poll', action='store_true')
    parser.add_argument('--crossing', nargs='+', default=['none', 'mild', 'strong'],
                        help='curve shapes (tests/tuning/curves.py)')
    options = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    print('{} {} {}, Python {}, {} CPUs, {}'.format(platform.system(), platform.machine(), platform.node()[:0],
                                                   platform.python_version(), os.cpu_count(),
                                                   time.strftime('%Y-%m-%d')))
    for crossing in options.crossing:
        curves_benchmark(options.seeds, options.configs, options.epochs, options.concurrency, crossing)
    if not options.skip_poll:
        poll_benchmark(options.jobs, options.rounds)


def poll_benchmark(jobs, rounds, threads=16, lines_per_round=3, prefill=10_000):
    """`jobs` logs followed as running jobs' logs; each round appends lines to every log, then one poll reads them.
    Rounds alternate between the LogFollower (Range GET + parsing) and raw Range GETs of the same new bytes.

    The jobs themselves run `true` and finish at once: 1,000 jobs really running on the local service are 1,000
    runner threads polling their processes, which alone saturate a 2-CPU machine and would measure the scheduler,
    not the poll. The logs are served the same way whatever the job's state (listOutputFiles, signed Range
    downloads), and the follower is told they are running, so every poll reads them incrementally."""
    import glob
    from azext_batchai_sweep.core.service.client import local_batchai_client
    from azext_batchai_sweep.core.outputs.download import read_new_bytes
    from azext_batchai_sweep.core.service.parallel import run_parallel
    from azext_batchai_sweep.core.tuning.logs import LogFollower
    from tests.fixtures_service import start_service, stop_service

    with tempfile.TemporaryDirectory() as data_dir:
        info = start_service(data_dir, slots=8)
        try:
            client = local_batchai_client(info.endpoint, info.token_file)
            rg, ws, exp = info.resource_group, info.workspace, 'poll'
            client.experiments.begin_create(rg, ws, exp, polling=False).result()
            body = {'properties': {'cluster': {'id': info.cluster_id}, 'nodeCount': 1,
                                   'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
                                   'customToolkitSettings': {'commandLine': 'true'}}}
            names = ['p{:04d}'.format(i) for i in range(jobs)]
            run_parallel(lambda n: client.jobs.begin_create(rg, ws, exp, n, body, polling=False), names,
                         parallel=16)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                finished = sum(1 for j in client.jobs.list_by_experiment(rg, ws, exp)
                               if str(j.execution_state).lower().endswith('succeeded'))
                if finished == jobs:
                    break
                time.sleep(1)
            logs = {}
            for path in glob.glob(os.path.join(data_dir, '**', 'stdouterr', 'stdout.txt'), recursive=True):
                name = next(part for part in path.split(os.sep) if part in names)
                logs[name] = path
            assert len(logs) == jobs, len(logs)
            line = 'epoch={} loss=0.1234 val_accuracy=0.{:06d} lr=0.001 elapsed=12.3s\n'
            for path in logs.values():
                with open(path, 'a', encoding='utf-8') as f:
                    f.write(('# warm-up output ' + 'x' * 80 + '\n') * (prefill // 98))
            follower = LogFollower(client, rg, ws, exp, {'metric': 'val_accuracy', 'step': 'epoch'},
                                   parallel=threads)
            states = [(name, 'running') for name in names]
            start = time.perf_counter()
            follower.update(states)
            first = time.perf_counter() - start
            first_bytes = follower.bytes_read
            offsets = {name: follower.readers[name].offset for name in names}
            links = {name: follower._links[name][0] for name in names}  # pylint: disable=protected-access
            epoch = [0]

            def append():
                epoch[0] += 1
                total = 0
                for name, path in logs.items():
                    text = ''.join(line.format(epoch[0] * lines_per_round + k, k) for k in range(lines_per_round))
                    with open(path, 'a', encoding='utf-8') as f:
                        f.write(text)
                    total += len(text)
                return total

            times = {'follower': [], 'raw': []}
            new_bytes = {'follower': 0, 'raw': 0}
            read = {'follower': 0, 'raw': 0}
            for _ in range(rounds):
                for kind in ('follower', 'raw'):
                    appended = append()
                    new_bytes[kind] += appended
                    if kind == 'follower':
                        before = follower.bytes_read
                        start = time.perf_counter()
                        follower.update(states)
                        times[kind].append(time.perf_counter() - start)
                        read[kind] += follower.bytes_read - before
                    else:
                        got = {}

                        def raw(name):
                            return read_new_bytes(links[name], offsets[name])
                        start = time.perf_counter()
                        run_parallel(raw, names, parallel=threads,
                                     on_result=lambda name, data, exc: got.__setitem__(name, data))
                        times[kind].append(time.perf_counter() - start)
                        for name, data in got.items():
                            offsets[name] += len(data)
                            read[kind] += len(data)
                    # keep both readers at the end of every log
                    if kind == 'follower':
                        for name in names:
                            offsets[name] = follower.readers[name].offset
                    else:
                        for name in names:
                            reader = follower.readers[name]
                            reader.offset = offsets[name]
            reports = sum(len(follower.readers[n].reports) for n in names)
            follower_median = statistics.median(times['follower'])
            raw_median = statistics.median(times['raw'])
            print('\n### Poll of {} jobs\' logs ({} threads, {} rounds each, {} lines of {} bytes per job and round)\n'
                  .format(jobs, threads, rounds, lines_per_round, len(line.format(100, 1))))
            print('| | per poll (median) | min | bytes read / new log bytes |')
            print('| --- | ---: | ---: | ---: |')
            print('| first poll (links + {} kB of old output per job) | {:.3f} s | | {:.3f} MB read |'.format(
                prefill // 1000, first, first_bytes / 1e6))
            print('| LogFollower.update (Range GET + parsing) | {:.3f} s | {:.3f} s | {:.4f} |'.format(
                follower_median, min(times['follower']), read['follower'] / new_bytes['follower']))
            print('| raw Range GETs (no parsing) | {:.3f} s | {:.3f} s | {:.4f} |'.format(
                raw_median, min(times['raw']), read['raw'] / new_bytes['raw']))
            print('\nratio follower / raw (medians): {:.2f}x; reports parsed: {}'.format(
                follower_median / raw_median, reports))
        finally:
            stop_service(info)


if __name__ == '__main__':
    main()
