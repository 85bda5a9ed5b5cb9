"""Rules of the early-termination policies that the hand-computed cases of test_policies.py leave open, each on a
case computed by hand: what a skipped decision logs, what ASHA says of a job it lets go on past several rungs, each
policy's stop in full (text and numbers, both goals), the bounds of each rule, and that ASHA's table of a poll follows
the jobs it is given."""
import logging

import pytest

from azext_batchai_sweep.core.tuning.decision import STOPPED
from azext_batchai_sweep.core.tuning.policies import make_policy
from azext_batchai_sweep.core.tuning.policies.bandit import BanditPolicy
from azext_batchai_sweep.core.tuning.policies.base import Policy, value_at

from .helpers import trial


class _Failing(Policy):
    """A policy whose rule cannot be computed on some data (no real policy's can, by their property tests: this
    is the base class's rule for one that could)."""

    name = 'failing'

    def decide(self, trial, n, trials):  # pylint: disable=redefined-outer-name
        raise ArithmeticError('cannot compare {}'.format(trial.reports[n - 1].value))


def test_a_decision_that_cannot_be_computed_is_skipped_and_logged_with_the_job_policy_report_and_why(caplog):
    job = trial('poisoned', [0.5, 0.25])
    with caplog.at_level(logging.WARNING, logger='azext_batchai_sweep.core.tuning.policies.base'):
        assert _Failing('max').judge(job, 2, [job]) is None
    (record,) = caplog.records
    assert record.getMessage() == 'job poisoned: the failing decision at its report 2 was skipped: cannot compare 0.25'


def test_asha_names_every_rung_a_job_is_promoted_past_in_one_report():
    """One report (step 9) crosses rungs 1, 3 and 9 (maxResource 27, eta 3): the job is the best at each, and what
    ASHA says of it names the three rungs, in order, in one line."""
    policy = make_policy({'policy': 'asha', 'minResource': 1, 'maxResource': 27, 'eta': 3}, 'max', 'epoch')
    a = trial('a', [0.1, 0.2, 0.3], steps=[1, 3, 9], state='succeeded')
    b = trial('b', [0.9], steps=[9])
    assert policy.judge(b, 1, [a, b]) is None
    assert policy.kept(b, 1, [a, b]) == (
        'promoted past rung 0 (epoch 1) by asha: 0.9 is in the top 1 of 2 (cutoff 0.9); '
        'promoted past rung 1 (epoch 3) by asha: 0.9 is in the top 1 of 2 (cutoff 0.9); '
        'promoted past rung 2 (epoch 9) by asha: 0.9 is in the top 1 of 2 (cutoff 0.9)')
    # a report that crosses no rung says nothing
    c = trial('c', [0.9, 0.95], steps=[9, 10])
    assert policy.kept(c, 2, [a, c]) is None


@pytest.mark.parametrize('slack', [{}, {'slack_factor': 0.1, 'slack_amount': 0.2}])
def test_bandit_takes_exactly_one_slack_and_says_so(slack):
    """The sweep file's validation says it to users; a caller that builds a policy itself gets the same rule."""
    with pytest.raises(ValueError, match='^bandit needs exactly one of slack_factor and slack_amount$'):
        BanditPolicy('max', **slack)
    assert BanditPolicy('min', slack_amount=0.2).threshold(1.0)[0] == 1.2


