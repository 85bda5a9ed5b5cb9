"""report_data's rules that mutation testing found unchecked: the summary's compute from a `sweep run`'s figures
(saved job-seconds and fraction, rounding, missing or zero counts, counts too large for a float) and from its jobs
alone (durations, running jobs' time so far, the steps and seconds a stopped job saved), the learning curves' band
once more than 200 steps were reported (200 steps, evenly picked, both ends kept), and the live report's memo."""
import sys

import pytest

from azext_batchai_sweep.core.report.collect import sweep_record
from azext_batchai_sweep.core.report.data import report_data
from azext_batchai_sweep.core.report.model import Objective
from azext_batchai_sweep.core.tuning.trial import Report, Trial

from .synthetic import synthetic_record

BIGGEST = sys.float_info.max


def _compute(job_steps, saved, seconds, full):
    figures = {'compute': {'jobSteps': job_steps, 'jobStepsSaved': saved, 'jobSeconds': seconds,
                           'jobStepsFull': full}}
    return report_data(synthetic_record(3, epochs=4), figures=figures)['summary']['compute']


@pytest.mark.parametrize('figures, expected', [
    # a quarter of the steps saved: a quarter of the seconds; the fraction of what a full run would take
    ((100, 25, 80.0, 125), {'jobSeconds': 80.0, 'jobSteps': 100, 'savedJobSteps': 25, 'savedJobSeconds': 20.0,
                            'savedFraction': 0.2}),
    # rounded: seconds to 3 decimals, the fraction to 4
    ((3, 1, 1.0, 3), {'jobSeconds': 1.0, 'jobSteps': 3, 'savedJobSteps': 1, 'savedJobSeconds': 0.333,
                      'savedFraction': 0.3333}),
    ((7, 2, 1.0, 9), {'jobSeconds': 1.0, 'jobSteps': 7, 'savedJobSteps': 2, 'savedJobSeconds': 0.286,
                      'savedFraction': 0.2222}),
    # no seconds known: none saved, and the seconds are 0.0 (not None)
    ((100, 25, None, 125), {'jobSeconds': 0.0, 'jobSteps': 100, 'savedJobSteps': 25, 'savedJobSeconds': 0.0,
                            'savedFraction': 0.2}),
    # nothing run yet, no full run known: 0.0 each, never a division by zero
    ((0, 0, 12.5, 0), {'jobSeconds': 12.5, 'jobSteps': 0, 'savedJobSteps': 0, 'savedJobSeconds': 0.0,
                       'savedFraction': 0.0}),
])
def test_a_runs_compute_is_its_figures_with_what_was_saved(figures, expected):
    assert _compute(*figures) == expected


@pytest.mark.parametrize('saved, used, sign', [(10 ** 400, 3, 1), (-10 ** 400, 3, -1), (10 ** 400, -3, -1),
                                               (-10 ** 400, -3, 1), (10 ** 400, 1, 1), (-10 ** 400, 1, -1)])
def test_counts_too_large_for_a_float_give_the_largest_float_with_their_sign(saved, used, sign):
    compute = _compute(used, saved, 2.0, used)
    assert compute['savedFraction'] == sign * BIGGEST
    assert compute['savedJobSeconds'] == sign * BIGGEST


def test_huge_counts_whose_ratio_fits_give_that_ratio():
    compute = _compute(10 ** 400, 10 ** 399, 50.0, 2 * 10 ** 399)
    assert compute['savedJobSeconds'] == 5.0 and compute['savedFraction'] == 0.5


def _curves_record(jobs, steps):
    """`jobs` jobs each reporting at every step of `steps`; job i's value at step s is i + s / 1000."""
    trials = [Trial(name='j{:04d}'.format(i), index=i, params={'X': i}, state='succeeded',
                    reports=tuple(Report(float(s), i + s / 1000.0) for s in steps), stopped_early=False, extra={})
              for i in range(jobs)]
    return sweep_record('band', Objective(metric='m', goal='max', step='epoch'), trials)


@pytest.mark.parametrize('count', [201, 450])
def test_a_band_of_more_than_200_steps_holds_200_evenly_picked_with_both_ends(count):
    steps = [10 * s for s in range(count)]
    plot = report_data(_curves_record(205, steps))['plots']['learningCurves']
    assert len(plot['drawn']) == 200 and plot['jobs'] == 205
    band = plot['band']
    picked = [steps[round(i * (count - 1) / 199)] for i in range(200)]
    assert [row[0] for row in band] == [float(s) for s in picked]
    assert band[0][0] == 0.0 and band[-1][0] == float(steps[-1])
    # each row: the 10%, 50% and 90% of the 205 jobs' values at that step (job i: i + step / 1000)
    for step, q10, median, q90 in (band[0], band[100], band[-1]):
        assert (q10, median, q90) == pytest.approx((20.4 + step / 1000, 102 + step / 1000, 183.6 + step / 1000))


def test_a_band_of_exactly_200_steps_holds_each_of_them():
    steps = list(range(200))
    band = report_data(_curves_record(205, steps))['plots']['learningCurves']['band']
    assert [row[0] for row in band] == [float(s) for s in steps]


