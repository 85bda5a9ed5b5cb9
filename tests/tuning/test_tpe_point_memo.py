"""A sampler converts a job's parameters to its coordinates once (tpe._History._point: the sampler's points_seen,
which BOHB's model shares between the TPE samplers it makes): a job read again because its state changed (it
finished), or its parameters read into a new dict with the same items, is not converted again. Counts of work."""
import dataclasses

from azext_batchai_sweep.core.tuning.samplers import tpe
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report

from .test_tpe_listed_kept import SPECS, _done, _jobs, _poll


def _conversions(monkeypatch):
    converted = []
    convert = tpe._History._convert  # pylint: disable=protected-access

    def counted(self, params):
        converted.append(dict(params))
        return convert(self, params)
    monkeypatch.setattr(tpe._History, '_convert', counted)  # pylint: disable=protected-access
    return converted


def test_jobs_read_again_are_not_converted_again(monkeypatch):
    trials = _jobs(300, running=4)
    sampler = TPESampler(SPECS, goal='min', seed=1)
    converted = _conversions(monkeypatch)
    sampler.suggest(trials, 1)
    assert len(converted) == 300
    del converted[:]
    # the 4 running jobs finish (read again: new Trial objects, new dicts), 1 starts
    started = dataclasses.replace(_jobs(1, running=1, seed=300)[0], index=300, name='j300')
    trials = _poll(trials[:-4] + [_done(t) for t in trials[-4:]] + [started])
    first = sampler.suggest(trials, 1)
    assert converted == [started.params]
    assert first == TPESampler(SPECS, goal='min', seed=1).suggest(trials, 1)


def test_bohbs_samplers_share_their_conversions(monkeypatch):
    trials = [_done(t) for t in _jobs(300, running=0)]
    model = BudgetModel(SPECS, 'min', 9, values_at=lambda t: {81.0: t.last} if t.reports else {}, random_fraction=0.0)
    converted = _conversions(monkeypatch)
    model.suggest(trials, 'b0')
    assert len(converted) == 300
    del converted[:]
    # two jobs report again (another value at the budget): read again by the next suggestion's new TPE sampler
    trials = _poll(trials[:-2] + [dataclasses.replace(t, reports=t.reports + (Report(2, -5.0),)) for t in trials[-2:]])
    reads = []
    read = tpe._History._read  # pylint: disable=protected-access
    monkeypatch.setattr(tpe._History, '_read', lambda self, *args: reads.append(1) or read(self, *args))
    model.suggest(trials, 'b1')
    assert len(reads) == 2 and converted == []
