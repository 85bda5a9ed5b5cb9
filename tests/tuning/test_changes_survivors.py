"""What changed between two polls' lists (core/tuning/samplers/changes.py, issue 44), where mutation testing found its
rules untested (issue 49): the first position where two lists differ, every position below ``common`` where they
differ, and every position where they hold other objects, for lists of every length up to 24 that differ at any one
position, at two, or at none, and that are the same objects or equal copies. The oracle: a loop over the positions."""
import itertools

import pytest

from azext_batchai_sweep.core.tuning.samplers import changes


def _naive_first(old, new):
    for k, (a, b) in enumerate(zip(old, new)):
        if a is not b and a != b:
            return k
    return min(len(old), len(new))


def _pairs():
    """(old, new) lists: equal copies (other objects), the same objects, one or two positions changed, one list
    longer."""
    for n in range(0, 25):
        old = [float(k) for k in range(n)]
        yield old, old
        yield old, [float(k) for k in range(n)]  # equal values, other objects
        yield old, old + [99.0]
        yield old + [99.0], old
        for k in range(n):
            new = list(old)
            new[k] = -1.0
            yield old, new
            for j in range(k + 1, n, 4):
                both = list(new)
                both[j] = -2.0
                yield old, both


def test_first_difference_is_the_first_position_where_the_lists_differ():
    for old, new in _pairs():
        assert changes.first_difference(old, new) == _naive_first(old, new), (old, new)


@pytest.mark.parametrize('common', ['shorter', 'all'])
def test_differences_are_every_position_below_common_where_the_lists_differ(common):
    for old, new in _pairs():
        count = min(len(old), len(new))
        below = count if common == 'all' else count // 2
        expected = [k for k in range(below) if old[k] is not new[k] and old[k] != new[k]]
        assert list(changes.differences(new, old, below)) == expected, (old, new, below)


def test_a_value_that_is_not_equal_to_itself_differs_unless_it_is_the_same_object():
    nan = float('nan')
    assert changes.first_difference([1.0, nan], [1.0, nan]) == 2
    assert changes.first_difference([1.0, nan], [1.0, float('nan')]) == 1
    assert list(changes.differences([nan, 2.0, float('nan')], [nan, 2.0, nan], 3)) == [2]


def test_replaced_are_the_positions_of_other_objects_equal_or_not():
    shared = [{'X': k} for k in range(12)]
    for picked in itertools.chain([()], itertools.combinations(range(12), 1), itertools.combinations(range(12), 2)):
        mine = [dict(p) if k in picked else p for k, p in enumerate(shared)]
        for common in (0, 5, 12):
            assert changes.replaced(mine, shared, common) == [k for k in picked if k < common]