def test_a_memo_gives_a_copy_of_its_result_again_for_the_same_inputs_in_any_key_order():
    from azext_batchai_sweep.core.report.data import Memo
    import datetime
    memo, calls = Memo(), []

    def compute():
        calls.append(1)
        return {'value': [len(calls)]}
    first = memo.get('importance', [{'b': 1, 'a': 2}], compute)
    first['value'].append('changed by the caller')
    assert memo.get('importance', [{'a': 2, 'b': 1}], compute) == {'value': [1]} and len(calls) == 1
    assert memo.get('importance', [{'a': 3, 'b': 1}], compute) == {'value': [2]}, 'other inputs: computed again'
    when = datetime.datetime(2026, 11, 23)  # inputs JSON cannot write are compared by their text
    assert memo.get('expected', [when], compute) == {'value': [3]}
    assert memo.get('expected', [when], compute) == {'value': [3]} and len(calls) == 3


# ---- the compute of a sweep without a run's figures (from its jobs) ------------------------------------------------

GENERATED = '2026-11-23T12:00:00+00:00'


def _trial(name, state, steps=(), duration=None, start=None, stopped=False):
    from azext_batchai_sweep.core.report.model import EXTRA_DURATION, EXTRA_START
    return Trial(name=name, index=int(name[1:]), params={'X': 1}, state=state,
                 reports=tuple(Report(float(s), 0.5) for s in steps), stopped_early=stopped,
                 extra={EXTRA_DURATION: duration, EXTRA_START: start})


def _jobs_compute(*trials):
    record = sweep_record('c', Objective(metric='m', goal='max', step='epoch'), list(trials), generated_at=GENERATED)
    return report_data(record)['summary']['compute']


def test_the_seconds_are_the_jobs_durations_summed_and_rounded_to_milliseconds():
    compute = _jobs_compute(_trial('j1', 'succeeded', (1, 2), 1.0004), _trial('j2', 'failed', (1,), 2.0002),
                            _trial('j3', 'succeeded', (1,), None))
    assert compute == {'jobSeconds': 3.001, 'jobSteps': 4.0, 'savedJobSteps': 0.0, 'savedJobSeconds': 0.0,
                       'savedFraction': 0.0}


@pytest.mark.parametrize('start, seconds', [('2026-11-23T11:59:00+00:00', 60.0), ('2026-11-23T11:58:30Z', 90.0),
                                            ('2026-11-23T12:00:30+00:00', 0.0), ('not a time', 0.0), (None, 0.0)])
def test_a_running_job_counts_the_seconds_from_its_start_to_the_reports_time(start, seconds):
    compute = _jobs_compute(_trial('j1', 'succeeded', (1,), 10.0), _trial('j2', 'running', (1,), None, start),
                            _trial('j3', 'succeeded', (1,), None, '2026-11-23T11:00:00+00:00'))
    assert compute['jobSeconds'] == 10.0 + seconds, 'a finished job without a duration counts none'


def test_a_stopped_job_saves_the_steps_to_the_longest_finished_run_at_its_own_pace():
    # j1 ran 4 steps in 40 s; j2 was stopped at step 1 after 10 s: 3 steps saved, at 10 s a step
    compute = _jobs_compute(_trial('j1', 'succeeded', (1, 2, 3, 4), 40.0), _trial('j2', 'terminated', (1,), 10.0,
                                                                                      stopped=True))
    assert compute == {'jobSeconds': 50.0, 'jobSteps': 5.0, 'savedJobSteps': 3.0, 'savedJobSeconds': 30.0,
                       'savedFraction': 0.375}
    thirds = _jobs_compute(_trial('j1', 'succeeded', (1, 2, 3, 4), 40.0), _trial('j2', 'terminated', (3,), 10.0,
                                                                                     stopped=True))
    assert thirds['savedJobSeconds'] == 3.333 and thirds['savedFraction'] == 0.1667


def test_nothing_is_saved_without_a_finished_run_longer_than_the_stopped_job():
    alone = _jobs_compute(_trial('j2', 'terminated', (0.5,), 10.0, stopped=True))
    assert alone['savedJobSteps'] == 0.0 and alone['savedJobSeconds'] == 0.0
    no_steps = _jobs_compute(_trial('j1', 'succeeded', (), 5.0), _trial('j2', 'terminated', (0.5,), 10.0,
                                                                        stopped=True))
    assert no_steps['savedJobSteps'] == 0.0 and no_steps['savedFraction'] == 0.0


def _medians(rows):
    """report_data's median lines for jobs (ACT, X, LR, objective), each reporting its objective once."""
    trials = [Trial(name='j%d' % i, index=i, state='succeeded', reports=(Report(1.0, objective),),
                    params={k: v for k, v in (('ACT', act), ('X', x), ('LR', lr)) if v is not None},
                    stopped_early=False, extra={})
              for i, (act, x, lr, objective) in enumerate(rows)]
    data = report_data(sweep_record('m', Objective(metric='m', goal='max', step='epoch'), trials))
    return data['plots']['objectiveVsParameter']['medians']


