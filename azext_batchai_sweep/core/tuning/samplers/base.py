"""What the blind samplers (grid, random) share: a fixed, ordered list of configurations, submitted in order.

The list is a pure function of the sweep file (and its seed), so a resumed controller finds the configurations
already on the service by their values and goes on with the next ones: nothing is skipped or drawn twice.
"""
from ...spec.naming import canonical_json
from ..trial import Sampler, Suggestion


class SequenceSampler(Sampler):
    """Suggests the configurations of a fixed sequence, in order, skipping those already on the service."""

    kind = ''

    def __init__(self, configurations):
        self._configurations = configurations  # a sequence of parameter dicts (may be lazy: see _all)
        self._cache = None

    def _all(self):
        if self._cache is None:
            self._cache = [dict(values) for values in self._configurations]
        return self._cache

    def suggest(self, trials, count):
        if count <= 0:
            return []
        present = {canonical_json(trial.params) for trial in trials}
        configurations = self._all()
        out = []
        for position, values in enumerate(configurations):
            if canonical_json(values) in present:
                continue
            out.append(Suggestion(params=values, note='{} {} of {}'.format(self.kind, position + 1,
                                                                          len(configurations))))
            if len(out) == count:
                break
        return out

    def exhausted(self, trials):
        present = {canonical_json(trial.params) for trial in trials}
        return all(canonical_json(values) in present for values in self._all())
