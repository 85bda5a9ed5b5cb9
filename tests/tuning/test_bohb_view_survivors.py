"""BOHB's model view kept from one suggestion to the next (bohb.BudgetModel._view, its TPE's kept readings), in the
cases samplers-bohb's mutation run found no test of (issue 49; bench/mutation-samplers-bohb.md): a job deleted from
the service shifts the later jobs' positions, a job read again with parameters of other types, a running job's
constraint logged after its rung, a model back at a budget after a suggestion at another one, and the work of one
suggestion. The rule: the view the TPE is handed is model_view's of all the jobs, built whole, the
suggestion a new model's, and the jobs read again are those that changed since the model was last at that budget."""
import dataclasses
import random

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.objectives import Constraint, Objectives
from azext_batchai_sweep.core.tuning.samplers import tpe
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel, ModelChoice
from azext_batchai_sweep.core.tuning.trial import Report, Trial

# (the view's fields the TPE reads: compared below with the types of the parameters' values, 1 and 1.0 read apart)
from .test_suggest_share import READ, SPECS


def _values_at(trial):
    """ASHA-like: the first value reported at or past each rung (1, 3)."""
    found = {}
    for step in (1.0, 3.0):
        value = next((r.value for r in trial.reports if r.step >= step), None)
        if value is not None:
            found[step] = value
    return found


def _read(view):
    return [tuple(getattr(t, name) for name in READ) + (tuple(map(type, t.params.values())),) for t in view]


def _views_handed_to_the_tpe(monkeypatch):
    """The trials each TPE sampler of a BOHB suggestion is asked to suggest after (the model view)."""
    seen = []
    suggest = tpe.TPESampler.suggest

    def spied(self, trials, count):
        seen.append(list(trials))
        return suggest(self, trials, count)
    monkeypatch.setattr(tpe.TPESampler, 'suggest', spied)
    return seen


def _finished(index, params, value, state='succeeded'):
    return Trial(name='j%d' % index, index=index, params=params, state=state,
                 reports=(Report(1, value + 1), Report(3, value)) if state == 'succeeded' else ())


def test_a_deleted_job_shifts_the_later_ones_and_the_view_follows(monkeypatch):
    """A job deleted on the service: every later job moves up one position. Two jobs of one configuration that taught
    nothing at the budget (a configuration run twice, both failed) then sit where the other was, equal in all but
    their index: the view holds each job with its own index, as a new model's does."""
    rng = random.Random(3)
    trials = [_finished(k, {s.name: rng.random() for s in SPECS}, rng.random()) for k in range(40)]
    twice = {s.name: 0.25 for s in SPECS}
    trials[20] = _finished(20, dict(twice), 0.0, state='failed')
    trials[21] = _finished(21, dict(twice), 0.0, state='failed')
    seen = _views_handed_to_the_tpe(monkeypatch)
    model = BudgetModel(SPECS, 'min', 2, _values_at, random_fraction=0.0)
    model.suggest(trials, 'k0')
    for step, deleted in enumerate([7, 20], start=1):
        trials = [t for t in trials if t.index != deleted]
        del seen[:]
        params, choice = model.suggest(trials, 'k%d' % step)
        assert choice.budget is not None
        assert _read(seen[0]) == _read(model.model_view(trials, choice.budget)), step
        assert params == BudgetModel(SPECS, 'min', 2, _values_at, random_fraction=0.0).suggest(
            trials, 'k%d' % step)[0], step


def test_parameters_read_again_as_values_of_another_type_are_viewed_as_read(monkeypatch):
    """A job read again into a new dict of equal values of other types (1.0 -> 1, 2 -> 2.0: equal, and read
    differently by the TPE, tpe._History): the view holds the new dict, as a new model's does, though nothing else of
    the job changed."""
    specs = SPECS + [NumParamSpec('N', 1, 5, 'INTEGER', 'LINEAR')]
    rng = random.Random(4)
    trials = [_finished(k, dict({s.name: rng.random() for s in SPECS}, N=rng.randint(1, 5)), rng.random())
              for k in range(40)]
    trials[11] = dataclasses.replace(trials[11], params=dict(trials[11].params, X0=1.0))
    seen = _views_handed_to_the_tpe(monkeypatch)
    model = BudgetModel(specs, 'min', 2, _values_at, random_fraction=0.0)
    model.suggest(trials, 'k0')
    for step, (k, name, value) in enumerate([(11, 'X0', 1), (12, 'N', None)], start=1):
        params = dict(trials[k].params)
        params[name] = float(params[name]) if value is None else value
        assert params == trials[k].params
        trials = list(trials)
        trials[k] = dataclasses.replace(trials[k], params=params)
        del seen[:]
        found, choice = model.suggest(trials, 'k%d' % step)
        assert _read(seen[0]) == _read(model.model_view(trials, choice.budget)), step
        assert found == BudgetModel(specs, 'min', 2, _values_at, random_fraction=0.0).suggest(
            trials, 'k%d' % step)[0], step