def test_the_median_line_is_each_categorys_or_each_of_12_bins_median_objective_with_its_count():
    medians = _medians([('relu', 0, 0.001, 1.0), ('relu', 2, 0.01, 3.0), ('tanh', 11, 0.1, 5.0),
                        ('relu', 12, 1.0, 7.0), ('tanh', 12, 1.0, 2.0), ('relu', 6, 0.0316, 4.0),
                        (None, 1, None, 9.0)])
    # relu: 1, 3, 4, 7 (median of an even count: the mean of the middle two); tanh: 2, 5; the job without ACT: none
    assert medians['ACT'] == [['relu', 3.5, 4], ['tanh', 3.5, 2]]
    # X from 0 to 12: 12 bins one wide, each drawn at its centre; a value on an edge is in the bin above, the
    # maximum in the last bin
    assert medians['X'] == [[0.5, 1.0, 1], [1.5, 9.0, 1], [2.5, 3.0, 1], [6.5, 4.0, 1], [11.5, 5.0, 3]]
    # LR from 1e-3 to 1 on a log scale: 12 bins a quarter of a decade wide, centres 10 ** (-3 + (bin + 0.5) / 4)
    expected = [(0, 1.0, 1), (4, 3.0, 1), (5, 4.0, 1), (8, 5.0, 1), (11, 4.5, 2)]
    assert medians['LR'] == [[pytest.approx(10 ** (-3 + (b + 0.5) / 4), rel=1e-12), m, n] for b, m, n in expected]


def test_a_parameter_with_one_value_has_no_median_line_but_its_category_has():
    medians = _medians([('relu', 3, 0.1, 1.0), ('relu', 3, 0.1, 2.0), ('relu', 3, 0.1, 6.0)])
    assert medians['X'] == [] and medians['LR'] == []
    assert medians['ACT'] == [['relu', 2.0, 3]]


def test_each_jobs_mark_follows_from_its_state_unless_it_is_the_best_or_was_stopped():
    states = ['succeeded', 'failed', 'terminated', 'terminating', 'running', 'queued', 'succeeded', 'terminated']
    trials = [Trial(name='j%d' % i, index=i, params={'X': i}, state=state, reports=(Report(1.0, float(i)),),
                    stopped_early=i == 7, extra={})
              for i, state in enumerate(states)]
    data = report_data(sweep_record('m', Objective(metric='m', goal='min', step='epoch'), trials))
    assert [job['mark'] for job in data['jobs']] == ['best', 'failed', 'failed', 'running', 'running', 'running',
                                                     'finished', 'stopped']


@pytest.mark.parametrize('decision, reports, best', [
    # stopped at step 2: the lines it printed while being terminated (steps 3, 4) are not the sweep's
    ({'action': 'stopped', 'step': 2}, [[1.0, 5.0], [2.0, 3.0]], 3.0),
    # not promoted (Hyperband): it ran its rung to the end, nothing is cut
    ({'action': 'not promoted', 'step': 2}, [[1.0, 5.0], [2.0, 3.0], [3.0, 1.0], [4.0, 4.0]], 1.0),
    (None, [[1.0, 5.0], [2.0, 3.0], [3.0, 1.0], [4.0, 4.0]], 1.0),
])
def test_a_jobs_row_is_its_reports_up_to_the_step_that_stopped_it_with_its_best_and_its_end(decision, reports,
                                                                                             best):
    extra = {'endTime': '2026-11-29T01:02:03Z', 'exitCode': 137, 'error': 'killed by SIGTERM',
             **({'decision': decision} if decision else {})}
    trial = Trial(name='j0', index=0, params={'X': 1}, state='terminated', stopped_early=False, extra=extra,
                  parent='j9',
                  reports=tuple(Report(s, v) for s, v in ((1.0, 5.0), (2.0, 3.0), (3.0, 1.0), (4.0, 4.0))))
    other = Trial(name='j1', index=1, params={'X': 2}, state='succeeded', reports=(Report(1.0, 9.0),),
                  stopped_early=False, extra={})
    data = report_data(sweep_record('m', Objective(metric='m', goal='min', step='epoch'), [trial, other]))
    row = data['jobs'][0]
    assert (row['reports'], row['objective'], row['lastStep'], row['bestValue']) == (
        reports, reports[-1][1], reports[-1][0], best)
    assert (row['endTime'], row['exitCode'], row['stoppedEarly']) == ('2026-11-29T01:02:03Z', 137, bool(decision))
    assert (row['error'], row['parent'], data['jobs'][1]['error'], data['jobs'][1]['parent']) == (
        'killed by SIGTERM', 'j9', None, None)


