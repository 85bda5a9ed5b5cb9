"""The TPE sampler (bayesian sampling): every parameter kind, determinism, resumption, the constant liar, finite
spaces, and the jobs that teach nothing."""
import json
import math
import os
import random
import subprocess
import sys
from dataclasses import replace

import pytest

from azext_batchai_sweep.core.spec.params import DictParamSpec, DiscreteParamSpec, FileParamSpec, NumParamSpec
from azext_batchai_sweep.core.spec.substitution import ExternalValue
from azext_batchai_sweep.core.tuning.controller import Controller, Limits
from azext_batchai_sweep.core.tuning.policies import make_policy
from azext_batchai_sweep.core.tuning.samplers import parzen
from azext_batchai_sweep.core.tuning.samplers.space import dimensions
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler, default_weights, rank_weights
from azext_batchai_sweep.core.tuning.simulation import simulate
from azext_batchai_sweep.core.tuning.trial import Report, Trial


def finished(index, params, value, state='succeeded', **kwargs):
    reports = () if value is None else (Report(step=1.0, value=float(value)),)
    return Trial(name='j{}'.format(index), index=index, params=params, state=state, reports=reports, **kwargs)


def run(sampler, objective, evaluations, in_flight=1):
    """Evaluate `evaluations` suggestions, `in_flight` at a time (the oldest pending job finishes first)."""
    trials, queue = [], []
    while len(trials) < evaluations or queue:
        while len(queue) < in_flight and len(trials) < evaluations:
            suggestions = sampler.suggest(trials, 1)
            if not suggestions:
                break
            trials.append(Trial(name='j{}'.format(len(trials)), index=len(trials), params=suggestions[0].params,
                                state='running'))
            queue.append(trials[-1].index)
        if not queue:
            break
        index = queue.pop(0)
        value = objective(trials[index].params)
        trials[index] = replace(trials[index], state='succeeded', reports=(Report(1.0, value),))
    return trials


def files_spec():
    # The storage listing is tested with Azurite and the local Files service (tests/storage, tests/cli); here the
    # listed values are set as the listing would leave them, so that the sampler sees a FILE parameter's values.
    spec = FileParamSpec('DATA', storageAccountName='acct', storageType='BLOB', container='c', mountPath='data')
    spec._values = [ExternalValue('$AZ_BATCHAI_MOUNT_ROOT/data', '/shard{}.csv'.format(i)) for i in range(4)]
    return spec


ALL_KINDS = [
    NumParamSpec('REAL_LINEAR', -2.0, 3.0, 'REAL', 'LINEAR'),
    NumParamSpec('REAL_LOG', 1e-5, 1e-1, 'REAL', 'LOG'),
    NumParamSpec('REAL_STEP', 0.0, 1.0, 'REAL', 'LINEAR', step=0.1),
    NumParamSpec('INT_LINEAR', 1, 20, 'INTEGER', 'LINEAR'),
    NumParamSpec('INT_STEP', 2, 64, 'INTEGER', 'LINEAR', step=4),
    NumParamSpec('INT_LOG', 1, 1000, 'INTEGER', 'LOG'),
    NumParamSpec('UNIFORM', 0.5, 1.5, 'REAL', 'RANDOM_UNIFORM', numValues=3, seed=1),
    DiscreteParamSpec('OPTIMIZER', ['sgd', 'adam', 7, 0.5]),
    DictParamSpec('SHAPE', [{'w': 1, 'h': 2}, {'w': 3, 'h': 4}]),
]


