"""Each early-termination policy on cases computed by hand (Azure ML's rules; ASHA as Li et al. and Optuna)."""
import pytest

from azext_batchai_sweep.core.tuning.policies import make_policy
from azext_batchai_sweep.core.tuning.policies.base import Policy

from .helpers import trial


def test_evaluation_points_honour_interval_and_delay():
    policy = Policy('max', evaluation_interval=2, delay_evaluation=5)
    assert policy.evaluation_points(trial('a', [1] * 9)) == [6, 8]
    assert Policy('max', evaluation_interval=1, delay_evaluation=5).evaluation_points(trial('a', [1] * 6)) == [5, 6]
    assert Policy('max').evaluation_points(trial('a', [1] * 3)) == [1, 2, 3]


def test_bandit_slack_factor_goal_max():
    policy = make_policy({'policy': 'bandit', 'slackFactor': 0.1}, 'max', step_label='epoch')
    best = trial('best', [0.5, 0.78, 0.9], state='succeeded')
    # At epoch 2 the best so far is 0.78 (best's 0.9 came at epoch 3): 0.78 / 1.1 = 0.7091
    low = trial('low', [0.4, 0.70])
    ok = trial('ok', [0.4, 0.71])
    trials = [best, low, ok]
    decision = policy.judge(low, 2, trials)
    assert decision.text == 'stopped at epoch 2 by bandit: 0.7 < 0.78 / 1.1'
    assert decision.numbers['bestJob'] == 'best'
    assert decision.numbers['threshold'] == pytest.approx(0.78 / 1.1)
    assert policy.judge(ok, 2, trials) is None
    # At epoch 1: best 0.5, threshold 0.4545: 0.4 is below it
    assert policy.judge(low, 1, trials) is not None


def test_bandit_slack_amount_and_goal_min():
    policy = make_policy({'policy': 'bandit', 'slackAmount': 0.2}, 'min')
    trials = [trial('a', [1.0, 0.5], state='succeeded'), trial('b', [1.0, 0.71]), trial('c', [1.0, 0.69])]
    decision = policy.judge(trials[1], 2, trials)
    assert 'stopped at step 2 by bandit: 0.71 > 0.5 + 0.2' in decision.text
    assert policy.judge(trials[2], 2, trials) is None
    factor = make_policy({'policy': 'bandit', 'slackFactor': 0.5}, 'min')
    assert factor.judge(trials[1], 2, trials) is None          # 0.71 <= 0.5 * 1.5
    assert factor.judge(trial('d', [1.0, 0.76]), 2, trials + [trial('d', [1.0, 0.76])]) is not None


def test_median_compares_best_with_median_of_running_averages():
    policy = make_policy({'policy': 'median'}, 'max')
    # running averages at step 2: a (0.6+0.8)/2 = 0.7, b (0.5+0.7)/2 = 0.6, c (0.2+0.3)/2 = 0.25; median 0.6
    a = trial('a', [0.6, 0.8, 0.9], state='succeeded')
    b = trial('b', [0.5, 0.7])
    c = trial('c', [0.2, 0.3])
    trials = [a, b, c]
    decision = policy.judge(c, 2, trials)
    assert 'best 0.3 < median 0.6 of 3 running averages' in decision.text
    assert policy.judge(b, 2, trials) is None  # best 0.7 >= 0.6
    # a job still running that has not reached the step does not count
    assert policy.judge(c, 2, [a, c]) is not None
    assert policy.judge(c, 1, [c]) is None


def test_truncation_cuts_the_lowest_percentage_at_the_same_step():
    policy = make_policy({'policy': 'truncation', 'truncationPercentage': 40}, 'max')
    trials = [trial(n, [v]) for n, v in [('a', 0.9), ('b', 0.8), ('c', 0.7), ('d', 0.6), ('e', 0.5)]]
    # 5 jobs at step 1, floor(5 * 0.4) = 2 cut: d and e
    stopped = [t.name for t in trials if policy.judge(t, 1, trials)]
    assert stopped == ['d', 'e']
    assert 'rank 1 of 5 from the bottom; 2 cut' in policy.judge(trials[4], 1, trials).text
    # 2 jobs: floor(0.8) = 0, nobody is cut
    assert policy.judge(trials[4], 1, trials[3:]) is None