def test_a_job_that_broke_a_constraint_is_marked_with_it_and_is_never_the_best():
    trials = [Trial(name='j%d' % i, index=i, params={'X': i}, state='succeeded', reports=(Report(1.0, value),),
                    stopped_early=False, extra={}) for i, value in enumerate([1.0, 9.0, 8.0])]
    figures = {'compute': {'jobSteps': 3, 'jobStepsSaved': 0, 'jobSeconds': 3.0, 'jobStepsFull': 3},
               'pareto': {'infeasible': [{'name': 'j1', 'failed': 'latency <= 5'}, {'name': 'j2'}]}}
    data = report_data(sweep_record('m', Objective(metric='m', goal='max', step='epoch'), trials), figures=figures)
    assert [job['infeasible'] for job in data['jobs']] == [None, 'latency <= 5', 'a constraint']
    assert [job['mark'] for job in data['jobs']] == ['best', 'finished', 'finished']


def _time(*jobs):
    """report_data's time span for jobs (state, start, end), in this order of index."""
    trials = [Trial(name='j%d' % i, index=i, params={'X': i}, state=state, reports=(Report(1.0, 1.0),),
                    stopped_early=False, extra={'startTime': start, 'endTime': end})
              for i, (state, start, end) in enumerate(jobs)]
    return report_data(sweep_record('t', Objective(metric='m', goal='max', step='epoch'), trials))['summary']['time']


def test_the_time_span_is_the_first_start_and_the_last_end_unless_a_job_is_still_pending():
    ended = [('succeeded', '2026-11-29T10:05:00Z', '2026-11-29T11:00:00Z'),
             ('failed', '2026-11-29T10:00:00Z', '2026-11-29T12:00:00Z'),
             ('succeeded', None, None),
             ('terminated', '2026-11-29T10:10:00Z', '2026-11-29T10:30:00Z')]
    assert _time(*ended) == {'firstStart': '2026-11-29T10:00:00Z', 'lastEnd': '2026-11-29T12:00:00Z',
                             'stillRunning': False}
    for state in ('queued', 'running', 'terminating'):
        assert _time(*ended, (state, '2026-11-29T09:00:00Z', None)) == {
            'firstStart': '2026-11-29T09:00:00Z', 'lastEnd': None, 'stillRunning': True}, state
    assert _time(('queued', None, None)) == {'firstStart': None, 'lastEnd': None, 'stillRunning': True}
    assert _time(('succeeded', None, None)) == {'firstStart': None, 'lastEnd': None, 'stillRunning': False}


@pytest.mark.parametrize('asked, keys, expected', [
    ('epoch', ['iteration', 'iteration'], 'epoch'),           # the key asked for, whatever the jobs read
    (None, ['iteration', 'iteration', None], 'iteration'),    # the one key of the jobs that reported (not the last)
    (None, ['iteration', 'epoch', 'epoch'], None),            # jobs that read different keys: none named
    (None, [None, None, 'epoch'], None),                      # numbered steps
    ('', ['step', 'step', 'epoch'], 'step'),                  # an empty key asked for is none asked for
])
def test_the_step_key_is_the_one_asked_for_else_the_one_every_reporting_job_read(asked, keys, expected):
    # the third job has no reports: its key is not read
    trials = [Trial(name='j%d' % i, index=i, params={'X': i}, state='succeeded',
                    reports=(Report(1.0, 1.0),) if i < 2 else (), stopped_early=False,
                    extra={'stepKey': key} if key else {})
              for i, key in enumerate(keys)]
    record = sweep_record('s', Objective(metric='m', goal='max', step=asked), trials)
    assert report_data(record)['stepKey'] == expected


def _curves_drawn(goal, lasts, firsts):
    """The learning curves drawn of len(lasts) jobs, job i reporting firsts[i] then lasts[i] (its objective)."""
    trials = [Trial(name='j%04d' % i, index=i, params={'X': i}, state='succeeded', stopped_early=False, extra={},
                    reports=(Report(1.0, first), Report(2.0, last)))
              for i, (first, last) in enumerate(zip(firsts, lasts))]
    return report_data(sweep_record('r', Objective(metric='m', goal=goal, step='epoch'), trials))[
        'plots']['learningCurves']['drawn']


@pytest.mark.parametrize('goal', ['min', 'max'])
def test_past_200_curves_the_best_twenty_by_last_value_are_drawn_first_in_their_order(goal):
    # 250 jobs, j0000 the best by its last value, then j0001, ...; zero (j0005) ranks as a number; each job's best
    # value (its first report, far better) ranks them the other way round: the last value decides
    sign = 1 if goal == 'min' else -1
    lasts = [sign * (i - 5) * 0.5 for i in range(250)]
    firsts = [sign * -(1000.0 + i) for i in range(250)]
    drawn = _curves_drawn(goal, lasts, firsts)
    assert drawn[:20] == ['j%04d' % i for i in range(20)]
    assert len(drawn) == 200 and len(set(drawn)) == 200
    assert drawn == _curves_drawn(goal, lasts, firsts), 'the same jobs drawn on every run'


@pytest.mark.parametrize('goal', ['min', 'max'])
def test_values_near_the_largest_float_are_ranked_by_value_not_by_name(goal):
    sign = 1 if goal == 'max' else -1
    lasts = [sign * (1e308 + i * 1e305) for i in range(250)]  # the best: j0249
    drawn = _curves_drawn(goal, lasts, lasts)
    assert drawn[:20] == ['j%04d' % i for i in range(249, 229, -1)]


