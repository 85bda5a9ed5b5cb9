"""Hyperband (Li et al., JMLR 2018): brackets of synchronous successive halving, each promotion a new job.

With R = maxResource / minResource and s_max = floor(log_eta(R)), bracket s (s_max down to 0) starts
n = ceil((s_max + 1) / (s + 1) * eta^s) random configurations with resource maxResource * eta^-s; rung i of the
bracket runs n_i = floor(n * eta^-i) of them with resource maxResource * eta^(i - s). When every job of a rung has
finished, the best floor(n_i / eta) (by their last report; ties by position) are promoted: each promotion is a new
job with the same parameters, more resource, and its parent (the job it continues) named in its environment.

Everything is a function of the seed and of the finished jobs' results, so a resumed controller promotes exactly
the configurations an uninterrupted one would. With ``sampler: bayesian`` (a :class:`~.bohb.BudgetModel`) the new
configurations of each bracket come from BOHB's model instead of the seeded random stream (bohb.py): a promotion
continues its parent's parameters either way. The seed recipe of Batch AI (16 configurations for 1 epoch, the best
4 for 4, the best 1 for 16) is bracket s=2 of minResource 1, maxResource 16, eta 4.
"""
import math
import random
from dataclasses import dataclass, replace

from ...spec.naming import canonical_json
from ...spec.sweep import redraw_limit
from ..final import ran_to_end
from ..decision import NOT_PROMOTED, PROMOTED, Decision, fmt
from ..trial import Sampler, Suggestion
from .bohb import pending_suggestion


@dataclass(frozen=True)
class Rung:
    count: int         # n_i: how many jobs run at this rung
    resource: float    # r_i: the resource each gets


@dataclass(frozen=True)
class Bracket:
    s: int
    rungs: tuple
    number: int = None  # the bracket's number in the sweep (its jobs' BATCHAI_SWEEP_BRACKET): s in the first iteration

    @property
    def key(self):
        return self.s if self.number is None else self.number


def _resource(value, integral):
    return int(round(value)) if integral else value


