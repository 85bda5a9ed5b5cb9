"""Warm start (issue 28, item 3): which jobs of an earlier sweep are inherited (names, types, ranges), what is said of
the rest, exported results files read as `metrics -o json` and `report -o json` write them, and samplers that learn
from the inherited jobs without running them again or counting them."""
import random as stdlib_random

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.controller import Limits
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler, inherited_weight
from azext_batchai_sweep.core.tuning.simulation import simulate, sweep_controller, warm_start
from azext_batchai_sweep.core.tuning.trial import Report, Trial
from azext_batchai_sweep.core.tuning.warmstart import Record, inherit, is_file_source, records_from_document

SPECS = [NumParamSpec('LR', 1e-4, 1e-1, 'REAL', 'LOG'), NumParamSpec('LAYERS', 1, 4, 'INTEGER', 'LINEAR'),
         DiscreteParamSpec(parameterName='OPT', values=['adam', 'sgd'])]
GOOD = {'LR': 0.01, 'LAYERS': 2, 'OPT': 'adam'}


def record(name, value=0.5, state='succeeded', metric='acc', **params):
    return Record(name, state, dict(GOOD, **params), [(1.0, value / 2), (2.0, value)] if value is not None else [],
                  metric=metric)


def test_matching_names_types_and_ranges_and_what_is_said():
    sources = [('old', [
        record('ok'),
        record('extra', DROPOUT=0.5),                 # a parameter this sweep has not: ignored, the job inherited
        record('far', LR=0.5),                        # out of range
        record('word', LR='fast'),                    # not a number
        record('neg', LR=-1.0),                       # LOG here: not positive
        record('opt', OPT='rmsprop'),                 # not among the values
        record('half', LAYERS=2.5),                   # off the INTEGER grid
        record('failed', value=None, state='failed'),  # taught nothing
        record('stopped', state='terminated'),        # stopped early by a rule: teaches as the sweep's own do
        Record('missing', 'succeeded', {'LR': 0.01, 'OPT': 'sgd'}, [(1.0, 0.3)], metric='acc'),
    ]), ('other-metric', [record('x', metric='loss')])]
    inheritance = inherit(sources, SPECS, metric='acc')
    assert [(t.name, t.state, t.stopped_early, t.index) for t in inheritance.trials] == [
        ('ok', 'succeeded', False, -3), ('extra', 'succeeded', False, -2), ('stopped', 'terminated', True, -1)]
    assert inheritance.trials[1].params == GOOD and inheritance.trials[0].last == 0.5
    assert inheritance.messages() == [
        'warmStart old: 3 finished job(s) inherited, 7 skipped',
        'warmStart old: 1 job(s) failed or reported no value of the objective: skipped',
        'warmStart old: 1 job(s) has a value of LAYERS that is not an integer (the parameter is INTEGER here): '
        'skipped',
        'warmStart old: 1 job(s) has a value of LR outside this sweep\'s range (or off its grid): skipped',
        'warmStart old: 1 job(s) has a value of LR that is not a number (the parameter is numeric here): skipped',
        'warmStart old: 1 job(s) has a value of LR that is not positive (the parameter is LOG here): skipped',
        'warmStart old: 1 job(s) has a value of OPT that is not one of this sweep\'s values: skipped',
        'warmStart old: 1 job(s) has no parameter LAYERS: skipped',
        'warmStart old: parameter DROPOUT (1 job(s)) is not one of this sweep\'s: ignored',
        'warmStart other-metric: 0 finished job(s) inherited, 1 skipped',
        'warmStart other-metric: measured by loss and this sweep by acc: skipped',
    ]
    summary = inheritance.summary()
    assert summary['inherited'] == 3 and summary['jobs'][0] == {'source': 'old', 'name': 'ok', 'parameters': GOOD,
                                                                'objective': 0.5, 'resource': None}
    # a regex objective (no metric name) takes any source; Hyperband's resource is read from its placeholder
    assert len(inherit(sources, SPECS).trials) == 4
    hb = inherit([('hb', [record('r', EPOCHS=9)])], SPECS, resource_name='EPOCHS').trials
    assert hb[0].resource == 9.0 and 'EPOCHS' not in hb[0].params


