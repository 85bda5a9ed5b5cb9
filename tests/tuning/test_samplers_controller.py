"""Hyperband's brackets and promotions, the blind samplers, and the controller's limits, computed by hand."""
from dataclasses import replace

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.spec.sweep import ParameterSweep
from azext_batchai_sweep.core.tuning.controller import Controller, Limits
from azext_batchai_sweep.core.tuning.decision import NOT_PROMOTED, PROMOTED
from azext_batchai_sweep.core.tuning.policies import make_policy
from azext_batchai_sweep.core.tuning.samplers import GridSampler, HyperbandSampler, RandomSampler, hyperband_brackets
from azext_batchai_sweep.core.tuning.simulation import simulate
from azext_batchai_sweep.core.tuning.trial import Report, Trial

SPEC = DiscreteParamSpec(parameterName='C', values=list(range(100)))


def test_hyperband_brackets_as_li_et_al_table():
    # Li et al. (2018), Table 1: R = 81, eta = 3
    table = [[(b.rungs[i].count, b.rungs[i].resource) for i in range(len(b.rungs))]
             for b in hyperband_brackets(1, 81, 3)]
    assert table == [[(81, 1), (27, 3), (9, 9), (3, 27), (1, 81)], [(34, 3), (11, 9), (3, 27), (1, 81)],
                     [(15, 9), (5, 27), (1, 81)], [(8, 27), (2, 81)], [(5, 81)]]
    # the Batch AI recipe: 16 configurations for 1 epoch, the best 4 for 4, the best 1 for 16
    assert [(r.count, r.resource) for r in hyperband_brackets(1, 16, 4)[0].rungs] == [(16, 1), (4, 4), (1, 16)]


def _finish(trials, score):
    return [replace(t, state='succeeded', reports=(Report(step=float(t.resource), value=score(t)),))
            if t.pending else t for t in trials]


def test_hyperband_promotes_the_best_quarter_as_new_jobs_with_parents():
    sampler = HyperbandSampler([SPEC], 'max', 1, 16, 4, seed=3, resource='EPOCHS')
    first = sampler.suggest([], 100)
    # promotions come first, then new configurations, most aggressive bracket first: 16 + 6 + 3 at rung 0
    assert [(s.bracket, s.rung) for s in first] == [(2, 0)] * 16 + [(1, 0)] * 6 + [(0, 0)] * 3
    assert all(s.resource == {2: 1, 1: 4, 0: 16}[s.bracket] and s.parent is None for s in first)
    trials = [Trial(name='j{}'.format(i), index=i, params=s.params, state='running', resource=s.resource,
                    bracket=s.bracket, rung=s.rung, slot=s.slot) for i, s in enumerate(first)]
    assert sampler.suggest(trials, 10) == []  # nothing until a rung has finished
    score = lambda t: float(t.params['C'])  # noqa: E731 (the larger C, the better)
    trials = _finish(trials, score)
    promoted = sampler.suggest(trials, 100)
    bracket2 = sorted(((t.params['C'], t.name) for t in trials if t.bracket == 2), reverse=True)[:4]
    assert sorted(s.params['C'] for s in promoted if s.bracket == 2) == sorted(c for c, _ in bracket2)
    assert {s.parent for s in promoted if s.bracket == 2} == {name for _, name in bracket2}
    assert all(s.rung == 1 and s.resource == 4 for s in promoted if s.bracket == 2)
    explained = sampler.explain(trials)
    assert sum(d.kind == PROMOTED for d in explained.values()) == 4 + 1  # bracket 2 keeps 4, bracket 1 keeps 1
    worst = min((t for t in trials if t.bracket == 2), key=score)
    assert explained[worst.name].kind == NOT_PROMOTED
    assert explained[worst.name].text.startswith('not promoted by hyperband: rank 16/16 at EPOCHS 1 (')
    assert explained[worst.name].text.endswith('), the best 4 go on')
    assert not sampler.exhausted(trials)


def test_hyperband_is_the_same_whatever_the_concurrency():
    def run(concurrency):
        sampler = HyperbandSampler([SPEC], 'max', 1, 27, 3, seed=11)
        trials, _, end = simulate(Controller(sampler, None, Limits(max_concurrent_jobs=concurrency)),
                                  lambda params: [params['C'] * (1 - 0.5 ** s) for s in range(1, 28)])
        assert end == 'exhausted'
        return sorted((t.bracket, t.rung, t.slot, t.params['C']) for t in trials)
    assert run(1) == run(5) == run(100)


