"""Every objective and constraint metric is checked like the first (issue 41, items 2 and 10), through the real az and
the session's local service, with jobs (data/tradeoff.py) that print `val_accuracy`, `latency_ms` and `memory_gb`:

- a second objective or a constraint the jobs do not print (`lat`, `mem`) is said with the names they do print, the
  field named; --strict stops the sweep (exit 6);
- without --strict, a run whose front is empty because no job reported every objective exits 4, never 0;
- a run whose every job broke a constraint says so, naming the constraint (not "no value of the objective").
"""
import pytest

from azext_batchai_sweep._exit_codes import BAD_INPUT, JOBS_FAILED

from .run_helpers import run_args, service_setup, write_tradeoff_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

OBJECTIVE = 'objective: {metric: val_accuracy, goal: max, step: epoch}'


@pytest.fixture(scope='module')
def setup(local_service, tmp_path_factory):
    return service_setup(local_service, tmp_path_factory, 'everymetric')


def _run(setup, service, name, sections, *extra):
    az, directory, experiment = setup
    spec = write_tradeoff_sweep(directory, name, [*sections, 'limits: {maxConcurrentJobs: 3}'], [0.2, 0.5],
                                k_values=(1,))
    return az(*run_args(service, experiment, name, spec, *extra))


@pytest.mark.parametrize('name, sections, said', [
    ('lat', ['objectives: [{metric: val_accuracy, goal: max}, {metric: lat, goal: min}]'],
     'lat: no job has reported it (objectives[1].metric); seen: '),
    ('mem', [OBJECTIVE, 'constraints: [{metric: mem, max: 7}]'],
     'mem: no job has reported it (constraints[0].metric); seen: '),
    ('both', ['objectives: [{metric: val_accuracy, goal: max}, {metric: latency_ms, goal: min}]',
              'constraints: [{metric: memory_gb, max: 7}, {metric: gpu_mem, max: 3}]'],
     'gpu_mem: no job has reported it (constraints[1].metric); seen: '),
])
def test_strict_stops_at_a_misnamed_other_metric_with_exit_6(setup, local_service, name, sections, said):
    run = _run(setup, local_service, 'strict' + name, sections, '--strict')
    assert run.exit_code == BAD_INPUT, run.stderr
    assert said in run.stderr and 'latency_ms' in run.stderr.split(said, 1)[1].split('\n', 1)[0]
    assert 'stopping the sweep (strict)' in run.stderr and 'Traceback' not in run.stderr
    assert run.json()['ended'] == 'objectiveNotReported'


def test_without_strict_an_empty_front_is_no_success(setup, local_service):
    run = _run(setup, local_service, 'loose', [
        'objectives: [{metric: val_accuracy, goal: max}, {metric: lat, goal: min}]'])
    assert run.exit_code == JOBS_FAILED, run.stderr
    assert run.json()['pareto']['front'] == []
    assert 'No job of sweep loose ran to the end with a value of every objective (val_accuracy, lat)' in run.stderr
    assert 'lat: no job has reported it (objectives[1].metric); seen: ' in run.stderr
    assert 'run with --strict to stop at once' in run.stderr


@pytest.mark.parametrize('name, constraint, named', [
    ('allmem', '{metric: memory_gb, max: 1}', 'memory_gb <= 1'),
    ('alllat', '{metric: latency_ms, min: 90}', 'latency_ms >= 90'),
])
def test_every_job_infeasible_says_they_broke_the_constraint(setup, local_service, name, constraint, named):
    run = _run(setup, local_service, name, [OBJECTIVE, 'constraints: [{}]'.format(constraint)])
    assert run.exit_code == JOBS_FAILED, run.stderr
    assert 'met the constraints: all 2 job(s) that ran to the end with a value broke {}'.format(named) in run.stderr
    assert 'with a value of the objective' not in run.stderr


def test_the_docs_say_the_exit_code_strict_ends_with():
    import os
    import re
    path = os.path.join(os.path.dirname(__file__), '..', '..', 'docs', 'sweep-run.md')
    with open(path, encoding='utf-8') as f:
        text = ' '.join(f.read().split())
    said = re.findall(r'`objectiveNotReported` and the command exits (\d+)', text)
    assert said == [str(BAD_INPUT)]
