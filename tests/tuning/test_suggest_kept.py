"""What the samplers keep across polls (issue 44): a run asks after every poll with the same jobs and a few more. The
split of 2-objective jobs (core/tuning/samplers/motpe._Split) ranks the points it kept (those of the first fronts,
up to a few past the cut) and the new ones, instead of all of them; one-parameter models project each point once;
BOHB's model asks values_at again only of the jobs that changed. The rule: every split is pareto_select's of all
the points (same indices, same order), with ties, repeats and points on the staircase it keeps; a job that leaves or
whose losses change, a non-finite loss, 3 objectives: computed whole; and the work of a partial split is the kept
points', not the number of jobs. Not timed (bench/suggest.py measures the time)."""
import dataclasses
import math
import random

import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.objectives import Constraint, Objectives
from azext_batchai_sweep.core.tuning.samplers import motpe, parzen
from azext_batchai_sweep.core.tuning.samplers.bohb import BudgetModel
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

from .helpers import CountedId
from .scale_spaces import ranked_sizes


def _point(rng, objectives=2, grid=None):
    """A point near a ZDT1-like front, rounded to ``grid`` (ties and repeats) when given."""
    x = rng.random()
    values = [x, 1.0 - math.sqrt(x) + 2.0 * rng.random()] + [rng.random() for _ in range(objectives - 2)]
    return tuple(round(v / grid) * grid for v in values) if grid else tuple(values)


@pytest.mark.parametrize('grid, share', [(None, 0.3), (0.05, 0.3), (0.2, 0.6)])  # 0.2: fronts of many repeats
def test_a_split_kept_across_polls_is_the_whole_split(grid, share, monkeypatch):
    rng = random.Random(7)
    jobs = {index: _point(rng, grid=grid) for index in range(1500)}
    split = motpe._Split()  # pylint: disable=protected-access
    sizes = ranked_sizes(monkeypatch)
    for poll in range(60):
        for _ in range(rng.randint(1, 6)):
            jobs[max(jobs) + 1] = _point(rng, grid=grid) if rng.random() < 0.7 else rng.choice(list(jobs.values()))
        if poll % 20 == 19:  # a job leaves (whole), or one's losses change (whole)
            if poll % 40 == 19:
                del jobs[rng.choice(list(jobs))]
            else:
                jobs[rng.choice(list(jobs))] = _point(rng, grid=grid)
        indices = sorted(jobs)
        losses = [jobs[i] for i in indices]
        size = int(math.ceil(0.1 * len(losses)))
        del sizes[:]
        found = split.select(indices, losses, size)
        assert found == motpe.pareto_select(losses, size), poll
        assert sizes[0] == len(losses) or sizes[0] < share * len(losses), sizes  # whole, or the kept and new points
    assert split.partial > 40 and 3 <= split.whole < 15, (split.partial, split.whole)


def test_a_partial_split_ranks_the_kept_points_not_every_job(monkeypatch):
    rng = random.Random(3)
    indices = list(range(5000))
    losses = [_point(rng) for _ in indices]
    split = motpe._Split()  # pylint: disable=protected-access
    sizes = ranked_sizes(monkeypatch)
    split.select(indices, losses, 500)
    assert sizes == [5000] and split.whole == 1
    kept = len(split.kept)
    assert 500 < kept < 1000  # the fronts up to the cut and _KEPT_FRONTS more
    for step in range(5):
        indices.append(len(indices))
        losses.append(_point(rng))
        del sizes[:]
        assert split.select(indices, losses, 500) == motpe.pareto_select(losses, 500)
        assert len(sizes) == 2 and sizes[0] <= kept + step + 1  # (the second: pareto_select's own, here)
    assert split.whole == 1 and split.partial == 5


