"""Model-based Hyperband and ASHA (issue 28, item 2): BOHB's choice of budget and model, its suggestions for fixed
seeds and results, with jobs in flight, and a controller resumed from the jobs alone deciding the same."""
import random as stdlib_random
import statistics
from dataclasses import replace

import pytest

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.controller import Limits
from azext_batchai_sweep.core.tuning.samplers import HyperbandSampler
from azext_batchai_sweep.core.tuning.samplers.agreement import agreement, curves, spearman, value_at
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel, ModelChoice, default_min_points
from azext_batchai_sweep.core.tuning.samplers.multifidelity import MultiFidelityTPESampler
from azext_batchai_sweep.core.tuning.simulation import simulate, sweep_controller
from azext_batchai_sweep.core.tuning.trial import Report, Trial

SPECS = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR'), NumParamSpec('Y', 0.0, 1.0, 'REAL', 'LINEAR')]
BOHB = {'type': 'hyperband', 'sampler': 'bayesian', 'resource': 'EPOCHS', 'minResource': 1, 'maxResource': 27,
        'seed': 5}


def curve(params):
    """Poor configurations look good early (a low-budget optimum at X=0.2), the best at the end is at X=0.8."""
    final = 1 - (params['X'] - 0.8) ** 2 - (params['Y'] - 0.3) ** 2
    early = 1 - (params['X'] - 0.2) ** 2
    return [early + (final - early) * min(1.0, step / 9) for step in range(1, 28)]


def done(index, resource, value, x=0.5, y=0.5, state='succeeded'):
    return Trial(name='j{}'.format(index), index=index, params={'X': x, 'Y': y}, state=state, resource=resource,
                 reports=(Report(step=float(resource), value=value),) if state == 'succeeded' else ())


def results(resource, count, start=0, best_x=0.5, spread=0.3, seed=0):
    """`count` finished jobs at `resource`, the closer X to best_x the better."""
    rng = stdlib_random.Random('{}/{}'.format(resource, seed))
    out = []
    for k in range(count):
        x, y = rng.random(), rng.random()
        out.append(done(start + k, resource, 1 - abs(x - best_x) / spread, x, y))
    return out


def model(**kwargs):
    sampler = HyperbandSampler(SPECS, 'max', 1, 27, 3, seed=5)
    return BudgetModel(SPECS, 'max', 5, sampler.budget_values, random_fraction=kwargs.pop('random_fraction', 0.0),
                       resource='epochs', **kwargs)


def test_the_model_is_the_highest_budget_with_d_plus_3_results():
    assert default_min_points(len(SPECS)) == 5  # Falkner et al.: N_min + 2, N_min = d + 1
    m = model()
    trials = results(1, 9) + results(3, 5, start=9) + results(9, 4, start=14)
    choice = m.choose(trials, 'k')
    assert (choice.budget, choice.count) == (3, 5)
    assert choice.why == 'TPE on the 5 results at epochs 3'
    # a job still running at 9 and a failed one are no results there
    trials += [done(18, 9, None, state='running'), done(19, 9, None, state='failed')]
    assert m.choose(trials, 'k').budget == 3
    trials += [done(20, 9, 0.5)]
    assert (m.choose(trials, 'k').budget, m.choose(trials, 'k').count) == (9, 5)
    # too few anywhere: random, and said
    early = m.choose(results(1, 4), 'k')
    assert early.budget is None and early.why == 'random (no epochs has 5 results yet; most: 4)'
    # startupJobs moves the threshold
    assert model(min_points=3).choose(results(1, 9) + results(9, 3, start=9), 'k').budget == 9


def test_the_random_fraction_is_a_seeded_share_of_the_suggestions():
    trials = results(3, 8)
    keys = ['{}/{}'.format(b, s) for b in range(4) for s in range(50)]
    for fraction, low, high in ((0.0, 0, 0), (1 / 3, 0.25, 0.42), (1.0, 1, 1)):
        m = model(random_fraction=fraction)
        random_share = sum(m.choose(trials, key).budget is None for key in keys) / len(keys)
        assert low <= random_share <= high, fraction
        assert [m.choose(trials, key).budget for key in keys] == [m.choose(trials, key).budget for key in keys]
    assert model(random_fraction=1.0).choose(trials, 'k').why == 'random (exploration: randomFraction 1)'


