"""Rules of the samplers (core/tuning/samplers/) that their other tests leave open, each on a case computed by hand:
found by `make mutate` (docs/mutation-testing.md)."""
import math
import random
from dataclasses import replace
from types import SimpleNamespace

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.spec.sweepfile import resolve_sampling
from azext_batchai_sweep.core.tuning.decision import NOT_PROMOTED, PROMOTED
from azext_batchai_sweep.core.tuning.objectives import Constraint, Objectives
from azext_batchai_sweep.core.tuning.samplers import GridSampler, HyperbandSampler, RandomSampler, make_sampler
from azext_batchai_sweep.core.tuning.samplers.agreement import Agreement, CurveBook, agreement, average_ranks, curves
from azext_batchai_sweep.core.tuning.samplers.base import SequenceSampler
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel, ModelChoice, pending_suggestion
from azext_batchai_sweep.core.tuning.samplers.hyperband import Rung, hyperband_brackets
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler
from azext_batchai_sweep.core.tuning.samplers.multifidelity import MultiFidelityTPESampler
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Suggestion, Trial

from .helpers import trial


def test_a_grid_is_exhausted_only_when_each_of_its_configurations_is_on_the_service():
    grid = GridSampler([DiscreteParamSpec(parameterName='C', values=[1, 2, 3])])
    assert not grid.exhausted([])
    assert not grid.exhausted([trial('a', [], params={'C': 1})])  # fewer jobs than configurations
    # three jobs, but one of them is no configuration of the grid: C=3 is still to run
    assert not grid.exhausted([trial('a', [], params={'C': 1}), trial('b', [], params={'C': 2}),
                               trial('c', [], params={'C': 9})])
    # (a job's values never change: the sampler keeps them by the job's name and index)
    assert grid.exhausted([trial(n, [], params={'C': c}) for n, c in (('a', 1), ('b', 2), ('d', 3))])


class CountedWalks(list):
    """A sequence of configurations that counts how often it is walked from its start."""

    def __init__(self, *args):
        super().__init__(*args)
        self.walks = 0

    def __iter__(self):
        self.walks += 1
        return super().__iter__()


def test_a_sequence_hands_out_exactly_the_count_asked_in_order_with_its_position_in_the_note():
    grid = GridSampler([DiscreteParamSpec(parameterName='C', values=[1, 2, 3, 4, 5])])
    first = grid.suggest([], 2)
    assert [(s.params, s.note) for s in first] == [({'C': 1}, 'grid 1 of 5'), ({'C': 2}, 'grid 2 of 5')]
    jobs = [trial('a', [], params={'C': 1}), trial('b', [], params={'C': 2})]
    assert [(s.params, s.note) for s in grid.suggest(jobs, 1)] == [({'C': 3}, 'grid 3 of 5')]
    assert grid.suggest(jobs, 0) == [] and grid.suggest(jobs, -1) == []
    drawn = RandomSampler([DiscreteParamSpec(parameterName='C', values=list(range(100)))], 10, seed=7).suggest([], 3)
    assert [s.note for s in drawn] == ['random 1 of 10', 'random 2 of 10', 'random 3 of 10']


def test_a_sequence_is_walked_once_while_its_jobs_stay_on_the_service():
    """Polls with the same jobs, or with the suggested ones added, go on from the cursor: the sequence is walked
    from its start once (a walk per poll cost a poll the whole sequence before the cursor: issue 44); a job gone
    since starts a walk again, and its configuration is suggested first."""
    configurations = CountedWalks({'C': c} for c in range(6))
    sampler = SequenceSampler(configurations)
    jobs = []
    for poll in range(4):
        for suggestion in sampler.suggest(jobs, 1):
            jobs.append(trial('j{}'.format(poll), [], params=suggestion.params))
        assert [s.params for s in sampler.suggest(jobs, 1)] == [{'C': poll + 1}]  # the same jobs polled again
    assert configurations.walks == 1
    gone = jobs[1:]
    assert [s.params for s in sampler.suggest(gone, 1)] == [{'C': 0}]
    assert configurations.walks == 2
    # a sampler resumed with jobs already on the service (a `sweep run` started again) walks past them once
    configurations = CountedWalks({'C': c} for c in range(6))
    resumed = SequenceSampler(configurations)
    jobs = [trial('r0', [], params={'C': 0}), trial('r1', [], params={'C': 1})]
    for poll in range(3):
        assert [s.params for s in resumed.suggest(jobs, 1)] == [{'C': poll + 2}]
        jobs.append(trial('n{}'.format(poll), [], params={'C': poll + 2}))
    assert configurations.walks == 1