def _record_of(rows, goal='max', sampling=None):
    """A record of jobs (state, reports' values), job i reporting its values at steps 1, 2, ..."""
    trials = [Trial(name='j%d' % i, index=i, params={'X': i}, state=state, stopped_early=False, extra={},
                    reports=tuple(Report(float(s), v) for s, v in enumerate(values, start=1)))
              for i, (state, values) in enumerate(rows)]
    return sweep_record('e', Objective(metric='m', goal=goal, step='epoch'), trials, sampling=sampling)


def test_learning_curves_need_a_job_that_reported_twice_and_say_why_not():
    once = report_data(_record_of([('succeeded', [1.0]), ('succeeded', [2.0])]))['plots']['learningCurves']
    assert once == {'available': False, 'jobs': 0, 'drawn': [], 'band': None,
                    'why': 'no job reported the objective more than once'}
    empty = report_data(_record_of([]))['plots']['learningCurves']
    assert empty == {'available': False, 'jobs': 0, 'drawn': [], 'band': None, 'why': 'the sweep has no jobs'}
    twice = report_data(_record_of([('succeeded', [1.0, 2.0]), ('succeeded', [3.0]), ('queued', [])]))
    assert twice['plots']['learningCurves'] == {'available': True, 'jobs': 2, 'drawn': ['j1', 'j0'], 'band': None,
                                                'why': None}


def test_random_searchs_expected_curve_is_the_expected_best_of_k_of_its_succeeded_jobs_values():
    from azext_batchai_sweep.core.report.data import Memo
    # succeeded 3 and 1 (goal min): best of 1 draw 2.0, of 2 draws 3/4 * 1 + 1/4 * 3 = 1.5; the failed job's 0 not
    rows = [('succeeded', [3.0]), ('failed', [0.0]), ('succeeded', [1.0]), ('running', [0.5])]
    for memo in (None, Memo()):
        curve = report_data(_record_of(rows, 'min', 'random'), memo=memo)['plots']['bestSoFar']['expectedRandom']
        assert curve == [[1, 2.0], [2, 1.5]]
    # max: best of 2 draws 3/4 * 3 + 1/4 * 1
    assert report_data(_record_of(rows, 'max', 'random'))['plots']['bestSoFar']['expectedRandom'] == [[1, 2.0],
                                                                                                      [2, 2.5]]
    assert report_data(_record_of(rows, 'min', 'grid'))['plots']['bestSoFar']['expectedRandom'] is None
    one = [('succeeded', [3.0]), ('failed', [0.0])]
    assert report_data(_record_of(one, 'min', 'random'))['plots']['bestSoFar']['expectedRandom'] is None


# ---- which jobs a plot draws (_sample): the ones it must, the best tenth, then a seeded sample -------------------

def _pool(count):
    """`count` job rows j00, j01, ..., ranked by `_by_rank` in reverse: the last is the best."""
    return [{'name': 'j%02d' % i, 'rank': -i} for i in range(count)]


def _by_rank(job):
    return job['rank']


def test_a_sample_draws_the_must_jobs_first_in_order_and_once_then_the_best_tenth_then_a_seeded_rest():
    from azext_batchai_sweep.core.report.data import _sample
    jobs = _pool(40)
    drawn = _sample(jobs, 20, ['j05', 'j07', 'j05', 'j01'], _by_rank)
    assert drawn[:5] == ['j05', 'j07', 'j01', 'j39', 'j38'], 'the must jobs once each, then the best 20 // 10'
    assert len(drawn) == 20 and len(set(drawn)) == 20
    assert drawn == _sample(jobs, 20, ['j05', 'j07', 'j05', 'j01'], _by_rank), 'the same jobs on every run'
    others = [_sample(jobs, 20, [], _by_rank, seed=seed)[2:] for seed in range(1, 4)]
    assert any(other != _sample(jobs, 20, [], _by_rank)[2:] for other in others), 'the rest: drawn by the seed'
    # a must job among the best is not drawn twice
    with_best = _sample(jobs, 20, ['j39'], _by_rank)
    assert with_best[:2] == ['j39', 'j38'] and len(set(with_best)) == 20


@pytest.mark.parametrize('limit, best', [(5, 1), (9, 1), (10, 1), (19, 1), (20, 2), (30, 3)])
def test_the_best_drawn_by_rank_are_a_tenth_of_the_limit_and_at_least_one(limit, best):
    from azext_batchai_sweep.core.report.data import _sample
    jobs = _pool(3 * limit)
    drawn = _sample(jobs, limit, [], _by_rank)
    assert drawn[:best] == ['j%02d' % (3 * limit - 1 - i) for i in range(best)]
    assert len(drawn) == limit and len(set(drawn)) == limit


def test_a_sample_never_holds_more_than_its_limit_even_of_must_jobs():
    from azext_batchai_sweep.core.report.data import _sample
    jobs = _pool(10)
    assert _sample(jobs, 3, ['j04', 'j02', 'j08', 'j01', 'j00'], _by_rank) == ['j04', 'j02', 'j08']
    assert _sample(jobs, 3, ['j04', 'j02'], _by_rank) == ['j04', 'j02', 'j09']
    room_for_one = _sample(jobs, 4, ['j04', 'j02'], _by_rank)
    assert room_for_one[:3] == ['j04', 'j02', 'j09'] and len(set(room_for_one)) == 4, 'the last place filled too'


