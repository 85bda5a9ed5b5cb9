"""RANDOM_UNIFORM parameters of a sweep file: each draws its numValues from a stream of its own, made from the sweep's
seed and its name. Two such parameters with the same range never draw the same values (a grid of their pairs would
be the diagonal), a parameter draws the same values whatever the others are, and the seed reproduces them all."""
import textwrap

import pytest

from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file

JOB = 'job: {nodeCount: 1, customToolkitSettings: {commandLine: "train {{A}} {{B}}"}}\n'


def _values(tmp_path, parameters, seed):
    path = tmp_path / 'sweep.yaml'
    path.write_text(textwrap.dedent(parameters) + JOB, encoding='utf-8')
    definition = load_sweep_file(str(path), seed=seed)
    return {spec.name: spec.values() for spec in definition.parameters}


TWO = {
    'REAL': """\
        parameters:
          - {name: A, type: numeric, dataType: REAL, start: 0, end: 1, numValues: 5, scale: RANDOM_UNIFORM}
          - {name: B, type: numeric, dataType: REAL, start: 0, end: 1, numValues: 5, scale: RANDOM_UNIFORM}
        """,
    'INTEGER': """\
        parameters:
          - {name: A, type: numeric, dataType: INTEGER, start: 1, end: 1000, numValues: 5, scale: RANDOM_UNIFORM}
          - {name: B, type: numeric, dataType: INTEGER, start: 1, end: 1000, numValues: 5, scale: RANDOM_UNIFORM}
        """,
}


@pytest.mark.parametrize('data_type', sorted(TWO))
def test_two_parameters_of_one_range_draw_different_values(tmp_path, data_type):
    drawn = _values(tmp_path, TWO[data_type], seed=7)
    assert drawn['A'] != drawn['B']
    assert not set(drawn['A']) & set(drawn['B'])
    assert all(0 <= v <= 1000 for name in 'AB' for v in drawn[name])
    assert _values(tmp_path, TWO[data_type], seed=7) == drawn  # the seed reproduces them
    other = _values(tmp_path, TWO[data_type], seed=8)
    assert other['A'] != drawn['A'] and other['B'] != drawn['B']


def test_a_parameters_values_do_not_depend_on_the_others(tmp_path):
    both = _values(tmp_path, TWO['REAL'], seed=11)
    alone = _values(tmp_path, """\
        parameters:
          - {name: B, type: numeric, dataType: REAL, start: 0, end: 1, numValues: 5, scale: RANDOM_UNIFORM}
          - {name: A, type: discrete, values: [x, y]}
        """, seed=11)
    assert alone['B'] == both['B']
