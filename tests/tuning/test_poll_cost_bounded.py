"""`sweep run`'s controller at scale (issue 44, item 1): no step of a poll whose work grows with the finished jobs
faster than linearly. Counted, never timed:

- ASHA reads every job's reports once per poll, however many jobs it judges in it (it used to read every job's
  reports at each judgment: judgments x jobs), and decides exactly as the rule says (a reference written from
  the rule, on hostile reports: steps out of order, repeated, ties, several rungs crossed at once);
- the random and grid samplers draw each configuration of their sequence once in a whole run (they used to walk it
  from the first configuration at every poll), and a job gone from the service is suggested again first;
- the controller does not copy a stopped job that it saw before (the same Trial object, the same decision).
"""
import random

import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.controller import Controller, Limits
from azext_batchai_sweep.core.tuning.decision import STOPPED, Decision
from azext_batchai_sweep.core.tuning.policies import make_policy
from azext_batchai_sweep.core.tuning.samplers import RandomSampler
from azext_batchai_sweep.core.tuning.samplers.base import SequenceSampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

from .helpers import trial

ASHA = {'policy': 'asha', 'minResource': 1, 'maxResource': 27, 'eta': 3}


class CountedReports(tuple):
    """A job's reports that count how often they are read through."""
    reads = 0

    def __iter__(self):
        CountedReports.reads += 1
        return super().__iter__()


def finished_jobs(count, rng):
    return [Trial(name='done-{}'.format(i), index=i, params={'X': i}, state='succeeded',
                  reports=CountedReports(Report(step=float(s), value=rng.random()) for s in range(1, 28)))
            for i in range(count)]


@pytest.mark.parametrize('finished', [100, 400])
def test_asha_reads_each_job_once_per_poll_whatever_it_judges(finished):
    rng = random.Random(finished)
    done = finished_jobs(finished, rng)
    running = [trial('run-{}'.format(i), [rng.random() for _ in range(9)], index=finished + i)
               for i in range(30)]
    controller = Controller(SequenceSampler([]), make_policy(ASHA, 'max'), Limits(max_concurrent_jobs=30))
    CountedReports.reads = 0
    actions = controller.step(done + running)
    judged = sum(controller.judged.values())
    assert judged >= 30 and actions.terminate  # 30 jobs judged at rungs 1, 3 and 9: work for the rule
    # one pass over each finished job's reports for the whole poll (it was 30 judgments x every job)
    assert CountedReports.reads <= finished