def test_suggestions_follow_the_highest_budget_and_ignore_the_lower_ones():
    """Results at epochs 1 say X=0.1 is best, at epochs 9 (fewer, but enough) X=0.9: the model follows epochs 9."""
    m = model()
    trials = results(1, 20, best_x=0.1) + results(9, 8, start=20, best_x=0.9)
    xs = [m.suggest(trials, str(k))[0]['X'] for k in range(40)]
    assert statistics.median(xs) > 0.7
    # other values at epochs 1 change nothing: the model is fitted at epochs 9 alone
    other = results(1, 20, best_x=0.5, seed=1) + results(9, 8, start=20, best_x=0.9)
    assert [m.suggest(other, str(k))[0] for k in range(5)] == [m.suggest(trials, str(k))[0] for k in range(5)]
    # the same seed and results: the same suggestions; another key: another draw
    again = model()
    assert [again.suggest(trials, str(k))[0] for k in range(5)] == [m.suggest(trials, str(k))[0] for k in range(5)]
    assert m.suggest(trials, '0')[0] != m.suggest(trials, '1')[0]


def test_bohb_suggestions_for_a_fixed_seed():
    """The first configurations a model-based Hyperband run submits for seed 5 (a regression pin: any change of the
    rule, the model or the streams moves them)."""
    trials, _, end = simulate(sweep_controller(SPECS, BOHB, limits=Limits(max_concurrent_jobs=3)), curve)
    assert end == 'exhausted'
    new = [t for t in trials if t.rung == 0]
    assert len(new) == 27 + 12 + 6 + 4
    # until a budget has d + 3 results: Li et al.'s random draws, exactly (3 jobs in flight: the 5th result comes
    # after the 7th submission at the earliest)
    random_hb = HyperbandSampler(SPECS, 'max', 1, 27, 3, seed=5)
    assert [t.params for t in new[:7]] == [random_hb.configuration(3, s) for s in range(7)]
    assert [t.params for t in new if t.bracket == 3] != [random_hb.configuration(3, s) for s in range(27)]
    pinned = [(t.bracket, t.slot, round(t.params['X'], 4), round(t.params['Y'], 4)) for t in new if t.bracket == 0]
    assert pinned == PINNED_BRACKET_0
    best = max((t for t in trials if t.state == 'succeeded' and t.resource == 27), key=lambda t: t.last)
    assert best.last > 0.95


# Bracket 0's configurations (from the results at epochs 9, the last bracket to start), seed 5, 3 jobs at a time.
# The last one moved when the model learnt to use a lower budget that ranks as the top one: `curve` is flat from
# epoch 9 on, so once 27 has enough results, 9 (with more of them) ranks exactly as 27 does.
PINNED_BRACKET_0 = [(0, 0, 0.4842, 0.0286), (0, 1, 0.9466, 0.1375), (0, 2, 0.9324, 0.4873), (0, 3, 0.6949, 0.4218)]


def smooth(params):
    """Ranks kept at every budget: what a low budget teaches holds at the full one."""
    final = 1 - (params['X'] - 0.8) ** 2 - (params['Y'] - 0.3) ** 2
    return [final * (1 - 0.5 ** step) for step in range(1, 28)]


def test_the_model_finds_a_better_best_than_random_hyperband():
    """Seeds 0-9, 4 jobs at a time: the best at the full budget, BOHB against random Hyperband (the same brackets and
    promotions; the first bracket's configurations are the same)."""
    found = {}
    for seed in range(10):
        for sampler in ('random', 'bayesian'):
            sampling = dict(BOHB, sampler=sampler, seed=seed)
            trials, _, _ = simulate(sweep_controller(SPECS, sampling, limits=Limits(max_concurrent_jobs=4)), smooth)
            found[seed, sampler] = max(t.last for t in trials if t.state == 'succeeded' and t.resource == 27)
    assert sum(found[seed, 'bayesian'] >= found[seed, 'random'] for seed in range(10)) == 10
    assert sum(found[seed, 'bayesian'] > found[seed, 'random'] for seed in range(10)) >= 7