def test_results_files_of_metrics_and_report():
    rows = [{'name': 'a', 'state': 'succeeded', 'parameters': GOOD, 'metric': 0.7, 'metricName': 'acc',
             'error': None},
            {'name': 'b', 'state': 'running', 'parameters': GOOD, 'metric': None, 'metricName': 'acc'}]
    records = records_from_document(rows, 'm.json', 'sampling.warmStart[0]')
    assert [(r.name, r.state, r.reports, r.metric) for r in records] == [
        ('a', 'succeeded', ((0.0, 0.7),), 'acc'), ('b', 'running', (), 'acc')]
    report = {'kind': 'batchai-sweep-report', 'objective': {'metric': 'acc', 'goal': 'max'},
              'jobs': [{'name': 'c', 'state': 'succeeded', 'parameters': GOOD, 'objective': 0.6,
                        'reports': [[1, 0.4], [3, 0.6]], 'resource': 3}]}
    (c,) = records_from_document(report, 'r.json', 'sampling.warmStart[1]')
    assert (c.reports, c.resource, c.metric) == (((1.0, 0.4), (3.0, 0.6)), 3.0, 'acc')
    for bad in ({'jobs': []}, [{'name': 'x'}], {'kind': 'batchai-sweep-report'}, 'text'):
        with pytest.raises(SpecError) as info:
            records_from_document(bad, 'bad.json', 'sampling.warmStart[0]')
        assert info.value.path == 'sampling.warmStart[0]'
        assert 'az batchai sweep metrics -o json' in info.value.message and 'bad.json' in info.value.message
    assert is_file_source('old.json') and is_file_source('runs/old') and not is_file_source('lr-sweep')


def test_the_tpe_learns_from_inherited_jobs_without_running_or_counting_them():
    specs = [NumParamSpec('C', 0, 19, 'INTEGER', 'LINEAR')]
    old = [Trial(name='o{}'.format(c), index=0, params={'C': c}, state='succeeded',
                 reports=(Report(1.0, -abs(c - 15)),)) for c in range(0, 20, 2)]
    inherited, messages = warm_start({'old': old}, specs)
    assert messages == ['warmStart old: 10 finished job(s) inherited, 0 skipped'] and len(inherited) == 10
    warm = TPESampler(specs, 'max', seed=1, count=5, startup_jobs=10, inherited=inherited)
    suggestions = warm.suggest([], 10)
    assert len(suggestions) == 5  # count is this sweep's jobs: the inherited ones are not counted
    picked = [s.params['C'] for s in suggestions]
    assert not set(picked) & set(range(0, 20, 2))  # nothing is run again
    assert 'TPE over 10 jobs' in suggestions[0].note and abs(picked[0] - 15) <= 2
    cold = TPESampler(specs, 'max', seed=1, count=5, startup_jobs=10).suggest([], 1)[0]
    assert 'random startup job' in cold.note
    # a finite space covered by inherited and own jobs is exhausted
    rest = [Trial(name='n{}'.format(c), index=k, params={'C': c}, state='succeeded', reports=(Report(1.0, 0.0),))
            for k, c in enumerate(range(1, 20, 2))]
    assert TPESampler(specs, 'max', seed=1, inherited=inherited).exhausted(rest)
    assert not TPESampler(specs, 'max', seed=1).exhausted(rest)