@pytest.mark.parametrize('change', ['three objectives', 'not finite', 'all fit'])
def test_a_split_that_cannot_be_kept_is_computed_whole(change):
    rng = random.Random(5)
    objectives = 3 if change == 'three objectives' else 2
    losses = [_point(rng, objectives) for _ in range(400)]
    split = motpe._Split()  # pylint: disable=protected-access
    for step in range(4):
        point = _point(rng, objectives)
        if change == 'not finite' and step == 1:  # (and then in every split: whole)
            point = (math.inf, point[1])
        losses.append(point)
        size = len(losses) if change == 'all fit' else 40
        assert split.select(list(range(len(losses))), losses, size) == motpe.pareto_select(losses, size)
    assert split.partial == 0 and split.whole == (0 if change == 'all fit' else 4)  # (all fit: every point ordered)


def test_one_parameter_models_project_each_point_once(monkeypatch):
    """With one model per parameter (MOTPE's), a point's one-tuples are made once (tpe.TPESampler._columns): a poll
    later the estimators get the same objects for the jobs they had, new ones only for the jobs new to the model, and
    the suggestions are a new sampler's."""
    monkeypatch.setattr(parzen, 'PRUNE_KERNELS', 40)  # large estimators (they keep their points) from 40 kernels
    specs = [NumParamSpec('X%d' % i, 0.0, 1.0, 'REAL', 'LINEAR') for i in range(3)]
    objectives = Objectives([('a', 'min'), ('b', 'min')])
    rng = random.Random(11)
    trials = []

    def add(count, state='succeeded'):
        for _ in range(count):
            params = {spec.name: rng.random() for spec in specs}
            reports = (Report(1, params['X0']),) if state == 'succeeded' else ()
            metrics = {'b': 1.0 - math.sqrt(params['X0']) + params['X1']} if state == 'succeeded' else {}
            trials.append(Trial(name='j%d' % len(trials), index=len(trials), params=params, state=state,
                                reports=reports, metrics=metrics))
    add(600)
    add(3, 'running')
    sampler = MOTPESampler(specs, objectives, seed=4)
    sampler.suggest(trials, 1)
    before = {id(p) for (_, below, above) in sampler.models(trials) for e in (below, above) for p in e.points}
    made = len(sampler.singles)
    assert made == 603  # one entry per point, each three one-tuples
    for _ in range(3):
        trials[-1] = dataclasses.replace(trials[-1], state='succeeded', reports=(Report(1, 0.5),), metrics={'b': 0.4})
        add(2)
        assert sampler.suggest(trials, 1) == MOTPESampler(specs, objectives, seed=4).suggest(trials, 1)
    after = [id(p) for (_, below, above) in sampler.models(trials) for e in (below, above) for p in e.points]
    assert len(sampler.singles) == made + 6  # the new jobs' points only
    assert sum(i not in before for i in after) == 6 * 3  # 6 new points in 3 parameters' estimators


def test_bohbs_model_asks_values_at_again_only_of_the_jobs_that_changed():
    """values_at answers from a job's state, stopped_early and reports: a job whose fields are the last suggestion's
    is not asked again (bohb.BudgetModel._values), and the model suggests what a new one does."""
    specs = [NumParamSpec('X%d' % i, 0.0, 1.0, 'REAL', 'LINEAR') for i in range(2)]
    asked = []

    def values_at(trial):
        asked.append(trial.index)
        return {1.0: trial.reports[0].value, 3.0: trial.last} if trial.state == 'succeeded' else {}
    rng = random.Random(8)
    trials = [Trial(name='j%d' % i, index=i, params={'X0': rng.random(), 'X1': rng.random()}, state='running')
              for i in range(60)]

    def finish(k):
        value = trials[k].params['X0'] + trials[k].params['X1'] ** 2
        trials[k] = dataclasses.replace(trials[k], state='succeeded', reports=(Report(1, value + 1), Report(3, value)))
    for k in range(50):
        finish(k)
    model = BudgetModel(specs, 'min', 3, values_at, random_fraction=0.0)
    model.suggest(trials, 'a')
    assert sorted(asked) == list(range(60))
    for step, k in enumerate([50, 53, 51]):
        finish(k)
        trials = [dataclasses.replace(t) for t in trials]  # a new poll: new objects, equal fields
        trials.append(Trial(name='n%d' % step, index=len(trials), params={'X0': 0.5, 'X1': 0.5}, state='queued'))
        del asked[:]
        found = model.suggest(trials, 'b%d' % step)
        assert sorted(asked) == [k, len(trials) - 1]  # the job that finished and the new one
        new = BudgetModel(specs, 'min', 3, values_at, random_fraction=0.0).suggest(trials, 'b%d' % step)
        assert found[0] == new[0] and repr(found[1]) == repr(new[1]) and found[1].budget is not None
    trials[5] = dataclasses.replace(trials[5], stopped_early=True)
    del asked[:]
    model.suggest(trials, 'c')
    assert asked == [5]