def rule_reference(policy, judged, n, trials, goal):
    """ASHA's rule as docs/sweep-run.md and Li et al. state it: at each rung the n-th report is the first to
    reach, the judged job's value there (its n-th report) against every other job's first value at or past the
    rung; kept when among the best max(1, count // eta). Returns the rung index it stops at, or None."""
    previous = max((r.step for r in judged.reports[:n - 1]), default=float('-inf'))
    value = judged.reports[n - 1].value
    for k, step in enumerate(policy.rungs):
        if not previous < step <= judged.reports[n - 1].step:
            continue
        others = [next((r.value for r in t.reports if r.step >= step), None) for t in trials if t.name != judged.name]
        competing = sorted([v for v in others if v is not None] + [value], reverse=goal == 'max')
        cutoff = competing[max(1, len(competing) // policy.eta) - 1]
        if (value < cutoff) if goal == 'max' else (value > cutoff):
            return k
    return None


@pytest.mark.parametrize('goal', ['max', 'min'])
def test_asha_decides_as_its_rule_on_hostile_reports(goal):
    policy = make_policy(ASHA, goal)
    rng = random.Random(goal)
    for _ in range(60):
        trials = []
        for i in range(rng.randint(1, 25)):
            steps = [rng.choice([0, 1, 2, 3, 4, 9, 10, 27, 30]) for _ in range(rng.randint(0, 6))]
            values = [rng.choice([0.5, 0.25, 1.0, rng.random()]) for _ in steps]  # ties included
            trials.append(trial('t{}'.format(i), values, steps=steps, index=i))
        for judged in trials:
            for n in policy.evaluation_points(judged):
                decision = policy.judge(judged, n, trials)
                expected = rule_reference(policy, judged, n, trials, goal)
                assert (decision.numbers['rung'] if decision else None) == expected, (judged, n)


class CountedSequence:
    """A sampler's sequence of configurations that counts the ones drawn from it."""

    def __init__(self, configurations):
        self.configurations, self.drawn = configurations, 0

    def __len__(self):
        return len(self.configurations)

    def __iter__(self):
        for item in self.configurations:
            self.drawn += 1
            yield item


def submit(trials, suggestions):
    return trials + [Trial(name='j{}'.format(len(trials) + i), index=len(trials) + i, params=s.params,
                           state='running') for i, s in enumerate(suggestions)]


@pytest.mark.parametrize('size', [300, 1200])
def test_sequence_samplers_draw_each_configuration_once_in_a_run(size):
    sequence = CountedSequence([{'X': i} for i in range(size)])
    sampler = SequenceSampler(sequence)
    trials = []
    while not sampler.exhausted(trials):
        trials = submit(trials, sampler.suggest(trials, 8))  # a poll: 8 free slots
    assert [t.params['X'] for t in trials] == list(range(size))
    # each configuration drawn once (a walk from the start at every poll drew size^2 / 16 of them)
    assert sequence.drawn == size


def test_a_job_gone_from_the_service_is_suggested_again_first():
    sampler = RandomSampler([NumParamSpec('X', 0, 1, 'REAL', 'LINEAR')], 50, seed=3)
    trials = []
    for _ in range(4):
        trials = submit(trials, sampler.suggest(trials, 5))
    gone = trials.pop(7)  # deleted (resubmit): a walk from the start suggests it before anything new
    fresh = RandomSampler([NumParamSpec('X', 0, 1, 'REAL', 'LINEAR')], 50, seed=3)
    again = sampler.suggest(trials, 3)
    assert [s.params for s in again] == [s.params for s in fresh.suggest(trials, 3)]
    assert again[0].params == gone.params


def test_a_stopped_job_seen_before_is_not_copied_again():
    decision = Decision(job='a', kind=STOPPED, rule='asha', step=1.0, text='stopped', numbers={'reportsJudged': 1})
    controller = Controller(SequenceSampler([]), None, decisions={'a': decision})
    trials = [trial('a', [0.1, 0.2], state='terminated'), trial('b', [0.3], state='terminated'),
              trial('c', [0.4], state='succeeded')]
    first = controller.as_seen_by_policies(trials)
    assert [len(t.reports) for t in first] == [1, 1, 1] and all(t.stopped_early for t in first[:2])
    again = controller.as_seen_by_policies(list(trials))
    assert all(a is b for a, b in zip(first, again))
    # a new attempt (another Trial object) or another decision is looked at again
    trials[0] = trial('a', [0.1, 0.2, 0.3], state='terminated')
    assert controller.as_seen_by_policies(trials)[0] is not first[0]


def test_the_journal_is_written_by_the_one_pass_encoder(tmp_path, monkeypatch):
    """The journal (a row per job) is written at every poll: json.dumps's C encoder in one pass, never json.dump,
    which streams through the encoder's pure-Python path (7x slower: a second a poll at 1,000 jobs, profiled)."""
    import json.encoder
    from azext_batchai_sweep.core.tuning.journal import Journal

    def python_path(*_args, **_kwargs):
        raise AssertionError("the encoder's pure-Python path")
    monkeypatch.setattr(json.encoder, '_make_iterencode', python_path)
    path = str(tmp_path / 'sweep.run.json')
    journal = Journal(path)
    rows = {'job-{}'.format(i): {'decision': 'stopped', 'best': i / 7, 'reason': 'rung 0 \u2264 0.5'}
            for i in range(200)}
    journal.data['rows'] = rows
    journal.save()
    assert Journal(path).data['rows'] == rows


def _listed(name, state, created='2026-11-28T10:00:00Z', index=0):
    from azext_batchai_sweep.core.service.listing import ListedJob
    env = [{'name': 'BATCHAI_SWEEP_NAME', 'value': 's'}, {'name': 'BATCHAI_SWEEP_INDEX', 'value': str(index)},
           {'name': 'BATCHAI_SWEEP_PARAMS', 'value': '{"X": %d}' % index}]
    return ListedJob({'name': name, 'properties': {'executionState': state, 'creationTime': created,
                                                   'provisioningState': 'succeeded', 'environmentVariables': env}},
                     None)


def _observer(listings):
    """A SweepRun's observe() alone, on a listing that the test gives poll by poll (no follower: no objective)."""
    from types import SimpleNamespace
    from azext_batchai_sweep.core.tuning.loop import Journal, SweepRun
    run = object.__new__(SweepRun)
    run.journal, run.follower, run.clock = Journal(None), None, lambda: 0.0
    run.controller = SimpleNamespace(decisions={}, judged={})
    run.factory = SimpleNamespace(resource_name=None)
    run.reset_view()
    held = []

    def list_jobs():
        held.append(len(run.jobs))  # what the run still holds of the last listing while it lists again
        return listings.pop(0)
    run.list_jobs = list_jobs
    return run, held


def test_a_finished_job_is_one_trial_from_poll_to_poll_and_one_listing_is_held():
    first = [_listed('a', 'succeeded', index=0), _listed('b', 'running', index=1)]
    again = [_listed('a', 'succeeded', index=0), _listed('b', 'running', index=1)]
    rerun = [_listed('a', 'succeeded', created='2026-11-28T11:00:00Z', index=0), _listed('b', 'succeeded', index=1)]
    run, held = _observer([first, again, rerun])
    trials = [run.observe()[0] for _ in range(3)]
    assert trials[1][0] is trials[0][0]          # finished: the same Trial, not rebuilt from its listing
    assert trials[1][1] is not trials[0][1]      # running: built again
    assert trials[2][0] is not trials[1][0]      # a new attempt of the job (resubmit): built again
    assert [t.state for t in trials[2]] == ['succeeded', 'succeeded']
    assert held == [0, 0, 0]  # the last listing was let go before the next one was read
