"""The TPE sampler refuses a goal other than max or min, naming it (core/tuning/samplers/tpe.py; issue 49: mutation
testing found the message untested). The sweep file is validated first, so this is what a caller of the sampler that
skipped it sees: a ValueError that says what it was given, for several wrong goals."""
import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler

SPECS = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR')]


@pytest.mark.parametrize('goal', ['maximize', 'MAX', None, 1])
def test_a_goal_other_than_max_or_min_is_refused_by_name(goal):
    with pytest.raises(ValueError) as refused:
        TPESampler(SPECS, goal=goal)
    assert str(refused.value) == 'goal must be "max" or "min", not {!r}'.format(goal)


@pytest.mark.parametrize('goal', ['max', 'min'])
def test_max_and_min_are_taken(goal):
    assert TPESampler(SPECS, goal=goal).goal == goal
