"""ParameterSweep: grid order and count, laziness, random search reproducibility and uniqueness, job objects."""
import itertools
import json
import tracemalloc

import pytest
from azure.mgmt.batchai import models

from azext_batchai_sweep.core.errors import SpecError, SweepError
from azext_batchai_sweep.core.spec.params import DictParamSpec, DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.spec.sweep import ParameterSweep, SweepJob

TEMPLATE = {'properties': {'nodeCount': 1, 'customToolkitSettings': {'commandLine': 'train --a {{A}} --b {{B}}'}}}


def discrete(name, values):
    return DiscreteParamSpec(parameterName=name, values=values)


def test_grid_is_the_cartesian_product_in_spec_order():
    sweep = ParameterSweep([discrete('A', [1, 2]), discrete('B', ['x', 'y', 'z'])])
    jobs = sweep.generate_jobs(TEMPLATE)
    assert len(jobs) == 6 == sweep.grid_size()
    assert [tuple(job.parameters.values()) for job in jobs] == list(itertools.product([1, 2], ['x', 'y', 'z']))
    assert [list(job.parameters) for job in jobs][0] == ['A', 'B']
    assert [job.index for job in jobs] == list(range(6))


def test_grid_indexing_matches_iteration():
    sweep = ParameterSweep([discrete('A', [1, 2, 3]), discrete('B', ['x', 'y']), discrete('C', [0.5, 1.5])])
    jobs = sweep.generate_jobs(TEMPLATE, job_name_prefix='s')
    listed = list(jobs)
    for i in range(len(jobs)):
        assert (jobs[i].parameters, jobs[i].name) == (listed[i].parameters, listed[i].name)
    assert jobs[-1].parameters == listed[-1].parameters
    with pytest.raises(IndexError):
        jobs[len(jobs)]


def test_iteration_restarts_with_the_same_jobs():
    jobs = ParameterSweep([discrete('A', [1, 2]), discrete('B', ['x'])]).generate_jobs(TEMPLATE, job_name_prefix='s')
    assert [j.body_json() for j in jobs] == [j.body_json() for j in jobs]


def test_a_million_job_grid_is_counted_and_streamed_lazily():
    specs = [discrete(name, list(range(100))) for name in ('A', 'B', 'C')]
    sweep = ParameterSweep(specs)
    tracemalloc.start()
    try:
        jobs = sweep.generate_jobs(TEMPLATE, job_name_prefix='big')
        assert len(jobs) == 10 ** 6
        for job in itertools.islice(jobs, 20000):
            job.body_json()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 20000 kept job objects would need several MB; streaming stays well below.
    assert peak < 2 * 1024 * 1024
    assert jobs[999999].parameters == {'A': 99, 'B': 99, 'C': 99}


def test_job_objects():
    sweep = ParameterSweep([discrete('A', [1]), discrete('B', ['x'])])
    job = next(iter(sweep.generate_jobs(TEMPLATE, job_name_prefix='my-sweep', sweep_name='sw')))
    assert isinstance(job, SweepJob)
    assert job.name.startswith('my-sweep-')
    assert job.parameters == {'A': 1, 'B': 'x'}
    assert job.body['properties']['customToolkitSettings']['commandLine'] == 'train --a 1 --b x'
    assert json.loads(job.body_json()) == job.body
    env = {e['name']: e['value'] for e in job.body['properties']['environmentVariables']}
    assert env['BATCHAI_SWEEP_NAME'] == 'sw' and env['BATCHAI_SWEEP_PARAMS'] == '{"A":1,"B":"x"}'
    assert next(iter(sweep.generate_jobs(TEMPLATE))).name is None


def test_names_are_deterministic_and_distinct():
    def names():
        sweep = ParameterSweep([discrete('A', [1, 2, 3]), discrete('B', ['x', 'y'])])
        return [job.name for job in sweep.generate_jobs(TEMPLATE, job_name_prefix='sweep')]
    assert names() == names()
    assert len(set(names())) == 6


def test_readme_flow_with_a_model():
    parameters = ParameterSweep([NumParamSpec(parameterName='LEARNING_RATE', start=1e-4, end=1e-1, dataType='REAL',
                                              numValues=4, scale='LOG')])
    jcp = models.JobCreateParameters(
        cluster=models.ResourceId(id='cluster-id'), node_count=2,
        tensor_flow_settings=models.TensorFlowSettings(
            python_script_file_path='$AZ_BATCHAI_INPUT_SCRIPT/train.py',
            master_command_line_args='--learning-rate={0}'.format(parameters['LEARNING_RATE'])))
    jobs = parameters.generate_jobs(jcp)
    assert [job.body.tensor_flow_settings.master_command_line_args for job in jobs] == [
        '--learning-rate=0.0001', '--learning-rate=0.001', '--learning-rate=0.01', '--learning-rate=0.1']
    assert all(isinstance(job.body, models.JobCreateParameters) for job in jobs)
    assert {e.name: e.value for e in jobs[0].body.environment_variables}['PARAM_LEARNING_RATE'] == '0.0001'