def test_bohb_counts_inherited_results_at_their_resource():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    rng = stdlib_random.Random(0)
    old = [Trial(name='h{}'.format(k), index=k, params={'X': rng.random()}, state='succeeded', resource=9,
                 reports=(Report(9.0, 0.1 * k),)) for k in range(4)]
    inherited, _ = warm_start({'hb': old}, specs)
    controller = sweep_controller(specs, {'type': 'hyperband', 'sampler': 'bayesian', 'resource': 'EPOCHS',
                                          'minResource': 1, 'maxResource': 9, 'seed': 2, 'randomFraction': 0,
                                          'warmStart': ['hb']}, inherited=inherited)
    first = controller.sampler.suggest([], 1)[0]
    assert first.note.endswith('TPE on the 4 results at EPOCHS 9')  # d + 3 = 4: the model from the first job
    cold = sweep_controller(specs, {'type': 'hyperband', 'sampler': 'bayesian', 'resource': 'EPOCHS',
                                    'minResource': 1, 'maxResource': 9, 'seed': 2, 'randomFraction': 0})
    assert cold.sampler.suggest([], 1)[0].note.endswith('random (no EPOCHS has 4 results yet; most: 0)')


def test_a_warm_started_run_resumed_from_its_jobs_decides_the_same():
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR'), NumParamSpec('Y', 0.0, 1.0, 'REAL', 'LINEAR')]

    def curve(params):
        return [-(params['X'] - 0.3) ** 2 - (params['Y'] - 0.6) ** 2] * 3
    old, _, _ = simulate(sweep_controller(specs, {'type': 'random', 'count': 15, 'seed': 9}), curve)
    inherited, _ = warm_start({'old': old}, specs)

    def factory():
        return sweep_controller(specs, {'type': 'bayesian', 'count': 12, 'seed': 4, 'startupJobs': 5},
                                limits=Limits(max_concurrent_jobs=3), inherited=inherited)
    whole, _, end = simulate(factory(), curve)
    resumed, _, end_resumed = simulate(factory(), curve, restarts={2: factory, 5: factory, 7: factory})
    assert end == end_resumed == 'exhausted' and len(whole) == 12
    assert [t.params for t in whole] == [t.params for t in resumed]
    cold, _, _ = simulate(sweep_controller(specs, {'type': 'bayesian', 'count': 12, 'seed': 4, 'startupJobs': 5},
                                           limits=Limits(max_concurrent_jobs=3)), curve)
    assert max(t.last for t in whole) > max(t.last for t in cold)


def test_a_large_export_is_read_and_odd_rows_do_not_break_it(tmp_path):
    """An export is larger than a sweep file may be (1 MiB): 8,000 metrics rows; a report's job whose reports are not
    a list keeps its objective."""
    from azext_batchai_sweep.core.tuning.warmstart import read_results_file
    import json
    rows = [{'name': 'job-{:05d}'.format(k), 'state': 'succeeded', 'parameters': dict(GOOD, LR=10 ** (-1 - k % 3)),
             'metric': k / 8000, 'metricName': 'acc', 'error': None} for k in range(8000)]
    path = tmp_path / 'big.json'
    path.write_text(json.dumps(rows))
    assert path.stat().st_size > 1024 * 1024
    records = read_results_file(str(path), 'sampling.warmStart[0]')
    assert len(records) == 8000 and len(inherit([('big', records)], SPECS, metric='acc').trials) == 8000
    report = {'kind': 'batchai-sweep-report', 'objective': {'metric': 'acc'},
              'jobs': [{'name': 'odd', 'state': 'succeeded', 'parameters': GOOD, 'objective': 0.4, 'reports': 7}]}
    (odd,) = records_from_document(report, 'r.json', 'sampling.warmStart[0]')
    assert odd.reports == ((0.0, 0.4),)


def test_inherited_jobs_weigh_less_as_the_sweeps_own_results_arrive():
    assert [inherited_weight(n, 3) for n in (0, 3, 6, 15, 57)] == [1.0, 0.5, pytest.approx(1 / 3), pytest.approx(1 / 6),
                                                                   pytest.approx(0.05)]
    assert inherited_weight(10, 10) == 0.5


