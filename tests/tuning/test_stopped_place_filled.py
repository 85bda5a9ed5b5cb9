"""`sweep run` keeps the slots busy (issue 44, item 1: idle slot-time): a job a rule stops leaves its place to a new
job at the same poll. `sweep run` sends a poll's terminates before its creates, so the controller counts the jobs it
stops as gone (free_stopped) and the sampler sees them as the next poll will: terminated, with the reports they were
judged on. It used to count them among the running jobs, so their places were filled one poll later and, with jobs
of a few seconds, the service's queue ran dry between two polls. The suggestions that take a stopped job's place are
the last ones (`replacing`): the run creates them once the stopped jobs have ended
(tests/tuning/test_stopped_place_waits.py). Counted, not timed.
"""
from dataclasses import replace

import pytest

from azext_batchai_sweep.core.tuning.controller import Controller, Limits, as_seen
from azext_batchai_sweep.core.tuning.policies import make_policy
from azext_batchai_sweep.core.tuning.trial import Sampler, Suggestion

from .helpers import trial

# Stops at its first rung (1) every job but the best third of those that reached it.
ASHA = {'policy': 'asha', 'minResource': 1, 'maxResource': 9, 'eta': 3}


class Recording(Sampler):
    """Suggests fresh configurations; keeps what it was shown at each call."""
    kind = 'recording'

    def __init__(self):
        self.shown, self.made = [], 0

    def suggest(self, trials, count):
        self.shown.append(list(trials))
        for _ in range(count):
            self.made += 1
            yield Suggestion(params={'X': 'new-{}'.format(self.made)})

    def exhausted(self, trials):
        return False


def running(count, first=0):
    """Jobs at their first report, values 0..count-1 (the best third is kept at rung 1)."""
    return [trial('run-{}'.format(i), [float(i)], index=i) for i in range(first, first + count)]


@pytest.mark.parametrize('slots,queued', [(6, 0), (9, 3), (30, 0)])
def test_the_jobs_stopped_at_a_poll_are_replaced_at_that_poll(slots, queued):
    trials = running(slots - queued) + [trial('queued-{}'.format(i), [], state='queued', index=100 + i)
                                        for i in range(queued)]
    sampler = Recording()
    controller = Controller(sampler, make_policy(ASHA, 'max'), Limits(max_concurrent_jobs=slots))
    actions = controller.step(trials, free_stopped=True)
    stopped = {d.job for d in actions.terminate}
    assert len(stopped) == (slots - queued) - (slots - queued) // 3  # the rule's own count
    assert len(actions.submit) == len(stopped)  # their places, filled now (none before: every place was taken)
    assert actions.replacing == len(stopped)  # each created once a stopped job has ended
    # The sampler saw the stopped jobs as the next poll shows them: terminated, stopped early, judged reports.
    shown = {t.name: t for t in sampler.shown[-1]}
    for name in stopped:
        assert shown[name].state == 'terminated' and shown[name].stopped_early
    assert all(shown[t.name].state == t.state for t in trials if t.name not in stopped)
    expected = as_seen([t for t in trials if t.name in stopped], controller.decisions)
    assert [shown[t.name].reports for t in expected] == [t.reports for t in expected]


def test_without_free_stopped_the_places_wait_for_the_next_observation():
    """The simulation's tick (core/tuning/simulation.py) marks the stopped jobs terminated after the step: the step
    itself submits nothing for them."""
    controller = Controller(Recording(), make_policy(ASHA, 'max'), Limits(max_concurrent_jobs=6))
    actions = controller.step(running(6))
    assert actions.terminate and not actions.submit


def test_the_budget_and_a_free_place_are_still_the_limits():
    # maxTotalJobs: the stopped jobs still count as jobs of the sweep.
    controller = Controller(Recording(), make_policy(ASHA, 'max'), Limits(max_concurrent_jobs=6, max_total_jobs=8))
    actions = controller.step(running(6), free_stopped=True)
    assert len(actions.terminate) == 4 and len(actions.submit) == 2 and actions.replacing == 2
    # Places taken by queued jobs stay taken; only the stopped ones are freed.
    trials = running(3) + [trial('queued-{}'.format(i), [], state='queued', index=100 + i) for i in range(3)]
    controller = Controller(Recording(), make_policy(ASHA, 'max'), Limits(max_concurrent_jobs=6))
    actions = controller.step(trials, free_stopped=True)
    assert len(actions.terminate) == 2 and len(actions.submit) == 2 and actions.replacing == 2
    # Places free before the step are filled first and wait for nothing; the stopped jobs' places come last.
    controller = Controller(Recording(), make_policy(ASHA, 'max'), Limits(max_concurrent_jobs=6))
    actions = controller.step(running(4), free_stopped=True)
    assert len(actions.terminate) == 3 and len(actions.submit) == 5 and actions.replacing == 3
    # No limit on the jobs at once: nothing waits.
    controller = Controller(Recording(), make_policy(ASHA, 'max'), Limits(max_total_jobs=9))
    actions = controller.step(running(6), free_stopped=True)
    assert len(actions.terminate) == 4 and len(actions.submit) == 3 and actions.replacing == 0
    # A job stopped at an earlier poll and still terminating keeps its place until the service says it is gone.
    controller = Controller(Recording(), make_policy(ASHA, 'max'), Limits(max_concurrent_jobs=6))
    first = controller.step(running(6), free_stopped=True)
    stopping = {d.job for d in first.terminate}
    again = controller.step([replace(t, state='terminating') if t.name in stopping else t for t in running(6)],
                            free_stopped=True)
    assert not again.terminate and not again.submit