def test_promotions_continue_the_model_configuration_and_in_flight_jobs_spread_a_batch():
    sampler = HyperbandSampler(SPECS, 'max', 1, 9, 3, seed=2)
    sampler.model = BudgetModel(SPECS, 'max', 2, sampler.budget_values, random_fraction=0.0)
    first = sampler.suggest([], 9)  # bracket 2's 9 configurations, no result yet: random
    trials = [Trial(name='a{}'.format(i), index=i, params=s.params, state='succeeded', resource=s.resource,
                    bracket=s.bracket, rung=s.rung, slot=s.slot,
                    reports=(Report(step=1.0, value=curve(s.params)[0]),)) for i, s in enumerate(first)]
    batch = sampler.suggest(trials, 6)
    promotions = [s for s in batch if s.rung == 1]
    assert promotions and all(s.params == next(t.params for t in trials if t.name == s.parent) for s in promotions)
    new = [s for s in batch if s.rung == 0]
    assert new and all('TPE on the 9 results at resource 1' in s.note for s in new)
    # a batch is the one-by-one suggestions with the earlier ones in flight (what a resumed run sees)
    one = sampler.suggest(trials, len(promotions) + 1)[-1]
    assert one == new[0]
    pending = trials + [Trial(name='p{}'.format(k), index=len(trials) + k, params=s.params, state='queued',
                              resource=s.resource, bracket=s.bracket, rung=s.rung, slot=s.slot,
                              parent=s.parent) for k, s in enumerate(batch[:len(promotions) + 1])]
    assert sampler.suggest(pending, 1)[0] == batch[len(promotions) + 1]
    assert len({tuple(sorted(s.params.items())) for s in new}) == len(new)


@pytest.mark.parametrize('sampling, policy', [
    (BOHB, None),
    ({'type': 'bayesian', 'multiFidelity': True, 'count': 30, 'seed': 4},
     {'policy': 'asha', 'minResource': 1, 'maxResource': 27, 'eta': 3}),
])
def test_a_resumed_controller_decides_the_same(sampling, policy):
    running = []

    def factory():
        """A new controller that knows the jobs and what the journal keeps (the reports judged, the decisions)."""
        controller = sweep_controller(SPECS, sampling, early_termination=policy,
                                      limits=Limits(max_concurrent_jobs=4), step_label='epoch')
        if running:
            controller.judged, controller.decisions = dict(running[-1].judged), dict(running[-1].decisions)
        running.append(controller)
        return controller
    whole, _, end = simulate(sweep_controller(SPECS, sampling, early_termination=policy,
                                              limits=Limits(max_concurrent_jobs=4), step_label='epoch'), curve)
    ticks = stdlib_random.Random(3).sample(range(1, 80), 6)
    resumed, _, end_resumed = simulate(factory(), curve, restarts={tick: factory for tick in ticks})
    assert end == end_resumed
    assert [(t.params, t.state, t.resource, t.reports) for t in whole] == \
        [(t.params, t.state, t.resource, t.reports) for t in resumed]


def test_asha_model_values_at_rungs_and_its_choice():
    sampler = MultiFidelityTPESampler(SPECS, 'max', 1, None, rungs=[1, 3, 9], max_resource=27, random_fraction=0.0,
                                      resource='epoch')
    job = Trial(name='a', index=0, params={'X': 0.1, 'Y': 0.2}, state='running',
                reports=tuple(Report(step=float(s), value=s / 10) for s in (1, 2, 4, 5)))
    # the value ASHA judged at each rung crossed: the first report at or past the rung's step
    assert sampler.budget_values(job) == {1: 0.1, 3: 0.4}
    assert sampler.budget_values(replace(job, state='succeeded')) == {1: 0.1, 3: 0.4, 27: 0.5}
    stopped = replace(job, state='terminated', stopped_early=True)
    assert sampler.budget_values(stopped) == {1: 0.1, 3: 0.4}
    # running jobs count at the rungs they crossed: 5 at rung 3 (d + 3) make it the model
    trials = [replace(job, name='r{}'.format(k), index=k, params={'X': k / 10, 'Y': 0.5}) for k in range(5)]
    choice = sampler.model.choose(trials, '5')
    assert (choice.budget, choice.count, choice.why) == (3, 5, 'TPE on the 5 results at epoch 3')
    suggestion = sampler.suggest(trials, 1)[0]
    assert suggestion.note == 'bayesian (multi-fidelity): TPE on the 5 results at epoch 3'


def test_asha_with_the_model_stops_where_bayesian_sampling_would():
    controller = sweep_controller(SPECS, {'type': 'bayesian', 'multiFidelity': True, 'count': 12, 'seed': 1},
                                  early_termination={'policy': 'asha', 'minResource': 1, 'maxResource': 27},
                                  limits=Limits(max_concurrent_jobs=3), step_label='epoch')
    trials, _, end = simulate(controller, curve)
    assert end == 'exhausted' and len(trials) == 12
    assert any(t.state == 'terminated' for t in trials)
    # a finite space is never suggested the same configuration twice
    finite = [DiscreteParamSpec(parameterName='C', values=list(range(6)))]
    controller = sweep_controller(finite, {'type': 'bayesian', 'multiFidelity': True, 'count': 20, 'seed': 1},
                                  early_termination={'policy': 'asha', 'minResource': 1, 'maxResource': 9},
                                  limits=Limits(max_concurrent_jobs=2), step_label='epoch')
    trials, _, end = simulate(controller, lambda p: [p['C'] * s / 9 for s in range(1, 10)])
    assert end == 'exhausted' and sorted(t.params['C'] for t in trials) == list(range(6))