def test_stepped_terms_are_computed_once_per_pair_and_grid_value(monkeypatch):
    """A large estimator's stepped kernels share a few (mean, bandwidth) pairs: each kernel's pair number maps to its
    own mean, bandwidth and log mass, also in an estimator edited from the last one (parzen._Numeric.updated), each
    pair's term at a grid value is computed once however many points ask, and the densities are the whole mixture's
    (the same floats)."""
    from azext_batchai_sweep.core.spec.params import DiscreteParamSpec
    from azext_batchai_sweep.core.tuning.samplers import _normal
    from azext_batchai_sweep.core.tuning.samplers.space import dimensions
    specs = [DiscreteParamSpec('OPT', ['a', 'b', 'c']), NumParamSpec('LAYERS', 1, 20, 'INTEGER', 'LINEAR'),
             NumParamSpec('UNITS', 1, 64, 'INTEGER', 'LOG'), NumParamSpec('LR', 1e-5, 1e-1, 'REAL', 'LOG'),
             NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]
    dims = dimensions(specs)
    rng = random.Random(4)

    def point():
        return tuple(dim.to_internal(spec.sample(rng)) for dim, spec in zip(dims, specs))
    points = [point() for _ in range(3000)]
    ids = list(range(3000))
    weights = [1.0] * 3000
    first = parzen.ParzenEstimator(dims, points, weights, ids=ids)
    asked = [point() for _ in range(8)]
    for p in asked:
        first.log_pdf(p)
    # a poll later: two observations gone, three new ones (one between the others), the estimator edited
    points2 = points[:100] + points[101:2000] + [point()] + points[2000:2999] + [point(), point()]
    ids2 = ids[:100] + ids[101:2000] + [2000.5] + ids[2000:2999] + [3000, 3001]
    edited = parzen.ParzenEstimator(dims, points2, weights[:3002], ids=ids2, previous=first)
    whole = parzen.ParzenEstimator(dims, points2, weights[:3002], prune=False)
    calls = []
    log_mass = _normal.log_mass

    def counted(a, b):
        calls.append((a, b))
        return log_mass(a, b)
    monkeypatch.setattr(_normal, 'log_mass', counted)
    grid_values = set()
    for k in range(40):
        p = asked[k % 8] if k < 16 else point()
        grid_values.update((d, p[d]) for d in (1, 2))
        assert edited.log_pdf(p) == whole.log_pdf(p)
    stepped = [edited.kernels[d] for d in (1, 2)]
    for kernel in stepped:
        assert kernel.classes is not None and len(kernel.classes) == len(points2) + 1
        assert [kernel.pairs[c] for c in kernel.classes] == list(zip(kernel.mus, kernel.inv, kernel.log_norm))
        assert len(kernel.pairs) < len(points2) / 5  # a few pairs for thousands of kernels
    # whole.log_pdf's own terms: a list per grid value (add_terms); the edited estimator's: a pair's term per value
    whole_calls = sum(len(kernel.mus) for kernel in (whole.kernels[1], whole.kernels[2])
                      for _ in kernel._cells)  # pylint: disable=protected-access
    room = sum(len(kernel.pairs) * len(kernel.rows) for kernel in stepped)
    assert len(calls) - whole_calls <= room + 40 * 2 * len(edited._pruned.always)  # pylint: disable=protected-access
    assert len(calls) - whole_calls < len(points2)  # fewer than one term a kernel over 40 points