def test_duplicate_parameter_names_are_an_error():
    with pytest.raises(SpecError, match="'A' is used twice") as exc_info:
        ParameterSweep([discrete('A', [1]), discrete('B', [1]), discrete('A', [2])])
    assert exc_info.value.path == 'parameters[2].parameterName'
    with pytest.raises(SpecError, match='at least one'):
        ParameterSweep([])


def random_sweep():
    return ParameterSweep([
        NumParamSpec(parameterName='LR', start=1e-5, end=1e-1, dataType='REAL', scale='LOG'),
        NumParamSpec(parameterName='UNITS', start=16, end=512, dataType='INTEGER', scale='LINEAR'),
        NumParamSpec(parameterName='DROPOUT', start=0, end=0.5, dataType='REAL', scale='RANDOM_UNIFORM'),
        discrete('OPT', ['adam', 'sgd']),
        DictParamSpec(parameterName='HP', values=[{'K': 1}, {'K': 2}]),
    ])


def test_random_search_is_reproducible_from_its_seed():
    first = random_sweep().generate_jobs_random_search(TEMPLATE_ALL, 20, seed=1234, job_name_prefix='r')
    again = random_sweep().generate_jobs_random_search(TEMPLATE_ALL, 20, seed=1234, job_name_prefix='r')
    other = random_sweep().generate_jobs_random_search(TEMPLATE_ALL, 20, seed=4321, job_name_prefix='r')
    assert first.seed == 1234 and len(first) == 20
    assert [j.body_json() for j in first] == [j.body_json() for j in again]
    assert [j.name for j in first] != [j.name for j in other]
    assert first[5].parameters == list(first)[5].parameters


def test_random_search_without_seed_reports_the_one_it_drew():
    jobs = random_sweep().generate_jobs_random_search(TEMPLATE_ALL, 5)
    assert isinstance(jobs.seed, int)
    replay = random_sweep().generate_jobs_random_search(TEMPLATE_ALL, 5, seed=jobs.seed)
    assert [j.parameters for j in jobs] == [j.parameters for j in replay]


def test_random_search_draws_within_ranges_and_types():
    for job in random_sweep().generate_jobs_random_search(TEMPLATE_ALL, 200, seed=3):
        p = job.parameters
        assert 1e-5 <= p['LR'] <= 1e-1
        assert type(p['UNITS']) is int and 16 <= p['UNITS'] <= 512
        assert 0 <= p['DROPOUT'] <= 0.5
        assert p['OPT'] in ('adam', 'sgd') and p['HP'] in ({'K': 1}, {'K': 2})


TEMPLATE_ALL = {'properties': {'commandLine': '{{LR}} {{UNITS}} {{DROPOUT}} {{OPT}} {{HP.K}}'}}


def test_random_search_never_repeats_a_parameter_set_and_fills_a_small_space():
    sweep = ParameterSweep([discrete('A', [1, 2, 3]), discrete('B', ['x', 'y'])])
    jobs = list(sweep.generate_jobs_random_search(TEMPLATE, 6, seed=9, job_name_prefix='r'))
    assert sorted((j.parameters['A'], j.parameters['B']) for j in jobs) == sorted(
        itertools.product([1, 2, 3], ['x', 'y']))
    assert len({j.name for j in jobs}) == 6


def test_random_search_larger_than_the_space_is_an_error():
    sweep = ParameterSweep([discrete('A', [1, 2, 3]),
                            NumParamSpec(parameterName='B', start=1, end=2, dataType='INTEGER', scale='LINEAR')])
    with pytest.raises(SpecError, match='only 6'):
        sweep.generate_jobs_random_search(TEMPLATE, 7, seed=1)
    with pytest.raises(SpecError, match='at least 1'):
        sweep.generate_jobs_random_search(TEMPLATE, 0, seed=1)


def test_random_search_gives_up_after_bounded_redraws(monkeypatch):
    from azext_batchai_sweep.core.spec import sweep as sweep_module
    assert sweep_module.redraw_limit(None) == sweep_module.MIN_REDRAWS
    assert sweep_module.redraw_limit(10 ** 4) == 10 ** 5
    monkeypatch.setattr(sweep_module, 'redraw_limit', lambda space: 3)
    # LOG-INTEGER over 1..1000 puts most draws on small integers: with 3 draws per job, 900 jobs cannot be found.
    jobs = ParameterSweep([NumParamSpec(parameterName='N', start=1, end=1000, dataType='INTEGER', scale='LOG')]) \
        .generate_jobs_random_search(TEMPLATE_N, 900, seed=5)
    with pytest.raises(SweepError, match=r'seed 5\): no new parameter set in 3 draws'):
        list(jobs)


TEMPLATE_N = {'properties': {'commandLine': '{{N}}'}}