def _shifted_warm_start():
    """An earlier sweep on other data: its optimum at X = 0.9 and every value of it better than any of this sweep's,
    whose own optimum is at X = 0.1."""
    specs = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    old = [Trial(name='o{}'.format(k), index=k, params={'X': k / 39}, state='succeeded',
                 reports=(Report(1.0, 10 - (k / 39 - 0.9) ** 2),)) for k in range(40)]
    inherited, _ = warm_start({'old': old}, specs)

    def own(count):
        return [Trial(name='j{}'.format(k), index=k, params={'X': (k + 0.5) / count}, state='succeeded',
                      reports=(Report(1.0, -((k + 0.5) / count - 0.1) ** 2),)) for k in range(count)]
    return specs, inherited, own


@pytest.mark.parametrize('own_results', [20, 35])
def test_a_warm_started_tpe_follows_its_own_results_over_an_earlier_sweeps(own_results):
    specs, inherited, own = _shifted_warm_start()
    trials = own(own_results)
    (_, below, _), = TPESampler(specs, 'max', seed=1, inherited=inherited).models(trials)
    assert below.log_pdf((0.1,)) > below.log_pdf((0.9,))  # l: the sweep's own good region is the likelier
    suggestion = TPESampler(specs, 'max', seed=1, inherited=inherited).suggest(trials, 1)[0]
    assert abs(suggestion.params['X'] - 0.1) < 0.2
    # ranked with the sweep's own jobs (inherited_half_weight=None), the earlier sweep's better values fill l
    (_, ranked_together, _), = TPESampler(specs, 'max', seed=1, inherited=inherited,
                                          inherited_half_weight=None).models(trials)
    assert ranked_together.log_pdf((0.9,)) > ranked_together.log_pdf((0.1,))


def test_before_its_own_results_a_warm_start_is_the_inherited_jobs_model():
    specs, inherited, own = _shifted_warm_start()
    pending = [Trial(name='j0', index=0, params={'X': 0.5}, state='running')]
    for trials in ([], pending):
        weighted = TPESampler(specs, 'max', seed=1, inherited=inherited).models(trials)
        alike = TPESampler(specs, 'max', seed=1, inherited=inherited, inherited_half_weight=None).models(trials)
        for x in (0.05, 0.5, 0.9):
            assert weighted[0][1].log_pdf((x,)) == pytest.approx(alike[0][1].log_pdf((x,)))
            if not trials:  # (a pending job is among g's newest either way; the inherited ones' age ramp differs)
                assert weighted[0][2].log_pdf((x,)) == pytest.approx(alike[0][2].log_pdf((x,)))
    # with results of its own the two differ
    weighted = TPESampler(specs, 'max', seed=1, inherited=inherited).models(own(5))
    alike = TPESampler(specs, 'max', seed=1, inherited=inherited, inherited_half_weight=None).models(own(5))
    assert weighted[0][1].log_pdf((0.1,)) > alike[0][1].log_pdf((0.1,)) + 0.5


def test_a_warm_started_tpe_resumed_past_its_startup_decides_the_same():
    specs, inherited, _ = _shifted_warm_start()

    def curve(params):
        return [-(params['X'] - 0.1) ** 2] * 2

    def factory():
        return sweep_controller(specs, {'type': 'bayesian', 'count': 20, 'seed': 7, 'startupJobs': 3},
                                limits=Limits(max_concurrent_jobs=2), inherited=inherited)
    whole, _, _ = simulate(factory(), curve)
    resumed, _, _ = simulate(factory(), curve, restarts={4: factory, 9: factory, 15: factory})
    assert len(whole) == 20 and [t.params for t in whole] == [t.params for t in resumed]
    # it starts at the earlier sweep's optimum (0.9) and moves to its own (0.1); ranked alike, all 20 stay near 0.9
    near = [t for t in whole[10:] if abs(t.params['X'] - 0.1) < 0.25]
    assert abs(whole[0].params['X'] - 0.9) < 0.1 and len(near) >= 6, [round(t.params['X'], 2) for t in whole]
