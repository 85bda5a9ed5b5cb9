"""A job's output can never end a sweep: generated report sequences (hypothesis) through every policy, the controller,
Hyperband, ASHA, TPE, the run's result and `metrics`' reductions; no exception, and the documented decision where
one is defined. Values are any finite floats (1e308, -1e308, 5e-324 and mixes), steps in any order, repeated or
missing, first reports past the judged step. The report's own generated tests are in tests/report.

max_examples and the deadline are bounded so that the whole file adds seconds to `make test`; docs/reliability.md
says how many sequences each property tries.
"""
import json
import logging
import math
import random
from fractions import Fraction

from hypothesis import given, strategies as st

from azext_batchai_sweep.core.floats import mean, median
from azext_batchai_sweep.core.outputs.metrics import REDUCERS, MetricExtractor
from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.controller import Controller, Limits
from azext_batchai_sweep.core.tuning.decision import better
from azext_batchai_sweep.core.tuning.policies import make_policy
from azext_batchai_sweep.core.tuning.policies.base import reports_upto
from azext_batchai_sweep.core.tuning.result import summarize_run, tuning_row
from azext_batchai_sweep.core.tuning.samplers.grid import GridSampler
from azext_batchai_sweep.core.tuning.samplers.hyperband import HyperbandSampler
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial
from tests.hostile_values import bounded, steps, values

# Examples per property: ~0.2-2 s each (fewer under `make mutate`: tests/hostile_values.py).
FAST = bounded(max_examples=150, deadline=2000)

reports = st.lists(st.builds(Report, step=steps, value=values), max_size=7).map(tuple)
STATES = ('running', 'running', 'succeeded', 'terminated', 'failed', 'queued')


@st.composite
def sweeps(draw, min_size=1, max_size=6):
    count = draw(st.integers(min_size, max_size))
    return [Trial(name='job{}'.format(i), index=i, params={'X': i}, state=draw(st.sampled_from(STATES)),
                  reports=draw(reports)) for i in range(count)]


POLICIES = [{'policy': 'bandit', 'slackFactor': 0.5}, {'policy': 'bandit', 'slackAmount': 0.2},
            {'policy': 'bandit', 'slackAmount': 1e308}, {'policy': 'median'},
            {'policy': 'median', 'delayEvaluation': 2, 'evaluationInterval': 2},
            {'policy': 'truncation', 'truncationPercentage': 50}, {'policy': 'truncation', 'truncationPercentage': 10},
            {'policy': 'asha', 'minResource': 1, 'maxResource': 9, 'eta': 3}]


def _decide(policy, trial, n, trials):
    """The policy's rule itself, uncaught (judge would log and skip an error: the property is that there is none)."""
    own, seen = policy.view(trial, n, trials)
    return policy.decide(own, n, seen)


def _others_upto(trials, trial, step):
    return [(t, reports_upto(t, step)) for t in trials if t.name != trial.name]


def _oracle_bandit(settings_, goal, trial, n, trials):
    report = trial.reports[n - 1]
    own = [r.value for r in trial.reports[:n] if r.step <= report.step]
    every = own + [r.value for _, upto in _others_upto(trials, trial, report.step) for r in upto]
    best = max(every) if goal == 'max' else min(every)
    if 'slackFactor' in settings_:
        limit = best / (1 + settings_['slackFactor']) if goal == 'max' else best * (1 + settings_['slackFactor'])
    else:
        limit = best - settings_['slackAmount'] if goal == 'max' else best + settings_['slackAmount']
    return report.value < limit if goal == 'max' else report.value > limit


def _exact_mean(xs):
    return sum(Fraction(x) for x in xs) / len(xs)


def _close_to_the_mean(got, xs):
    """Within float rounding of the exact mean: a log is summed a block at a time (each block exactly, by fsum), so
    the error is at most about n additions' rounding of sums no larger than n * max|x|."""
    exact = _exact_mean(xs)
    bound = abs(exact) * Fraction(1, 10 ** 12) + len(xs) * Fraction(max(abs(x) for x in xs)) / 2 ** 52
    assert abs(Fraction(got) - exact) <= bound + Fraction(5e-324), (got, float(exact))


