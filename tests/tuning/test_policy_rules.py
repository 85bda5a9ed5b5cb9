"""Rules of the early-termination policies that the hand-computed cases of test_policies.py leave open, each on a
case computed by hand: what a skipped decision logs, and what ASHA says of a job it lets go on past several rungs."""
import logging

import pytest

from azext_batchai_sweep.core.tuning.policies import make_policy
from azext_batchai_sweep.core.tuning.policies.bandit import BanditPolicy
from azext_batchai_sweep.core.tuning.policies.base import Policy

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