def test_iterations_repeat_every_bracket_under_new_numbers():
    """sampling.iterations: Li et al.'s outer loop; the first iteration is today's Hyperband, the next ones run every
    bracket again with brackets numbered on, their own configurations, and BOHB's model from all results so far."""
    once, _, _ = simulate(sweep_controller(SPECS, dict(BOHB, sampler='random')), smooth)
    sampling = dict(BOHB, sampler='random', iterations=2)
    twice, _, end = simulate(sweep_controller(SPECS, sampling, limits=Limits(max_concurrent_jobs=4)), smooth)
    assert end == 'exhausted' and len(twice) == 2 * len(once)
    assert sorted({t.bracket for t in twice}) == list(range(8))
    first = sorted((t.bracket, t.rung, t.slot, t.params['X']) for t in twice if t.bracket < 4)
    assert first == sorted((t.bracket, t.rung, t.slot, t.params['X']) for t in once)
    again = {t.params['X'] for t in twice if t.bracket == 7 and t.rung == 0}
    assert len(again) == 27 and not again & {t.params['X'] for t in once}
    # promotions and decisions in the second iteration as in the first: 27 -> 9 -> 3 -> 1
    assert [sum(t.bracket == 7 and t.rung == i for t in twice) for i in range(4)] == [27, 9, 3, 1]
    sampler = sweep_controller(SPECS, sampling).sampler
    explained = sampler.explain(twice)
    assert sum(d.numbers['bracket'] == 7 for d in explained.values()) == 27 + 9 + 3
    # with the model and one job at a time, the second iteration's first bracket learns from the whole first one
    controller = sweep_controller(SPECS, dict(BOHB, iterations=2, randomFraction=0),
                                  limits=Limits(max_concurrent_jobs=1))
    notes = []
    spy = controller.sampler.suggest

    def suggest(trials, count):
        out = spy(trials, count)
        notes.extend(s.note for s in out if s.bracket == 7 and s.rung == 0)
        return out
    controller.sampler.suggest = suggest
    simulate(controller, smooth)
    assert notes and all('TPE on the' in note and 'EPOCHS 27' in note for note in notes)


def test_a_suggestion_draws_only_the_configurations_it_hands_out():
    """The controller's cost per step: of a sweep of many iterations' hundreds of open slots, only the `count` chosen
    ones are drawn and described (a sweep of 50 iterations cost 15-25 s of CPU per simulated 100 x R, now about 1 s);
    which ones are chosen is unchanged: the highest rung first, then bracket and slot order."""
    sampling = dict(BOHB, sampler='random', iterations=50)
    sampler = sweep_controller(SPECS, sampling).sampler
    drawn = []
    configuration = sampler.configuration

    def counted(bracket, slot):
        drawn.append((bracket, slot))
        return configuration(bracket, slot)
    sampler.configuration = counted
    first = sampler.suggest([], 3)
    assert [(s.bracket, s.rung, s.slot) for s in first] == [(3, 0, 0), (3, 0, 1), (3, 0, 2)] and len(drawn) == 3
    # a promotion comes before every open rung-0 slot of the 50 iterations
    rung0 = [done(k, 1, k / 27, x=k / 27) for k in range(27)]
    rung0 = [replace(t, bracket=3, rung=0, slot=k) for k, t in enumerate(rung0)]
    drawn.clear()
    after = sampler.suggest(rung0, 2)
    assert [(s.bracket, s.rung, s.slot, s.parent) for s in after] == [(3, 1, 18, 'j18'), (3, 1, 19, 'j19')]
    assert len(drawn) == 2  # the best 9 of 27 go on (slots 18-26), in slot order


# -- the model's budget: a lower one that ranks as the top one (agreement.py) -----------------------------------------

def job(index, x, steps, value_of, parent=None, state='succeeded'):
    """A job of configuration X = x, Y = 0.5 reporting value_of(x, step) at each of `steps` (a promotion resumes
    from its parent: its steps start after the parent's)."""
    return Trial(name='j{}'.format(index), index=index, params={'X': x, 'Y': 0.5}, state=state,
                 resource=float(steps[-1]), parent=parent,
                 reports=tuple(Report(step=float(s), value=value_of(x, s)) for s in steps))