def test_truncation_goal_min_running_jobs_count():
    policy = make_policy({'policy': 'truncation', 'truncationPercentage': 50}, 'min')
    trials = [trial('a', [1.0, 0.2], state='succeeded'), trial('b', [1.0, 0.4]), trial('c', [1.0, 0.3]),
              trial('d', [1.0, 0.9])]
    assert [t.name for t in trials if policy.judge(t, 2, trials) and t.state == 'running'] == ['b', 'd']


def test_asha_rungs_and_promotion_rule():
    policy = make_policy({'policy': 'asha', 'minResource': 1, 'maxResource': 9, 'eta': 3}, 'max', 'epoch')
    assert policy.rungs == [1, 3]
    first = trial('a', [0.5, 0.6, 0.7], state='succeeded')
    # second job at rung 0 (epoch 1): competing [0.5, 0.4], keep max(1, 2 // 3) = 1: 0.4 is not the best
    second = trial('b', [0.4])
    decision = policy.judge(second, 1, [first, second])
    assert decision.text == ('stopped at epoch 1 by asha: 0.4 is not in the top 1 of 2 at rung 0 (epoch 1; '
                             'cutoff 0.5)')
    third = trial('c', [0.55, 0.56, 0.8])
    assert policy.judge(third, 1, [first, second, third]) is None  # 0.55 is the best of 3
    # at rung 1 (epoch 3): competing a's 0.7 and c's 0.8: c is the best
    assert policy.evaluation_points(third) == [1, 3]
    assert policy.judge(third, 3, [first, second, third]) is None


def test_asha_one_report_crossing_two_rungs_is_judged_at_both():
    policy = make_policy({'policy': 'asha', 'minResource': 1, 'maxResource': 27, 'eta': 3}, 'min')
    a = trial('a', [0.1, 0.1], steps=[1, 3], state='succeeded')
    b = trial('b', [0.5], steps=[3])
    assert policy.rungs_crossed(b, 1) == [(0, 1), (1, 3)]
    assert 'at rung 0' in policy.judge(b, 1, [a, b]).text


def test_asha_counts_a_job_at_a_rung_it_passed_between_rung_steps():
    """Rungs 2, 4, 8; every job reports at odd steps. A job's value at a rung is its first report at or past the
    rung's step (step 3 for rung 2, step 5 for rung 4), not only a report exactly there; one that has not reached
    the rung (d, step 1 only) is not counted."""
    policy = make_policy({'policy': 'asha', 'minResource': 2, 'maxResource': 16, 'eta': 2}, 'min')
    assert policy.rungs == [2, 4, 8]
    a = trial('a', [0.9, 0.5, 0.4, 0.3], steps=[1, 3, 5, 9], state='succeeded')
    b = trial('b', [0.8, 0.6], steps=[1, 3])
    d = trial('d', [0.1], steps=[1])
    c = trial('c', [0.55], steps=[3])
    trials = [a, b, c, d]
    assert policy.evaluation_points(b) == [2] and policy.evaluation_points(d) == []
    # c at rung 0: a's 0.5 (step 3), b's 0.6 (step 3) and its own 0.55; keep max(1, 3 // 2) = 1, the best is 0.5
    decision = policy.judge(c, 1, trials)
    assert decision.text == ('stopped at step 3 by asha: 0.55 is not in the top 1 of 3 at rung 0 (step 2; '
                             'cutoff 0.5)')
    assert (decision.numbers['competing'], decision.numbers['cutoff']) == (3, 0.5)
    e = trial('e', [0.7, 0.45, 0.35], steps=[1, 3, 5])
    trials.append(e)
    # e at rung 0 (its step 3): 0.5, 0.6, 0.55 and 0.45: keep 2, cutoff 0.5: kept
    assert policy.judge(e, 2, trials) is None
    # e at rung 1 (its step 5): a's 0.4 (step 5) and its 0.35; b, c and d never reached step 4: keep 1, kept
    assert policy.judge(e, 3, trials) is None
    assert policy.kept(e, 3, trials) == 'promoted past rung 1 (step 4) by asha: 0.35 is in the top 1 of 2 (cutoff 0.35)'
    worse = trial('worse', [0.7, 0.5, 0.45], steps=[1, 3, 6])
    # at rung 1: a's 0.4, e's 0.35 and its 0.45: keep 1, cutoff 0.35
    assert 'not in the top 1 of 3 at rung 1 (step 4; cutoff 0.35)' in policy.judge(worse, 3, trials + [worse]).text
