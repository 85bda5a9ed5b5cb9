"""BOHB's rule (Falkner, Klein, Hutter, ICML 2018): new configurations of a multi-fidelity sweep from the TPE model
fitted on the results at the highest resource (budget) that has enough of them.

Falkner et al.'s Algorithm 2 samples each new configuration so:

1. with probability rho (``randomFraction``, the paper's 1/3) a uniform random configuration (exploration: it keeps
   the search from trusting a model fitted on few points, and gives the theoretical guarantee of Hyperband);
2. else the budget b is the largest with |D_b| >= N_min + 2 results, N_min = d + 1 (d: the number of parameters),
   so at least d + 3 results; the model is the KDE pair fitted on D_b alone (results at other budgets are not
   comparable: a configuration good after 1 epoch may be poor after 81);
3. no budget has enough results yet: a random configuration.

One departure, in step 2: a lower budget with enough results whose ranking the sweep has *measured* to agree with
b's (Spearman ``agreement``, 0.9 by default, over at least d + 3 and at least 5 configurations that reached both;
agreement.py)
is used instead, the lowest such one: where the early epochs rank as the late ones, their results are the same
evidence in far greater number (an iteration of R = 81, eta 3 has 81 results at 1 epoch, about 10 at 81), and a
model on 10 points stalls where one on hundreds keeps improving. Where they do not (a misleading or noisy low
fidelity), or before enough configurations reached b to tell, the rule is the paper's. ``agreement=None`` is the
paper's rule exactly. Measured in bench-mf (docs/benchmarks.md).

Ours is that rule with the project's TPE (tpe.py, parzen.py) as the model, unchanged: the results at budget b are
its observations (a job still running counts at the rungs it has crossed: ASHA judged it there), the configurations
now being tried at their first rung are its pending jobs (its constant liar,
so that suggestions made while jobs run spread out), and every other configuration of the sweep counts as tried (a
finite space gets no configuration twice). The threshold is the paper's d + 3 unless the sweep file sets
``startupJobs``. Each suggestion's random stream is seeded by the sweep's seed and the suggestion's key (Hyperband:
bracket and slot; ASHA: the job's position), so a suggestion is a pure function of the seed and the jobs the
service reports: a resumed controller that sees the same jobs suggests the same configuration.

``BudgetModel`` holds the rule; ``values_at`` functions say what a job taught at which budget: for Hyperband the
job's last value at its resource, for ASHA its value when it crossed each rung (the value ASHA judged) and its last
value when it ran to the end (core/tuning/samplers/multifidelity.py).
"""
import itertools
import math
import operator
import random

from ..bayesian_settings import DEFAULT_RANDOM_FRACTION
from ..decision import fmt
from ..objectives import Objectives
from ..trial import PENDING_STATES, Report, Trial
from .agreement import CurveBook, agreement
from .motpe import MOTPESampler
from .changes import METRICS as _METRICS, differences, replaced, same_types
from .tpe import TPESampler

# A model-based suggestion's stand-in among the pending jobs of the suggestions after it in the same batch.
_SUGGESTED = '(suggested)'
# The rank correlation with the highest budget that lets the model use a lower budget's results (agreement.py).
# Measured in bench-mf's sweeps (tuning seeds), over the configurations that reached the top, which promotions have
# already selected: faithful low fidelities rank at 0.95-1.00 with it (Hartmann-6, Borehole, Park 91 A), misleading
# or noisy ones at 0.80-0.87 (Branin's and mfh's epoch 27 against 81). At 0.8 the model moved to the misleading ones
# too and Branin's regret at 100 full trainings grew 5x; at 0.9 only the faithful ones qualify.
DEFAULT_AGREEMENT = 0.9
# ... measured over at least this many configurations (or the model's threshold, if larger): two or three always rank
# alike or not by chance (of 5 unrelated ones, 1 in 14 reaches 0.8).
MIN_AGREEMENT_PAIRS = 5


def default_min_points(dimension_count):
    """Falkner et al.'s threshold: N_min + 2 results at a budget, N_min = d + 1."""
    return dimension_count + 3


class ModelChoice:
    """Where a new configuration comes from: ``budget`` (None: random) with ``count`` results there, and why."""

    def __init__(self, budget, count, why):
        self.budget, self.count, self.why = budget, count, why

    def __repr__(self):
        return 'ModelChoice(budget={!r}, count={!r}, why={!r})'.format(self.budget, self.count, self.why)