def test_bandit_states_each_formula_and_its_numbers_for_both_goals_and_slacks():
    """Each of bandit's four thresholds as the decision's text and numbers; the best job is the one that reported
    the best value, whatever its name; a value exactly at the threshold goes on (stop when strictly worse)."""
    z_best = trial('z-best', [0.2, 0.8], state='succeeded')
    a_low = trial('a-low', [0.2, 0.5])
    a_edge = trial('a-edge', [0.2, 0.6])
    sweep = [z_best, a_low, a_edge]
    amount = make_policy({'policy': 'bandit', 'slackAmount': 0.25}, 'max', 'epoch')
    decision = amount.judge(a_low, 2, sweep)
    assert decision.kind == STOPPED and (decision.job, decision.rule, decision.step) == ('a-low', 'bandit', 2.0)
    assert decision.text == 'stopped at epoch 2 by bandit: 0.5 < 0.8 - 0.25'
    assert decision.numbers == {'value': 0.5, 'best': 0.8, 'threshold': 0.8 - 0.25, 'bestJob': 'z-best'}
    at_limit = [trial('z', [1.0], state='succeeded'), trial('a', [0.5])]  # 0.5 == 1 - 0.5, exact in floats
    assert make_policy({'policy': 'bandit', 'slackAmount': 0.5}, 'max').judge(at_limit[1], 1, at_limit) is None
    assert amount.judge(a_edge, 2, sweep) is None
    min_best = trial('z-best', [2.0, 1.0], state='succeeded')
    high = trial('a-high', [2.0, 1.6])
    factor = make_policy({'policy': 'bandit', 'slackFactor': 0.5}, 'min')
    decision = factor.judge(high, 2, [min_best, high])
    assert decision.text == 'stopped at step 2 by bandit: 1.6 > 1 * 1.5'
    assert decision.numbers == {'value': 1.6, 'best': 1.0, 'threshold': 1.5, 'bestJob': 'z-best'}
    assert factor.judge(trial('a', [2.0, 1.5]), 2, [min_best, trial('a', [2.0, 1.5])]) is None  # at 1 * 1.5


def test_median_states_its_comparison_and_numbers_for_goal_min():
    """Goal min: the best value is the lowest, and a job stops when it is above the median of the running
    averages: a (1 + 3) / 2 = 2, b (2 + 4) / 2 = 3, c (5 + 6) / 2 = 5.5; median 3; c's best 5 > 3."""
    policy = make_policy({'policy': 'median'}, 'min', 'epoch')
    a = trial('a', [1.0, 3.0], state='succeeded')
    b = trial('b', [2.0, 4.0])
    c = trial('c', [5.0, 6.0])
    decision = policy.judge(c, 2, [a, b, c])
    assert (decision.kind, decision.job, decision.step) == (STOPPED, 'c', 2.0)
    assert decision.text == 'stopped at epoch 2 by median: best 5 > median 3 of 3 running averages'
    assert decision.numbers == {'best': 5.0, 'median': 3.0, 'jobs': 3}
    assert policy.judge(b, 2, [a, b, c]) is None  # best 2 < 3


def test_truncation_states_the_rank_and_cut_and_honours_interval_delay_and_label():
    """Six jobs at step 2, 50% cut: floor(6 * 0.5) = 3; e (0.2) has one job worse than it (f): rank 2 of 6 from the
    bottom. The sweep file's evaluationInterval, delayEvaluation and the step's label reach the policy."""
    policy = make_policy({'policy': 'truncation', 'truncationPercentage': 50, 'evaluationInterval': 2,
                          'delayEvaluation': 3}, 'max', 'epoch')
    trials = [trial(n, [0.0, v, 0.0, 0.0]) for n, v in [('a', 0.9), ('b', 0.8), ('c', 0.7), ('d', 0.6), ('e', 0.2),
                                                         ('f', 0.1)]]
    assert policy.evaluation_points(trials[0]) == [4]
    decision = policy.judge(trials[4], 2, trials)
    assert (decision.kind, decision.job, decision.step) == (STOPPED, 'e', 2.0)
    assert decision.text == ('stopped at epoch 2 by truncation: 0.2 is in the lowest 50% of 6 jobs at this step '
                             '(rank 2 of 6 from the bottom; 3 cut)')
    assert decision.numbers == {'value': 0.2, 'jobs': 6, 'cut': 3, 'rankFromBottom': 2}
    assert policy.judge(trials[2], 2, trials) is None  # c: three jobs worse than it