def check_kinds(params, data_values):
    assert -2.0 <= params['REAL_LINEAR'] <= 3.0 and isinstance(params['REAL_LINEAR'], float)
    assert 1e-5 <= params['REAL_LOG'] <= 1e-1
    assert params['REAL_STEP'] in [i / 10 for i in range(11)]  # on the grid exactly (0.3, not 0.30000000000000004)
    assert isinstance(params['INT_LINEAR'], int) and 1 <= params['INT_LINEAR'] <= 20
    assert params['INT_STEP'] in range(2, 65, 4)
    assert isinstance(params['INT_LOG'], int) and 1 <= params['INT_LOG'] <= 1000
    assert 0.5 <= params['UNIFORM'] <= 1.5
    assert params['OPTIMIZER'] in ['sgd', 'adam', 7, 0.5]
    assert params['SHAPE'] in [{'w': 1, 'h': 2}, {'w': 3, 'h': 4}]
    assert params['DATA'] in data_values


def test_every_parameter_kind_is_suggested_within_its_range_and_type():
    files = files_spec()
    specs = ALL_KINDS + [files]

    def objective(p):
        return (abs(p['REAL_LINEAR'] - 1) + abs(math.log10(p['REAL_LOG']) + 3) + abs(p['REAL_STEP'] - 0.3)
                + abs(p['INT_LINEAR'] - 7) / 5 + abs(p['INT_STEP'] - 30) / 10 + abs(math.log10(p['INT_LOG']) - 2)
                + (p['OPTIMIZER'] != 'adam') + (p['SHAPE']['w'] != 3) + (p['DATA'] != files.values()[2]))
    trials = run(TPESampler(specs, goal='min', seed=3, startup_jobs=5), objective, 40)
    for trial in trials:
        check_kinds(trial.params, files.values())
    # TPE learns: the second half finds better values than the random startup jobs did on average
    values = [objective(t.params) for t in trials]
    assert sum(values[20:]) / 20 < sum(values[:5]) / 5
    late = trials[20:]
    assert sum(t.params['OPTIMIZER'] == 'adam' for t in late) > len(late) / 2
    assert sum(t.params['DATA'] == files.values()[2] for t in late) > len(late) / 2


def test_univariate_mode_also_covers_every_kind():
    files = files_spec()
    trials = run(TPESampler(ALL_KINDS + [files], goal='max', seed=1, startup_jobs=3, multivariate=False),
                 lambda p: p['REAL_LINEAR'] + p['INT_LINEAR'], 15)
    for trial in trials:
        check_kinds(trial.params, files.values())


def test_suggestions_are_a_pure_function_of_seed_and_history():
    specs = ALL_KINDS[:6]

    def objective(p):
        return p['REAL_LINEAR'] ** 2 + p['INT_LINEAR']
    first = run(TPESampler(specs, goal='min', seed=42, startup_jobs=4), objective, 25)
    again = run(TPESampler(specs, goal='min', seed=42, startup_jobs=4), objective, 25)
    other = run(TPESampler(specs, goal='min', seed=43, startup_jobs=4), objective, 25)
    assert [t.params for t in first] == [t.params for t in again]
    assert [t.params for t in first] != [t.params for t in other]
    # the order the trials are given in does not matter: the history is read in index order
    sampler = TPESampler(specs, goal='min', seed=42, startup_jobs=4)
    assert sampler.suggest(first[:15][::-1], 1) == sampler.suggest(first[:15], 1)


def test_a_resumed_sampler_suggests_what_an_unkilled_one_would():
    specs = [NumParamSpec('X', -5, 10, 'REAL', 'LINEAR'), NumParamSpec('N', 1, 8, 'INTEGER', 'LINEAR')]

    def objective(p):
        return (p['X'] - 2) ** 2 + p['N']
    unkilled = run(TPESampler(specs, goal='min', seed=7, startup_jobs=5), objective, 20)
    for kill_at in (3, 5, 12, 19):
        # a new process: a new sampler, the history rebuilt from the service (new Trial objects, same values)
        rebuilt = [Trial(name=t.name, index=t.index, params=dict(t.params), state=t.state, reports=t.reports)
                   for t in unkilled[:kill_at]]
        resumed = TPESampler(specs, goal='min', seed=7, startup_jobs=5).suggest(rebuilt, 1)
        assert resumed[0].params == unkilled[kill_at].params