def _definition(sampling, specs, early_termination=None, objective=None):
    return SimpleNamespace(parameters=specs, sampling=resolve_sampling(sampling), early_termination=early_termination,
                           objective=objective, inherited=[], objective_set=None)


def test_make_sampler_builds_each_sampler_with_the_sweep_files_seed_and_settings():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    grid = make_sampler(_definition({'type': 'grid'}, [DiscreteParamSpec(parameterName='C', values=[1, 2])]), 'max')
    assert [s.params for s in grid.suggest([], 3)] == [{'C': 1}, {'C': 2}]
    random = make_sampler(_definition({'type': 'random', 'count': 5, 'seed': 11}, specs), 'max')
    assert random.suggest([], 5) == RandomSampler(specs, 5, 11).suggest([], 5)
    assert random.suggest([], 5) != RandomSampler(specs, 5, 12).suggest([], 5)
    asha = {'policy': 'asha', 'minResource': 1, 'maxResource': 16, 'eta': 2}
    sampling = {'type': 'bayesian', 'multiFidelity': True, 'count': 20, 'seed': 4, 'startupJobs': 6}
    multi = make_sampler(_definition(sampling, specs, asha), 'min')
    # ASHA's rungs with the file's eta, the sweep's seed and startup jobs, the step's name in the notes
    assert (multi.rungs, multi.max_resource, multi.seed, multi.count) == ([1, 2, 4, 8], 16, 4, 20)
    assert (multi.model.min_points, multi.model.resource, multi.model.seed) == (6, 'step', 4)
    assert make_sampler(_definition(sampling, specs, asha, {'step': 'epoch'}), 'min').model.resource == 'epoch'
    same = MultiFidelityTPESampler(specs, 'min', 4, 20, [1, 2, 4, 8], 16, min_points=6, resource='step')
    assert multi.suggest([], 3) == same.suggest([], 3)


def test_make_sampler_passes_hyperband_motpe_and_tpe_their_settings_and_the_inherited_jobs():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    hyperband = make_sampler(_definition({'type': 'hyperband', 'resource': 'EPOCHS', 'minResource': 1,
                                          'maxResource': 8, 'eta': 2, 'seed': 3}, specs), 'max')
    assert (hyperband.eta, hyperband.seed, hyperband.resource, hyperband.max_resource) == (2, 3, 'EPOCHS', 8)
    # the most aggressive bracket first (s = log2(8) = 3), its first rung at 1 epoch; the resource named in the note
    assert {s.note for s in hyperband.suggest([], 4)} == {'bracket 3, rung 0, EPOCHS 1'}
    old = [trial('old-{}'.format(k), [k / 10], state='succeeded', index=k - 3, params={'X': k / 10})
           for k in range(3)]
    two = {'objectives': [{'metric': 'acc', 'goal': 'max'}, {'metric': 'lat', 'goal': 'min'}]}
    sampling = {'type': 'bayesian', 'count': 9, 'seed': 8, 'startupJobs': 4}
    definition = _definition(sampling, specs, objective={'goal': 'max'})
    definition.inherited, definition.objective_set = old, two
    motpe = make_sampler(definition, 'max')
    assert (type(motpe).__name__, motpe.seed, motpe.count, motpe.startup_jobs, motpe.inherited) == (
        'MOTPESampler', 8, 9, 4, old)
    definition.objective_set = None
    tpe = make_sampler(definition, 'max')
    assert (type(tpe).__name__, tpe.seed, tpe.count, tpe.startup_jobs, tpe.inherited) == ('TPESampler', 8, 9, 4, old)
    asha = {'policy': 'asha', 'minResource': 1, 'maxResource': 9}
    multi = make_sampler(_definition(dict(sampling, multiFidelity=True), specs, asha), 'max')
    assert multi.rungs == [1, 3]  # ASHA's eta: 3 unless the file says
    definition = _definition(dict(sampling, multiFidelity=True), specs, asha)
    definition.inherited = old
    multi = make_sampler(definition, 'max')
    assert multi.random.inherited == old and multi.model.inherited == old


