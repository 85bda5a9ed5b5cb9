"""Does a low resource rank configurations as a higher one does? Measured on the sweep's own finished jobs, for BOHB's
choice of the resource its model is fitted at (bohb.py).

BOHB fits its model at the highest resource (budget) with enough results, because a configuration good after 1 epoch
may be poor after 81. Where the low resources do rank as the high one, that rule throws away most of the evidence:
a Hyperband iteration of R = 81, eta 3 ends with 81 results at 1 epoch and about 10 at 81, and a model on 10 points
stalls where one on hundreds keeps improving (bench-mf: mf2's Hartmann-6 in docs/benchmarks.md). Whether they do is
measured, not assumed (the reasoning of MFES-HB, Li et al. AAAI 2021, and of Hyper-Tune, which weigh each fidelity by
how well it ranks the highest one): the Spearman rank correlation, over every configuration whose curve reached both
steps, between its value at the low step and at the high one. A job reports its objective at each step and a
promotion continues its parent's parameters, so a configuration's curve is the reports of its jobs joined (keyed by
its parameters); a configuration trained straight to the full resource has every lower step too.

Only finished jobs count, so the measure is a pure function of what the service reports: a resumed controller, or one
with other jobs in flight, measures the same.
"""
import math
from dataclasses import dataclass
from typing import Optional

from ...spec.naming import canonical_json


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


def curves(trials):
    """{configuration: {step: value}}: every finished job's finite reports, joined per configuration (its parameters);
    where two jobs of a configuration reported at one step, the earlier job's value (by index)."""
    book = CurveBook()
    book.update(trials)
    return book.curves()


class CurveBook:
    """curves() of a growing list of jobs, read incrementally: a finished job's reports never change, so each is read
    once (a sweep's controller asks at every new configuration, and joining hundreds of jobs each time cost a
    50-iteration BOHB run in bench-mf as much CPU as its models). Whatever order the jobs finish in, the curves are
    those of reading them all at once in index order."""

    def __init__(self):
        self._read = set()
        self._owners = {}  # configuration -> {step: the index of the job whose value is kept}
        self._joined = {}  # configuration -> {step: value}

    def update(self, trials):
        """Read the finished jobs of `trials` not read yet; returns True when something new was read."""
        finished = {(t.index, t.name, len(t.reports)): t for t in trials if not t.pending}
        if not self._read <= finished.keys():  # not the same growing list (another sweep's, a test's): start again
            self._read, self._owners, self._joined = set(), {}, {}
        fresh = finished.keys() - self._read
        for key in fresh:
            trial = finished[key]
            configuration = canonical_json(trial.params)
            owners = self._owners.setdefault(configuration, {})
            curve = self._joined.setdefault(configuration, {})
            for report in trial.reports:
                if isinstance(report.value, (int, float)) and math.isfinite(report.value):
                    step = float(report.step)
                    if step not in owners or trial.index < owners[step]:
                        owners[step], curve[step] = trial.index, float(report.value)
        self._read |= fresh
        return bool(fresh)

    def curves(self):
        """{configuration: {step: value}} (the book's own dicts: read them, do not change them)."""
        return self._joined


def value_at(curve, step):
    """The first value reported at or after `step` (the value a rung at `step` judged: a job may report every few
    steps), None if the curve stops before `step` or starts after it (a value at 3 says nothing of step 1)."""
    if not curve or min(curve) > step:
        return None
    reached = [s for s in curve if s >= step]
    return curve[min(reached)] if reached else None


@dataclass(frozen=True)
class Agreement:
    """How a low step ranks the configurations that reached a high one: ``rho`` over ``count`` of them (rho None:
    fewer than two, or no spread)."""
    low: float
    high: float
    count: int
    rho: Optional[float]


def agreement(joined, low, high):
    """The Agreement of step `low` with step `high` over the configurations of `joined` (curves()) that reached both."""
    pairs = []
    for key in sorted(joined):
        curve = joined[key]
        high_value = value_at(curve, high)
        if high_value is not None:
            low_value = value_at(curve, low)
            if low_value is not None:
                pairs.append((low_value, high_value))
    rho = spearman([p[0] for p in pairs], [p[1] for p in pairs]) if len(pairs) >= 2 else None
    return Agreement(low, high, len(pairs), rho)