def test_asha_states_every_number_of_a_stop():
    policy = make_policy({'policy': 'asha', 'minResource': 1, 'maxResource': 9, 'eta': 3}, 'max', 'epoch')
    a = trial('a', [0.5, 0.6, 0.7], state='succeeded')
    b = trial('b', [0.9, 0.95, 0.99], state='succeeded')
    c = trial('c', [0.8, 0.7, 0.6])
    decision = policy.judge(c, 3, [a, b, c])
    assert (decision.kind, decision.job, decision.step) == (STOPPED, 'c', 3.0)
    assert decision.numbers == {'value': 0.6, 'rung': 1, 'rungStep': 3, 'keep': 1, 'competing': 3, 'cutoff': 0.99}


def test_asha_judges_against_the_sweep_it_is_given_each_time():
    """ASHA keeps one table of the rungs per list of jobs (a poll): another list, or the same list with a job
    added, is another sweep, and the judgment follows it."""
    policy = make_policy({'policy': 'asha', 'minResource': 1, 'maxResource': 9, 'eta': 3}, 'max')
    judged = trial('j', [0.5])
    weak = [trial('a', [0.1], state='succeeded'), judged]
    strong = [trial('a', [0.9], state='succeeded'), judged]
    assert policy.judge(judged, 1, weak) is None
    assert policy.judge(judged, 1, strong) is not None  # another list of the same length
    assert policy.judge(judged, 1, weak) is None
    weak.append(trial('b', [0.95], state='succeeded'))  # the same list, one job more: 3 compete, keep 1
    assert policy.judge(judged, 1, weak) is not None


def test_value_at_is_a_jobs_latest_value_up_to_the_step_or_none():
    job = trial('a', [0.1, 0.2, 0.3], steps=[2, 4, 6])
    assert [value_at(job, s) for s in (1, 2, 3, 4, 7)] == [None, 0.1, 0.1, 0.2, 0.3]
    assert value_at(trial('empty', []), 5) is None


@pytest.mark.parametrize('settings', [{'policy': 'bandit', 'slackAmount': 0.1}, {'policy': 'median'},
                                      {'policy': 'truncation', 'truncationPercentage': 20}])
def test_every_policy_takes_the_sweep_files_interval_delay_and_step_label(settings):
    """evaluationInterval and delayEvaluation say at which reports a job is judged (every report without them);
    the step's label names the step in each decision."""
    job = trial('a', [1.0] * 6)
    assert make_policy(settings, 'max').evaluation_points(job) == [1, 2, 3, 4, 5, 6]
    policy = make_policy(dict(settings, evaluationInterval=2, delayEvaluation=3), 'max', 'epoch')
    assert policy.evaluation_points(job) == [4, 6]
    assert policy.step_label == 'epoch'


def test_asha_and_the_base_rules_defaults():
    """eta is 3 unless the sweep file says; an interval of 0 or none judges every report; a policy built without a
    step label calls it 'step'; an unknown policy is refused by name."""
    assert make_policy({'policy': 'asha', 'minResource': 1, 'maxResource': 27}, 'max').rungs == [1, 3, 9]
    assert make_policy({'policy': 'asha', 'minResource': 1, 'maxResource': 27, 'eta': 2}, 'max').rungs == [1, 2, 4, 8,
                                                                                                          16]
    for interval in (0, None):
        assert Policy('max', evaluation_interval=interval).evaluation_points(trial('a', [1.0] * 3)) == [1, 2, 3]
    sweep = [trial('best', [1.0], state='succeeded'), trial('low', [0.1])]
    assert BanditPolicy('max', slack_amount=0.5).judge(sweep[1], 1, sweep).text == (
        'stopped at step 1 by bandit: 0.1 < 1 - 0.5')
    with pytest.raises(ValueError, match=r"^unknown policy 'hyperband'$"):
        make_policy({'policy': 'hyperband'}, 'max')