def _finished(count, start=0):
    """Jobs that ran to the end (steps 1..9) at X = k / count, the higher X the better."""
    return [trial('f{}'.format(k), [k / count] * 9, state='succeeded', index=start + k, params={'X': k / count})
            for k in range(count)]


def test_the_multi_fidelity_tpe_draws_its_random_configurations_as_a_tpe_of_the_sweeps_seed_never_fitted():
    """A random configuration (the random share, or before any rung has enough results) is the next uniform draw of
    a TPE of the sweep's seed, count and inherited jobs that never fits a model, however many results there are."""
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    old = [trial('old-{}'.format(k), [0.5], state='succeeded', index=k - 3, params={'X': k / 3}) for k in range(3)]
    jobs = _finished(12)
    multi = MultiFidelityTPESampler(specs, 'max', 7, 20, [1, 3], 9, random_fraction=1.0, resource='epoch',
                                    inherited=old)
    uniform = TPESampler(specs, goal='max', seed=7, count=20, startup_jobs=10 ** 9, inherited=old)
    drawn = multi.suggest(jobs, 3)
    assert [s.params for s in drawn] == [s.params for s in uniform.suggest(jobs, 3)]
    assert {s.note for s in drawn} == {'bayesian (multi-fidelity): random (exploration: randomFraction 1)'}
    # the TPE's count ends the sweep: 20 jobs in all
    assert not multi.exhausted(_finished(19)) and multi.exhausted(_finished(20))


def test_the_multi_fidelity_tpes_random_share_is_drawn_per_suggestion_from_the_seed_and_its_position():
    """Each suggestion is random with probability randomFraction, by its own seeded draw: the n-th job of the sweep
    (0-based) explores when random.Random('{seed}/bohb/{n}') draws below the fraction (bohb.BudgetModel.choose);
    the others here find no rung with 4 results (the model's minimum for one parameter) and say so, naming the
    step as the sampler's resource (`step` unless told)."""
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    multi = MultiFidelityTPESampler(specs, 'max', 7, None, [1, 3], 9, random_fraction=0.5)
    notes = [s.note for s in multi.suggest([], 12)]
    explore = 'bayesian (multi-fidelity): random (exploration: randomFraction 0.5)'
    expected = [explore if random.Random('7/bohb/{}'.format(n)).random() < 0.5
                else 'bayesian (multi-fidelity): random (no step has 4 results yet; most: 0)' for n in range(12)]
    assert notes == expected and len(set(notes)) == 2


def test_hyperband_explains_the_model_choice_of_each_new_configuration_as_it_made_it():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    random_hb = HyperbandSampler(specs, 'max', 1, 9, 3, seed=2)
    assert random_hb.model_choice([], 2, 0) is None  # no model: random configurations
    bohb = HyperbandSampler(specs, 'max', 1, 9, 3, seed=2)
    bohb.model = BudgetModel(specs, 'max', 2, bohb.budget_values, random_fraction=0.5, resource='epoch')
    for suggestion in bohb.suggest([], 9):
        why = bohb.model_choice([], suggestion.bracket, suggestion.slot).why
        assert suggestion.note == 'bracket 2, rung 0, resource 1; ' + why


def _rung0(sampler, values, bracket=2):
    """A bracket's first rung (minResource 1, maxResource 9, eta 3: bracket 2 is 9 slots at 1 epoch, bracket 1 is 5
    at 3 epochs), finished with `values` by slot (None: the job failed)."""
    jobs = []
    for suggestion in sampler.suggest([], 17):
        if suggestion.bracket != bracket:
            continue
        value = values[suggestion.slot]
        jobs.append(Trial(name='s{}'.format(suggestion.slot), index=suggestion.slot, params=suggestion.params,
                          state='failed' if value is None else 'succeeded', resource=suggestion.resource,
                          bracket=suggestion.bracket, rung=suggestion.rung, slot=suggestion.slot,
                          reports=() if value is None else (Report(step=1.0, value=value),)))
    assert {(j.bracket, j.rung, j.resource) for j in jobs} == {(bracket, 0, 3 ** (2 - bracket))}
    return jobs


