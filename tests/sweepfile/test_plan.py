"""The plan file: JSON Lines, streamed both ways, atomic, never a secret."""
import json
import os
import tracemalloc

import pytest

from azext_batchai_sweep.core.errors import SpecError, SweepError
from azext_batchai_sweep.core.spec.plan import (PLAN_KIND, literal_secrets, plan_header, read_plan,
                                            resolve_secret_references, write_plan)


def header(job_count, **changes):
    fields = dict(sweep='lr', resource_group='rg', workspace='ws', experiment='exp', job_name_prefix='lr',
                  sampling={'type': 'random', 'count': job_count, 'seed': 7},
                  parameters=[{'name': 'UNITS', 'type': 'discrete', 'values': [1, 2]}], job_count=job_count,
                  created_at='2026-01-01T00:00:00+00:00')
    fields.update(changes)
    return plan_header(**fields)


def job(index, **properties):
    body = {'properties': {'nodeCount': 1, 'customToolkitSettings': {'commandLine': 'train --units {}'.format(index)},
                           **properties}}
    return {'name': 'lr-{:08d}'.format(index), 'parameters': {'UNITS': index}, 'job': body}


def test_header_line_then_one_line_per_job(tmp_path):
    path = str(tmp_path / 'lr.plan.jsonl')
    assert write_plan(path, header(2), [job(1), job(2)]) == 2
    with open(path, encoding='utf-8') as f:
        lines = [json.loads(line) for line in f]
    assert lines[0] == {'kind': PLAN_KIND, 'version': 2, 'sweep': 'lr', 'resourceGroup': 'rg', 'workspace': 'ws',
                        'experiment': 'exp', 'jobNamePrefix': 'lr',
                        'sampling': {'type': 'random', 'count': 2, 'seed': 7},
                        'parameters': [{'name': 'UNITS', 'type': 'discrete', 'values': [1, 2]}], 'jobCount': 2,
                        'templateDigest': None, 'createdAt': '2026-01-01T00:00:00+00:00'}
    assert lines[1:] == [job(1), job(2)]
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask
    read_header, jobs = read_plan(path)
    assert read_header == lines[0]
    assert list(jobs) == [job(1), job(2)]


def test_created_at_defaults_to_now_in_utc():
    assert header(0, created_at=None)['createdAt'].endswith('+00:00')


@pytest.mark.slow
def _peaks_of_a_plan(path, count):
    """The peak memory allocated while writing a plan of ``count`` jobs, and while reading it back."""
    tracemalloc.start()
    try:
        write_plan(path, header(count), (job(i) for i in range(count)))
        _, peak_write = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        _, jobs = read_plan(path)
        assert sum(1 for _ in jobs) == count
        _, peak_read = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak_write, peak_read


def test_write_and_read_stream_in_flat_memory(tmp_path):
    # Two sizes, 5x apart: the peaks do not grow with the plan (holding it, or a list of its jobs, would grow them
    # about 5x: ~3 MB on disk for the larger), and stay under 2 MB.
    small = _peaks_of_a_plan(str(tmp_path / 'small.plan.jsonl'), 4_000)
    large = _peaks_of_a_plan(str(tmp_path / 'large.plan.jsonl'), 20_000)
    assert os.path.getsize(str(tmp_path / 'large.plan.jsonl')) > 2_000_000
    for before, after in zip(small, large):
        assert after < 2_000_000 and after < 1.5 * before + 100_000, (small, large)


def test_reading_is_lazy(tmp_path):
    path = str(tmp_path / 'lr.plan.jsonl')
    write_plan(path, header(2), [job(1), job(2)])
    with open(path, 'a', encoding='utf-8') as f:
        f.write('not json\n')
    _, jobs = read_plan(path)
    assert next(jobs) == job(1)
    assert next(jobs) == job(2)
    with pytest.raises(SweepError, match='line 4: not a JSON job record'):
        next(jobs)


def test_write_is_atomic_and_leaves_no_temporary_file(tmp_path):
    path = str(tmp_path / 'lr.plan.jsonl')
    write_plan(path, header(1), [job(1)])

    def failing_jobs():
        yield job(5)
        raise RuntimeError('expansion failed half-way')

    with pytest.raises(RuntimeError):
        write_plan(path, header(2), failing_jobs())
    assert os.listdir(str(tmp_path)) == ['lr.plan.jsonl']
    assert list(read_plan(path)[1]) == [job(1)]


def test_job_count_must_match_the_header(tmp_path):
    with pytest.raises(ValueError, match='announces 3 jobs but 1 were written'):
        write_plan(str(tmp_path / 'p.jsonl'), header(3), [job(1)])
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize('properties, leaked', [
    ({'secrets': [{'name': 'TOKEN', 'value': 's3cr3t'}]}, 'properties.secrets[0].value'),
    ({'mountVolumes': {'azureFileShares': [{'azureFileUrl': 'u', 'accountName': 'a', 'relativeMountPath': 'x',
                                            'credentials': {'accountKey': 'a2V5'}}]}},
     'properties.mountVolumes.azureFileShares[0].credentials.accountKey'),
    ({'containerSettings': {'imageSourceRegistry': {'image': 'i', 'credentials': {'username': 'u',
                                                                                 'password': 'pw'}}}},
     'properties.containerSettings.imageSourceRegistry.credentials.password'),
])
def test_a_literal_secret_never_reaches_the_plan(tmp_path, properties, leaked):
    path = str(tmp_path / 'lr.plan.jsonl')
    with pytest.raises(SpecError) as error:
        write_plan(path, header(1), [job(1, **properties)])
    assert error.value.path == leaked
    assert '$env:NAME' in error.value.message
    assert os.listdir(str(tmp_path)) == []


def test_secret_references_are_kept_in_the_plan_and_resolved_at_submit(tmp_path):
    properties = {
        'secrets': [{'name': 'TOKEN', 'value': '$env:MY_TOKEN'},
                    {'name': 'VAULT', 'valueSecretReference': {'secretUrl': 'u', 'sourceVault': {'id': 'v'}}}],
        'mountVolumes': {'azureBlobFileSystems': [{'accountName': 'a', 'containerName': 'c', 'relativeMountPath': 'b',
                                                   'credentials': {'accountKey': '<AZURE_BATCHAI_STORAGE_KEY>'}}]},
    }
    path = str(tmp_path / 'lr.plan.jsonl')
    write_plan(path, header(1), [job(1, **properties)])
    with open(path, encoding='utf-8') as f:
        text = f.read()
    assert '$env:MY_TOKEN' in text
    planned = next(read_plan(path)[1])['job']
    assert literal_secrets(planned) == []
    resolved = resolve_secret_references(planned, {'MY_TOKEN': 'tok'})
    assert resolved['properties']['secrets'][0]['value'] == 'tok'
    assert planned['properties']['secrets'][0]['value'] == '$env:MY_TOKEN'
    with pytest.raises(SweepError, match='environment variable MY_TOKEN is not set'):
        resolve_secret_references(planned, {})


@pytest.mark.parametrize('first_line, message', [
    ('{"kind": "something-else"}', 'is not a sweep plan file'),
    ('garbage', 'is not a sweep plan file'),
    ('{"kind": "batchai-sweep-plan", "version": 99}', 'is a version 99 plan'),
])
def test_reading_something_that_is_not_a_plan(tmp_path, first_line, message):
    path = tmp_path / 'x.jsonl'
    path.write_text(first_line + '\n', encoding='utf-8')
    with pytest.raises(SweepError, match=message):
        read_plan(str(path))