@pytest.mark.parametrize('count', [6, 8])
def test_a_rest_that_fits_is_drawn_whole_in_the_jobs_order(count):
    from azext_batchai_sweep.core.report.data import _sample
    # limit 8: j03 (must) and the best (the last job), then the rest: 4 jobs (fewer than the room) or 6 (exactly it)
    jobs = _pool(count)
    rest = ['j%02d' % i for i in range(count - 1) if i != 3]
    assert _sample(jobs, 8, ['j03'], _by_rank) == ['j03', 'j%02d' % (count - 1)] + rest


def _shares_record(goal='max'):
    """A sweep whose best job is 'best'; four jobs stopped by a decision and four failed ones (each ranking worse
    than every other job), one of each without a report; 30 other jobs that ran to the end."""
    sign = 1 if goal == 'max' else -1
    rows = [('best', 'succeeded', False, [0.5, 100.0])]
    rows += [('stop%d' % i, 'terminated', True, [] if i == 0 else [0.1, -50.0 - i]) for i in range(4)]
    rows += [('fail%d' % i, 'failed', False, [] if i == 0 else [0.1, -60.0 - i]) for i in range(4)]
    rows += [('ok%02d' % i, 'succeeded', False, [0.3, float(i)]) for i in range(30)]
    trials = [Trial(name=name, index=k, params={'X': k}, state=state, stopped_early=stopped, extra={},
                    reports=tuple(Report(float(s), sign * v) for s, v in enumerate(values, start=1)))
              for k, (name, state, stopped, values) in enumerate(rows)]
    return sweep_record('shares', Objective(metric='m', goal=goal, step='epoch'), trials)


@pytest.mark.parametrize('goal', ['min', 'max'])
def test_past_the_limit_the_curves_drawn_first_are_the_best_then_a_fifth_stopped_then_a_fifth_failed(
        monkeypatch, goal):
    from azext_batchai_sweep.core.report import data
    monkeypatch.setattr(data, 'MAX_CURVES', 10)  # a fifth: 2 of each, of the jobs with a curve, in their order
    plot = report_data(_shares_record(goal))['plots']['learningCurves']
    assert plot['jobs'] == 37 and len(plot['drawn']) == 10 and len(set(plot['drawn'])) == 10
    assert plot['drawn'][:5] == ['best', 'stop1', 'stop2', 'fail1', 'fail2']
    assert not {'stop0', 'fail0'} & set(plot['drawn']), 'a job without a report has no curve'
    assert plot['band'] is not None, 'jobs left out: the band under the lines'
    monkeypatch.setattr(data, 'MAX_CURVES', 15)  # a fifth: 3 each
    assert report_data(_shares_record(goal))['plots']['learningCurves']['drawn'][:7] == [
        'best', 'stop1', 'stop2', 'stop3', 'fail1', 'fail2', 'fail3']


def _random_sweep(values, goal='min'):
    """A random search whose jobs all succeeded, job i reporting values[i] once."""
    trials = [Trial(name='r%03d' % i, index=i, params={'X': i}, state='succeeded', stopped_early=False, extra={},
                    reports=(Report(1.0, v),)) for i, v in enumerate(values)]
    return sweep_record('random', Objective(metric='m', goal=goal, step='epoch'), trials, sampling='random')


@pytest.mark.parametrize('finished, counts', [
    (5, [1, 2, 3, 4, 5]),          # up to the number of points: every count of jobs
    (6, [1, 2, 4, 6]),             # past it: round(6 ** (i / 4)) for i in 0..4, the equal roundings once
    (16, [1, 2, 4, 8, 16]),        # 16 ** (i / 4): evenly on a log scale, both ends
    (81, [1, 3, 9, 27, 81]),
])
def test_random_searchs_expected_curve_is_at_every_count_or_at_counts_evenly_spaced_on_a_log_scale(
        monkeypatch, finished, counts):
    from azext_batchai_sweep.core.report import data
    monkeypatch.setattr(data, 'EXPECTED_CURVE_POINTS', 5)
    values = [float((7 * i) % finished) for i in range(finished)]
    curve = report_data(_random_sweep(values))['plots']['bestSoFar']['expectedRandom']
    assert [k for k, _ in curve] == counts
    # each point: E[the best of k draws] with replacement from the values (sorted worst first, the i-th is the best
    # of k draws with probability (i/n)^k - ((i-1)/n)^k)
    ordered = sorted(values, reverse=True)
    for k, expected in curve:
        assert expected == pytest.approx(sum(v * ((i / finished) ** k - ((i - 1) / finished) ** k)
                                             for i, v in enumerate(ordered, start=1)))


def _replaced(record, index, **changes):
    import dataclasses
    return dataclasses.replace(record, trials=[dataclasses.replace(t, **changes) if t.index == index else t
                                               for t in record.trials])