def _oracle_median(goal, trial, n, trials):
    """(stopped?, near tie?) with exact arithmetic: the documented rule, whatever the floats' range. Near a tie (within
    the rounding of means of values as large as the largest one averaged) float means may decide either way."""
    report = trial.reports[n - 1]
    step = report.step
    averaged = [[r.value for r in trial.reports[:n] if r.step <= step]]
    for t, upto in _others_upto(trials, trial, step):
        if upto and max(r.step for r in t.reports) >= step:
            averaged.append([r.value for r in upto])
    averages = [_exact_mean(values_) for values_ in averaged]
    largest = Fraction(max(abs(v) for values_ in averaged for v in values_))
    if len(averages) < 2:
        return False, False
    averages.sort()
    middle = len(averages) // 2
    exact = averages[middle] if len(averages) % 2 else (averages[middle - 1] + averages[middle]) / 2
    own = averaged[0]  # its values up to the step, among its first n reports
    best = Fraction(max(own) if goal == 'max' else min(own))
    near = abs(best - exact) <= abs(exact) * Fraction(1, 10 ** 9) + largest / 2 ** 48 + Fraction(5e-324)
    return (exact > best if goal == 'max' else exact < best), near


def _oracle_truncation(percentage, goal, trial, n, trials):
    report = trial.reports[n - 1]
    others = [upto[-1].value for t, upto in _others_upto(trials, trial, report.step)
              if upto and max(r.step for r in t.reports) >= report.step]
    cut = math.floor((len(others) + 1) * percentage / 100.0)
    worse = sum(1 for v in others if better(report.value, v, goal))
    return cut > 0 and worse < cut


@FAST
@given(sweeps(), st.sampled_from(POLICIES), st.sampled_from(['max', 'min']))
def test_every_policy_decides_any_reports_without_an_error_and_as_documented(trials, settings_, goal):
    policy = make_policy(settings_, goal)
    for trial in trials:
        for n in range(1, len(trial.reports) + 1):
            decision = _decide(policy, trial, n, trials)
            # Never compared with its own later reports: the same decision without them.
            cut = Trial(name=trial.name, index=trial.index, params=trial.params, state=trial.state,
                        reports=trial.reports[:n])
            assert decision == _decide(policy, cut, n, [cut if t is trial else t for t in trials])
            if decision is not None:
                json.dumps(decision.as_dict(), allow_nan=False)  # the journal and `status -o json` take it
            kind = settings_['policy']
            if kind == 'bandit':
                assert (decision is not None) == _oracle_bandit(settings_, goal, trial, n, trials)
            elif kind == 'median':
                stopped, near = _oracle_median(goal, trial, n, trials)
                if not near:
                    assert (decision is not None) == stopped
            elif kind == 'truncation':
                assert (decision is not None) == _oracle_truncation(settings_['truncationPercentage'], goal, trial,
                                                                    n, trials)


