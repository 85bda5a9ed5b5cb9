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


def _grid_task():
    """A 10 x 10 table (100 configurations), best at (7, 2), a second basin at (1, 8): enough room for our
    sampler's local phase (from 70% of a sweep's count) to change a sweep."""
    space = {'a': list(range(10)), 'b': list(range(10))}
    table = {'{}{}'.format(a, b): {'val_loss': [min((a - 7) ** 2 + (b - 2) ** 2,
                                                    1.5 + 0.5 * ((a - 1) ** 2 + (b - 8) ** 2))]}
             for a in range(10) for b in range(10)}
    return TableTask('toy/grid', table, space, 'val_loss', 'min')


def test_bench_hpo_runs_ours_as_one_sweep_per_checkpoint():
    # A user's `count: 20` sweep starts its local phase at job 14; the first 20 jobs of a `count: 40` sweep have
    # none. bench/hpo.py reports what the user's sweep of each size finds; random search knows no count and runs once.
    from bench.hpo import run_task
    from bench.tpe import run_random
    task = _grid_task()
    seeds = range(6)
    regrets, _ = run_task(task, seeds, [20, 40], 1, methods={'ours': run_ours, 'random': run_random})
    own_sweeps = [[regret_at(run_ours(task, task.specs, s, n, 1), task.optimum, [n])[0] for n in (20, 40)]
                  for s in seeds]
    assert regrets['ours'] == own_sweeps
    prefixes = [regret_at(run_ours(task, task.specs, s, 40, 1), task.optimum, [20])[0] for s in seeds]
    assert [r[0] for r in regrets['ours']] != prefixes  # the protocols differ on this table
    assert regrets['random'] == [regret_at(run_random(task, task.specs, s, 40, 1), task.optimum, [20, 40])
                                 for s in seeds]