def test_a_memo_makes_the_importance_again_when_any_of_its_inputs_changed_and_only_then(monkeypatch):
    """The live report's memo (report_data with a Memo) gives the importance made whole after each change of what
    it reads, each change alone from the same sweep: a job's parameters, its counted value (its state, whether a
    decision stopped it), the resource Hyperband gave it, the objective's goal, a run's several objectives."""
    import dataclasses
    from azext_batchai_sweep.core.report import data as data_module
    made = []
    real = data_module.report_importance
    monkeypatch.setattr(data_module, 'report_importance', lambda *a, **k: made.append(1) or real(*a, **k))
    record = synthetic_record(30, epochs=3, seed=2)
    compute = {'jobSteps': 1, 'jobStepsSaved': 0, 'jobSeconds': 1.0, 'jobStepsFull': 1}
    best = report_data(record)['summary']['best']['name']
    top = next(t for t in record.trials if t.name == best)
    stopped = next(t for t in record.trials if t.stopped_early)
    # a run's two objectives: the metric and the units (fewer better), every job ranked
    entries = [{'name': t.name, 'rank': 0, 'parameters': t.params,
                'values': {'val_accuracy': t.reports[-1].value, 'units': t.params['UNITS']}} for t in record.trials]
    pareto = {'objectives': [{'metric': 'val_accuracy', 'goal': 'max'}, {'metric': 'units', 'goal': 'min'}],
              'ranked': entries, 'infeasible': []}
    changes = [
        ('the best job with another learning rate', _replaced(record, top.index, params=dict(
            top.params, LEARNING_RATE=top.params['LEARNING_RATE'] * 1000)), None),
        ('the best job failed (its reports kept)', _replaced(record, top.index, state='failed'), None),
        ('a job stopped by a decision: no longer so', _replaced(record, stopped.index, stopped_early=False,
                                                                extra=dict(stopped.extra, decision=None)), None),
        ('the other goal', dataclasses.replace(record, objective=dataclasses.replace(record.objective,
                                                                                     goal='min')), None),
        ('each job given its UNITS as its resource', dataclasses.replace(record, trials=[
            dataclasses.replace(t, resource=t.params['UNITS']) for t in record.trials]), None),
        ("a run's two objectives", record, {'compute': compute, 'pareto': pareto}),
    ]
    memo = data_module.Memo()
    base = report_data(record)['importance']
    for why, state, figures in changes:
        assert report_data(record, memo=memo)['importance'] == base
        whole = report_data(state, figures=figures)['importance']
        assert whole != base, 'the change changes the importance: ' + why
        del made[:]
        assert report_data(state, figures=figures, memo=memo)['importance'] == whole, why
        assert made == [1], why
        del made[:]
        assert report_data(state, figures=figures, memo=memo)['importance'] == whole and not made, 'again: ' + why


def _ended(rows, goal='max', figures=None):
    """bestSoFar of jobs (state, value or None, end time or None), job i the i-th row."""
    trials = [Trial(name='j%d' % i, index=i, params={'X': i}, state=state, stopped_early=False,
                    reports=() if value is None else (Report(1.0, value),), extra={'endTime': end})
              for i, (state, value, end) in enumerate(rows)]
    record = sweep_record('b', Objective(metric='m', goal=goal, step='epoch'), trials)
    return report_data(record, figures=figures)['plots']['bestSoFar']


@pytest.mark.parametrize('goal', ['min', 'max'])
def test_the_best_so_far_improves_in_end_time_order_over_the_succeeded_jobs_with_a_value(goal):
    s = 1 if goal == 'max' else -1
    rows = [('succeeded', s * 5.0, '2026-11-29T10:03:00Z'),
            ('succeeded', s * 3.0, '2026-11-29T10:01:00Z'),
            ('failed', s * 9.0, '2026-11-29T10:00:30Z'),     # failed: never counted
            ('succeeded', None, '2026-11-29T10:00:10Z'),     # no value: not counted
            ('succeeded', s * 4.0, '2026-11-29T10:02:00Z'),
            ('succeeded', s * 4.5, '2026-11-29T10:02:00Z'),  # ended with j4: after it, by index
            ('succeeded', s * 1.0, None),                    # no end time known: first
            ('succeeded', s * 5.0, '2026-11-29T10:04:00Z')]  # as good as the best: no improvement
    assert _ended(rows, goal) == {'finished': 6, 'expectedRandom': None, 'improvements': [
        {'finished': 1, 'value': s * 1.0, 'job': 'j6'}, {'finished': 2, 'value': s * 3.0, 'job': 'j1'},
        {'finished': 3, 'value': s * 4.0, 'job': 'j4'}, {'finished': 4, 'value': s * 4.5, 'job': 'j5'},
        {'finished': 5, 'value': s * 5.0, 'job': 'j0'}]}
    assert _ended([], goal) == {'finished': 0, 'improvements': [], 'expectedRandom': None}


