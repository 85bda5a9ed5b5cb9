"""MOTPE and BOHB's model asked after each poll (issue 44, item 2): what they keep from one suggestion to the next and
what they compute once. The rules: BOHB's model copies into its view only the jobs that changed and counts the
results at each budget only where they changed, the same view and counts as built whole; MOTPE ranks a split's points
once, and its one-parameter densities are the sum of exactly the terms within PRUNE_MARGIN of the largest, whatever
order the kernels are kept in (an edited estimator's and a new one's: the same float). Not timed (bench/suggest.py).
"""
import dataclasses
import math
import random

import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning import pareto
from azext_batchai_sweep.core.tuning.objectives import Constraint, Objectives
from azext_batchai_sweep.core.tuning.samplers import bohb, motpe, parzen, tpe
from azext_batchai_sweep.core.tuning.samplers.space import dimensions
from azext_batchai_sweep.core.tuning.trial import Report, Trial

from .scale_spaces import ranked_sizes

SPECS = [NumParamSpec('X%d' % i, 0, 1, 'REAL', 'LINEAR') for i in range(3)]
# The fields of a model view's job that the TPE and MOTPE read.
READ = ('index', 'params', 'state', 'reports', 'stopped_early', 'metrics')


def _values_at(trial):
    """ASHA-like: the value at the first report past each rung (1, 3) and the last one at 9 once succeeded."""
    found = {}
    for step in (1.0, 3.0):
        value = next((r.value for r in trial.reports if r.step >= step), None)
        if value is None:
            break
        found[step] = value
    if trial.state == 'succeeded' and trial.reports:
        found[9.0] = trial.reports[-1].value
    return found


def _polls(seed, start, steps):
    """The trials of each poll (new objects, new dicts): jobs report steps, finish, fail, join; one job's
    parameters change type (1.0 -> 1) and one metric changes."""
    rng = random.Random(seed)
    trials = []

    def new(index):
        return Trial(name='j%d' % index, index=index, params={s.name: rng.random() for s in SPECS}, state='running')
    trials = [new(k) for k in range(start)]
    for step in range(steps):
        for k, trial in enumerate(trials):
            if trial.state != 'running' or rng.random() > (1.0 if step == 0 else 0.2):
                continue
            reports = trial.reports + (Report(len(trial.reports) + 1.0, sum(trial.params.values())
                                              + 0.1 * len(trial.reports)),)
            roll = rng.random()
            state = 'succeeded' if len(reports) >= 3 else 'failed' if roll < 0.05 else 'running'
            trials[k] = dataclasses.replace(trial, reports=reports, state=state,
                                            metrics={'c': rng.random() - 0.3} if state == 'succeeded' else {})
        trials.extend(new(len(trials)) for _ in range(rng.randint(0, 3)))
        if step == 3:
            trials[5] = dataclasses.replace(trials[5], params=dict(trials[5].params, X0=1))
        if step == 5:
            trials[7] = dataclasses.replace(trials[7], metrics={'c': 2.0})
        yield [dataclasses.replace(t, params=dict(t.params), metrics=dict(t.metrics)) for t in trials]


def _read(view):
    return [tuple(getattr(t, name) for name in READ) for t in view]


@pytest.mark.parametrize('constrained', [False, True])
def test_bohbs_view_and_counts_are_the_ones_built_whole(constrained):
    objectives = Objectives([('f', 'min')], [Constraint('c', maximum=0.0)]) if constrained else None
    model = bohb.BudgetModel(SPECS, 'min', 1, _values_at, objectives=objectives)
    for step, trials in enumerate(_polls(seed=3, start=60, steps=10)):
        values = list(map(_values_at, trials))
        whole = model.results(trials)
        counts = model._counts(trials)  # pylint: disable=protected-access
        assert counts == {budget: len(found) for budget, found in whole.items()}, step
        for budget in (1.0, 3.0, 9.0, 5.0):
            view = model._view(trials, budget, values)  # pylint: disable=protected-access
            assert _read(view) == _read(model.model_view(trials, budget, values)), (step, budget)
            assert all(v is t for v, t in zip(view, trials) if t.pending and budget not in _values_at(t))


def test_bohbs_model_copies_only_the_jobs_that_changed(monkeypatch):
    polls = list(_polls(seed=5, start=400, steps=6))
    model = bohb.BudgetModel(SPECS, 'min', 1, _values_at, random_fraction=0.0)
    budget = model.suggest(polls[0], 'k0')[1].budget
    copies = []
    replace = bohb._replace  # pylint: disable=protected-access

    def counted(trial, **changes):
        copies.append(trial.index)
        return replace(trial, **changes)
    monkeypatch.setattr(bohb, '_replace', counted)
    warm_copies = []
    for step, trials in enumerate(polls[1:], start=1):
        before = polls[step - 1]
        del copies[:]
        params, choice = model.suggest(trials, 'k%d' % step)
        assert params and choice.budget is not None
        changed = {t.index for t in trials[len(before):]} | {
            t.index for t, b in zip(trials, before) if (t.state, t.reports, t.params) != (b.state, b.reports, b.params)}
        # (a view at another budget is built whole, and so is one after a parameter's type changed: step 3)
        if choice.budget == budget and step != 3:
            assert set(copies) <= changed, step
            warm_copies.extend(copies)
        budget = choice.budget
        # A new model suggests the same (its view built whole: every finished job copied).
        del copies[:]
        assert bohb.BudgetModel(SPECS, 'min', 1, _values_at, random_fraction=0.0).suggest(trials, 'k%d' % step)[0] \
            == params
        assert len(copies) == sum(not t.pending or budget in _values_at(t) for t in trials) > len(warm_copies)
    assert warm_copies  # the jobs that changed are copied again