def test_a_running_jobs_constraint_reported_after_its_rung_is_viewed_with_it(monkeypatch):
    """With constraints, a job still running past rung 1 is in the view at rung 1 with the constraint metrics it has
    logged so far (unknown ones not broken, motpe.py): when it logs a broken one, nothing else changed at rung 1 (its
    value there, its parameters, its state), and the view, read by MOTPE, judges it infeasible as a new model's does."""
    rng = random.Random(9)
    trials = []
    for k in range(40):
        params = {s.name: rng.random() for s in SPECS}
        value = sum(params.values())
        running = k >= 30
        trials.append(Trial(name='j%d' % k, index=k, params=params, state='running' if running else 'succeeded',
                            reports=(Report(1, value + 1),) + (() if running else (Report(3, value),)),
                            metrics={} if running else {'c': rng.random()}))
    objectives = Objectives([('f', 'min')], [Constraint('c', maximum=0.5)])
    at_one = ModelChoice(1.0, 40, 'rung 1')
    seen = _views_handed_to_the_tpe(monkeypatch)

    def model():
        return BudgetModel(SPECS, 'min', 2, _values_at, random_fraction=0.0, objectives=objectives)
    warm = model()
    warm.suggest(trials, 'k0', choice=at_one)
    # the best running jobs log a broken constraint (new Trials, as a poll reads them)
    best = sorted(range(30, 40), key=lambda k: trials[k].reports[0].value)[:4]
    trials = [dataclasses.replace(t, metrics={'c': 0.9}) if k in best else t for k, t in enumerate(trials)]
    del seen[:]
    found = warm.suggest(trials, 'k1', choice=at_one)[0]
    assert _read(seen[0]) == _read(warm.model_view(trials, 1.0)) and [seen[0][k].metrics for k in best] == [
        {'c': 0.9}] * 4
    assert found == model().suggest(trials, 'k1', choice=at_one)[0]


def _sweep(seed):
    """Three polls of an ASHA-like sweep: jobs that reported at rung 1 and finished at 3, running ones at rung 1; a
    few of those finish at each poll, a few join."""
    rng = random.Random(seed)

    def running(index):
        params = {s.name: rng.random() for s in SPECS}
        return Trial(name='j%d' % index, index=index, params=params, state='running',
                     reports=(Report(1, sum(params.values()) + 1),))

    def finish(trial):
        return dataclasses.replace(trial, state='succeeded',
                                   reports=trial.reports + (Report(3, sum(trial.params.values())),))
    trials = [finish(running(k)) for k in range(60)] + [running(k) for k in range(60, 90)]
    polls = [list(trials)]
    for _ in range(2):
        for k in rng.sample([k for k, t in enumerate(trials) if t.state == 'running'], 5):
            trials[k] = finish(trials[k])
        trials.extend(running(len(trials)) for _ in range(2))
        polls.append(list(trials))
    return polls


def test_a_model_back_at_a_budget_reads_only_the_jobs_that_changed_since_it_was_there(monkeypatch):
    """BOHB's model at a budget keeps what its TPE read there (``_kept``, one per budget): a suggestion at rung 3, one
    at rung 1 (the choice of budget moved: agreement measured again), then rung 3 again scores only the jobs whose
    standing at rung 3 changed since the first, and suggests what a new model does."""
    polls = _sweep(seed=5)
    scored = []
    score = tpe.TPESampler.score
    monkeypatch.setattr(tpe.TPESampler, 'score', lambda self, trial: scored.append(trial.index) or score(self, trial))
    top, low = ModelChoice(3.0, 60, 'rung 3'), ModelChoice(1.0, 90, 'rung 1')
    model = BudgetModel(SPECS, 'min', 4, _values_at, random_fraction=0.0)
    model.suggest(polls[0], 'a', choice=top)
    model.suggest(polls[1], 'b', choice=low)
    del scored[:]
    params, _ = model.suggest(polls[2], 'c', choice=top)
    before = {t.index for t in polls[0] if t.state == 'succeeded'}
    finished = {t.index for t in polls[2] if t.state == 'succeeded'} - before
    assert len(finished) == 10 and sorted(scored) == sorted(finished)
    assert params == BudgetModel(SPECS, 'min', 4, _values_at, random_fraction=0.0).suggest(
        polls[2], 'c', choice=top)[0]


def test_a_suggestion_draws_one_configuration_from_the_model(monkeypatch):
    """Each suggestion asks its TPE for the one configuration it returns (a second one, thrown away, fitted the
    model again with the first as a pending job)."""
    drawn = []
    next_point = tpe.TPESampler._next  # pylint: disable=protected-access
    monkeypatch.setattr(tpe.TPESampler, '_next', lambda self, history: drawn.append(1) or next_point(self, history))
    polls = _sweep(seed=7)
    model = BudgetModel(SPECS, 'min', 4, _values_at, random_fraction=0.0)
    for step, trials in enumerate(polls):
        del drawn[:]
        params, choice = model.suggest(trials, 'k%d' % step)
        assert params is not None and choice.budget is not None
        assert len(drawn) == 1, step