def _oracle_asha(goal, trial, n, trials, rungs=(1, 3, 9), eta=3):
    """(rung step, jobs competing) where the n-th report is stopped, or None: at each rung its report is the first
    to reach (in order), the values every other job had when it first reported at or past the rung, and its own;
    stopped when at least max(1, count // eta) of them are strictly better."""
    report = trial.reports[n - 1]
    before = max((r.step for r in trial.reports[:n - 1]), default=-math.inf)
    for rung in rungs:
        if not before < rung <= report.step:
            continue
        crossed = [next(r.value for r in t.reports if r.step >= rung) for t in trials
                   if t.name != trial.name and any(r.step >= rung for r in t.reports)]
        if sum(better(v, report.value, goal) for v in crossed) >= max(1, (len(crossed) + 1) // eta):
            return rung, len(crossed) + 1
    return None


@FAST
@given(sweeps(), st.sampled_from(['max', 'min']))
def test_asha_judges_a_job_once_per_rung_whatever_the_order_of_its_steps(trials, goal):
    """Rungs 1, 3, 9; steps in any order and between the rungs: each job is judged once per rung, and stopped
    exactly where the oracle (the rule as documented, counted another way) stops it, among the same jobs."""
    policy = make_policy({'policy': 'asha', 'minResource': 1, 'maxResource': 27, 'eta': 3}, goal)
    for trial in trials:
        judged = [step for n in policy.evaluation_points(trial) for _, step in policy.rungs_crossed(trial, n)]
        assert len(judged) == len(set(judged))
        for n in range(1, len(trial.reports) + 1):
            decision = _decide(policy, trial, n, trials) if n in policy.evaluation_points(trial) else None
            expected = _oracle_asha(goal, trial, n, trials)
            assert (decision is None) == (expected is None)
            if decision is not None:  # the documented cut: not among the best max(1, count // eta)
                numbers = decision.numbers
                assert (numbers['rungStep'], numbers['competing']) == expected
                assert numbers['keep'] == max(1, numbers['competing'] // 3)
                assert better(numbers['cutoff'], numbers['value'], goal)


@FAST
@given(sweeps(max_size=8), st.sampled_from(POLICIES), st.sampled_from(['max', 'min']))
def test_the_controller_and_the_run_result_take_any_reports(trials, settings_, goal):
    sampler = GridSampler([DiscreteParamSpec('X', list(range(12)))])
    controller = Controller(sampler, make_policy(settings_, goal), Limits(max_total_jobs=10, max_concurrent_jobs=4))
    actions = controller.step(trials)
    for decision in actions.terminate:
        assert decision.job in {t.name for t in trials}
    # A re-run (the journal's judged counts and decisions) decides nothing new and raises nothing.
    again = Controller(sampler, make_policy(settings_, goal), Limits(max_total_jobs=10), judged=controller.judged,
                       decisions=controller.decisions)
    assert again.step(trials).terminate == []
    seen = controller.as_seen_by_policies(trials)
    result = summarize_run(seen, controller.decisions, goal, 'exhausted', 'done', 'epoch')
    json.dumps(result, allow_nan=False)
    finished = [t for t in seen if t.state == 'succeeded' and not t.stopped_early and t.reports]
    if finished:
        lasts = [t.last for t in finished]
        assert result['best']['objective'] == (max(lasts) if goal == 'max' else min(lasts))
    else:
        assert result['best'] is None
    assert 0.0 <= result['compute']['savedPercent'] <= 100.0
    for t in seen:
        json.dumps(tuning_row(t, controller.decisions.get(t.name), goal, 'epoch'), allow_nan=False)


@st.composite
def hyperband_sweeps(draw):
    sampler = HyperbandSampler([NumParamSpec('LR', 1e-4, 1.0, 'REAL', 'LOG')], draw(st.sampled_from(['max', 'min'])),
                               1, 9, 3, seed=draw(st.integers(0, 3)))
    trials = []
    for _ in range(draw(st.integers(1, 4))):  # a few rounds of the sweep, each job finishing with hostile values
        for suggestion in sampler.suggest(trials, 100):
            trials.append(Trial(name='hb{}'.format(len(trials)), index=len(trials), params=suggestion.params,
                                state=draw(st.sampled_from(['succeeded', 'succeeded', 'failed', 'running'])),
                                reports=draw(reports), resource=suggestion.resource, parent=suggestion.parent,
                                bracket=suggestion.bracket, rung=suggestion.rung, slot=suggestion.slot))
        trials = [t if t.state != 'running' else Trial(**dict(t.__dict__, state='succeeded')) for t in trials]
    return sampler, trials


@FAST
@given(hyperband_sweeps())
def test_hyperband_promotes_the_best_last_values_whatever_they_are(drawn):
    sampler, trials = drawn
    decisions = sampler.explain(trials)
    sampler.suggest(trials, 100)
    sampler.exhausted(trials)
    for decision in decisions.values():
        json.dumps(decision.as_dict(), allow_nan=False)
        numbers = decision.numbers
        if decision.kind == 'promoted' and numbers['cutoff'] is not None:
            assert not better(numbers['cutoff'], numbers['value'], sampler.goal)
        if decision.kind == 'not promoted':
            assert not better(numbers['value'], numbers['cutoff'], sampler.goal)


@FAST
@given(sweeps(min_size=0, max_size=14), st.sampled_from(['max', 'min']), st.integers(0, 3))
def test_tpe_suggests_from_any_objectives(trials, goal, seed):
    specs = [NumParamSpec('LR', 1e-4, 1.0, 'REAL', 'LOG'), DiscreteParamSpec('OPT', ['adam', 'sgd']),
             NumParamSpec('UNITS', 1, 64, 'INTEGER', 'LINEAR')]
    rng = random.Random(seed)
    placed = [Trial(name=t.name, index=t.index, state=t.state, reports=t.reports,
                    params={'LR': 10 ** rng.uniform(-4, 0), 'OPT': rng.choice(['adam', 'sgd']),
                            'UNITS': rng.randint(1, 64)}) for t in trials]
    sampler = TPESampler(specs, goal=goal, seed=seed, startup_jobs=2, candidates=8)
    suggestions = sampler.suggest(placed, 2)
    assert len(suggestions) == 2
    for suggestion in suggestions:
        assert 1e-4 <= suggestion.params['LR'] <= 1.0 and 1 <= suggestion.params['UNITS'] <= 64


@FAST
@given(st.lists(values, max_size=40), st.sampled_from(REDUCERS), st.integers(1, 64))
def test_metrics_reduce_any_finite_values_exactly_as_documented(found, reduce, chunk):
    log = ''.join('step {} acc={!r} noise=nan acc=inf\n'.format(i, v) for i, v in enumerate(found)).encode()
    extractor = MetricExtractor(metric_name='acc', reduce=reduce)
    streamed = extractor.extract_chunks(log[i:i + chunk] for i in range(0, len(log), chunk))
    whole = extractor.extract_text(log.decode())
    assert streamed == whole or (reduce == 'mean' and math.isfinite(whole))  # a mean: both within rounding, below
    if not found:
        assert streamed is None
        return
    if reduce == 'mean':
        assert math.isfinite(streamed)
        _close_to_the_mean(streamed, found)
        _close_to_the_mean(whole, found)
    else:
        expected = {'last': found[-1], 'first': found[0], 'min': min(found), 'max': max(found)}[reduce]
        assert streamed == expected
    if reduce == 'last':
        backwards = extractor.extract_last_backwards(lambda start, end: log[start:end], len(log))
        assert backwards == found[-1]


@FAST
@given(st.lists(values, min_size=1, max_size=30))
def test_mean_and_median_of_any_finite_values_are_finite_and_right(xs):
    got = mean(xs)
    assert math.isfinite(got)
    _close_to_the_mean(got, xs)
    ordered = sorted(xs)
    got = median(xs)
    assert ordered[(len(xs) - 1) // 2] <= got <= ordered[len(xs) // 2]


# ---- the examples, each a test that failed before --------------------------------------------------------

def _t(name, pairs, state='running', index=0):
    return Trial(name=name, index=index, params={'X': name}, state=state,
                 reports=tuple(Report(step=float(s), value=float(v)) for s, v in pairs))


def test_median_over_values_near_the_float_limits():
    # statistics.fmean raised OverflowError here (on every re-run: the sweep could never finish).
    policy = make_policy({'policy': 'median'}, 'max')
    trials = [_t('a', [(1, 1e308), (2, 1e308)], 'succeeded'), _t('b', [(1, -1e308), (2, -1e308)], 'succeeded'),
              _t('c', [(1, 1e308), (2, -1e308)]), _t('d', [(1, 1.7976931348623157e308), (2, 1e308)])]
    decision = policy.judge(trials[2], 2, trials)
    # averages at 2: 1e308, -1e308, 0, 1.39e308: median (0 + 1e308) / 2 = 5e307; c's best 1e308 is not worse
    assert decision is None
    decision = policy.judge(trials[1], 2, trials)
    assert decision is not None and decision.numbers['median'] == 5e307
    assert Controller(GridSampler([DiscreteParamSpec('X', ['a', 'b', 'c', 'd'])]), policy).step(trials) is not None


def test_median_with_a_job_whose_first_report_is_past_the_judged_step():
    # A job resuming from a checkpoint (first report at epoch=1e308) made median raise StatisticsError.
    policy = make_policy({'policy': 'median'}, 'max')
    trials = [_t('late', [(1e308, 0.9)]), _t('a', [(1, 0.5), (2, 0.6)]), _t('b', [(1, 0.1), (2, 0.2)])]
    decision = policy.judge(trials[2], 2, trials)
    assert decision is not None and decision.numbers['jobs'] == 2  # the late job has no value at epoch 2
    truncation = make_policy({'policy': 'truncation', 'truncationPercentage': 50}, 'max')
    assert truncation.judge(trials[2], 2, trials) is not None  # was a TypeError (None compared with a float)


def test_bandit_never_judges_a_job_by_its_own_later_report_and_the_best_is_the_sweeps_best():
    # "stopped at epoch 1 by bandit: 99 < 1e+300 / 1.5": the job's own second report at epoch 1 was "the best so far".
    policy = make_policy({'policy': 'bandit', 'slackFactor': 0.5}, 'max', step_label='epoch')
    hostile = _t('hostile', [(1, 99), (1, 1e300)], state='succeeded')
    other = _t('other', [(1, 50), (2, 60)], state='succeeded', index=1)
    assert policy.judge(hostile, 1, [hostile, other]) is None
    controller = Controller(GridSampler([DiscreteParamSpec('X', ['hostile', 'other'])]), policy)
    running = [_t('hostile', [(1, 99), (1, 1e300)]), _t('other', [(1, 50), (2, 60)], index=1)]
    # the other job is judged against the hostile one's 1e300 (another job's report), the hostile one goes on
    assert [d.job for d in controller.step(running).terminate] == ['other']
    result = summarize_run(controller.as_seen_by_policies([hostile, other]), controller.decisions, 'max', 'exhausted',
                           'done', 'epoch')
    assert result['best']['objective'] == 1e300 and result['best']['name'] == 'hostile'


def test_asha_never_judges_a_job_twice_at_a_rung():
    policy = make_policy({'policy': 'asha', 'minResource': 1, 'maxResource': 9, 'eta': 3}, 'max')
    job = _t('a', [(5, 0.1), (1, 0.1), (5, 0.1)])
    assert [rung for n in policy.evaluation_points(job) for rung in policy.rungs_crossed(job, n)] == [(0, 1), (1, 3)]


def test_a_policy_error_on_one_job_is_logged_with_its_name_and_the_sweep_goes_on(caplog):
    class Broken:
        name = 'broken'

        def evaluation_points(self, trial):
            return list(range(1, len(trial.reports) + 1))

        def judge(self, trial, n, trials):
            if trial.name == 'poisoned':
                raise RuntimeError('unexpected data')
            return None
    # A stand-in policy that fails on one job's data: no real policy fails any more (the properties above), so
    # this is the only way to reach the controller's last line of defence.
    sampler = GridSampler([DiscreteParamSpec('X', ['poisoned', 'fine', 'next'])])
    trials = [_t('poisoned', [(1, 1.0)]), _t('fine', [(1, 1.0)], index=1)]
    controller = Controller(sampler, Broken(), Limits(max_concurrent_jobs=3))
    with caplog.at_level(logging.WARNING):
        actions = controller.step(trials)
    assert [s.params for s in actions.submit] == [{'X': 'next'}]  # the sweep goes on
    assert 'job poisoned' in caplog.text and 'unexpected data' in caplog.text
    assert controller.judged == {'poisoned': 1, 'fine': 1}  # a re-run does not stumble on it again


def test_run_result_with_steps_past_any_count():
    # 100.0 * (a 309-digit count) raised OverflowError ("int too large to convert to float").
    trials = [_t('a', [(1e308, 0.5)], 'succeeded'), _t('b', [(1, 0.1)], 'terminated', index=1)]
    result = summarize_run(trials, {}, 'max', 'exhausted', 'done')
    assert result['best']['name'] == 'a' and result['best']['step'] == 1e308
    # Nothing was stopped by a decision, so nothing was saved (issue 41, item 5: it said "100.0% saved").
    assert result['compute']['savedPercent'] == 0.0 and result['compute']['jobStepsFull'] == 2


def test_metrics_mean_of_six_reports_of_1e308_is_1e308():
    # The plain sum overflowed to inf, and `metrics --reduce mean` showed no value for a finite mean.
    extractor = MetricExtractor(metric_name='acc', reduce='mean')
    assert extractor.extract_text('acc=1e308\n' * 6) == 1e308
    assert extractor.extract_chunks([b'acc=1e308\n' * 3, b'acc=-1e308\nacc=1e308\n']) == 1e308 * 0.6