@pytest.mark.parametrize('goal', ['min', 'max'])
def test_past_the_limit_the_best_job_is_drawn_first_even_where_others_reported_better_values(monkeypatch, goal):
    from azext_batchai_sweep.core.report import data
    monkeypatch.setattr(data, 'MAX_LINES', 10)
    monkeypatch.setattr(data, 'MAX_POINTS', 20)
    s = 1 if goal == 'max' else -1
    # a failed job and one a decision stopped reported better values than the best (which ran to the end)
    rows = [('failed', False, 50.0), ('terminated', True, 40.0)] + [('succeeded', False, float(i)) for i in range(30)]
    trials = [Trial(name='j%02d' % i, index=i, params={'X': i}, state=state, stopped_early=stopped, extra={},
                    reports=(Report(1.0, s * value),)) for i, (state, stopped, value) in enumerate(rows)]
    plots = report_data(sweep_record('p', Objective(metric='m', goal=goal, step='epoch'), trials))['plots']
    assert plots['parallelCoordinates']['drawn'][:2] == ['j31', 'j00']  # the best, then the best value
    assert plots['objectiveVsParameter']['drawn'][:3] == ['j31', 'j00', 'j01']
    assert len(plots['parallelCoordinates']['drawn']) == 10 and len(plots['objectiveVsParameter']['drawn']) == 20
    assert plots['parallelCoordinates']['jobs'] == plots['objectiveVsParameter']['jobs'] == 32


def test_the_summary_counts_the_jobs_finished_stopped_and_with_a_value_and_names_the_best():
    from azext_batchai_sweep.core.report.model import EXTRA_CODE, EXTRA_DECISION
    stop = {'action': 'stopped', 'rule': 'bandit', 'step': 2.0, 'rung': None, 'bracket': None, 'reason': 'r'}
    rows = [  # name, state, reports, stopped by a decision, code
        ('a', 'succeeded', [(1, 0.2), (2, 0.5)], False, 'c2'),
        ('b', 'terminated', [(1, 0.9), (2, 0.7), (3, 0.95)], True, 'c1'),  # stopped at 2: 0.95 not counted
        ('c', 'failed', [(1, 0.1)], False, None),
        ('d', 'running', [(1, 0.3)], False, 'c2'),
        ('e', 'queued', [], False, None),
        ('f', 'succeeded', [(1, 0.4), (3, 0.6)], False, None),
    ]
    trials = [Trial(name=name, index=i, params={'X': i}, state=state, stopped_early=False,
                    reports=tuple(Report(float(s), v) for s, v in reports),
                    extra={EXTRA_DECISION: stop if stopped else None, EXTRA_CODE: code})
              for i, (name, state, reports, stopped, code) in enumerate(rows)]
    summary = report_data(sweep_record('s', Objective(metric='m', goal='max', step='epoch'), trials))['summary']
    assert (summary['jobs'], summary['finished'], summary['stoppedEarly'], summary['withObjective']) == (6, 4, 1, 5)
    assert summary['best'] == {'name': 'f', 'value': 0.6, 'parameters': {'X': 5}, 'lastStep': 3.0}
    assert summary['objectiveRange'] == [0.1, 0.7]
    assert summary['decided'] is True and summary['decisions'] == {'stopped': 1}
    assert summary['code'] == ['c1', 'c2']
    assert summary['counts']['succeeded'] == 2 and summary['counts']['queued'] == 1


def test_the_data_names_its_kind_and_sweep_and_reads_back_as_a_warm_start_file():
    """`sweep report -o json` is a results file another sweep's warmStart reads (core/tuning/warmstart.py): by its
    kind, its objective and its jobs."""
    import json
    from azext_batchai_sweep.core.report.data import DATA_VERSION
    from azext_batchai_sweep.core.tuning.warmstart import records_from_document
    trials = [Trial(name='j%d' % i, index=i, params={'X': i}, state='succeeded', stopped_early=False,
                    reports=(Report(1.0, 0.1 * i), Report(2.0, 0.2 * i)),
                    extra={'scheduler': 'slurm', 'schedulerJobId': str(40 + i)} if i else {}) for i in range(3)]
    record = sweep_record('lr-sweep', Objective(metric='acc', goal='max', step='epoch'), trials, resource_group='rg',
                          workspace='ws', experiment='exp', sampling='random', generated_at=GENERATED)
    data = json.loads(json.dumps(report_data(record, run={'outline': 1})))
    assert (data['kind'], data['version'], data['sweep'], data['resourceGroup'], data['workspace'],
            data['experiment'], data['generatedAt'], data['sampling'], data['run']) == (
        'batchai-sweep-report', DATA_VERSION, 'lr-sweep', 'rg', 'ws', 'exp', GENERATED, 'random', {'outline': 1})
    assert data['objective']['metric'] == 'acc' and data['objective']['goal'] == 'max'
    assert data['scheduler'] == 'slurm', 'the first job that names one'
    records = records_from_document(data, 'report.json', 'sampling.warmStart[0]')
    assert [(r.name, r.state, r.reports, r.metric) for r in records] == [
        ('j%d' % i, 'succeeded', ((1.0, 0.1 * i), (2.0, 0.2 * i)), 'acc') for i in range(3)]