@pytest.mark.parametrize('sampler', ['tpe', 'bohb'])
def test_the_types_of_parameter_values_are_listed_only_for_dicts_read_again(sampler, monkeypatch):
    """A parameter dict that is the object a sampler read a poll earlier holds the same parameters (a job's
    parameters never change; the loop reads a job it reads again into a new dict, and a finished job keeps its Trial):
    only the values of other dicts have their types listed (tpe._History, bohb.BudgetModel._view), and a new dict of
    equal values of another type (1 -> True) is read again, as a new sampler reads it."""
    from azext_batchai_sweep.core.spec.params import DiscreteParamSpec
    from azext_batchai_sweep.core.tuning.samplers import bohb, changes, tpe
    listed = []  # a count per parameter dict whose values' types were listed
    same_types = getattr(changes, 'same_types', None)  # (none before: see below)

    def counted(mine, theirs):
        listed.append(1)
        return same_types(mine, theirs)
    for module in (tpe, bohb):
        monkeypatch.setattr(module, 'same_types', counted, raising=False)
        # (the rule before: every dict's values listed at each suggestion)
        monkeypatch.setattr(module, 'value_types', lambda params: listed.extend([1] * len(params)) or
                            changes.value_types(params), raising=False)
    specs = [NumParamSpec('N', 1, 5, 'INTEGER', 'LINEAR'), NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR'),
             DiscreteParamSpec('C', ['a', 'b'])]
    rng = random.Random(6)
    trials = [Trial(name='j%d' % i, index=i, params={'N': rng.randint(1, 5), 'X': rng.random(), 'C': 'a'},
                    state='succeeded', reports=(Report(1, rng.random()),)) for i in range(400)]

    def make():
        if sampler == 'tpe':
            made = tpe.TPESampler(specs, goal='min', seed=2)
            return lambda found: (made.suggest(found, 2), len(made._make_history(found).scored))
        model = BudgetModel(specs, 'min', 2, lambda t: {1.0: t.last} if t.reports else {}, random_fraction=0.0)
        return lambda found: model.suggest(found, 'k')[0]
    warm = make()
    warm(trials)
    for step in range(4):
        # a poll: a new job, and three jobs read again (new Trials, new dicts), one of them now True for 1
        trials.append(Trial(name='n%d' % step, index=len(trials), params={'N': 2, 'X': 0.5, 'C': 'b'},
                            state='running'))
        again = rng.sample([k for k, t in enumerate(trials[:400]) if t.params['N'] == 1], 3)
        for k in again:
            params = dict(trials[k].params, N=True) if k == again[0] else dict(trials[k].params)
            trials[k] = dataclasses.replace(trials[k], params=params)
        del listed[:]
        found = warm(trials)
        assert len(listed) <= 2 * len(again), step  # (BOHB: its view's and its TPE's history's)
        assert found == make()(trials), step
    if sampler == 'tpe':  # (the jobs with True for N teach nothing: not an INTEGER's value)
        assert found[1] == 400 - 4


