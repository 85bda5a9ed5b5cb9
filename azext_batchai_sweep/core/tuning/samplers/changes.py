"""What changed in the jobs since a sampler's last suggestion: a run asks after every poll with the same jobs and a
few more (issue 44), so TPE's history (tpe._History) and BOHB's model view (bohb.BudgetModel._view) compare each job
field's list with the last one, a list at a time, and read again only the jobs that differ."""
import itertools
import operator

INDEX, STATE, PARAMS, METRICS, STOPPED, REPORTS = (operator.attrgetter(name) for name in (
    'index', 'state', 'params', 'metrics', 'stopped_early', 'reports'))


def differences(mine, theirs, common):
    """The positions below ``common`` where two lists differ (==: equal values of other types are equal; the same
    object is equal to itself): from the first one on, compared one by one (those before it in C, first_difference)."""
    start = first_difference(mine[:common], theirs[:common])
    if start == common:
        return ()
    return [start] + list(itertools.compress(range(start + 1, common),
                                             map(operator.ne, mine[start + 1:common], theirs[start + 1:common])))


def first_difference(old, new):
    """The first position where two lists differ (the shorter one's length when one starts the other; an item that is
    the other's object counts as equal): slices compared in C, halving the stretch where they differ (lists of 10,000
    jobs a poll later are the same objects but for a few, and comparing them one by one in Python was a tenth of a
    MOTPE suggestion)."""
    same, differs = 0, min(len(old), len(new))
    if old[:differs] == new[:differs]:
        return differs
    while differs - same > 1:  # old[:same] == new[:same], and they differ before ``differs``
        middle = (same + differs) // 2
        if old[same:middle] == new[same:middle]:
            same = middle
        else:
            differs = middle
    return same


def replaced(mine, theirs, common):
    """The positions below ``common`` where the two lists hold other objects, equal or not (differences() takes an
    equal object for the same; this tells a job's parameters read into a new dict from the dict kept a poll ago)."""
    return list(itertools.compress(range(common), map(operator.is_not, mine[:common], theirs[:common])))


def same_types(mine, theirs):
    """Whether two equal parameter dicts hold values of the same types in the same order (1, 1.0 and True are equal
    values that a sampler reads differently); False for parameters that are not a dict."""
    try:
        return list(map(type, mine.values())) == list(map(type, theirs.values()))
    except AttributeError:
        return False
