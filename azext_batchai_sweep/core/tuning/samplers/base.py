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

    The walk is resumed from one call to the next (issue 44): the configurations before the cursor were all on the
    service at an earlier call, and while they still all are (one set comparison) the next call starts at the cursor,
    so a poll costs what the sweep's jobs and the new configurations do, not a walk from the first configuration. A
    job gone since (deleted) puts the cursor back at the start: the suggestions are those of a walk from the start.
    """

    kind = ''

    def __init__(self, configurations):
        self._configurations = configurations  # has len() and is iterable again: each item has .parameters or is a dict
        self._keys = {}  # {(job name, index): canonical_json of its parameters}: a job's values never change
        self._restart()

    def _restart(self):
        self._walked = set()  # the configurations before the cursor (each on the service when passed)
        self._ahead = []      # (position, key, values) drawn past the cursor, in order
        self._iterator = enumerate(self._walk())

    def _walk(self):
        for item in self._configurations:
            yield dict(getattr(item, 'parameters', item))

    def _present(self, trials):
        keys = self._keys
        present = set()
        for trial in trials:
            key = keys.get((trial.name, trial.index))
            if key is None:
                key = keys[(trial.name, trial.index)] = canonical_json(trial.params)
            present.add(key)
        return present

    def _next_absent(self, present, count):
        """The first `count` configurations of the sequence not in `present`, as (position, values)."""
        if not self._walked <= present:
            self._restart()
        ahead = self._ahead
        while ahead and ahead[0][1] in present:  # the cursor passes what is on the service now
            self._walked.add(ahead.pop(0)[1])
        out = [(position, values) for position, key, values in ahead if key not in present][:count]
        while len(out) < count:
            try:
                position, values = next(self._iterator)
            except StopIteration:
                break
            key = canonical_json(values)
            if key in present and not ahead:
                self._walked.add(key)
                continue
            ahead.append((position, key, values))
            if key not in present:
                out.append((position, values))
        return out

    def suggest(self, trials, count):
        if count <= 0:
            return []
        total = len(self._configurations)
        return [Suggestion(params=dict(values), note='{} {} of {}'.format(self.kind, position + 1, total))
                for position, values in self._next_absent(self._present(trials), count)]

    def exhausted(self, trials):
        present = self._present(trials)
        if len(present) < len(self._configurations):
            return False  # fewer jobs than configurations: one at least is left (no need to walk them all)
        return not self._next_absent(present, 1)
