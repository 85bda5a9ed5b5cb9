"""The benchmark harness's pieces that live in the repo (bench/tables.py): a recorded table as a task to minimise,
and the anytime regret read from one run. The package's real tables are bench-only (requirements-bench.txt); these
tests build a small table of the same format (key: each parameter's choice index as digits; metric: one value per
training seed)."""
import pytest

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from bench.tables import TableTask, regret_at, specs_for
from bench.tpe import run_ours

SPACE = {'lr': [0.001, 0.01, 0.1], 'act': ['relu', 'tanh']}


def _table(metric):
    # val_acc per seed; the mean of (lr index 1, tanh) is the best, 0.9.
    values = {'00': [0.5, 0.7], '01': [0.6, 0.6], '10': [0.8, 0.8], '11': [0.85, 0.95], '20': [0.1, 0.3],
              '21': [0.4, 0.4]}
    return {key: {metric: v, 'train_time': [1.0, 2.0]} for key, v in values.items()}


def test_specs_are_what_a_user_declares_for_a_grid():
    specs = specs_for(SPACE)
    assert isinstance(specs[0], NumParamSpec)
    assert (specs[0].name, specs[0].start, specs[0].end, specs[0].data_type, specs[0].scale) == \
        ('LR', 0, 2, 'INTEGER', 'LINEAR')
    assert isinstance(specs[1], DiscreteParamSpec)
    assert (specs[1].name, specs[1].values()) == ('ACT', ['relu', 'tanh'])


@pytest.mark.parametrize('direction, best_key, optimum', [('max', '11', -0.9), ('min', '20', 0.2)])
def test_objective_is_the_seed_mean_to_minimise(direction, best_key, optimum):
    task = TableTask('toy/acc', _table('val_acc'), SPACE, 'val_acc', direction)
    assert task.optimum == pytest.approx(optimum)
    params = {'LR': int(best_key[0]), 'ACT': SPACE['act'][int(best_key[1])]}
    assert task.key(params) == best_key
    assert task(params) == pytest.approx(optimum)
    # Another configuration: its mean, with the direction's sign.
    assert task({'LR': 0, 'ACT': 'relu'}) == pytest.approx(0.6 if direction == 'min' else -0.6)


def test_regret_at_checkpoints():
    values = [5.0, 3.0, 4.0, 1.5, 2.0]
    assert regret_at(values, 1.0, [1, 2, 5]) == [4.0, 2.0, 0.5]
    assert regret_at(values, 1.0, [5, 3]) == [2.0, 0.5]  # checkpoints in any order, answered in ascending order
    # A run shorter than a checkpoint is judged on all it has.
    assert regret_at(values[:2], 1.0, [1, 4, 10]) == [4.0, 2.0, 2.0]


def test_our_sampler_on_a_table_is_deterministic_and_finds_the_best():
    task = TableTask('toy/acc', _table('val_acc'), SPACE, 'val_acc', 'max')
    first = run_ours(task, task.specs, 3, 6, 1)
    assert first == run_ours(task, task.specs, 3, 6, 1)
    # Six configurations, six jobs: a finite space is never suggested the same configuration twice.
    assert sorted(first) == sorted(task(dict(LR=i, ACT=a)) for i in range(3) for a in SPACE['act'])
    assert regret_at(first, task.optimum, [6]) == [0.0]
    assert TPESampler(task.specs, goal='min', seed=3).suggest([], 1)[0].params['LR'] in (0, 1, 2)


def test_two_objective_table_scales_loss_and_training_time_by_the_table():
    # bench/mo.py's real problems: the main metric as a loss against the recorded training time, 0 at the table's
    # best and 1 at its 90th percentile (of 6 configurations: the 5th smallest, index int(0.9 * 5) = 4).
    from bench.mo import loss_and_time
    table = _table('val_acc')
    for index, key in enumerate(sorted(table)):
        table[key]['train_time'] = [10.0 * (index + 1), 10.0 * (index + 1)]
    scaled = loss_and_time(table, 'val_acc', 'max')
    # losses: -0.6, -0.6, -0.8, -0.9, -0.2, -0.4 -> best -0.9, 90th percentile -0.4 (width 0.5);
    # times 10..60 -> best 10, 90th percentile 50 (width 40).
    assert scaled['11'] == pytest.approx((0.0, 0.75))
    assert scaled['00'] == pytest.approx((0.6, 0.0))
    assert scaled['20'] == pytest.approx((1.4, 1.0))
    # A minimised metric keeps its sign: the lowest value is the best.
    assert loss_and_time(table, 'val_acc', 'min')['20'][0] == 0.0