class BudgetModel:  # pylint: disable=too-many-instance-attributes
    """BOHB's choice of model and its suggestions, for any sampler whose jobs run at several budgets.

    :param specs: the parameter specs (core/spec/params.py).
    :param goal: "max" or "min".
    :param seed: the sweep's seed.
    :param values_at: values_at(trial) -> {budget: value} (finite values only): what the job taught where, from its
        state, stopped_early and reports alone (a job whose fields are the last suggestion's is not asked again).
    :param min_points: results needed at a budget before its model is used (None: d + 3, the paper's).
    :param random_fraction: the share of new configurations drawn at random whatever the models (rho).
    :param resource: the resource's name, for the notes ("epochs").
    :param inherited: finished jobs of earlier sweeps (warm start, core/tuning/warmstart.py), as Trials with negative
        indices: results like the sweep's own, older than all of them.
    :param agreement: the Spearman correlation with the highest budget's ranking above which the lowest agreeing budget's
        results are used instead (agreement.py); None: BOHB's rule exactly.
    :param objectives: the sweep's objectives.Objectives when it has several objectives or constraints, else None.
        The model at a budget is fitted on the first objective alone (the only one a job reports at each step: the
        others are its log's last values, known only when it ends; docs/sweep-objectives.md), and with constraints it
        is MOTPE's feasible-first split of that one objective (motpe.py): a job that broke a constraint is in the bad
        group, one whose constraint metrics are not all known yet comes after the feasible ones.
    """

    # pylint: disable=too-many-arguments
    def __init__(self, specs, goal, seed, values_at, min_points=None, random_fraction=DEFAULT_RANDOM_FRACTION,
                 resource='resource', inherited=(), objectives=None, agreement=DEFAULT_AGREEMENT):
        self.specs, self.goal, self.seed, self.values_at = list(specs), goal, seed, values_at
        self.inherited = list(inherited)
        self.constrained = None
        if objectives is not None and objectives.constraints:
            self.constrained = Objectives(objectives.objectives[:1], objectives.constraints)
        self.min_points = default_min_points(len(self.specs)) if min_points is None else int(min_points)
        self.random_fraction = float(random_fraction)
        self.resource = resource
        self.agreement = agreement
        self._curves = CurveBook()  # the finished jobs' curves, read once each
        self._points_seen = {}  # the TPE samplers' conversions of parameter sets, shared from one suggestion to the next
        # {budget: the TPE samplers' readings of the jobs and their estimators}, from one suggestion to the next
        self._kept = {}
        self._measured = None  # (their curves, {(low, high): Agreement}) until another job finishes: _agreements()
        self._counted = ([], {})  # (the jobs' values_at, {budget: finite values there}): _counts()
        self._asked = ((), [])  # (the jobs' index, state, stopped_early and reports, their values_at): _values()
        self._views = {}  # {budget: what the last model view at that budget was made of}: _view()

    def results(self, trials, values=None):
        """{budget: [(trial, value)]}: every value a job (or an inherited one) taught at each budget. ``values``:
        values_at of each of the inherited jobs and the trials, when the caller has them."""
        by_budget = {}
        everyone = self.inherited + list(trials)
        for trial, found in zip(everyone, map(self.values_at, everyone) if values is None else values):
            for budget, value in found.items():
                if isinstance(value, (int, float)) and math.isfinite(value):
                    by_budget.setdefault(budget, []).append((trial, float(value)))
        return by_budget

    def choose(self, trials, key, values=None):
        """The ModelChoice of the suggestion `key` (a string) after `trials` (``values``: see results())."""
        if self.random_fraction > 0 and random.Random('{}/bohb/{}'.format(self.seed, key)).random() \
                < self.random_fraction:
            return ModelChoice(None, 0, 'random (exploration: randomFraction {})'.format(fmt(self.random_fraction)))
        counts = self._counts(self.inherited + list(trials) if values is None else None, values)
        enough = [budget for budget, count in counts.items() if count >= self.min_points]
        if not enough:
            most = max(counts.values(), default=0)
            return ModelChoice(None, 0, 'random (no {} has {} results yet; most: {})'.format(
                self.resource, self.min_points, most))
        budget = max(enough)
        agreeing = self._lowest_agreeing(trials, enough, budget)
        if agreeing is not None:
            count = counts[agreeing.low]
            return ModelChoice(agreeing.low, count, 'TPE on the {} results at {} {} (they rank as {} {} does: '
                               'Spearman {:.2f} over {} configurations)'.format(
                                   count, self.resource, fmt(agreeing.low), self.resource, fmt(budget), agreeing.rho,
                                   agreeing.count))
        count = counts[budget]
        return ModelChoice(budget, count, 'TPE on the {} results at {} {}'.format(count, self.resource, fmt(budget)))

    def _counts(self, everyone, values=None):
        """{budget: how many finite values there}: results()' lengths, counted again only where the jobs' values_at
        differ from the last call's (a suggestion after each poll: a few jobs changed)."""
        values = list(map(self.values_at, everyone)) if values is None else values
        old, counts = self._counted
        counts = dict(counts)
        common = min(len(old), len(values))
        changed = differences(values, old, common)
        for position in itertools.chain(changed, range(common, len(old))):
            _count(counts, old[position], -1)
        for position in itertools.chain(changed, range(common, len(values))):
            _count(counts, values[position], 1)
        counts = {budget: count for budget, count in counts.items() if count}
        self._counted = (values, counts)
        return counts

    def _lowest_agreeing(self, trials, enough, top):
        """The agreement.Agreement of the lowest budget of `enough` below `top` that ranks as `top` does (rho at
        least self.agreement over at least min_points configurations), or None."""
        lower = sorted(budget for budget in enough if budget < top)
        if self.agreement is None or not lower:
            return None
        measure = self._agreements(trials)
        for budget in lower:
            measured = measure(budget, top)
            enough_pairs = measured.count >= max(self.min_points, MIN_AGREEMENT_PAIRS)
            if enough_pairs and measured.rho is not None and measured.rho >= self.agreement:
                return measured
        return None

    def _agreements(self, trials):
        """measure(low, high) -> agreement.Agreement over the finished jobs (inherited ones included), memoized until
        another job finishes (every new configuration of a batch asks)."""
        if self._curves.update(self.inherited + list(trials)) or self._measured is None:
            self._measured = (self._curves.curves(), {})
        joined, known = self._measured

        def measure(low, high):
            if (low, high) not in known:
                known[low, high] = agreement(joined, low, high)
            return known[low, high]
        return measure

    def suggest(self, trials, key, choice=None):
        """(params or None, ModelChoice): the model's configuration for the suggestion `key`, None when the choice is
        random (the caller draws it its own way) or the model finds no untried configuration."""
        everyone = self.inherited + list(trials)
        values = self._values(everyone)  # read once for the choice and the model's view
        choice = choice or self.choose(trials, key, values)
        if choice.budget is None:
            return None, choice
        seed = '{}/bohb/{}'.format(self.seed, key)
        if self.constrained is not None:
            sampler = MOTPESampler(self.specs, self.constrained, seed=seed, startup_jobs=0)
        else:
            sampler = TPESampler(self.specs, goal=self.goal, seed=seed, startup_jobs=0)
        sampler.points_seen = self._points_seen
        # The model at this budget is the last one's, a few jobs later: what it read of each job and its estimators
        # carry over (they depend on the jobs alone, not on the suggestion's seed; tpe.TPESampler.trial_records).
        kept = self._kept.setdefault(choice.budget, {'records': None, 'models': {}, 'dims': sampler.dims,
                                                     'split': None})
        # (the same dimension objects: an estimator is edited only from one over the same dimensions)
        sampler.trial_records, sampler.model_cache, sampler.dims = kept['records'], kept['models'], kept['dims']
        sampler.split_kept = kept['split']
        view = self._view(everyone, choice.budget, values, self._asked[0])
        last, made, changed = self._views[choice.budget][2:]
        if last is not None and kept.get('view') is last and self.constrained is None:
            # Its history was read from the last view, which this one is but at ``changed``: the history reads
            # those again without comparing the 10,000 jobs' fields a second time (tpe.TPESampler.view_changes; MOTPE
            # compares copies of the metrics, which a caller may change in place: not told).
            sampler.view_changes = (kept['records'], changed)
        suggestions = sampler.suggest(view, 1)
        kept['records'], kept['view'], kept['split'] = sampler.trial_records, made, sampler.split_kept
        return (dict(suggestions[0].params) if suggestions else None), choice

    def _values(self, everyone):
        """values_at of each job, asked again only of the jobs whose index, state, stopped_early or reports differ from
        the last suggestion's (the rest: the last answers, the same objects): a suggestion after each poll asked
        10,000 jobs, a third of a warm one. values_at answers from those fields alone (budget_values does)."""
        # (list comprehensions: a third of the instructions of map(attrgetter) over 10,000 jobs)
        columns = [[t.index for t in everyone], [t.state for t in everyone], [t.stopped_early for t in everyone],
                   [t.reports for t in everyone]]
        old_columns, old_values = self._asked
        common = min(len(everyone), len(old_values))
        changed = set()
        for mine, theirs in zip(columns, old_columns):
            changed.update(differences(mine, theirs, common))
        values = old_values[:common]
        for position in changed:
            values[position] = self.values_at(everyone[position])
        values.extend(map(self.values_at, everyone[common:]))
        self._asked = (columns, values)
        return values

    def model_view(self, trials, budget, values=None):
        """The trials as the TPE fitted at `budget` sees them: the results there, the jobs still running at their first
        rung (pending: the constant liar), every other configuration tried but teaching nothing."""
        view = []
        for trial, found in zip(trials, map(self.values_at, trials) if values is None else values):
            value = found.get(budget)
            if value is not None and isinstance(value, (int, float)) and math.isfinite(value):
                view.append(_replace(trial, state='succeeded', stopped_early=not self._constraints_known(trial),
                                    reports=(Report(step=float(budget), value=float(value)),)))
            elif trial.pending and trial.parent is None:
                view.append(trial)
            else:
                view.append(_replace(trial, state='failed', reports=()))
        return view

    def _view(self, trials, budget, values, asked=None):
        """model_view(trials, budget, values) as the TPE reads it, the last view's objects kept for the jobs whose
        index, parameters, metrics (with constraints) and standing at the budget (its value, whether it is pending,
        whether its constraints are known) are equal: a suggestion after each poll copies only the jobs that changed
        (10,000 copies took ~60% of a warm suggestion). A parameter dict that is the last view's object holds the same
        parameters; another is compared by value and by its values' types (1, 1.0, True: tpe._History). ``asked``:
        _values' columns of these trials (their indices and states, not read again)."""
        params = [t.params for t in trials]
        indices, states = (asked[0], asked[1]) if asked else ([t.index for t in trials], [t.state for t in trials])
        # trial.pending and trial.parent is None, a column at a time (a property call a job was a tenth of a view)
        pending = [state in PENDING_STATES and t.parent is None for t, state in zip(trials, states)]
        columns = [indices, params, list(map(operator.methodcaller('get', budget), values)), pending]
        if self.constrained is not None:
            columns.append(list(map(_METRICS, trials)))
            columns.append(list(map(self._constraints_known, trials)))
        count, old = len(trials), self._views.get(budget)
        common = 0 if old is None else min(count, len(old[1]))
        changed = set()
        for mine, theirs in zip(columns, old[0] if common else ()):
            changed.update(differences(mine, theirs, common))
        if common:
            theirs = old[0][1]
            changed.update(position for position in replaced(params, theirs, common)
                           if position not in changed and not same_types(params[position], theirs[position]))
        view = old[1][:common] if common else []
        for position in itertools.chain(sorted(changed), range(common, count)):
            made = self.model_view([trials[position]], budget, [values[position]])[0]
            made = None if made is trials[position] else made  # a pending job: its current object, below
            if position < common:
                view[position] = made
            else:
                view.append(made)
        # (what it was made of; the last view's token and this one's, and the positions where they differ)
        self._views = {budget: (columns, view, old[3] if common else None, object(), sorted(changed))}
        return [trial if kept is None else kept for trial, kept in zip(trials, view)]

    def _constraints_known(self, trial):
        """True without constraints, or when the job reported every constraint's metric (a job still running at a
        rung may not have yet: its feasibility is unknown, and MOTPE then judges it by what it reported)."""
        return self.constrained is None or self.constrained.constraints_reported(trial)


def _count(counts, found, step):
    """Adds ``step`` to the count of each budget where ``found`` (values_at's answer) has a finite value."""
    for budget, value in found.items():
        if isinstance(value, (int, float)) and math.isfinite(value):
            counts[budget] = counts.get(budget, 0) + step


def _replace(trial, **changes):
    """dataclasses.replace for a Trial (a plain dataclass: no __post_init__, no slots), without its per-call
    introspection: a model view of 10,000 jobs replaced each one at 10 microseconds."""
    copy = object.__new__(Trial)
    copy.__dict__.update(trial.__dict__)
    copy.__dict__.update(changes)
    return copy


def pending_suggestion(suggestion, trials):
    """A suggestion made earlier in the same batch, as the pending job it becomes after `trials` (what the next
    suggestions of the batch see, as a resumed run sees the job on the service)."""
    index = max((t.index for t in trials), default=-1) + 1
    return Trial(name=_SUGGESTED, index=index, params=dict(suggestion.params), state='queued',
                 resource=suggestion.resource, parent=suggestion.parent, bracket=suggestion.bracket,
                 rung=suggestion.rung, slot=suggestion.slot)
