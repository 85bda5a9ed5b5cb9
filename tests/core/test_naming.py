"""Deterministic job names."""
import re

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.naming import MAX_NAME_LENGTH, canonical_json, job_name, sanitize_prefix

from .helpers import run_core_python

BATCH_AI_NAME = re.compile(r'^[-\w_]+$')


def test_name_is_prefix_dash_hash_and_stable():
    name = job_name('sweep', {'LR': 0.001, 'BS': 32})
    assert re.fullmatch(r'sweep-[0-9a-f]{16}', name)
    assert name == job_name('sweep', {'BS': 32, 'LR': 0.001})  # key order does not matter
    assert name != job_name('sweep', {'LR': 0.001, 'BS': 64})


def test_the_sweep_name_is_part_of_the_hash():
    values = {'LR': 0.001, 'BS': 32}
    names = {job_name('sweep', values, sweep_name=sweep) for sweep in ('a', 'b', 'ab', '')}
    assert len(names) == 4  # two sweeps of one file never share a job
    assert job_name('sweep', values, sweep_name='a') == job_name('sweep', dict(reversed(list(values.items()))),
                                                                 sweep_name='a')
    assert job_name('sweep', values) not in names  # version 0.1's names hashed the values only
    # No (sweep, values) pair reads as another: the sweep name is quoted and ends the line.
    assert job_name('p', {'A': 1}, sweep_name='x') != job_name('p', {'A': 1}, sweep_name='x\n')


def test_name_is_the_same_in_another_process():
    # Nothing process-dependent (hash randomisation) may enter the name.
    code = ('from azext_batchai_sweep.core.spec.naming import job_name;'
            'print(job_name("sweep", {"LR": 0.001, "D": {"K": "v"}}))')
    result = run_core_python(code, env={'PYTHONHASHSEED': '123'})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == job_name('sweep', {'LR': 0.001, 'D': {'K': 'v'}})


def test_canonical_json_sorted_compact_repr_floats():
    assert canonical_json({'B': 1e-4, 'A': 'x', 'C': {'Z': 1, 'Y': 2.5}}) == \
        '{"A":"x","B":0.0001,"C":{"Y":2.5,"Z":1}}'
    with pytest.raises(ValueError):
        canonical_json({'A': float('nan')})


def test_long_prefix_is_truncated_to_fit_64():
    name = job_name('p' * 100, {'A': 1})
    assert len(name) == MAX_NAME_LENGTH
    assert BATCH_AI_NAME.match(name)


def test_prefix_separators_are_fixed():
    assert sanitize_prefix(' my sweep.v2/run:1 ') == 'my-sweep-v2-run-1'
    assert BATCH_AI_NAME.match(job_name('my sweep.v2', {'A': 1}))


@pytest.mark.parametrize('prefix', ['a;b', 'naïve', 'x$y', '', '   ', None, '...'])
def test_unfixable_prefix_is_an_error(prefix):
    with pytest.raises(SpecError, match='prefix'):
        job_name(prefix, {'A': 1})