def test_a_batch_is_the_same_as_one_at_a_time_with_the_earlier_ones_pending():
    specs = [NumParamSpec('X', 0, 1, 'REAL', 'LINEAR'), NumParamSpec('Y', 0, 1, 'REAL', 'LINEAR')]
    history = run(TPESampler(specs, goal='max', seed=2), lambda p: p['X'] - p['Y'], 15)
    sampler = TPESampler(specs, goal='max', seed=2)
    batch = sampler.suggest(history, 4)
    assert len(batch) == 4
    # a controller killed after submitting two of the four asks again with those two pending: it gets the rest
    pending = [Trial(name='p{}'.format(i), index=15 + i, params=s.params, state='queued')
               for i, s in enumerate(batch[:2])]
    assert sampler.suggest(history + pending, 2) == batch[2:]


def spread(points):
    return min(math.dist(a, b) for i, a in enumerate(points) for b in points[i + 1:])


def test_the_constant_liar_spreads_parallel_suggestions():
    specs = [NumParamSpec('X', 0, 1, 'REAL', 'LINEAR'), NumParamSpec('Y', 0, 1, 'REAL', 'LINEAR')]

    def objective(p):
        return (p['X'] - 0.3) ** 2 + (p['Y'] - 0.6) ** 2
    liar, no_liar = [], []
    for seed in range(8):
        history = run(TPESampler(specs, goal='min', seed=seed), objective, 30)
        for constant_liar, out in ((True, liar), (False, no_liar)):
            batch = TPESampler(specs, goal='min', seed=seed, constant_liar=constant_liar).suggest(history, 6)
            out.append(spread([(s.params['X'], s.params['Y']) for s in batch]))
    # with the liar, each pending suggestion pushes the next ones away from it: the closest pair is farther apart
    assert sorted(liar)[4] > 1.5 * sorted(no_liar)[4]
    assert sum(liar) > sum(no_liar)


def test_a_finite_space_never_repeats_a_configuration_until_exhausted():
    specs = [DiscreteParamSpec('A', ['x', 'y', 'z']), NumParamSpec('B', 1, 3, 'INTEGER', 'LINEAR'),
             NumParamSpec('C', 0.0, 0.2, 'REAL', 'LINEAR', step=0.1)]
    sampler = TPESampler(specs, goal='max', seed=5, startup_jobs=4)
    trials = run(sampler, lambda p: p['B'] + 10 * p['C'] + (p['A'] == 'y'), 40, in_flight=3)
    configurations = [tuple(sorted(t.params.items())) for t in trials]
    assert len(configurations) == 27 == len(set(configurations))
    assert sampler.exhausted(trials)
    assert sampler.suggest(trials, 5) == []
    # pending jobs count as tried: asking for more than the space holds gives every configuration once
    batch = TPESampler(specs, goal='max', seed=5).suggest([], 100)
    assert len(batch) == 27 == len({tuple(sorted(s.params.items())) for s in batch})
    assert not sampler.exhausted(trials[:26])


def test_count_bounds_the_suggestions():
    specs = [NumParamSpec('X', 0, 1, 'REAL', 'LINEAR')]
    sampler = TPESampler(specs, goal='max', seed=1, count=5)
    trials = run(sampler, lambda p: p['X'], 10)
    assert len(trials) == 5 and sampler.exhausted(trials)
    assert len(sampler.suggest(trials[:3], 10)) == 2