def test_grid_and_random_samplers_follow_create_and_skip_what_is_there():
    specs = [DiscreteParamSpec(parameterName='A', values=[1, 2, 3]),
             NumParamSpec(parameterName='B', start=0.1, end=1.0, dataType='REAL', scale='LOG', numValues=2)]
    grid = GridSampler(specs)
    planned = [job.parameters for job in ParameterSweep(specs).generate_jobs({'properties': {}})]
    assert [s.params for s in grid.suggest([], 100)] == planned
    present = [Trial(name='x', index=0, params=planned[1], state='running')]
    assert [s.params for s in grid.suggest(present, 2)] == [planned[0], planned[2]]
    rand = RandomSampler(specs, 4, seed=5)
    drawn = [job.parameters for job in ParameterSweep(specs).generate_jobs_random_search({'properties': {}}, 4,
                                                                                           seed=5)]
    assert [s.params for s in rand.suggest([], 10)] == drawn
    assert rand.exhausted([Trial(name=str(i), index=i, params=p, state='succeeded') for i, p in enumerate(drawn)])


def test_controller_holds_max_concurrent_and_max_total():
    seen = []

    class Watch(Controller):
        def step(self, trials, elapsed_seconds=0.0):
            seen.append(sum(t.pending for t in trials))
            return super().step(trials, elapsed_seconds)
    controller = Watch(GridSampler([SPEC]), None, Limits(max_total_jobs=10, max_concurrent_jobs=3))
    trials, _, end = simulate(controller, lambda params: [0.5] * 4)
    assert end == 'maxTotalJobs' and len(trials) == 10 and max(seen) == 3


def test_controller_timeout_terminates_running_jobs_and_ends():
    controller = Controller(GridSampler([SPEC]), None, Limits(max_concurrent_jobs=2, timeout_minutes=0.1))
    trials, ticks, end = simulate(controller, lambda params: [0.5] * 100)  # a tick is a second: 6 ticks
    assert end == 'timeout' and ticks == 6
    assert {d.kind for d in controller.decisions.values()} == {'timeout'} and len(controller.decisions) == 2


def test_controller_judges_each_report_once_and_stops_with_bandit():
    curves = {0: [0.5, 0.6, 0.7, 0.8], 1: [0.1, 0.2, 0.3, 0.4], 2: [0.45, 0.55, 0.65, 0.75]}
    spec = DiscreteParamSpec(parameterName='C', values=[0, 1, 2])
    controller = Controller(GridSampler([spec]), make_policy({'policy': 'bandit', 'slackFactor': 0.2,
                                                              'delayEvaluation': 2}, 'max', 'epoch'),
                            Limits(max_concurrent_jobs=3))
    trials, _, end = simulate(controller, lambda params: curves[params['C']])
    assert end == 'exhausted'
    states = {t.params['C']: t.state for t in trials}
    assert states == {0: 'succeeded', 1: 'terminated', 2: 'succeeded'}
    decision = controller.decisions[next(t.name for t in trials if t.params['C'] == 1)]
    assert decision.text.startswith('stopped at epoch 2 by bandit: 0.2 < 0.6 / 1.2')


def test_a_controller_restarted_from_the_trials_alone_decides_the_same():
    """Grid, seeded random and Hyperband: new controllers (no memory) at several ticks submit the same jobs."""
    import random as stdlib_random
    specs = [DiscreteParamSpec(parameterName='C', values=list(range(40)))]

    def curve(params):
        return [params['C'] / 40 * (1 - 0.6 ** s) + 0.01 * ((params['C'] * 7 + s) % 3) for s in range(1, 28)]

    factories = {
        'grid': lambda: Controller(GridSampler(specs), None, Limits(max_concurrent_jobs=4, max_total_jobs=30)),
        'random': lambda: Controller(RandomSampler(specs, 25, seed=3), None, Limits(max_concurrent_jobs=5)),
        'hyperband': lambda: Controller(HyperbandSampler(specs, 'max', 1, 27, 3, seed=5), None,
                                        Limits(max_concurrent_jobs=6, max_total_jobs=200)),
    }
    for kind, factory in factories.items():
        whole, _, end = simulate(factory(), curve)
        ticks = stdlib_random.Random(kind).sample(range(1, 60), 6)
        resumed, _, end_resumed = simulate(factory(), curve, restarts={tick: factory for tick in ticks})
        assert end == end_resumed, kind
        key = (lambda t: (t.bracket, t.rung, t.slot, t.params['C'])) if kind == 'hyperband' else \
            (lambda t: t.params['C'])
        assert sorted(map(key, whole)) == sorted(map(key, resumed)), kind
        if kind == 'hyperband':
            assert len(whole) == 27 + 9 + 3 + 1 + 12 + 4 + 1 + 6 + 2 + 4
