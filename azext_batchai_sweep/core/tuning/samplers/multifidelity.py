"""Bayesian sampling under ASHA with BOHB's rule (``sampling: {type: bayesian, multiFidelity: true}`` with
``earlyTermination: {policy: asha}``).

Plain bayesian sampling learns from every job's last value, whatever step it was stopped at: under ASHA most jobs
stop at the first rungs, so its model mixes values after 1 epoch with values after 81, which rank configurations
differently. Here each new configuration comes from BOHB's rule (bohb.py) instead: the TPE fitted on the values at
the highest ASHA rung (or the full run, maxResource) that has enough of them. A job's value at a rung is the one ASHA
judged it by (its first report at or past the rung's step, policies/asha.py), whether the job still runs, ran on or
was stopped there; its value at maxResource is its last one when it ran to the end.

The random share and the suggestions made while no rung has enough values are uniform draws from the TPE's random
stream (a finite space gets no configuration twice), and ``count`` is the TPE's, so the sampler stops where plain
bayesian sampling would.
"""
from ..final import ran_to_end
from ..trial import Sampler, Suggestion
from .bohb import DEFAULT_RANDOM_FRACTION, BudgetModel, pending_suggestion
from .tpe import TPESampler

_NEVER = 1 << 30  # startup jobs of the random stream: it never fits a model


class MultiFidelityTPESampler(Sampler):
    """New configurations of an ASHA sweep from BOHB's rule (implements core.tuning.trial.Sampler).

    :param rungs: ASHA's rung steps (policies/asha.py AshaPolicy.rungs), lowest first.
    :param max_resource: ASHA's maxResource: the budget of a job that ran to the end.
    :param objectives: several objectives or constraints (objectives.Objectives), or None: bohb.BudgetModel's.
    """

    # pylint: disable=too-many-arguments
    def __init__(self, specs, goal, seed, count, rungs, max_resource, min_points=None,
                 random_fraction=DEFAULT_RANDOM_FRACTION, resource='step', inherited=(), objectives=None):
        self.goal, self.seed, self.count = goal, seed, count
        self.rungs, self.max_resource = list(rungs), max_resource
        self.random = TPESampler(specs, goal=goal, seed=seed, count=count, startup_jobs=_NEVER, inherited=inherited)
        self.model = BudgetModel(specs, goal, seed, self.budget_values, min_points=min_points,
                                 random_fraction=random_fraction, resource=resource, inherited=inherited,
                                 objectives=objectives)

    def budget_values(self, trial):
        """{budget: value}: the job's value at each rung it crossed, and at maxResource when it ran to the end."""
        values = {}
        for step in self.rungs:
            value = next((r.value for r in trial.reports if r.step >= step), None)
            if value is None:
                break
            values[step] = value
        if ran_to_end(trial) and trial.last is not None:
            values[self.max_resource] = trial.last
        return values

    def suggest(self, trials, count):
        seen = sorted(trials, key=lambda t: t.index)
        left = count if self.count is None else min(count, self.count - len(trials))
        out = []
        for _ in range(max(0, left)):
            params, choice = self.model.suggest(seen, str(len(seen)))
            if params is None:
                drawn = self.random.suggest(seen, 1)
                if not drawn:
                    break
                params = drawn[0].params
            out.append(Suggestion(params=params, note='bayesian (multi-fidelity): ' + choice.why))
            seen.append(pending_suggestion(out[-1], seen))
        return out

    def exhausted(self, trials):
        return self.random.exhausted(trials)
