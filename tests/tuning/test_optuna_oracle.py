"""Successive halving and Hyperband against Optuna's pruners on the same curves (Optuna: a test-only oracle).

- ASHA (earlyTermination policy asha) must stop exactly the trials Optuna's SuccessiveHalvingPruner prunes, at the
  same steps, when the trials run one after another (Optuna judges a trial against those that reported before it).
- Hyperband's brackets must have the sizes Optuna's HyperbandPruner allocates (Li et al.'s n per bracket) and rungs
  at the steps of its per-bracket pruners. Where they differ, by design: Optuna's Hyperband is asynchronous (each
  bracket is an ASHA pruner, trials never wait), ours is Li et al.'s synchronous successive halving (a rung's best
  1/eta are promoted once the whole rung has finished, as new jobs), so ours promotes the exact top 1/eta and
  decides the same way however the jobs are scheduled; both keep the truly best configuration on curves that do
  not cross.
"""
import warnings

import optuna
import pytest

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec
from azext_batchai_sweep.core.tuning.controller import Controller, Limits
from azext_batchai_sweep.core.tuning.policies import make_policy
from azext_batchai_sweep.core.tuning.samplers import GridSampler, HyperbandSampler, hyperband_brackets
from azext_batchai_sweep.core.tuning.simulation import simulate

from .curves import make_curves

optuna.logging.set_verbosity(optuna.logging.WARNING)
warnings.filterwarnings('ignore', category=optuna.exceptions.ExperimentalWarning)


def optuna_prune_steps(curves, pruner, goal):
    study = optuna.create_study(direction='maximize' if goal == 'max' else 'minimize', pruner=pruner)
    pruned = {}
    for c, values in curves.items():
        trial = study.ask()
        pruned[c] = None
        for step, value in enumerate(values, 1):
            trial.report(value, step)
            if trial.should_prune():
                pruned[c] = step
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                break
        else:
            study.tell(trial, values[-1])
    return pruned


def our_prune_steps(curves, policy_settings, goal):
    spec = DiscreteParamSpec(parameterName='C', values=list(curves))
    controller = Controller(GridSampler([spec]), make_policy(policy_settings, goal), Limits(max_concurrent_jobs=1))
    trials, _, end = simulate(controller, lambda params: curves[params['C']])
    assert end == 'exhausted'
    return {t.params['C']: (controller.decisions[t.name].step if t.name in controller.decisions else None)
            for t in trials}


@pytest.mark.parametrize('seed', range(12))
@pytest.mark.parametrize('eta,min_resource,goal', [(3, 1, 'max'), (2, 2, 'min'), (4, 1, 'max')])
def test_asha_prunes_as_optuna_successive_halving(seed, eta, min_resource, goal):
    curves, _ = make_curves(14, 30, seed, goal=goal)
    ours = our_prune_steps(curves, {'policy': 'asha', 'minResource': min_resource, 'maxResource': 1000, 'eta': eta},
                           goal)
    oracle = optuna_prune_steps(curves, optuna.pruners.SuccessiveHalvingPruner(
        min_resource=min_resource, reduction_factor=eta, min_early_stopping_rate=0), goal)
    assert {c: (None if s is None else int(s)) for c, s in ours.items()} == oracle
    assert any(s is not None for s in oracle.values())  # the comparison is not vacuous


@pytest.mark.parametrize('min_resource,max_resource,eta', [(1, 81, 3), (1, 16, 4), (2, 64, 2), (1, 27, 3)])
def test_hyperband_brackets_match_optuna_hyperband(min_resource, max_resource, eta):
    pruner = optuna.pruners.HyperbandPruner(min_resource=min_resource, max_resource=max_resource,
                                            reduction_factor=eta)
    study = optuna.create_study(pruner=pruner)
    pruner._try_initialization(study)  # pylint: disable=protected-access
    ours = hyperband_brackets(min_resource, max_resource, eta)
    assert [b.rungs[0].count for b in ours] == pruner._trial_allocation_budgets  # pylint: disable=protected-access
    for bracket_id, (bracket, shp) in enumerate(zip(ours, pruner._pruners)):  # pylint: disable=protected-access
        assert bracket.s == len(ours) - 1 - bracket_id
        # Optuna's bracket promotes at min_resource * eta^(bracket_id + k); our rungs' resources are those steps.
        steps = [min_resource * eta ** (shp._min_early_stopping_rate + k)  # pylint: disable=protected-access
                 for k in range(len(bracket.rungs))]
        assert [r.resource for r in bracket.rungs] == steps


@pytest.mark.parametrize('seed', range(6))
def test_hyperband_keeps_the_best_as_optuna_does_on_non_crossing_curves(seed):
    curves, best = make_curves(40, 27, seed, crossing=False)
    spec = DiscreteParamSpec(parameterName='C', values=list(curves))
    sampler = HyperbandSampler([spec], 'max', 1, 27, 3, seed)
    trials, _, end = simulate(Controller(sampler, None, Limits(max_concurrent_jobs=8)),
                              lambda params: curves[params['C']])
    assert end == 'exhausted'
    # Which configurations Hyperband drew: every bracket's best reaches 27 epochs, so the best drawn one does.
    drawn = {t.params['C'] for t in trials}
    best_drawn = max(drawn, key=lambda c: curves[c][-1])
    at_max = {t.params['C'] for t in trials if t.resource == 27 and t.state == 'succeeded'}
    assert best_drawn in at_max
    oracle = optuna_prune_steps({c: curves[c] for c in sorted(drawn)}, optuna.pruners.HyperbandPruner(
        min_resource=1, max_resource=27, reduction_factor=3), 'max')
    assert oracle[best_drawn] is None  # Optuna's Hyperband keeps it too
    del best