def test_hyperband_explains_each_promotion_and_each_job_left_behind_with_its_numbers():
    """9 jobs at 1 epoch, the best 3 go on to 3 epochs; slots 5 and 6 tie at the cutoff: the earlier slot ranks
    first."""
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    sampler = HyperbandSampler(specs, 'max', 1, 9, 3, seed=1, resource='EPOCHS')
    decisions = sampler.explain(_rung0(sampler, [0.0, 0.1, 0.2, 0.3, 0.4, 0.6, 0.6, 0.7, 0.8]))
    first = decisions['s8']
    assert (first.kind, first.rule, first.step, first.job) == (PROMOTED, 'hyperband', 1, 's8')
    assert first.text == 'promoted by hyperband to EPOCHS 3: rank 1/9 (0.8), the best 3 go on'
    assert first.numbers == {'bracket': 2, 'rung': 0, 'rank': 1, 'ranked': 9, 'keep': 3, 'value': 0.8, 'cutoff': 0.6}
    tie = decisions['s6']
    assert (tie.kind, tie.numbers['rank']) == (NOT_PROMOTED, 4)
    assert tie.text == ('not promoted by hyperband: rank 4/9 at EPOCHS 1 (0.6 = 0.6; a tie goes to the earlier '
                        'slot), the best 3 go on')
    assert decisions['s0'].text == 'not promoted by hyperband: rank 9/9 at EPOCHS 1 (0 < 0.6), the best 3 go on'
    assert decisions['s5'].kind == PROMOTED
    # six failed: the three with a result are exactly the three that go on, the cutoff the last of them
    decisions = sampler.explain(_rung0(sampler, [None] * 6 + [0.5, 0.7, 0.9]))
    assert sorted(decisions) == ['s6', 's7', 's8']
    assert decisions['s6'].numbers == {'bracket': 2, 'rung': 0, 'rank': 3, 'ranked': 3, 'keep': 3, 'value': 0.5,
                                       'cutoff': 0.5}


def test_hyperband_ranks_values_at_the_float_limits_and_words_a_lone_promotion_for_goal_min():
    """Goal min, bracket 1 (5 jobs at 3 epochs, the best one goes on to 9): -1.7e308 is below -1e308 (a rule that
    scaled the values would make both -inf and rank them by slot)."""
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    sampler = HyperbandSampler(specs, 'min', 1, 9, 3, seed=1, resource='EPOCHS')
    decisions = sampler.explain(_rung0(sampler, [-1e308, -1.7e308, 0.5, 0.25, 2.0], bracket=1))
    assert decisions['s1'].text == 'promoted by hyperband to EPOCHS 9: rank 1/5 (-1.7e+308), the best one goes on'
    assert decisions['s0'].text == ('not promoted by hyperband: rank 2/5 at EPOCHS 3 (-1e+308 > -1.7e+308), the best '
                                    'one goes on')
    assert [decisions['s{}'.format(k)].numbers['rank'] for k in range(5)] == [2, 1, 4, 3, 5]
    high = HyperbandSampler(specs, 'max', 1, 9, 3, seed=1)
    ranks = high.explain(_rung0(high, [1e308, 1.7e308, 0.5, 0.25, 2.0], bracket=1))
    assert [ranks['s{}'.format(k)].numbers['rank'] for k in range(5)] == [2, 1, 4, 5, 3]


