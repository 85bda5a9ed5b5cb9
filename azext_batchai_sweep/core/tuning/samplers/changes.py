"""What changed in the jobs since a sampler's last suggestion: a run asks after every poll with the same jobs and a
few more (issue 44), so TPE's history (tpe._History) and BOHB's model view (bohb.BudgetModel._view) compare each job
field's list with the last one, a list at a time, and read again only the jobs that differ."""
import itertools
import operator

INDEX, STATE, PARAMS, METRICS = (operator.attrgetter(name) for name in ('index', 'state', 'params', 'metrics'))


def differences(mine, theirs, common):
    """The positions below ``common`` where two lists differ (==: equal values of other types are equal)."""
    if mine[:common] == theirs[:common]:
        return ()
    return list(itertools.compress(range(common), map(operator.ne, mine, theirs)))


def value_types(params):
    """(the count of values up to each job, the types of every job's values in order) of the jobs' parameter dicts,
    which tell equal values of other types (1, 1.0, True) apart; None when a job's parameters are no dict."""
    try:
        return (list(itertools.accumulate(map(len, params))),
                list(map(type, itertools.chain.from_iterable(map(dict.values, params)))))
    except TypeError:
        return None