def test_failed_jobs_and_jobs_without_a_metric_teach_nothing():
    specs = [NumParamSpec('X', 0, 1, 'REAL', 'LINEAR'), NumParamSpec('Y', 0, 1, 'REAL', 'LINEAR')]
    history = run(TPESampler(specs, goal='max', seed=4), lambda p: p['X'] + p['Y'], 14)
    sampler = TPESampler(specs, goal='max', seed=4)
    corner = {'X': 0.0, 'Y': 0.0}
    # a failed job that printed a huge value, a job terminated by the user, a job with no report: none counts
    ignored = [finished(14, corner, 100.0, state='failed'), finished(15, corner, 100.0, state='terminated'),
               finished(16, corner, None)]
    silent = [finished(14, corner, None, state='failed'), finished(15, corner, None, state='terminated'),
              finished(16, corner, None)]
    assert sampler.suggest(history + ignored, 3) == sampler.suggest(history + silent, 3)
    # ... whereas a job a policy stopped early counts with its last intermediate value (the controller's rule)
    stopped = [finished(14, corner, 100.0, state='terminated', stopped_early=True)] + silent[1:]
    assert sampler.suggest(history + stopped, 3) != sampler.suggest(history + silent, 3)
    # non-finite values and values from another version of the sweep file are ignored too
    odd = [finished(14, corner, math.nan), finished(15, {'X': 5.0, 'Y': 0.0}, 100.0),
           finished(16, {'X': 0.0}, 100.0)]
    assert sampler.suggest(history + odd, 3) == sampler.suggest(history + silent, 3)


def test_startup_jobs_are_random_draws_then_the_model_takes_over():
    specs = [NumParamSpec('X', 0, 1, 'REAL', 'LINEAR')]
    sampler = TPESampler(specs, goal='max', seed=9, startup_jobs=6)
    trials = run(sampler, lambda p: p['X'], 20)
    assert 'random startup' in sampler.suggest(trials[:5], 1)[0].note
    assert 'TPE' in sampler.suggest(trials[:6], 1)[0].note
    # with the good observations near 1, the model's suggestions concentrate there
    assert sum(t.params['X'] for t in trials[10:]) / 10 > 0.7


def test_goal_max_and_min_mirror_each_other():
    specs = [NumParamSpec('X', -1, 1, 'REAL', 'LINEAR')]
    up = run(TPESampler(specs, goal='max', seed=3), lambda p: p['X'], 25)
    down = run(TPESampler(specs, goal='min', seed=3), lambda p: -p['X'], 25)
    assert [t.params for t in up] == [t.params for t in down]
    with pytest.raises(ValueError):
        TPESampler(specs, goal='up')


def test_default_weights_ramp_down_the_oldest_observations():
    assert default_weights(0) == [] and default_weights(24) == [1.0] * 24
    weights = default_weights(30)
    assert len(weights) == 30 and weights[25:] == [1.0] * 5 and weights[0] == pytest.approx(1 / 30)
    assert weights == sorted(weights)


def test_bayesian_sampling_with_a_bandit_policy_in_the_controller():
    # Combined with early termination: stopped jobs count with their last value and steer the sampler away.
    specs = [NumParamSpec('LR', 1e-4, 1.0, 'REAL', 'LOG'), NumParamSpec('UNITS', 1, 16, 'INTEGER', 'LINEAR')]

    def curve(params):
        quality = 1.0 / (1.0 + (math.log10(params['LR']) + 2) ** 2 + ((params['UNITS'] - 10) / 4) ** 2)
        return [quality * (1 - 0.5 ** step) for step in range(1, 9)]
    controller = Controller(TPESampler(specs, goal='max', seed=1, count=30, startup_jobs=6),
                            make_policy({'policy': 'bandit', 'slackFactor': 0.2, 'evaluationInterval': 1,
                                         'delayEvaluation': 2}, 'max'),
                            Limits(max_concurrent_jobs=3))
    trials, _, end = simulate(controller, curve)
    assert end == 'exhausted' and len(trials) == 30
    assert sum(t.state == 'terminated' for t in trials) > 0
    best = max(t.reports[-1].value for t in trials if t.state == 'succeeded')
    assert best > 0.8 * (1 - 0.5 ** 8)


