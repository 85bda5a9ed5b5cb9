"""A sampler asked again (issue 44) lists its history's scored and pending items again only from the first entry that
changed (tpe._History._keep), and splits them into good and bad again only when they changed (TPESampler._groups'
``split_kept``). The rule: what it lists and the split it uses are a new sampler's for the same trials, wherever a
job changed (at the end, in the middle, a job gone), and the work follows what changed. Counts of work, not time."""
import dataclasses
import heapq
import random

import pytest

from azext_batchai_sweep.core.tuning.samplers import parzen, tpe
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

from .scale_spaces import SPACES, objective

SPECS = SPACES['continuous 6']


@pytest.fixture(autouse=True)
def _small_large_estimators(monkeypatch):
    monkeypatch.setattr(parzen, 'PRUNE_KERNELS', 40)


def _jobs(count, running=4, seed=0):
    """``count`` jobs, the last ``running`` of them running."""
    rng = random.Random(seed)
    trials = []
    for index in range(count):
        params = {spec.name: spec.sample(rng) for spec in SPECS}
        trials.append(Trial(name='j%d' % index, index=index, params=params, state='running'))
    return [_done(t) for t in trials[:count - running]] + trials[count - running:]


def _done(trial, value=None):
    value = objective(trial.params) if value is None else value
    return dataclasses.replace(trial, state='succeeded', reports=(Report(1, value),))


def _poll(trials):
    """The same jobs read again by a run: new Trial objects, new dicts with the same items."""
    return [dataclasses.replace(t, params=dict(t.params)) for t in trials]


def _same_as_new(sampler, trials):
    """The warm sampler's suggestion, lists and split are a new sampler's for the same trials: the groups, and the
    split kept for the next edit (the n best, the bad items and their indices in index order)."""
    new = TPESampler(SPECS, goal=sampler.goal, seed=1, constant_liar=sampler.constant_liar)
    assert sampler.suggest(trials, 1) == new.suggest(trials, 1)
    assert sampler.trial_records.listed == new.trial_records.listed
    assert sampler.split_kept[1] == new.split_kept[1]
    assert sampler.split_kept[2] == new.split_kept[2]


def _spans(monkeypatch):
    """A list that gets, for every listing of a history's entries, how many entries it looks at."""
    spans = []
    positions = tpe._positions  # pylint: disable=protected-access

    def counted(entries, first, kind):
        spans.append(len(entries) - first)
        return positions(entries, first, kind)
    monkeypatch.setattr(tpe, '_positions', counted)
    return spans


def test_a_poll_lists_the_entries_from_the_first_that_changed(monkeypatch):
    trials = _jobs(600)
    sampler = TPESampler(SPECS, goal='min', seed=1)
    spans = _spans(monkeypatch)
    sampler.suggest(trials, 1)
    assert spans == [600, 600]  # the first history lists every entry (scored, then pending)
    # The 4 running jobs finish, 2 start: the entries from the first of the 4 on are listed again.
    trials = _poll([_done(t) for t in trials[:-4]] + [_done(t) for t in trials[-4:]] + _jobs(602)[600:])
    del spans[:]
    _same_as_new(sampler, trials)
    assert spans[:2] == [6, 6]
    # A job in the middle reads another value: listed from it on; the second job (the first kept is the first).
    for position in (300, 1):
        trials = _poll(trials[:position] + [_done(trials[position], value=-1e9 - position)] + trials[position + 1:])
        del spans[:]
        _same_as_new(sampler, trials)
        assert spans[:2] == [602 - position, 602 - position]
    # The last jobs gone (a shorter list), and the same jobs again: nothing listed.
    for trials in (trials[:590], _poll(trials[:590])):
        del spans[:]
        _same_as_new(sampler, trials)
        assert spans[:2] == [0, 0]


def test_a_sampler_asked_again_with_the_same_jobs_splits_nothing_again(monkeypatch):
    trials = _jobs(600)
    sampler = TPESampler(SPECS, goal='min', seed=1)
    sampler.suggest(trials, 1)
    heaps = []
    nsmallest = heapq.nsmallest
    monkeypatch.setattr(heapq, 'nsmallest', lambda *args, **kwargs: heaps.append(1) or nsmallest(*args, **kwargs))
    listed = sampler.trial_records.listed
    assert sampler.suggest(_poll(trials), 1) == TPESampler(SPECS, goal='min', seed=1).suggest(trials, 1)
    assert len(heaps) == 1  # the new sampler's
    assert sampler.trial_records.listed[0] is listed[0]  # the same list of scored items
    # A batch of 2: the first suggestion's split kept, the second's (one more pending job) computed; then the
    # pending jobs the trials tell again.
    del heaps[:]
    assert sampler.suggest(_poll(trials), 2) == TPESampler(SPECS, goal='min', seed=1).suggest(trials, 2)
    assert len(heaps) == 1 + 2
    del heaps[:]
    _same_as_new(sampler, _poll(trials))
    assert len(heaps) == 1 + 1
    # A job finishes: split again, as a new sampler splits.
    del heaps[:]
    _same_as_new(sampler, _poll(trials[:-1] + [_done(trials[-1])]))
    assert len(heaps) == 1 + 1


def test_bohbs_model_asked_again_splits_nothing_again(monkeypatch):
    """BOHB's model makes a TPE sampler a suggestion: the split at a budget is the last one's while its jobs are."""
    trials = [_done(t) for t in _jobs(600, running=0)]
    model = BudgetModel(SPECS, 'min', 9, values_at=lambda t: {81.0: t.last} if t.reports else {}, random_fraction=0.0)
    model.suggest(trials, 'b0')
    heaps = []
    nsmallest = heapq.nsmallest
    monkeypatch.setattr(heapq, 'nsmallest', lambda *args, **kwargs: heaps.append(1) or nsmallest(*args, **kwargs))
    again = model.suggest(_poll(trials), 'b1')
    assert heaps == []
    new = BudgetModel(SPECS, 'min', 9, values_at=lambda t: {81.0: t.last} if t.reports else {},
                      random_fraction=0.0)
    assert again[0] == new.suggest(trials, 'b1')[0] and heaps == [1]