def sweep_at(value_of, promoted=8, started=20):
    """`started` configurations run 1 epoch; the first `promoted` continue to 9 (new jobs resuming from epoch 2)."""
    xs = [(k * 0.37) % 1 for k in range(started)]
    trials = [job(k, x, [1], value_of) for k, x in enumerate(xs)]
    trials += [job(started + k, x, list(range(2, 10)), value_of, parent='j{}'.format(k))
               for k, x in enumerate(xs[:promoted])]
    return trials


def faithful(x, step):
    return (1 - abs(x - 0.9)) * step / 9  # every step ranks as step 9 does


def misleading(x, step):
    return (1 - abs(x - 0.9)) if step >= 9 else (1 - abs(x - 0.1))  # the early steps rank the other way


def test_a_configuration_curve_joins_its_jobs_and_a_value_needs_the_step():
    trials = sweep_at(faithful, promoted=3, started=4)
    trials.append(job(9, 0.99, [1, 2], faithful, state='running'))  # in flight: not measured
    joined = curves(trials)
    assert len(joined) == 4
    # the three promoted configurations: epoch 1 from the first job, 2-9 from the promotion; the fourth: epoch 1
    assert sorted(sorted(curve) for curve in joined.values()) == \
        [[1.0]] + [[float(s) for s in range(1, 10)]] * 3
    # the value a rung at a step judged: the first report at or after it, none before a curve starts or after it ends
    assert value_at({2.0: 0.2, 4.0: 0.4}, 3) == 0.4
    assert value_at({3.0: 0.3}, 1) is None and value_at({1.0: 0.1}, 3) is None
    # Spearman's rho, ties at their average rank (scipy.stats.spearmanr gives 0.66689 and 0.94868)
    assert spearman([1, 2, 2, 3, 5], [2, 1, 4, 3, 6]) == pytest.approx(0.6668859)
    assert spearman([3, 1, 2, 2], [0.5, 0.1, 0.2, 0.4]) == pytest.approx(0.9486833)
    assert spearman([1, 1], [1, 2]) is None
    measured = agreement(joined, 1, 9)
    assert (measured.count, measured.rho) == (3, pytest.approx(1.0))
    assert agreement(curves(sweep_at(misleading, promoted=3, started=4)), 1, 9).rho == pytest.approx(-1.0)


@pytest.mark.parametrize('value_of, budget', [(faithful, 1), (misleading, 9)])
def test_the_model_uses_the_lowest_budget_that_ranks_as_the_top_one(value_of, budget):
    m = model()
    trials = sweep_at(value_of)
    choice = m.choose(trials, 'k')
    assert choice.budget == budget
    if budget == 1:
        assert (choice.count, choice.why) == (20, 'TPE on the 20 results at epochs 1 (they rank as epochs 9 does: '
                                                  'Spearman 1.00 over 8 configurations)')
        # its suggestion is the model's at epochs 1
        assert m.suggest(trials, 'k')[0] == m.suggest(trials, 'k', choice=ModelChoice(1, 20, ''))[0]
    else:
        assert (choice.count, choice.why) == (8, 'TPE on the 8 results at epochs 9')
    # BOHB's own rule (agreement=None) keeps the highest budget with enough results
    assert model(agreement=None).choose(trials, 'k').budget == 9


def test_the_agreement_needs_enough_configurations_at_both():
    # 4 configurations reached epoch 9: enough for a model there with startupJobs 3, too few to trust a ranking
    trials = sweep_at(faithful, promoted=4)
    assert model(min_points=3).choose(trials, 'k').budget == 9
    assert model(min_points=3).choose(sweep_at(faithful, promoted=5), 'k').budget == 1
    # a misleading low budget is not trusted however many configurations show it
    assert model(min_points=3).choose(sweep_at(misleading, promoted=12), 'k').budget == 9


def test_a_sweep_moves_down_only_where_its_low_budgets_rank_as_the_top_one():
    """In whole sweeps: on `smooth` (ranks kept at every epoch) new configurations come from the results at 1 epoch once
    enough configurations reached the top; on `curve` (the early epochs mislead) never from 1 or 3."""
    notes = {}
    for name, shape in (('smooth', smooth), ('curve', curve)):
        controller = sweep_controller(SPECS, dict(BOHB, iterations=2), limits=Limits(max_concurrent_jobs=2))
        trials, _, _ = simulate(controller, shape)
        sampler = controller.sampler
        notes[name] = [sampler.model_choice(trials[:t.index], t.bracket, t.slot).why for t in trials
                       if t.rung == 0 and t.bracket >= 4]
    assert any('at EPOCHS 1 (they rank as EPOCHS' in why for why in notes['smooth'])
    assert not any('at EPOCHS 1 (' in why or 'at EPOCHS 3 (' in why for why in notes['curve'])
