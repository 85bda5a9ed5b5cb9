"""Benchmark of parameter importance (core/report/importance.py): ours beside Optuna's evaluators on jobs whose
important parameters are known.

Usage: python bench/importance.py [--seeds 10] [--seed-offset 101] [--jobs 20,30,100]

The functions are tests/report/test_importance.py's (one dominant parameter; two of three; an interaction; a
categorical parameter; log-scale ranges), each over random jobs (uniform, log-uniform on LOG ranges), on seeds the
tests do not use. For each function, job count and seed, three rankings of the parameters on the same jobs:

- *ours*: core/report/importance.importance at its defaults (the best 10%, at least 5 jobs);
- *optuna PED-ANOVA*: ``PedAnovaImportanceEvaluator()`` at its defaults (the best 10%, whatever the count);
- *optuna fANOVA*: ``FanovaImportanceEvaluator(seed=0)`` (a random forest of scikit-learn's), when scikit-learn is
  importable (it is not a test tool of this project: install it beside Optuna to see this column).

The figure is how often the important parameters are exactly the top ones of the ranking (of the seeds), then the
mean Kendall tau between ours and each of Optuna's rankings (1: the same order) and the median time of one call
(ours: 200 bootstrap resamples included; ours without them on the second line). Optuna is a test-only dependency.
"""
import argparse
import os
import platform
import statistics
import sys
import time
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=wrong-import-position
from azext_batchai_sweep.core.report.importance import importance  # noqa: E402
from tests.report.test_importance import FUNCTIONS, sweep  # noqa: E402


def kendall_tau(first, second):
    """Kendall's tau between two orders of the same names (no ties)."""
    at = {name: i for i, name in enumerate(second)}
    pairs = [(a, b) for i, a in enumerate(first) for b in first[i + 1:]]
    agree = sum(1 for a, b in pairs if at[a] < at[b])
    return (2 * agree - len(pairs)) / len(pairs) if pairs else 1.0


def _timed(call):
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--seeds', type=int, default=10)
    parser.add_argument('--seed-offset', type=int, default=101)
    parser.add_argument('--jobs', default='20,30,100')
    options = parser.parse_args()
    import optuna  # pylint: disable=import-outside-toplevel
    from optuna.importance import FanovaImportanceEvaluator, PedAnovaImportanceEvaluator, get_param_importances
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter('ignore')
    try:
        import sklearn  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        evaluators = {'optuna PED-ANOVA': PedAnovaImportanceEvaluator, 'optuna fANOVA':
                      lambda: FanovaImportanceEvaluator(seed=0)}
    except ImportError:
        evaluators = {'optuna PED-ANOVA': PedAnovaImportanceEvaluator}
        print('scikit-learn is not installed: no fANOVA column')
    print('Python {}, optuna {}, {} {}'.format(platform.python_version(), optuna.__version__, platform.system(),
                                               platform.machine()))
    seeds = range(options.seed_offset, options.seed_offset + options.seeds)
    for count in [int(n) for n in options.jobs.split(',')]:
        print('\n{} jobs, {} seeds: important parameters on top (of the seeds); Kendall tau with ours; time of a '
              'call'.format(count, len(seeds)))
        print('| function | ours | ' + ' | '.join(evaluators) + ' | tau ' + ' | tau '.join(evaluators) +
              ' | ours (s) | ours, no bootstrap (s) | ' + ' | '.join('{} (s)'.format(e) for e in evaluators) + ' |')
        for name, space, function, goal, important in FUNCTIONS:
            hits = {key: 0 for key in ['ours', *evaluators]}
            taus = {key: [] for key in evaluators}
            times = {key: [] for key in ['ours', 'bare', *evaluators]}
            for seed in seeds:
                axes, jobs, values, study = sweep(space, function, count, seed, goal)
                ours, spent = _timed(lambda: importance(jobs, axes, values, goal))
                times['ours'].append(spent)
                times['bare'].append(_timed(lambda: importance(jobs, axes, values, goal, bootstrap=0))[1])
                ours = [row['name'] for row in ours['parameters']]
                hits['ours'] += set(ours[:len(important)]) == set(important)
                for key, make in evaluators.items():
                    theirs, spent = _timed(lambda: list(get_param_importances(study, evaluator=make())))
                    times[key].append(spent)
                    hits[key] += set(theirs[:len(important)]) == set(important)
                    taus[key].append(kendall_tau(ours, theirs))
            print('| {} | {} | {} | {} | {:.3f} | {:.4f} | {} |'.format(
                name, hits['ours'], ' | '.join(str(hits[k]) for k in evaluators),
                ' | '.join('{:.2f}'.format(statistics.mean(taus[k])) for k in evaluators),
                statistics.median(times['ours']), statistics.median(times['bare']),
                ' | '.join('{:.3f}'.format(statistics.median(times[k])) for k in evaluators)))


if __name__ == '__main__':
    main()