def _whole_splits(monkeypatch):
    """A list that gets 1 for every split computed over all of a history's scored items."""
    splits = []
    whole = TPESampler._split_whole  # pylint: disable=protected-access

    def counted(self, scored, n_good):
        splits.append(1)
        return whole(self, scored, n_good)
    monkeypatch.setattr(TPESampler, '_split_whole', counted)
    return splits


@pytest.mark.parametrize('goal', ['min', 'max'])
def test_jobs_finishing_after_the_last_split_edit_it(goal, monkeypatch):
    """Jobs that finish after the last scored one (a run's polls): the split is the last one edited, a new sampler's,
    whether the new jobs join the good group (one pushing the worst good job back among the bad), tie with a good
    job, or stay bad."""
    trials = _jobs(600, running=4)
    sampler = TPESampler(SPECS, goal=goal, seed=1)
    sampler.suggest(trials, 1)
    sign = 1 if goal == 'min' else -1
    best = sampler.split_kept[2][0]
    tie = best[len(best) // 2][1]
    splits = _whole_splits(monkeypatch)
    for values in ([None, None], [sign * -1e9, None], [tie, tie], [None, sign * -2e9]):
        done, running = trials[-4:-2], trials[-2:]
        started = [dataclasses.replace(t, index=len(trials) + k, name='j%d' % (len(trials) + k))
                   for k, t in enumerate(_jobs(2, running=2, seed=len(trials)))]
        trials = _poll(trials[:-4] + [_done(t, v) for t, v in zip(done, values)] + running + started)
        del splits[:]
        _same_as_new(sampler, trials)
        assert splits == [1]  # the new sampler's only
    # A job in the middle gone: split whole.
    trials = _poll(trials[:200] + trials[201:])
    del splits[:]
    _same_as_new(sampler, trials)
    assert splits == [1, 1]


def test_a_split_of_repeated_indices_is_not_edited(monkeypatch):
    """Two jobs of one index (not a run's: its indices are unique) leave the items' order to their positions: the
    split is computed whole."""
    trials = _jobs(600, running=2)
    trials[100] = dataclasses.replace(trials[100], index=99)
    sampler = TPESampler(SPECS, goal='min', seed=1)
    sampler.suggest(trials, 1)
    splits = _whole_splits(monkeypatch)
    trials = _poll(trials[:-2] + [_done(t) for t in trials[-2:]])
    _same_as_new(sampler, trials)
    assert splits == [1, 1]


@pytest.mark.parametrize('repeat', ['the last scored index', 'one index twice'])
def test_new_jobs_of_a_repeated_index_are_not_appended_to_the_split(repeat, monkeypatch):
    """The jobs that finished since the last split repeat an index (the last scored job's, or one index twice among
    them): their order is left to their positions, so the split is computed whole, as a new sampler computes it."""
    trials = _jobs(600, running=2)
    sampler = TPESampler(SPECS, goal='min', seed=1)
    sampler.suggest(trials, 1)
    last_scored = trials[-3].index
    first, second = trials[-2:]
    if repeat == 'the last scored index':
        finished = [dataclasses.replace(first, index=last_scored), second]
    else:
        finished = [dataclasses.replace(first, index=second.index), second]
    splits = _whole_splits(monkeypatch)
    trials = _poll(trials[:-2] + [_done(t) for t in finished])
    _same_as_new(sampler, trials)
    assert splits == [1, 1]


def test_without_the_constant_liar_jobs_that_start_split_nothing_again(monkeypatch):
    """Without the constant liar the pending jobs are not among the bad: jobs that start (none finished) leave the
    split as it was, not even edited."""
    trials = _jobs(600, running=2)
    sampler = TPESampler(SPECS, goal='min', seed=1, constant_liar=False)
    sampler.suggest(trials, 1)
    heaps = []
    nsmallest = heapq.nsmallest
    monkeypatch.setattr(heapq, 'nsmallest', lambda *args, **kwargs: heaps.append(1) or nsmallest(*args, **kwargs))
    started = [dataclasses.replace(t, index=600 + k, name='j%d' % (600 + k))
               for k, t in enumerate(_jobs(2, running=2, seed=600))]
    trials = _poll(trials + started)
    kept = sampler.split_kept
    sampler.suggest(trials, 1)
    assert heaps == [] and sampler.split_kept[2] is kept[2]
    _same_as_new(sampler, trials)


@pytest.mark.parametrize('goal', ['min', 'max'])
def test_two_jobs_of_one_index_are_two_observations_one_good_one_bad(goal):
    """A caller's trials may repeat an index (a run's never do): the best job and the worst share one, and each is
    still an observation of its own, the best in l(x) and the worst in g(x); none is left out of both."""
    sign = 1 if goal == 'min' else -1
    trials = _jobs(100, running=0)
    trials[50] = _done(trials[50], value=sign * -1e9)
    trials[51] = dataclasses.replace(_done(trials[51], value=sign * 1e9), index=50)
    [(_, below, above)] = TPESampler(SPECS, goal=goal, seed=1).models(trials)
    assert (len(below.weights) - 1) + (len(above.weights) - 1) == 100  # (each has a prior kernel besides)
    worst = tuple(trials[51].params[spec.name] for spec in SPECS)  # (0..1 LINEAR: the coordinates are the values)
    assert worst in zip(*[kernel.mus for kernel in above.kernels])