def hyperband_brackets(min_resource, max_resource, eta):
    """The brackets, most aggressive (s_max) first."""
    s_max = 0
    while min_resource * eta ** (s_max + 1) <= max_resource * (1 + 1e-9):
        s_max += 1
    integral = float(min_resource).is_integer() and float(max_resource).is_integer()
    brackets = []
    for s in range(s_max, -1, -1):
        n = math.ceil((s_max + 1) / (s + 1) * eta ** s - 1e-9)
        rungs = tuple(Rung(count=int(n // eta ** i), resource=_resource(max_resource * eta ** (i - s), integral))
                      for i in range(s + 1))
        brackets.append(Bracket(s=s, rungs=rungs))
    return brackets


class HyperbandSampler(Sampler):
    """Hyperband's jobs: new configurations (rung 0) and promotions, promotions first.

    :param specs: the parameter specs (core/spec/params.py); configurations are drawn from them.
    :param resource: the name of the resource placeholder (EPOCHS), for the decisions' text.
    """

    # pylint: disable=too-many-arguments
    def __init__(self, specs, goal, min_resource, max_resource, eta, seed, resource='resource', model=None,
                 iterations=1):
        self.specs, self.goal, self.eta, self.seed, self.resource = specs, goal, eta, seed, resource
        self.max_resource = max_resource
        # Li et al.'s outer loop, `iterations` times: iteration k's bracket s is named s + k * (s_max + 1), so the
        # first iteration's brackets keep their names (s) and every bracket has its own stream and jobs.
        first = hyperband_brackets(min_resource, max_resource, eta)
        self.brackets = [Bracket(s=b.s, rungs=b.rungs, number=b.s + k * len(first))
                         for k in range(max(1, int(iterations))) for b in first]
        self._configurations = {}
        self.model = model  # a bohb.BudgetModel (sampler: bayesian), or None: random configurations

    def budget_values(self, trial):
        """{resource: value} a finished job taught (BOHB's results): its last value at its resource; a job with no
        resource (inherited from a sweep without one) at maxResource when it ran to the end, else nowhere."""
        value = trial.objective()
        if value is None:
            return {}
        if trial.resource is not None:
            return {trial.resource: value}
        return {self.max_resource: value} if ran_to_end(trial) else {}

    def configuration(self, bracket, slot):
        """The parameters of a bracket's slot: the bracket's own seeded stream of draws, no set drawn twice while
        the space has others."""
        if bracket not in self._configurations:
            count = next(b for b in self.brackets if b.key == bracket).rungs[0].count
            rng = random.Random('{}/hyperband/{}'.format(self.seed, bracket))
            space = 1
            for spec in self.specs:
                size = spec.space_size()
                space = None if space is None or size is None else space * size
            seen, drawn = set(), []
            for _ in range(count):
                for _ in range(redraw_limit(space)):
                    values = {spec.name: spec.sample(rng) for spec in self.specs}
                    key = canonical_json(values)
                    if key not in seen:
                        break
                seen.add(key)
                drawn.append(values)
            self._configurations[bracket] = drawn
        return dict(self._configurations[bracket][slot])

    # ---- the state of each bracket, from the trials alone -----------------------------------------------------

    def _ranked(self, jobs):
        """Finished jobs of a rung with a result, best first (ties by slot)."""
        scored = [t for t in jobs.values() if t.state == 'succeeded' and t.last is not None]
        sign = -1 if self.goal == 'max' else 1
        return sorted(scored, key=lambda t: (sign * t.last, t.slot))

    def _walk(self, trials):
        """For each bracket and rung, in order: (bracket, rung index, Rung, the slots expected at this rung or None
        while an earlier rung is unfinished, the rung's trials by slot, whether every expected job has finished)."""
        by_rung = {}
        for t in trials:
            if t.bracket is not None and t.rung is not None and t.slot is not None:
                by_rung.setdefault((t.bracket, t.rung), {})[t.slot] = t
        for bracket in self.brackets:
            expected = list(range(bracket.rungs[0].count))
            for i, rung in enumerate(bracket.rungs):
                jobs = by_rung.get((bracket.key, i), {})
                complete = expected is not None and all(slot in jobs and not jobs[slot].pending
                                                        for slot in expected)
                yield bracket, i, rung, expected, jobs, complete
                if complete and i + 1 < len(bracket.rungs):
                    expected = sorted(t.slot for t in self._ranked(jobs)[:bracket.rungs[i + 1].count])
                else:
                    expected = None

    def suggest(self, trials, count):
        if count <= 0:
            return []
        # Promotions first (the highest rung first), then by bracket and slot. _walk yields brackets in order and each
        # rung's expected slots in order, so a rung level's first `count` open slots are all it can contribute, and
        # only the chosen ones become Suggestions: a sweep of many iterations has hundreds of open rung-0 slots, and
        # drawing and describing each of them at every step cost the controller most of its CPU (bench-mf).
        levels = {}
        previous = None
        for bracket, i, rung, expected, jobs, _ in self._walk(trials):
            # _walk yields a bracket's rungs in order: the rung before this one's jobs are those it yielded last.
            below, previous = (previous if i > 0 else None), jobs
            if expected is None:
                continue
            level = levels.setdefault(i, [])
            for slot in expected:
                if len(level) >= count:
                    break
                if slot not in jobs:
                    level.append((bracket, i, rung, slot, below))
        wanted = [item for i in sorted(levels, reverse=True) for item in levels[i]][:count]
        chosen = [self._open_slot(*item) for item in wanted]
        return self._new_configurations(trials, chosen) if self.model is not None else chosen

    def _open_slot(self, bracket, i, rung, slot, previous):
        """The Suggestion of an open slot: rung i of the bracket, `previous` the rung below's jobs by slot."""
        parent = previous.get(slot) if previous else None
        if parent is not None and self.model is not None:
            params = dict(parent.params)  # the model's configuration is not drawn again: the job has it
        else:
            params = self.configuration(bracket.key, slot) if i > 0 or self.model is None else None
        return Suggestion(params=params, resource=rung.resource, parent=parent.name if parent is not None else None,
                          note='bracket {}, rung {}, {} {}'.format(bracket.key, i, self.resource, fmt(rung.resource)),
                          bracket=bracket.key, rung=i, slot=slot)

    def _new_configurations(self, trials, chosen):
        """BOHB: each new configuration (rung 0) from the model, in order, each seeing the ones before it in flight."""
        seen, out = list(trials), []
        for suggestion in chosen:
            if suggestion.params is None:
                key = '{}/{}'.format(suggestion.bracket, suggestion.slot)
                params, choice = self.model.suggest(seen, key)
                if params is None:
                    params = self.configuration(suggestion.bracket, suggestion.slot)
                suggestion = replace(suggestion, params=params, note='{}; {}'.format(suggestion.note, choice.why))
            seen.append(pending_suggestion(suggestion, seen))
            out.append(suggestion)
        return out

    def model_choice(self, trials, bracket, slot):
        """The bohb.ModelChoice of a new configuration of (bracket, slot) after `trials` (None without a model)."""
        return None if self.model is None else self.model.choose(trials, '{}/{}'.format(bracket, slot))

    def exhausted(self, trials):
        return all(complete for *_, complete in self._walk(trials))

    def explain(self, trials):
        decisions = {}
        for bracket, i, rung, _, jobs, complete in self._walk(trials):
            if not complete or i + 1 == len(bracket.rungs):
                continue
            ranked = self._ranked(jobs)
            keep = bracket.rungs[i + 1].count
            cutoff = ranked[keep - 1].last if 0 < keep <= len(ranked) else None
            for rank, t in enumerate(ranked, 1):
                numbers = {'bracket': bracket.key, 'rung': i, 'rank': rank, 'ranked': len(ranked), 'keep': keep,
                           'value': t.last, 'cutoff': cutoff}
                if rank <= keep:
                    text = 'promoted by hyperband to {} {}: rank {}/{} ({}), {}'.format(
                        self.resource, fmt(bracket.rungs[i + 1].resource), rank, len(ranked), fmt(t.last),
                        _going_on(keep))
                    kind = PROMOTED
                else:
                    text = 'not promoted by hyperband: rank {}/{} at {} {} ({} {} {}{}), {}'.format(
                        rank, len(ranked), self.resource, fmt(rung.resource), fmt(t.last),
                        _worse_sign(t.last, cutoff, self.goal), fmt(cutoff),
                        '; a tie goes to the earlier slot' if t.last == cutoff else '', _going_on(keep))
                    kind = NOT_PROMOTED
                decisions[t.name] = Decision(job=t.name, kind=kind, rule='hyperband', step=rung.resource,
                                             numbers=numbers, text=text)
        return decisions


def _going_on(keep):
    """'the best 3 go on', 'the best one goes on': how many of a rung the next one takes."""
    return 'the best one goes on' if keep == 1 else 'the best {} go on'.format(keep)


def _worse_sign(value, cutoff, goal):
    """How a value that is not promoted compares with the cutoff, as written: '<' (max) or '>' (min), '=' for a tie
    (ranked below by its slot)."""
    if value == cutoff:
        return '='
    return '<' if goal == 'max' else '>'