def test_untried_configurations_are_scored_when_the_model_only_draws_tried_ones():
    # With a negligible prior, l(x) draws nothing but the good configurations, all tried: the sampler must fall
    # back to scoring the untried ones (and still never repeat one).
    specs = [DiscreteParamSpec('A', ['p', 'q', 'r', 's']), DiscreteParamSpec('B', [1, 2, 3])]
    sampler = TPESampler(specs, goal='max', seed=2, startup_jobs=2, prior_weight=1e-9)
    calls = []
    original = sampler._best_untried
    sampler._best_untried = lambda *args: calls.append(1) or original(*args)
    trials = run(sampler, lambda p: p['B'] + (p['A'] == 'q'), 12)
    assert len({(t.params['A'], t.params['B']) for t in trials}) == 12 and sampler.exhausted(trials)
    assert calls, 'the fallback was not exercised'


def test_a_finite_space_ends_the_controllers_sweep_as_exhausted():
    specs = [DiscreteParamSpec('A', ['x', 'y']), NumParamSpec('B', 1, 4, 'INTEGER', 'LINEAR')]
    controller = Controller(TPESampler(specs, goal='max', seed=8, count=50, startup_jobs=3), None,
                            Limits(max_concurrent_jobs=3))
    trials, _, end = simulate(controller, lambda p: [p['B'] * (2 if p['A'] == 'y' else 1) * (1 - 0.5 ** s)
                                                     for s in range(1, 4)])
    assert end == 'exhausted' and len(trials) == 8
    assert len({(t.params['A'], t.params['B']) for t in trials}) == 8


def test_suggestions_do_not_depend_on_the_process():
    # A resumed `sweep run` is another process, with another string-hash seed: the suggestions must not change.
    script = '\n'.join([
        'import json, math',
        'from tests.tuning.test_tpe import ALL_KINDS, TPESampler, run',
        'trials = run(TPESampler(ALL_KINDS, goal="min", seed=11, startup_jobs=4),',
        '             lambda p: abs(p["REAL_LINEAR"]) + (p["OPTIMIZER"] != "adam") + p["SHAPE"]["w"], 12)',
        'print(json.dumps([t.params for t in trials], sort_keys=True))'])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outputs = []
    for hash_seed in ('1', '2'):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        done = subprocess.run([sys.executable, '-c', script], cwd=root, env=env, capture_output=True, text=True,
                              timeout=120, check=True)
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1] and len(outputs[0]) == 12


def clustered_history(total):
    """`total` finished jobs on X in [0, 1]: the 4 best packed at 0.50..0.53, the others spread and worse."""
    good = [0.50, 0.51, 0.52, 0.53]
    spread_out = [(i + 0.5) / (total - 4) for i in range(total - 4)]
    points = [(x, abs(x - 0.515)) for x in good] + [(x, 1.0 + abs(x - 0.515)) for x in spread_out]
    return [finished(i, {'X': x}, value) for i, (x, value) in enumerate(points)]


def test_the_good_groups_bandwidth_floor_counts_35_percent_of_the_jobs():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    trials = clustered_history(40)  # gamma(40) = 4: the 4 packed jobs are the good group
    [(_, below, above)] = TPESampler(specs, goal='min').models(trials)
    # the packed jobs' own bandwidths (0.01) are under the floor: range / (count + 2) with count = int(0.35 * 40) = 14
    assert below.kernels[0].mus[:4] == [0.50, 0.51, 0.52, 0.53]
    assert below.kernels[0].sigmas[:4] == pytest.approx([1 / 16] * 4)
    # Optuna's floor counts the good group alone (4): well over twice as wide
    [(_, optuna_below, optuna_above)] = TPESampler(specs, goal='min', good_floor_share=None).models(trials)
    assert optuna_below.kernels[0].sigmas[:4] == pytest.approx([1 / 6] * 4)
    # g (the bad group) is Optuna's either way
    assert above.kernels[0].sigmas == optuna_above.kernels[0].sigmas
    # the floor narrows as jobs accrue (160 jobs: count 56, 1/58), down to Optuna's cap of a hundredth of the range
    [(_, below, _)] = TPESampler(specs, goal='min').models(clustered_history(160))
    assert below.kernels[0].sigmas[:4] == pytest.approx([1 / 58] * 4)
    [(_, below, _)] = TPESampler(specs, goal='min').models(clustered_history(1000))
    assert below.kernels[0].sigmas[:4] == pytest.approx([1 / 100] * 4)
    # a share that would count fewer jobs than the good group holds never widens Optuna's floor
    [(_, below, _)] = TPESampler(specs, goal='min', good_floor_share=0.01).models(trials)
    assert below.kernels[0].sigmas[:4] == pytest.approx([1 / 6] * 4)


