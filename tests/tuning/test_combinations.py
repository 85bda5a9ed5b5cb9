"""Issues 28 and 29 together: several objectives and constraints with warm start, BOHB (Hyperband's and ASHA's
model) and the result limits. The rules (docs/sweep-objectives.md, "Several objectives with the other tuning features"):

- MOTPE learns from inherited jobs that have a value of every objective and constraint metric; an inherited job
  without one (an export of a single-objective sweep) is said and skipped;
- BOHB's model (Hyperband `sampler: bayesian`, bayesian `multiFidelity`) is fitted on the first objective at each
  budget (the only one a job reports per step); constraints put a job that broke one in the model's bad group;
- limits.stopAt and limits.noImprovementJobs judge by the first objective, among feasible jobs only.
Short and deterministic: fixed seeds and results."""
import random as stdlib_random

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.controller import END_PLATEAU, END_STOP_AT, Limits, results_end
from azext_batchai_sweep.core.tuning.objectives import Constraint, Objectives
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler
from azext_batchai_sweep.core.tuning.samplers.multifidelity import MultiFidelityTPESampler
from azext_batchai_sweep.core.tuning.simulation import sweep_controller, warm_start
from azext_batchai_sweep.core.tuning.trial import Report, Trial
from azext_batchai_sweep.core.tuning.warmstart import inherit, records_from_document

from .helpers import trial

C = [NumParamSpec('C', 0, 19, 'INTEGER', 'LINEAR')]
X = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
TWO = {'objectives': [{'metric': 'acc', 'goal': 'max'}, {'metric': 'lat', 'goal': 'min'}]}
TWO_CONSTRAINED = dict(TWO, constraints=[{'metric': 'mem', 'max': 0.5}])


def _old(c, metrics=True):
    """An earlier sweep's job: accuracy best at C = 15, latency C (a trade-off)."""
    return Trial(name='o{}'.format(c), index=0, params={'C': c}, state='succeeded',
                 reports=(Report(1.0, -abs(c - 15)),), metrics={'lat': float(c)} if metrics else {})


def test_motpe_learns_from_inherited_jobs_with_every_objective_and_skips_the_others():
    old = [_old(c) for c in range(0, 20, 2)]
    single = [_old(c, metrics=False) for c in (1, 3, 5)]  # a single-objective sweep: no latency logged
    inherited, messages = warm_start({'old': old, 'single': single}, C, extra_metrics=['lat'])
    assert messages == ['warmStart old: 10 finished job(s) inherited, 0 skipped',
                        'warmStart single: 0 finished job(s) inherited, 3 skipped',
                        'warmStart single: 3 job(s) has no value of lat (a sweep with one objective does not log '
                        'it): skipped']
    assert [t.metrics for t in inherited][:2] == [{'lat': 0.0}, {'lat': 2.0}]
    objectives = Objectives.from_spec(TWO)
    warm = MOTPESampler(C, objectives, seed=1, count=4, startup_jobs=10, inherited=inherited)
    suggestions = warm.suggest([], 10)
    assert len(suggestions) == 4  # count is this sweep's own jobs
    assert suggestions[0].note.startswith('bayesian: MOTPE (2 objectives) over 10 jobs')
    assert not {s.params['C'] for s in suggestions} & set(range(0, 20, 2))  # nothing is run again
    cold = MOTPESampler(C, objectives, seed=1, count=4, startup_jobs=10).suggest([], 1)[0]
    assert 'random startup job' in cold.note
    # a job stopped early never reached its other objectives: it teaches by the first one, as the sweep's own do
    stopped = [Trial(name='s', index=0, params={'C': 4}, state='terminated', stopped_early=True,
                     reports=(Report(1.0, -11.0),))]
    assert len(warm_start({'s': stopped}, C, extra_metrics=['lat'])[0]) == 1


def test_the_controller_of_a_warm_started_sweep_with_several_objectives_uses_motpe_with_the_inherited_jobs():
    inherited, _ = warm_start({'old': [_old(c) for c in range(0, 20, 2)]}, C, extra_metrics=['lat'])
    controller = sweep_controller(C, {'type': 'bayesian', 'count': 3, 'seed': 2, 'startupJobs': 5,
                                      'warmStart': ['old']}, inherited=inherited, objective_set=TWO)
    first = controller.sampler.suggest([], 1)[0]
    assert isinstance(controller.sampler, MOTPESampler)
    assert first.note.startswith('bayesian: MOTPE (2 objectives) over 10 jobs')


