"""What a sampler asked again reads of the jobs (issue 44; tpe._History, and what mutation testing of it found, issue
49). The rules: MOTPE scores again only the jobs whose fields changed since its last suggestion, whatever simple
types (str, int, float, bool) their metrics hold, and a job whose metrics dict the caller changed in place is read
again; a metric that becomes an equal value the sampler reads differently (Decimal('0.5') == 0.5, but only a float
or an int is a number to it) is read again, as a new sampler reads it; and BOHB's model, whose TPE is told which
jobs changed, learns from a job that joined already finished (a run that polled rarely, a resumed one), and suggests
what a new model does when its suggestions alternate between budgets (a history told, then one not told)."""
import dataclasses
import decimal
import fractions
import random

import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.objectives import Objectives
from azext_batchai_sweep.core.tuning.samplers import tpe
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel, ModelChoice
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

SPECS = [NumParamSpec('X%d' % i, 0.0, 1.0, 'REAL', 'LINEAR') for i in range(2)]
OBJECTIVES = Objectives([('a', 'min'), ('b', 'max')])


def _job(index, rng, state='running', extra=None):
    params = {s.name: rng.random() for s in SPECS}
    if state == 'running':
        return Trial(name='j%d' % index, index=index, params=params, state=state)
    return _finish(Trial(name='j%d' % index, index=index, params=params, state='running'), extra)


def _finish(trial, extra=None):
    value = trial.params['X0'] + trial.params['X1'] ** 2
    return dataclasses.replace(trial, state='succeeded', reports=(Report(1, value),),
                               metrics=dict({'b': 1.0 - trial.params['X0'] ** 0.5}, **(extra or {})))


def _poll(trials):
    """A new poll: new Trial objects, new parameter and metric dicts with equal items."""
    return [dataclasses.replace(t, params=dict(t.params), metrics=dict(t.metrics)) for t in trials]


def _scored(monkeypatch):
    """The indices of the jobs MOTPE scores from now on."""
    scored = []
    score = MOTPESampler.score

    def counted(self, trial, *args, **kwargs):
        scored.append(trial.index)
        return score(self, trial, *args, **kwargs)
    monkeypatch.setattr(MOTPESampler, 'score', counted)
    return scored


def _history(sampler, trials):
    history = sampler._make_history(trials)  # pylint: disable=protected-access
    return history.scored, history.pending, history.tried


@pytest.mark.parametrize('extra', [{}, {'n': 3, 'ok': True, 'tag': 'gpu'}], ids=['floats', 'every simple type'])
def test_motpe_scores_again_only_the_jobs_that_changed(extra, monkeypatch):
    rng = random.Random(4)
    trials = [_job(k, rng, 'succeeded' if k < 250 else 'running', extra) for k in range(260)]
    sampler = MOTPESampler(SPECS, OBJECTIVES, seed=1)
    scored = _scored(monkeypatch)
    sampler.suggest(trials, 1)
    assert sorted(scored) == list(range(250))
    for step in range(4):
        last, trials = trials, _poll(trials)
        finished = [250 + 2 * step, 251 + 2 * step]
        for k in finished:
            trials[k] = _finish(trials[k], extra)
        trials.append(_job(len(trials), rng))
        if step == 2:  # the caller changes a job's metrics in place: the Trial and dict the last suggestion read
            trials[7] = last[7]
            trials[7].metrics['b'] = -5.0
            finished.append(7)
        del scored[:]
        found = sampler.suggest(trials, 2)
        assert sorted(scored) == sorted(finished), step
        assert found == MOTPESampler(SPECS, OBJECTIVES, seed=1).suggest(trials, 2)
        del scored[:]


@pytest.mark.parametrize('number', [decimal.Decimal('0.5'), fractions.Fraction(1, 2)])
def test_a_metric_that_becomes_an_equal_value_read_differently_is_read_again(number):
    rng = random.Random(6)
    trials = [_job(k, rng, 'succeeded') for k in range(120)]
    picked = random.Random(1).sample(range(len(trials)), 15)
    for k in picked:  # not a number to the sampler: these jobs lack objective b
        trials[k] = dataclasses.replace(trials[k], metrics={'b': number})
    warm = MOTPESampler(SPECS, OBJECTIVES, seed=3)
    warm.suggest(trials, 1)
    trials = _poll(trials)
    for k in picked:  # == the value above, and a number now
        trials[k] = dataclasses.replace(trials[k], metrics={'b': 0.5})
    assert trials[picked[0]].metrics == {'b': number}
    fresh = MOTPESampler(SPECS, OBJECTIVES, seed=3)
    assert _history(warm, trials) == _history(fresh, trials)
    assert len(_history(warm, trials)[0]) == 120
    assert warm.suggest(trials, 2) == MOTPESampler(SPECS, OBJECTIVES, seed=3).suggest(trials, 2)


def _last_at_one(trial):
    return {1.0: trial.last} if trial.reports else {}


def test_bohbs_model_learns_from_jobs_that_joined_finished(monkeypatch):
    """Its TPE is told which jobs of the view changed (tpe._History._told): the jobs past the last view are read too,
    the finished ones scored, and it suggests what a new model suggests."""
    compared = []
    inputs_of = tpe.TPESampler.score_inputs_of
    monkeypatch.setattr(tpe.TPESampler, 'score_inputs_of',
                        staticmethod(lambda trials: compared.append(len(trials)) or inputs_of(trials)))
    rng = random.Random(9)
    trials = [_job(k, rng, 'succeeded' if k < 40 else 'running') for k in range(44)]
    model = BudgetModel(SPECS, 'min', 1, _last_at_one, random_fraction=0.0)
    model.suggest(trials, 'k0')
    for step in range(1, 5):
        trials = list(trials)
        trials[40 + step - 1] = _finish(trials[40 + step - 1])
        # jobs that started and finished between two polls, one with the best value yet
        trials.extend(_job(len(trials), rng, 'succeeded') for _ in range(3))
        trials[-1] = dataclasses.replace(trials[-1], reports=(Report(1, -1.0 - step),))
        del compared[:]
        found = model.suggest(trials, 'k%d' % step)
        assert not compared  # told, not compared (the path of this rule)
        assert found[0] == BudgetModel(SPECS, 'min', 1, _last_at_one, random_fraction=0.0).suggest(
            trials, 'k%d' % step)[0], step


def _two_budgets(trial):
    return {1.0: trial.reports[0].value, 3.0: trial.last} if trial.state == 'succeeded' else {}


def test_bohbs_model_at_alternating_budgets_suggests_what_a_new_one_does():
    """The model keeps one view, of the last budget: back at a budget whose history was told what changed
    (tpe._History._told keeps no fields), the history compares nothing and reads every job again."""
    rng = random.Random(12)

    def job(index):
        params = {s.name: rng.random() for s in SPECS}
        value = params['X0'] + params['X1'] ** 2
        return Trial(name='j%d' % index, index=index, params=params, state='succeeded',
                     reports=(Report(1, value + rng.random()), Report(3, value)))
    trials = [job(k) for k in range(60)]
    model = BudgetModel(SPECS, 'min', 1, _two_budgets, random_fraction=0.0)
    for step, budget in enumerate([1.0, 1.0, 3.0, 1.0, 1.0, 3.0, 3.0, 1.0]):
        trials = list(trials) + [job(len(trials))]
        choice = ModelChoice(budget, 0, 'chosen by the test')
        found = model.suggest(trials, 'k%d' % step, choice)[0]
        assert found == BudgetModel(SPECS, 'min', 1, _two_budgets, random_fraction=0.0).suggest(
            trials, 'k%d' % step, choice)[0], step