def test_the_narrower_floor_samples_closer_to_where_the_good_jobs_cluster():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    trials = clustered_history(40)

    def distances(share):
        return [abs(TPESampler(specs, goal='min', seed=seed, good_floor_share=share).suggest(trials, 1)[0]
                    .params['X'] - 0.515) for seed in range(40)]
    ours, optunas = distances(0.35), distances(None)
    assert all(d < 0.1 for d in ours)
    assert sum(ours) < 0.5 * sum(optunas)


def test_a_pending_job_lowers_the_score_of_its_neighbourhood():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR'), NumParamSpec('Y', 0.0, 1.0, 'REAL', 'LINEAR')]
    trials = run(TPESampler(specs, goal='min', seed=3), lambda p: (p['X'] - 0.3) ** 2 + (p['Y'] - 0.6) ** 2, 40)
    sampler = TPESampler(specs, goal='min', seed=3)
    nxt = sampler.suggest(trials, 1)[0].params
    point = (nxt['X'], nxt['Y'])
    far = (1.0 - point[0], 1.0 - point[1])
    pending = Trial(name='p', index=40, params=nxt, state='running')

    def score(models, x):
        [(_, below, above)] = models
        return below.log_pdf(x) - above.log_pdf(x)
    before, after = sampler.models(trials), sampler.models(trials + [pending])
    # the pending point joins g (the constant liar): its own score drops, a point far from it barely moves
    assert score(after, point) < score(before, point) - 0.5
    assert abs(score(after, far) - score(before, far)) < 0.1
    # and the next suggestion, made with it pending, goes elsewhere
    again = sampler.suggest(trials + [pending], 1)[0].params
    assert (again['X'], again['Y']) != point


def test_rank_weights_by_hand():
    # ranks 2, 0, 1 (the second job is the best), equal ages: (3 - rank) ** 2 = 1, 9, 4, rescaled to sum to 3
    assert rank_weights([2, 0, 1], [1.0, 1.0, 1.0], 2.0) == pytest.approx([3 / 14, 27 / 14, 12 / 14])
    # the age ramp still applies: an old best job (age weight 0.5) and a new second one
    assert rank_weights([0, 1], [0.5, 1.0], 2.0) == pytest.approx([1.0, 0.5])
    # power 0 is Optuna's flat weighting
    assert rank_weights([1, 0, 2], [1.0, 1.0, 1.0], 0.0) == pytest.approx([1.0, 1.0, 1.0])


def split_history():
    """60 finished jobs on X in [0, 1]: the best alone at 0.2, the other five good ones at 0.8, the rest worse and
    spread out (gamma(60) = 6 good jobs)."""
    good = [(0.2, 0.0)] + [(0.8 + 0.01 * k, 0.1 * (k + 1)) for k in range(5)]
    spread_out = [((i + 0.5) / 54, 2.0 + (i % 7)) for i in range(54)]
    rows = spread_out[:30] + good + spread_out[30:]  # the good jobs in the middle of the history, not first
    return [finished(i, {'X': x}, value) for i, (x, value) in enumerate(rows)]