def test_a_split_ranks_its_points_once(monkeypatch):
    """pareto_select's whole fronts are ordered without ranking each again (their points' ranks are all 0), and
    the order is the definition's: each front by exclusive contribution."""
    rng = random.Random(4)
    losses = [(rng.random(), rng.random()) for _ in range(600)] + [(0.5, 0.5)] * 3
    ranks = pareto.nondominated_ranks
    calls = ranked_sizes(monkeypatch)
    chosen = motpe.pareto_select(losses, 120)
    assert calls == [len(losses)]
    by_rank = ranks(losses)
    expected = []
    for rank in range(max(by_rank) + 1):
        members = [i for i, r in enumerate(by_rank) if r == rank]
        if len(expected) + len(members) > 120:
            break
        points = [losses[i] for i in members]
        gains = pareto.contributions(points, pareto.reference_point(points))
        expected.extend(i for _, i in sorted(zip((-g for g in gains), members)))
    assert chosen[:len(expected)] == expected and len(chosen) == 120


def test_a_one_dimensional_density_sums_the_terms_within_the_margin_in_any_order():
    """_log_pdf_1d: log of the exactly rounded sum of exp(term - largest) over the terms within PRUNE_MARGIN of the
    largest (the whole mixture's terms, the same floats); an estimator edited from the previous one (its kernels
    kept in another order, changed ones evaluated at every point) gives the same floats as a new one."""
    dims = dimensions([NumParamSpec('X', 0, 1, 'REAL', 'LINEAR')])
    rng = random.Random(9)
    points = [(rng.random() ** 2,) for _ in range(2000)]
    ids = list(range(len(points)))
    previous = parzen.ParzenEstimator(dims, points, tpe.default_weights(len(points)), ids=ids)
    previous.log_pdf(points[0])
    for step in range(6):
        points, ids = list(points), list(ids)
        for _ in range(3):
            k = rng.randrange(len(points))
            del points[k], ids[k]
        for _ in range(3):
            points.append((rng.random(),))
            ids.append(ids[-1] + 1)
        weights = tpe.default_weights(len(points))
        edited = parzen.ParzenEstimator(dims, points, weights, ids=ids, previous=previous)
        whole = parzen.ParzenEstimator(dims, points, weights, ids=ids)
        probes = [(rng.random(),) for _ in range(20)] + [(0.0,), (1.0,)] + points[-3:]
        fast = [edited.log_pdf(p) for p in probes]
        assert edited._pruned and fast == [whole.log_pdf(p) for p in probes], step  # pylint: disable=protected-access
        kernel = whole.kernels[0]
        for probe, value in zip(probes, fast):
            terms = [w + c - 0.5 * ((probe[0] - m) * i) ** 2
                     for w, c, m, i in zip(whole.log_weights, kernel.consts, kernel.mus, kernel.inv)]
            top = max(terms)
            kept = [t for t in terms if t >= top - parzen.PRUNE_MARGIN]
            assert value == top + math.log(math.fsum(math.exp(t - top) for t in kept)), (step, probe)
        previous = edited


def _front(rng, count):
    """A 2-objective front with repeats and ties: x on a coarse grid, y = 1 - x (equal gains), some repeated."""
    xs = sorted(rng.sample([k / 40 for k in range(41)], count))
    points = []
    for x in xs:
        y = round(1.0 - x ** rng.choice([0.5, 1.0]), 6)
        if not points or y < points[-1][1]:
            points.append((x, y))
    points += [rng.choice(points) for _ in range(count // 4)]
    rng.shuffle(points)
    return points


def test_a_fronts_greedy_subset_computes_each_gain_from_two_neighbours(monkeypatch):
    """greedy_hypervolume_subset on a 2-objective front: each gain from the chosen neighbours of the point (a repeat:
    itself), the same choices, in the same order, as with every chosen point (the general computation's floats)."""
    sizes = []
    exclusive = pareto.exclusive

    def counted(point, others, reference):
        sizes.append(len(others))
        return exclusive(point, others, reference)
    monkeypatch.setattr(pareto, 'exclusive', counted)
    for seed in range(12):
        rng = random.Random(seed)
        points = _front(rng, 24)
        reference = pareto.reference_point(points) if seed % 3 else (0.8, 0.9)  # some points outside it
        for size in (3, len(points) // 2, len(points)):
            del sizes[:]
            fast = pareto.greedy_hypervolume_subset(points, size, reference)
            assert sizes and max(sizes) <= 2
            with monkeypatch.context() as general:
                general.setattr(pareto, '_finite_front_2d', lambda *args: None)
                del sizes[:]
                assert fast == pareto.greedy_hypervolume_subset(points, size, reference), (seed, size)
                assert size < 6 or max(sizes) > 2