def test_an_estimators_changes_are_found_by_a_merge_not_job_by_job():
    """parzen._changes: the observations removed and added (an id whose point changed: both) between two lists in id
    order, as the sets of (id, point) tell them, with a job leaving in the middle (every position after it shifted),
    one joining, one moved; the ids are looked at one by one only where the lists differ."""
    rng = random.Random(3)
    ids = [CountedId(k) for k in range(3000)]
    points = [(rng.random(), rng.random()) for _ in ids]
    cases = [([1200], [], {}), ([], [(2500, 2499.5)], {}), ([700, 2900], [(100, 99.5)], {1500: (0.5, 0.5)}),
             ([], [], {}), (list(range(400, 500)), [], {})]  # (the last: past _MOST_EDITS, None)
    for leaving, joining, moved in cases:
        new_ids, new_points = list(ids), list(points)
        for k in sorted(leaving, reverse=True):
            del new_ids[k], new_points[k]
        for k, key in joining:
            new_ids.insert(k, key)
            new_points.insert(k, (0.25, 0.75))
        for key, point in moved.items():
            new_points[new_ids.index(key)] = point
        CountedId.asked[0] = 0
        found = parzen._changes(ids, points, new_ids, new_points)  # pylint: disable=protected-access
        if len(leaving) > parzen._MOST_EDITS:  # pylint: disable=protected-access
            assert found is None
            continue
        # (a halving search a change: ~log2(3000) comparisons)
        assert CountedId.asked[0] <= 20 * (len(leaving) + len(joining) + len(moved) + 1), (leaving, CountedId.asked[0])
        before, after = set(zip(ids, points)), set(zip(new_ids, new_points))
        removed, added = found
        assert {(ids[k], points[k]) for k in removed} == before - after
        assert {(new_ids[k], new_points[k]) for k in added} == after - before


def test_an_estimator_of_the_same_observations_keeps_its_kernels(monkeypatch):
    """An estimator whose observations are the last one's (most polls of a long sweep move no job between the
    groups) keeps its kernels: no dimension is edited, and its densities are those of one built whole. The first
    terms of a point (the kernels next to it) are summed once, not filtered first."""
    monkeypatch.setattr(parzen, 'PRUNE_KERNELS', 40)
    from azext_batchai_sweep.core.tuning.samplers.space import dimensions
    dims = dimensions([NumParamSpec('X%d' % i, 0.0, 1.0, 'REAL', 'LINEAR') for i in range(3)])
    rng = random.Random(5)
    points = [tuple(rng.random() for _ in dims) for _ in range(600)]
    ids, weights = list(range(600)), [1.0] * 600
    previous = parzen.ParzenEstimator(dims, points, weights, ids=ids)
    probes = [tuple(rng.random() for _ in dims) for _ in range(12)]
    for p in probes[:3]:
        previous.log_pdf(p)
    edits, filtered = [], []
    updated, filter_ = parzen._Numeric.updated, parzen._Pruned._filter  # pylint: disable=protected-access
    monkeypatch.setattr(parzen._Numeric, 'updated', lambda *a: edits.append(1) or updated(*a))
    monkeypatch.setattr(parzen._Pruned, '_filter', lambda *a: filtered.append(1) or filter_(*a))
    same = parzen.ParzenEstimator(dims, list(points), weights, ids=list(ids), previous=previous)
    assert not edits and same.kernels == previous.kernels
    whole = parzen.ParzenEstimator(dims, points, weights, prune=False)
    assert [same.log_pdf(p) for p in probes] == [whole.log_pdf(p) for p in probes]
    assert len(filtered) <= len(probes)  # one filtered box a point at most
    points[300] = (0.5, 0.5, 0.5)  # one observation moved: its neighbours' kernels edited, in each dimension
    moved = parzen.ParzenEstimator(dims, points, weights, ids=ids, previous=same)
    assert len(edits) == len(dims)
    assert [moved.log_pdf(p) for p in probes] == [parzen.ParzenEstimator(dims, points, weights, prune=False).log_pdf(p)
                                                 for p in probes]


