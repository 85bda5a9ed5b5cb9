"""Does a low resource rank configurations as the full one does? Measured on the sweep's own jobs (BOHB, bohb.py).

Successive halving trusts a configuration's ranking after a few epochs. When the early epochs mislead (a learning
rate that looks best after 1 epoch and is poor after 81), the brackets that start there spend their budget on the
wrong configurations, and a model fitted on their results steers the search toward them. Systems that learn the
fidelity's reliability (Hyper-Tune, Hyperband with an adaptive minimum budget) check it on the data: here, the
Spearman rank correlation between the values at a rung's resource and at the highest resource where enough
configurations have both, over every configuration of the sweep that reported at both steps (a job reports its
objective at each step; a promotion continues its parent, so a configuration's curve is its jobs' reports joined).

A resource is *distrusted* when that correlation is below ``THRESHOLD``; with too few configurations at any higher
resource nothing is known yet and it is trusted. Only finished jobs count, so the verdict is a pure function of what
the service reports: a resumed controller, or one with other jobs in flight, reaches the same one.
"""
import math

# Below this rank correlation with a higher resource, a resource's ranking is not trusted. Measured on bench-mf's
# tasks (docs/benchmarks.md): their misleading rungs correlate at -0.3 to 0.4 with the full resource, the faithful
# ones at 0.75 to 1.
THRESHOLD = 0.5


def average_ranks(values):
    """Ranks 1..n of the values, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2.0 + 1
        start = end + 1
    return ranks


def spearman(xs, ys):
    """Spearman's rank correlation of two equally long sequences; None when either has no spread."""
    rx, ry = average_ranks(xs), average_ranks(ys)
    n = len(rx)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return None
    return cov / (vx * vy) ** 0.5


def _value_at(curve, step):
    """The first value reported at or after `step` (ASHA's rule for a rung), or None when the curve stops before."""
    reached = [s for s in curve if s >= step]
    return curve[min(reached)] if reached else None


class Verdict:
    """A resource's reliability: ``rho`` between its values and those at ``against`` over ``count`` configurations
    (rho None: nothing to judge yet)."""

    def __init__(self, resource, against=None, count=0, rho=None):
        self.resource, self.against, self.count, self.rho = resource, against, count, rho

    @property
    def trusted(self):
        return self.rho is None or self.rho >= THRESHOLD

    def __repr__(self):
        return 'Verdict(resource={!r}, against={!r}, count={!r}, rho={!r})'.format(
            self.resource, self.against, self.count, self.rho)


class FidelityCheck:
    """The verdicts on a Hyperband sweep's rung resources, from its finished jobs (memoized: a finished job's
    reports never change, so only new ones are read).

    :param resources: the rung resources of the sweep, any order.
    :param min_points: configurations needed at both steps before a verdict (BOHB's threshold for a model).
    """

    def __init__(self, resources, min_points):
        self.resources = sorted(set(resources))
        self.min_points = min_points
        self._read = set()
        self._curves = {}   # (bracket, slot) -> {step: value}: a configuration's joined curve
        self._verdicts = {}

    def _update(self, trials):
        # a finished job's reports never change: it is read once (its last report in the key: a list of another
        # sweep's jobs, or a test's, under the same names is read afresh)
        finished = {(t.name, t.index, len(t.reports), t.reports[-1] if t.reports else None): t for t in trials
                    if not t.pending and t.bracket is not None and t.slot is not None}
        if not self._read <= finished.keys():  # other trials than those read (another sweep's): start again
            self._read, self._curves = set(), {}
        fresh = sorted(finished.keys() - self._read, key=lambda key: (key[1], key[0]))
        for key in fresh:
            trial = finished[key]
            self._read.add(key)
            curve = self._curves.setdefault((trial.bracket, trial.slot), {})
            for report in trial.reports:
                if isinstance(report.value, (int, float)) and math.isfinite(report.value):
                    curve.setdefault(float(report.step), float(report.value))
        if fresh:
            self._verdicts = {}

    def verdict(self, trials, resource):
        """The Verdict on `resource` after `trials`: against the highest higher resource with min_points
        configurations that reported at both."""
        self._update(trials)
        if resource not in self._verdicts:
            self._verdicts[resource] = self._judge(resource)
        return self._verdicts[resource]

    def _judge(self, resource):
        for against in reversed([r for r in self.resources if r > resource]):
            pairs = []
            for key in sorted(self._curves):
                curve = self._curves[key]
                low, high = _value_at(curve, resource), _value_at(curve, against)
                if low is not None and high is not None:
                    pairs.append((low, high))
            if len(pairs) >= self.min_points:
                return Verdict(resource, against, len(pairs), spearman([p[0] for p in pairs],
                                                                       [p[1] for p in pairs]))
        return Verdict(resource)
