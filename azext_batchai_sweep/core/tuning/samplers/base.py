"""What the blind samplers (grid, random) share: a fixed, ordered list of configurations, submitted in order.

The list is a pure function of the sweep file (and its seed), so a resumed controller finds the configurations
already on the service by their values and goes on with the next ones: nothing is skipped or drawn twice.
"""
from ...spec.naming import canonical_json
from ..trial import Sampler, Suggestion


class SequenceSampler(Sampler):
    """Suggests the configurations of a fixed sequence, in order, skipping those already on the service.

    The sequence (a core.spec.sweep.JobSequence, or a list) is walked lazily and never held: a grid of 10^12
    configurations run with maxTotalJobs 100 costs what its first hundred do.
    """

    kind = ''

    def __init__(self, configurations):
        self._configurations = configurations  # has len() and is iterable again: each item has .parameters or is a dict

    def _walk(self):
        for item in self._configurations:
            yield dict(getattr(item, 'parameters', item))

    def suggest(self, trials, count):
        if count <= 0:
            return []
        present = {canonical_json(trial.params) for trial in trials}
        total = len(self._configurations)
        out = []
        for position, values in enumerate(self._walk()):
            if canonical_json(values) in present:
                continue
            out.append(Suggestion(params=values, note='{} {} of {}'.format(self.kind, position + 1, total)))
            if len(out) == count:
                break
        return out

    def exhausted(self, trials):
        present = {canonical_json(trial.params) for trial in trials}
        if len(present) < len(self._configurations):
            return False  # fewer jobs than configurations: one at least is left (no need to walk them all)
        return all(canonical_json(values) in present for values in self._walk())