def test_the_good_groups_weights_fall_with_rank():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    trials = split_history()
    [(_, below, above)] = TPESampler(specs, goal='min').models(trials)
    [(_, flat_below, flat_above)] = TPESampler(specs, goal='min', good_rank_power=None).models(trials)
    mus = below.kernels[0].mus[:6]
    by_centre = dict(zip(mus, below.weights[:6]))
    # the best job (at 0.2) weighs 6 ** 2 against the sixth's 1 ** 2, in between in rank order
    ranked = [by_centre[0.2]] + [by_centre[0.8 + 0.01 * k] for k in range(5)]
    assert ranked == sorted(ranked, reverse=True)
    assert ranked[0] / ranked[-1] == pytest.approx(36.0)
    # the prior keeps Optuna's share of l, and Optuna's flat weights are one parameter away
    assert below.weights[-1] == pytest.approx(flat_below.weights[-1]) == pytest.approx(1 / 7)
    assert flat_below.weights[:6] == pytest.approx([1 / 7] * 6)
    # g is not weighted by rank
    assert above.weights == flat_above.weights


def two_cluster_history():
    """60 finished jobs on X in [0, 1]: the two best packed at 0.20-0.21, the four next good ones at 0.80-0.83, the
    rest worse and spread out (gamma(60) = 6 good jobs)."""
    good = [(0.2, 0.0), (0.21, 0.05)] + [(0.8 + 0.01 * k, 0.1 * (k + 1)) for k in range(4)]
    spread_out = [((i + 0.5) / 54, 2.0 + (i % 7)) for i in range(54)]
    rows = spread_out[:30] + good + spread_out[30:]
    return [finished(i, {'X': x}, value) for i, (x, value) in enumerate(rows)]


def test_rank_weights_draw_more_candidates_and_suggestions_near_the_best_jobs():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    trials = two_cluster_history()

    def shares_of_draws(power):
        [(_, below, _)] = TPESampler(specs, goal='min', good_rank_power=power).models(trials)
        draws = [x for (x,) in below.sample(random.Random(5), 4000)]
        return (sum(abs(x - 0.205) < 0.1 for x in draws) / 4000, sum(abs(x - 0.815) < 0.1 for x in draws) / 4000)
    # flat weights: the best two clusters hold 2/7 of l's mass against 4/7 for the next four; by rank 61/91 of the
    # good jobs' mass (6/7 of l) is on the best two
    flat_best, flat_next = shares_of_draws(None)
    best, after = shares_of_draws(2.0)
    assert flat_best < flat_next
    assert best > 1.5 * flat_best and best > 1.5 * after and after < flat_next

    def near_best(power):
        return sum(abs(TPESampler(specs, goal='min', seed=seed, good_rank_power=power).suggest(trials, 1)[0]
                       .params['X'] - 0.205) < 0.1 for seed in range(60))
    # and the suggestions (the candidates' best l/g ratio) follow
    assert near_best(2.0) > near_best(None) + 5


def grid_history(total):
    """`total` finished jobs on a 6-valued INTEGER grid A (0..5) and a REAL B: the 10 best all at A = 2, B near 0.5
    (a good group that agrees on A), the others spread over A and B and worse."""
    rng = random.Random(4)
    trials = [finished(i, {'A': 2, 'B': 0.45 + 0.01 * i}, 0.01 * i) for i in range(10)]
    for i in range(10, total):
        a, b = rng.randrange(6), rng.random()
        trials.append(finished(i, {'A': a, 'B': b}, 1.0 + abs(a - 2) + abs(b - 0.5)))
    return trials


GRID_SPECS = [NumParamSpec('A', 0, 5, 'INTEGER', 'LINEAR'), NumParamSpec('B', 0.0, 1.0, 'REAL', 'LINEAR')]


