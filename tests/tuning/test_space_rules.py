"""space.py's rules that mutation testing found unchecked: which job values belong to a dimension (non-numbers,
booleans, zero on a log scale, half a step off the grid, the edges of a continuous range), dict values kept apart,
snapping, a point past the grid's end, and the enumeration of a finite dimension's values."""
import pytest

from azext_batchai_sweep.core.spec.params import DictParamSpec, DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning.samplers.space import dimensions, space_size

SPECS = {'L': NumParamSpec('L', 0, 10, 'INTEGER', 'LINEAR'), 'G': NumParamSpec('G', 3, 7, 'INTEGER', 'LOG'),
         'C': DiscreteParamSpec('C', ['x', 'y', 'z']), 'S': NumParamSpec('S', 0.1, 0.5, 'REAL', 'LINEAR', step=0.2),
         'R': NumParamSpec('R', 0.0, 1.0, 'REAL', 'LINEAR'), 'W': NumParamSpec('W', 0.0, 100.0, 'REAL', 'LINEAR'),
         'D': DictParamSpec('D', [{'a': 1}, {'a': 2}, {'a': 'c'}]), 'E': NumParamSpec('E', 0.001, 1.0, 'REAL', 'LOG'),
         'M': NumParamSpec('M', -100.0, 100.0, 'REAL', 'LINEAR'),
         'I': NumParamSpec('I', 0, 10, 'INTEGER', 'LINEAR', step=1)}


def dim(name):
    """The dimension, made in the test (a mutant of Dimension() made at import would never be switched on)."""
    return dimensions([SPECS[name]])[0]


@pytest.mark.parametrize('name', ['L', 'G', 'S', 'R', 'E', 'I'])
@pytest.mark.parametrize('value', ['3', True, False, None, float('nan'), float('inf'), [1]])
def test_a_value_that_is_no_number_never_belongs_to_a_numeric_dimension(name, value):
    assert dim(name).to_internal(value) is None


@pytest.mark.parametrize('value', [0, 0.0, -1])
def test_zero_and_below_never_belong_to_a_log_dimension(value):
    assert dim('E').to_internal(value) is None and dim('G').to_internal(value) is None


def test_a_grid_takes_values_up_to_half_a_step_off_its_points_but_not_past_its_ends():
    LINEAR, STEPPED = dim('L'), dim('S')  # pylint: disable=invalid-name
    assert LINEAR.to_internal(3.5) is not None  # exactly half a step: the nearer point (one of two)
    assert LINEAR.to_internal(10.4) == 10.0 and LINEAR.to_internal(-0.4) == 0.0
    assert LINEAR.to_internal(10.6) is None and LINEAR.to_internal(-0.6) is None
    assert STEPPED.to_internal(0.55) == pytest.approx(0.5) and STEPPED.to_internal(0.65) is None


def test_a_continuous_range_takes_its_ends_within_rounding_but_nothing_past_them():
    WIDE, REAL, MIDDLE = dim('W'), dim('R'), dim('M')  # pylint: disable=invalid-name
    assert MIDDLE.to_internal(100.0 + 1e-8) == 100.0 + 1e-8 and MIDDLE.to_internal(-100.0 - 1e-8) == -100.0 - 1e-8
    # rounding slack, relative to the range (a billionth of it)
    assert WIDE.to_internal(100.0 + 1e-8) == 100.0 + 1e-8 and WIDE.to_internal(-1e-8) == -1e-8
    assert WIDE.to_internal(100.5) is None and WIDE.to_internal(-0.5) is None and REAL.to_internal(1.5) is None


def test_different_dict_values_are_different_choices():
    DICTS = dim('D')  # pylint: disable=invalid-name
    assert [DICTS.to_internal(v) for v in ({'a': 2}, {'a': 'c'}, {'a': 1})] == [1, 2, 0]
    assert DICTS.to_internal({'a': 3}) is None


def test_a_point_snaps_to_a_choice_or_into_the_range_and_past_the_grid_to_its_last_value():
    CHOICE, REAL, STEPPED, LINEAR = dim('C'), dim('R'), dim('S'), dim('L')  # pylint: disable=invalid-name
    assert CHOICE.snap(2.7) == 2 and CHOICE.snap(0.2) == 0
    assert (REAL.snap(-5.0), REAL.snap(0.3), REAL.snap(5.0)) == (0.0, 0.3, 1.0)
    assert STEPPED.to_value(5.0) == 0.5 and STEPPED.to_value(-5.0) == 0.1 and LINEAR.to_value(99.0) == 10


@pytest.mark.parametrize('name, values', [('G', [3, 4, 5, 6, 7]), ('S', [0.1, 0.3, 0.5]), ('L', list(range(11))),
                                          ('I', list(range(11))), ('C', ['x', 'y', 'z'])])
def test_a_finite_dimension_enumerates_each_of_its_values_once_in_order(name, values):
    found = dim(name)
    assert found.size == len(values) and space_size([found]) == len(values)
    assert [found.to_value(found.point_at(i)) for i in range(found.size)] == values


def test_a_grid_points_neighbours_reach_both_ends_of_the_grid():
    log_int, linear = dim('G'), dim('L')
    assert [[log_int.to_value(p) for p in log_int.neighbours(log_int.to_internal(v))] for v in (3, 4, 6, 7)] == \
        [[4], [3, 5], [5, 7], [6]]
    assert linear.neighbours(1.0) == [0.0, 2.0] and linear.neighbours(9.0) == [8.0, 10.0]
