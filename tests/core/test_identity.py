"""core/service/identity.py without a service: a plan compared with a listing, job digests, recorded seeds."""
from types import SimpleNamespace

import pytest

from azext_batchai_sweep.core.service.identity import (JOB_DIGEST_VAR, SWEEP_SEED_VAR, Comparison, SweepConflict,
                                                       SweepIdentity, add_digest, body_digest, digest_of_body,
                                                       recorded_seed)


def job(name, sweep, digest=None, seed=None, params='{"X":1}', deleting=False):
    env = {'BATCHAI_SWEEP_NAME': sweep, 'BATCHAI_SWEEP_PARAMS': params}
    if digest:
        env[JOB_DIGEST_VAR] = digest
    if seed is not None:
        env[SWEEP_SEED_VAR] = str(seed)
    return SimpleNamespace(name=name, provisioning_state='deleting' if deleting else 'succeeded',
                           environment_variables=[SimpleNamespace(name=k, value=v) for k, v in env.items()])


def test_present_means_present_and_equal():
    comparison = Comparison.of('a', [job('j1', 'a', 'd1'), job('j2', 'a', 'd2'), job('old', 'a'),
                                     job('gone', 'a', 'dx', deleting=True)])
    assert [comparison.add(*item) for item in (('j1', 'd1'), ('j2', 'CHANGED'), ('old', 'd3'), ('gone', 'dx'),
                                               ('new', 'd4'))] == ['present', 'changed', 'present', 'missing',
                                                                   'missing']
    with pytest.raises(SweepConflict) as raised:
        comparison.raise_conflicts()
    assert raised.value.kind == 'changed' and raised.value.jobs == ['j2']
    comparison.raise_conflicts(allow_changes=True)  # the user means it


def test_another_sweeps_job_is_never_counted_and_always_refused():
    comparison = Comparison.of('a', [job('j1', 'b', 'd1')])
    assert comparison.add('j1', 'd1') == 'foreign'
    for allow in (False, True):
        with pytest.raises(SweepConflict, match="belongs to sweep 'b', not 'a'") as raised:
            comparison.raise_conflicts(allow_changes=allow)
        assert raised.value.owners == {'j1': 'b'}


def test_service_jobs_the_plan_lacks_name_the_changed_parameter_or_version_0_1():
    comparison = Comparison.of('a', [job('j1', 'a', 'd1', params='{"X":1,"Y":"p"}'),
                                     job('j9', 'a', 'd9', params='{"X":9,"Y":"p"}'), job('other', 'b')])
    comparison.add('j1', 'd1')
    assert comparison.unplanned() == ['j9'] and comparison.has_sweep_jobs()
    with pytest.raises(SweepConflict, match=r'the parameter\(s\) X changed') as raised:
        comparison.raise_conflicts(planned_parameters={'X': {'1', '2'}, 'Y': {'"p"'}})
    assert raised.value.changed_parameters == ['X'] and not raised.value.legacy
    legacy = Comparison.of('a', [job('v01', 'a')])
    with pytest.raises(SweepConflict, match='version 0.1') as raised:
        legacy.raise_conflicts()
    assert raised.value.legacy


def test_digest_round_trip_and_seed_and_args():
    body = {'properties': {'environmentVariables': [{'name': 'A', 'value': '1'}]}}
    digest = body_digest('{"properties":{}}')
    assert len(digest) == 16 and digest != body_digest('{"properties":{"x":1}}')
    assert digest_of_body(body) is None and digest_of_body(add_digest(body, digest)) == digest
    assert recorded_seed([job('a', 's'), job('b', 's', seed=42), job('c', 's', seed=7)]) == 42
    assert recorded_seed([job('a', 's')]) is None
    assert SweepIdentity('rg', 'my ws', 'e', 'n').args() == "-g rg -w 'my ws' -e e -n n"