def test_exports_of_a_sweep_with_several_objectives_carry_the_other_objectives():
    report = {'kind': 'batchai-sweep-report', 'objective': {'metric': 'acc', 'goal': 'max'},
              'summary': {'figures': {'pareto': {
                  'ranked': [{'name': 'a', 'values': {'acc': 0.7, 'lat': 30.0}}],
                  'infeasible': [{'name': 'b', 'values': {'acc': 0.9, 'lat': 50.0}, 'failed': 'mem <= 7 (8)'}]}}},
              'jobs': [{'name': name, 'state': 'succeeded', 'parameters': {'C': c}, 'objective': value,
                        'reports': [[1, value]]} for name, c, value in (('a', 4, 0.7), ('b', 6, 0.9), ('c', 8, 0.8))]}
    records = records_from_document(report, 'r.json', 'sampling.warmStart[0]')
    assert [r.metrics for r in records] == [{'acc': 0.7, 'lat': 30.0}, {'acc': 0.9, 'lat': 50.0}, {}]
    # `metrics -o json` of such a sweep prints its front: name, rank, values (first objective first), parameters
    front = [{'name': 'f', 'rank': 0, 'values': {'acc': 0.8, 'lat': 20.0}, 'parameters': {'C': 10}}]
    (row,) = records_from_document(front, 'm.json', 'sampling.warmStart[1]')
    assert (row.state, row.metric, row.reports, row.metrics) == ('succeeded', 'acc', ((0.0, 0.8),),
                                                                 {'acc': 0.8, 'lat': 20.0})
    inheritance = inherit([('r.json', records), ('m.json', [row])], C, metric='acc', extra_metrics=['lat'])
    assert [t.name for t in inheritance.trials] == ['a', 'b', 'f']
    assert inheritance.sources[0]['skipped'] == 1


def _results(budget, count, mem=True, seed=0):
    """Finished jobs at one budget: the first objective is X (max), memory X (a constraint breaks above 0.5)."""
    rng = stdlib_random.Random(seed)
    out = []
    for index in range(count):
        x = rng.random()
        out.append(Trial(name='j{}'.format(index), index=index, params={'X': x}, state='succeeded', resource=budget,
                         reports=(Report(float(budget), x),), metrics={'mem': x} if mem else {}))
    return out


def test_bohb_with_a_constraint_steers_away_from_the_infeasible_region():
    trials = _results(9, 16)
    objectives = Objectives.from_spec(dict(TWO_CONSTRAINED, objectives=[{'metric': 'acc', 'goal': 'max'},
                                                                         {'metric': 'lat', 'goal': 'min'}]))

    def picks(model):
        return [model.suggest(trials, str(key))[0]['X'] for key in range(8)]

    def budget_model(objectives_=None):
        return BudgetModel(X, 'max', 3, lambda t: {t.resource: t.last}, random_fraction=0, objectives=objectives_)

    plain, constrained = picks(budget_model()), picks(budget_model(objectives))
    assert sum(x > 0.5 for x in plain) >= 6          # the first objective alone: towards X = 1
    assert sum(x <= 0.55 for x in constrained) >= 6  # with the constraint: the best feasible, near X = 0.5
    # a job whose constraint metric is not reported yet (running at a rung) is neither feasible nor broken yet
    view = budget_model(objectives).model_view(_results(9, 2, mem=False), 9)
    assert all(t.stopped_early and t.state == 'succeeded' for t in view)
    # without constraints several objectives change nothing: the model is the first objective's
    several = Objectives.from_spec(TWO)
    assert picks(budget_model(several)) == plain


def test_the_multi_fidelity_model_stays_with_several_objectives_and_says_which_objective():
    asha = {'policy': 'asha', 'minResource': 1, 'maxResource': 9, 'eta': 3}
    sampling = {'type': 'bayesian', 'count': 6, 'seed': 1, 'multiFidelity': True}
    controller = sweep_controller(X, sampling, early_termination=asha, objective_set=TWO_CONSTRAINED)
    assert isinstance(controller.sampler, MultiFidelityTPESampler)
    assert controller.sampler.model.constrained is not None
    assert controller.sampler.suggest([], 1)[0].note.startswith('bayesian (multi-fidelity): random')
    hyperband = sweep_controller(X, {'type': 'hyperband', 'sampler': 'bayesian', 'resource': 'EPOCHS',
                                     'minResource': 1, 'maxResource': 9, 'seed': 2}, objective_set=TWO_CONSTRAINED)
    assert hyperband.sampler.model.constrained.names == ['acc']


def test_the_result_limits_judge_the_first_objective_among_feasible_jobs():
    objectives = Objectives([('acc', 'max'), ('lat', 'min')], [Constraint('mem', maximum=5.0)])

    def job(index, acc, lat, mem):
        return trial('j{}'.format(index), [acc], state='succeeded', index=index,
                     metrics={'lat': lat, 'mem': mem})
    # the second objective reaching stopAt does not end the sweep; an infeasible job reaching it does not either
    assert results_end([job(0, 0.5, 0.95, 1), job(1, 0.95, 10, 9)], Limits(stop_at=0.9), 'max', objectives) is None
    ended = results_end([job(0, 0.5, 1, 1), job(1, 0.92, 500, 1)], Limits(stop_at=0.9), 'max', objectives)
    assert ended[0] == END_STOP_AT
    # a better latency is no improvement: the first objective's plateau
    plateau = [job(0, 0.8, 100, 1), job(1, 0.7, 10, 1), job(2, 0.6, 1, 1)]
    assert results_end(plateau, Limits(no_improvement_jobs=2), 'max', objectives)[0] == END_PLATEAU
    # an infeasible job counts as none: its better value is not the best, and it is no job of the plateau's count
    infeasible = [job(0, 0.8, 100, 1), job(1, 0.99, 10, 9), job(2, 0.6, 1, 1)]
    assert results_end(infeasible, Limits(no_improvement_jobs=1), 'max', objectives)[0] == END_PLATEAU
    assert results_end(infeasible, Limits(no_improvement_jobs=2), 'max', objectives) is None
