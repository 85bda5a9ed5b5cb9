"""Which job is the best: the one rule `run`, `status`, `metrics` and `report` apply (docs/sweep-run.md).

A job can be the best only when it ran to the end with a value and broke no constraint: an infeasible job is never
the best, nor ranked above a feasible one, anywhere. Among the candidates the better value wins (``goal``), ties
going to the first job by name (as `metrics` ranks its rows and `status` lists them: the callers pass the name as
``tie``). Every command ranks through ``rank_key`` (metrics' rows) or ``best_of`` (run, status and
report's jobs), so they cannot disagree; what a job's value *is* (its last report, a reduction of its log) is the
caller's, passed in as ``value``.
"""


def rank_key(goal, value, *, finished=True, feasible=True, tie=''):
    """A sort key, best first: finished jobs before the others, then those with a value, then those that broke no
    constraint, then by value (ties by ``tie``). The first key is a job that can be the best (is_candidate).

    :param value: the job's number (None: it has none).
    :param finished: False for a job that did not run to the end (failed, stopped, still running).
    :param feasible: False for a job that broke a constraint.
    """
    has = value is not None
    sign = -1 if goal == 'max' else 1
    return (not finished, not has, not feasible, sign * value if has else 0.0, tie)


def is_candidate(value, finished=True, feasible=True):
    """True when a job can be the best: it ran to the end with a value and broke no constraint."""
    return finished and feasible and value is not None


def best_of(jobs, goal, value, *, finished=lambda job: True, feasible=lambda job: True, tie=lambda job: 0):
    """The best of ``jobs`` (any objects) by the rule above, or None when none can be the best.

    :param value: job -> its number or None; ``finished``, ``feasible``, ``tie``: job -> as in rank_key.
    """
    candidates = [job for job in jobs if is_candidate(value(job), finished(job), feasible(job))]
    if not candidates:
        return None
    return min(candidates, key=lambda job: rank_key(goal, value(job), tie=tie(job)))