def test_on_a_grid_the_good_groups_floor_stops_at_half_a_cell():
    trials = grid_history(100)  # 35 jobs counted: a continuous floor of range / 37
    [(_, below, _)] = TPESampler(GRID_SPECS, goal='min').models(trials)
    grid, real = below.kernels
    # the grid's range is [-0.5, 5.5], 6 cells of 1: the floor is half a cell, not 6 / 37 of one
    assert min(grid.sigmas[:10]) == pytest.approx(0.5)
    # each neighbouring value keeps about a sixth of a good kernel's mass (P(0.5 < Z/0.5 < 1.5) = 0.157)
    neighbour = math.exp(grid.add_terms([0.0] * len(grid.mus), 3.0)[0])
    assert neighbour == pytest.approx(0.157, abs=0.01)
    # a continuous parameter keeps the 35% floor, and without the grid limit a grid narrows as it did
    assert min(real.sigmas[:10]) == pytest.approx(1 / 37)
    [(_, narrow, _)] = TPESampler(GRID_SPECS, goal='min', good_grid_floor=None).models(trials)
    assert min(narrow.kernels[0].sigmas[:10]) == pytest.approx(6 / 37)
    # the limit never widens Optuna's own floor (the good group alone), which stays Optuna's exactly
    [(_, optuna_below, _)] = TPESampler(GRID_SPECS, goal='min', good_floor_share=None).models(trials)
    [(_, optuna_no_limit, _)] = TPESampler(GRID_SPECS, goal='min', good_floor_share=None,
                                           good_grid_floor=None).models(trials)
    assert optuna_below.kernels[0].sigmas == optuna_no_limit.kernels[0].sigmas
    assert min(optuna_below.kernels[0].sigmas[:10]) == pytest.approx(6 / 12)


@pytest.mark.parametrize('size', [6, 20, 50])
def test_a_grids_floor_limit_is_exactly_its_share_of_a_cell(size):
    """The floor's count stops where range / (count + 2) is grid_floor of a cell, exactly: for a good group of 5
    kernels on one value of a grid of ``size`` values, counted as 500 jobs, the narrowest kernel is half a cell."""
    [dim] = dimensions([NumParamSpec('A', 0, size - 1, 'INTEGER', 'LINEAR')])
    estimator = parzen.ParzenEstimator([dim], [(2.0,)] * 5, [1.0] * 5, clip_count=500, grid_floor=0.5)
    assert min(estimator.kernels[0].sigmas) == pytest.approx(0.5, rel=1e-12)


def test_after_many_jobs_the_candidates_still_try_neighbouring_grid_values():
    # The good jobs agree on A = 2. Without the limit, l's kernels are a sixth of a cell wide at 100 jobs: its draws
    # (the candidates) keep A = 2 and only the prior's draws move it, so a better neighbour is never proposed; with
    # the limit, about a sixth of each good kernel's draws land on each neighbour.
    trials = grid_history(100)

    def neighbours(**options):
        [(_, below, _)] = TPESampler(GRID_SPECS, goal='min', **options).models(trials)
        return sum(a in (1.0, 3.0) for a, _ in below.sample(random.Random(5), 1000))
    assert neighbours() >= 250
    assert neighbours(good_grid_floor=None) <= 60


def test_on_a_grid_with_the_floor_limited_a_resumed_sampler_suggests_what_an_unkilled_one_would():
    # Four 3-valued grids (81 configurations): from 12 jobs on, l's floor is held at half a cell. A new process with
    # the history rebuilt gets the suggestion the unkilled one made, and none repeats a configuration.
    specs = [NumParamSpec(name, 0, 2, 'INTEGER', 'LINEAR') for name in 'ABCD']

    def objective(p):
        return (p['A'] - 1) ** 2 + p['B'] + (p['C'] - 2) ** 2 + abs(p['D'] - 1)
    unkilled = run(TPESampler(specs, goal='min', seed=9), objective, 40)
    assert len({tuple(sorted(t.params.items())) for t in unkilled}) == 40
    for kill_at in (15, 30, 39):
        rebuilt = [Trial(name=t.name, index=t.index, params=dict(t.params), state=t.state, reports=t.reports)
                   for t in unkilled[:kill_at]]
        assert TPESampler(specs, goal='min', seed=9).suggest(rebuilt, 1)[0].params == unkilled[kill_at].params