def test_hyperband_learns_a_jobs_value_at_its_resource_or_at_max_resource_when_it_ran_to_the_end():
    sampler = HyperbandSampler([NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')], 'max', 1, 9, 3, seed=1)
    assert sampler.budget_values(trial('a', [0.2, 0.4], state='succeeded', resource=3)) == {3: 0.4}
    # inherited from a sweep without a resource: at maxResource when it ran to the end, else nowhere
    assert sampler.budget_values(trial('b', [0.2, 0.5], state='succeeded')) == {9: 0.5}
    assert sampler.budget_values(trial('c', [0.2, 0.5], state='terminated', stopped_early=True)) == {}
    assert sampler.budget_values(trial('d', [], state='failed')) == {}


def test_hyperband_brackets_keep_fractional_resources_and_start_at_one_bracket():
    """Resources are rounded only when both bounds are whole numbers; a maxResource below minResource * eta leaves
    one bracket, s = 0, every job at maxResource."""
    assert [[r.resource for r in b.rungs] for b in hyperband_brackets(0.5, 2, 2)] == [[0.5, 1.0, 2.0], [1.0, 2.0],
                                                                                       [2.0]]
    assert [[r.resource for r in b.rungs] for b in hyperband_brackets(0.5, 4.5, 3)] == [[0.5, 1.5, 4.5], [1.5, 4.5],
                                                                                         [4.5]]
    assert [(b.s, b.rungs) for b in hyperband_brackets(1, 2, 3)] == [(0, (Rung(count=1, resource=2),))]


def test_a_hyperband_bracket_draws_every_configuration_of_a_finite_space_before_any_twice():
    """A bracket of 2,500 new configurations over a space of 2,500: each drawn once. The last ones take many redraws
    (the coupon collector's problem): ten times the space's size per configuration, not a fixed thousand."""
    specs = [DiscreteParamSpec(parameterName='C', values=list(range(2500)))]
    sampler = HyperbandSampler(specs, 'max', 1, 2500, 50, seed=1)
    assert sampler.brackets[0].rungs[0].count == 2500
    drawn = [sampler.configuration(2, slot)['C'] for slot in range(2500)]
    assert sorted(drawn) == list(range(2500))


def test_hyperband_hands_out_promotions_before_new_configurations_whatever_their_bracket():
    """Bracket 1 (5 jobs at 3 epochs) has finished its first rung while bracket 2 (the first in order) has not
    started: the next job is bracket 1's promotion of its best, at 9 epochs."""
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    sampler = HyperbandSampler(specs, 'max', 1, 9, 3, seed=1, resource='EPOCHS')
    jobs = _rung0(sampler, [0.1, 0.9, 0.5, 0.3, 0.2], bracket=1)
    (promotion,) = sampler.suggest(jobs, 1)
    assert (promotion.bracket, promotion.rung, promotion.slot, promotion.resource, promotion.parent) == (1, 1, 1, 9,
                                                                                                         's1')
    assert [(s.bracket, s.rung) for s in sampler.suggest(jobs, 3)] == [(1, 1), (2, 0), (2, 0)]


def test_average_ranks_are_one_to_n_with_ties_sharing_their_average():
    assert average_ranks([3.0, 1.0, 3.0, 2.0]) == [3.5, 1.0, 3.5, 2.0]
    assert average_ranks([5.0, 5.0, 5.0]) == [2.0, 2.0, 2.0]
    assert average_ranks([0.5, 0.25]) == [2.0, 1.0] and average_ranks([]) == []


def test_a_pending_suggestion_is_the_next_job_of_the_sweep():
    """What the next suggestions of a batch see of one made before them: a queued job with the next index (0 in an
    empty sweep), the suggestion's parameters, resource, parent and place, and no job's name."""
    suggestion = Suggestion(params={'X': 0.5}, resource=3, parent='p', bracket=1, rung=1, slot=2)
    first = pending_suggestion(suggestion, [])
    assert (first.name, first.index, first.state, first.params) == ('(suggested)', 0, 'queued', {'X': 0.5})
    assert (first.resource, first.parent, first.bracket, first.rung, first.slot) == (3, 'p', 1, 1, 2)
    jobs = [trial('a', [], index=4), trial('b', [], index=9), trial('c', [], index=-2)]
    assert pending_suggestion(suggestion, jobs).index == 10


def test_a_curve_book_reads_each_finished_job_once_and_joins_curves_as_one_reading_in_index_order():
    """A configuration's curve is its finished jobs' finite reports, the earlier job's (by index) where two reported
    at one step, and a job's first report at a step (as ASHA reads it); a job read before is not read again, so an
    update with nothing new says so."""
    a = trial('a', [0.1, 0.2, math.inf], state='succeeded', index=0, params={'X': 1}, steps=[1, 2, 4])
    b = trial('b', [0.9, 0.3, 0.35], state='succeeded', index=1, params={'X': 1}, steps=[2, 3, 3])
    running = trial('r', [0.5], index=2, params={'X': 2})
    book = CurveBook()
    assert book.update([b, running]) and not book.update([b, running])
    assert book.update([a, b, running]) and not book.update([a, b, running])
    assert not book.update([a, b, running])
    assert book.curves() == {'{"X":1}': {1.0: 0.1, 2.0: 0.2, 3.0: 0.3}} == curves([b, a, running])


def test_an_agreement_of_two_configurations_is_their_order_and_names_its_steps():
    joined = {'x': {1.0: 0.1, 9.0: 0.5}, 'y': {1.0: 0.2, 9.0: 0.4}, 'z': {1.0: 0.3}}
    assert agreement(joined, 1.0, 9.0) == Agreement(low=1.0, high=9.0, count=2, rho=-1.0)
    assert agreement({'x': joined['x']}, 1.0, 9.0) == Agreement(low=1.0, high=9.0, count=1, rho=None)


def test_the_model_sees_each_job_by_its_value_at_the_budget_else_as_pending_or_as_teaching_nothing():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    values = {'at3': {3: 0.5}, 'inf': {3: math.inf}, 'at1': {1: 0.7}}
    model = BudgetModel(specs, 'max', 1, lambda t: values.get(t.name, {}), min_points=1)
    jobs = [trial('at3', [0.1, 0.5], state='terminated', stopped_early=True), trial('inf', [0.2], state='succeeded'),
            trial('at1', [0.7], state='succeeded'), trial('queued', [], state='queued'),
            trial('promoted', [], state='running', parent='at1')]
    view = {t.name: t for t in model.model_view(jobs, 3)}
    assert (view['at3'].state, view['at3'].stopped_early, view['at3'].reports) == ('succeeded', False,
                                                                                    (Report(step=3.0, value=0.5),))
    for name in ('inf', 'at1', 'promoted'):  # no finite value at 3, and not a new job in flight: taught nothing
        assert (view[name].state, view[name].reports) == ('failed', ()), name
    assert view['queued'] == jobs[3]  # a new configuration in flight: pending, the constant liar's


def _two_budget_jobs(high_values):
    """Five finished configurations reporting at steps 1 and 9: X = k / 10 worth k at step 1 and high_values[k] at
    step 9."""
    return [Trial(name='c{}'.format(k), index=k, params={'X': k / 10}, state='succeeded',
                  reports=(Report(step=1.0, value=float(k)), Report(step=9.0, value=float(v))))
            for k, v in enumerate(high_values)]


def _at_steps(trial):
    return {r.step: r.value for r in trial.reports}


def test_a_budget_model_counts_finite_results_only_and_a_random_choice_has_none():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    model = BudgetModel(specs, 'max', 1, lambda t: {3: t.reports[-1].value}, min_points=2, resource='epoch')
    good, bad = trial('good', [0.5], state='succeeded'), trial('bad', [math.inf], state='succeeded')
    assert model.results([good, bad]) == {3: [(good, 0.5)]}
    choice = model.choose([good, bad], 'k')
    assert (choice.budget, choice.count, choice.why) == (None, 0, 'random (no epoch has 2 results yet; most: 1)')
    assert repr(ModelChoice(3, 5, 'TPE')) == "ModelChoice(budget=3, count=5, why='TPE')"
    explore = BudgetModel(specs, 'max', 1, lambda t: {}, random_fraction=1.0).choose([], 'k')
    assert (explore.budget, explore.count) == (None, 0)


def test_a_low_budget_that_ranks_as_the_top_one_with_exactly_the_agreement_is_used():
    """Ranks 1..5 at step 1 and 2, 1, 3, 4, 5 at step 9: Spearman 1 - 6 * 2 / (5 * 24) = 0.9, the default agreement:
    enough (at least, not more than), so the model is fitted on step 1."""
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    model = BudgetModel(specs, 'max', 1, _at_steps, min_points=4, resource='epoch')
    choice = model.choose(_two_budget_jobs([2, 1, 3, 4, 5]), 'k')
    assert (choice.budget, choice.count) == (1.0, 5)
    assert choice.why == ('TPE on the 5 results at epoch 1 (they rank as epoch 9 does: Spearman 0.90 over 5 '
                          'configurations)')
    other = BudgetModel(specs, 'max', 1, _at_steps, min_points=4)  # (a model reads a finished job once)
    assert other.choose(_two_budget_jobs([3, 1, 2, 4, 5]), 'k').budget == 9.0  # 0.8: not enough


def test_the_models_suggestion_is_a_tpe_of_the_sweeps_goal_fitted_at_the_chosen_budget():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    jobs = _two_budget_jobs([5, 1, 4, 2, 3])  # rho 0.1: fitted at step 9
    for goal in ('max', 'min'):
        model = BudgetModel(specs, goal, 1, _at_steps, min_points=4)
        params, choice = model.suggest(jobs, 'k')
        assert choice.budget == 9.0
        tpe = TPESampler(specs, goal=goal, seed='1/bohb/k', startup_jobs=0)
        assert params == tpe.suggest(model.model_view(jobs, 9.0), 1)[0].params
    assert BudgetModel(specs, 'max', 1, _at_steps, min_points=4).suggest(jobs, 'k')[0] != params


def test_a_constrained_models_suggestion_is_motpe_seeded_by_the_sweep_and_fitted_from_its_first_result():
    """With constraints, the model is MOTPE on the first objective and the constraints, seeded by the sweep's seed and
    the suggestion's key, with no random startup: five results are enough (MOTPE's own default waits for 10)."""
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    objectives = Objectives([('acc', 'max'), ('lat', 'min')], [Constraint('mem', maximum=0.5)])
    jobs = [replace(job, metrics={'mem': job.params['X']}) for job in _two_budget_jobs([5, 1, 4, 2, 3])]
    model = BudgetModel(specs, 'max', 1, _at_steps, min_points=4, objectives=objectives)
    params, choice = model.suggest(jobs, 'k')
    assert choice.budget == 9.0
    motpe = MOTPESampler(specs, Objectives([('acc', 'max')], [Constraint('mem', maximum=0.5)]), seed='1/bohb/k',
                         startup_jobs=0)
    view = model.model_view(jobs, 9.0)
    assert params == motpe.suggest(view, 1)[0].params
    for other in (MOTPESampler(specs, Objectives([('acc', 'max')], [Constraint('mem', maximum=0.5)]), seed='1/bohb/j',
                               startup_jobs=0),
                  MOTPESampler(specs, Objectives([('acc', 'max')], [Constraint('mem', maximum=0.5)]),
                               seed='1/bohb/k')):
        assert other.suggest(view, 1)[0].params != params


def test_motpe_takes_its_goal_from_the_first_objective_models_each_parameter_alone_and_names_what_it_weighs():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR'), NumParamSpec('Y', 0.0, 1.0, 'REAL', 'LINEAR')]
    two = MOTPESampler(specs, Objectives([('lat', 'min'), ('acc', 'max')]), seed=1)
    assert (two.goal, two.groups) == ('min', [[0], [1]])  # several objectives: one model per parameter
    one = MOTPESampler(specs, Objectives([('acc', 'max')], [Constraint('mem', maximum=0.5)]), seed=1, startup_jobs=2)
    assert one.groups == [[0, 1]]
    jobs = [replace(trial('j{}'.format(k), [k / 4], state='succeeded', index=k, params={'X': k / 4, 'Y': 0.5}),
                    metrics={'mem': 0.1}) for k in range(3)]
    assert [s.note for s in one.suggest(jobs, 1)] == [
        'bayesian: MOTPE (one objective, 1 constraint(s)) over 3 jobs with an objective, 0 pending']