def test_trials_in_index_order_are_not_sorted_again(monkeypatch):
    """A run hands the sampler its trials in index order: the history reads their indices once, without sorting
    them by a key; trials out of order are sorted, and suggest what the sorted ones do."""
    from azext_batchai_sweep.core.tuning.samplers import tpe
    keys = []
    index = tpe._INDEX  # pylint: disable=protected-access
    monkeypatch.setattr(tpe, '_INDEX', lambda trial: keys.append(1) or index(trial))
    specs = [NumParamSpec('X%d' % i, 0.0, 1.0, 'REAL', 'LINEAR') for i in range(2)]
    rng = random.Random(1)
    trials = [Trial(name='j%d' % i, index=i, params={s.name: rng.random() for s in specs}, state='succeeded',
                    reports=(Report(1, rng.random()),)) for i in range(200)]
    found = tpe.TPESampler(specs, goal='min', seed=3).suggest(trials, 2)
    assert not keys
    shuffled = list(trials)
    rng.shuffle(shuffled)
    assert tpe.TPESampler(specs, goal='min', seed=3).suggest(shuffled, 2) == found
    assert len(keys) == len(trials)


def test_bohbs_view_tells_its_tpe_which_jobs_changed(monkeypatch):
    """BOHB's model view compares the jobs' fields with the last view's (bohb.BudgetModel._view); its TPE's history,
    read from the last view, is told the positions that differ and compares no field of its own (tpe._History._told),
    and suggests what a new model does, over polls where jobs finish, fail, join and change parameters; a model with
    constraints (MOTPE, which compares copies of the metrics) is not told."""
    from azext_batchai_sweep.core.tuning.samplers import tpe
    compared = []
    inputs_of = tpe.TPESampler.score_inputs_of
    monkeypatch.setattr(tpe.TPESampler, 'score_inputs_of',
                        staticmethod(lambda trials: compared.append(len(trials)) or inputs_of(trials)))
    polls = list(_polls_of_a_sweep(seed=4, start=300, steps=8))
    model = BudgetModel(SPECS_3, 'min', 1, _last_at_one, random_fraction=0.0)
    model.suggest(polls[0], 'k0')
    told = 0
    for step, trials in enumerate(polls[1:], start=1):
        del compared[:]
        params, choice = model.suggest(trials, 'k%d' % step)
        told += not compared
        assert params == BudgetModel(SPECS_3, 'min', 1, _last_at_one, random_fraction=0.0).suggest(
            trials, 'k%d' % step)[0], step
    assert told == len(polls) - 1
    objectives = Objectives([('f', 'min')], [Constraint('c', maximum=0.5)])
    constrained = BudgetModel(SPECS_3, 'min', 1, _last_at_one, random_fraction=0.0, objectives=objectives)
    for step, trials in enumerate(polls[:3]):
        del compared[:]
        constrained.suggest(trials, 'c%d' % step)
        assert compared  # its history compares the fields (its metrics' copies) itself


SPECS_3 = [NumParamSpec('X%d' % i, 0.0, 1.0, 'REAL', 'LINEAR') for i in range(3)]


def _last_at_one(trial):
    return {1.0: trial.last} if trial.reports else {}


def _polls_of_a_sweep(seed, start, steps):
    """The trials of each poll as a run hands them: a finished job keeps its Trial, a job that changed is a new one;
    jobs finish, fail and join, and one job's parameters are read again (a new dict, 1.0 for 1.0)."""
    rng = random.Random(seed)

    def new(index):
        return Trial(name='j%d' % index, index=index, params={s.name: rng.random() for s in SPECS_3}, state='running')
    trials = [new(k) for k in range(start)]
    for step in range(steps):
        for k, trial in enumerate(trials):
            if trial.state == 'running' and (step == 0 or rng.random() < 0.3):
                value = sum(trial.params.values())
                state = 'failed' if rng.random() < 0.05 else 'succeeded'
                trials[k] = dataclasses.replace(trial, state=state, reports=(Report(1, value),),
                                                metrics={'c': rng.random()})
        trials.extend(new(len(trials)) for _ in range(rng.randint(1, 4)))
        if step == 3:
            trials[5] = dataclasses.replace(trials[5], params=dict(trials[5].params))
        yield list(trials)
