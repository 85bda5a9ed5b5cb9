"""A misnamed objective through the real az (issue 27, item 1): `run` says so at once, naming the names the jobs do
print; --strict (or the sweep file's objective.strict) stops the sweep there; `metrics` and `report` with a --metric
that matches nothing exit non-zero naming the names there; the "N of M jobs" warning counts every job."""
import pytest

from azext_batchai_sweep._exit_codes import BAD_INPUT
from azext_batchai_sweep.core.tuning.loop import job_state

from .run_helpers import Watcher, run_args, service_setup, target, write_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

TYPO = '{metric: val_acc, goal: max, step: epoch}'
SEEN = 'val_acc: no job has reported it; seen: epoch, loss, val_accuracy'


@pytest.fixture(scope='module')
def setup(local_service, tmp_path_factory):
    return service_setup(local_service, tmp_path_factory, 'typo')


@pytest.mark.parametrize('switch', ['--strict', 'objective.strict'])
def test_strict_stops_the_sweep_at_the_first_output_without_the_objective(setup, local_service, batchai_client,
                                                                            switch):
    az, directory, experiment = setup
    sweep = 'strict' + ('flag' if switch == '--strict' else 'file')
    objective = TYPO if switch == '--strict' else TYPO[:-1] + ', strict: true}'
    spec = write_sweep(directory, sweep, ['limits: {maxConcurrentJobs: 2}'], [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
                       epochs=40, sleep=0.1, objective=objective)
    with Watcher(batchai_client, local_service, experiment, sweep) as watcher:
        run = az(*run_args(local_service, experiment, sweep, spec, *(['--strict'] if switch == '--strict' else [])))
    assert run.exit_code == BAD_INPUT, run.stderr  # the sweep file's objective (docs/pipelines.md#exit-codes)
    assert SEEN in run.stderr and 'stopping the sweep (strict)' in run.stderr
    assert 'objective.metric' in run.stderr and 'az batchai sweep run -h' in run.stderr
    result = run.json()
    assert result['ended'] == 'objectiveNotReported' and SEEN in result['objectiveNotReported']
    jobs = watcher.jobs()
    # Stopped at once: only the first two jobs were ever submitted, and neither ran its 40 epochs (4 s).
    assert len(jobs) == 2
    assert {job_state(job) for job in jobs} <= {'terminated', 'terminating'}


def test_without_strict_the_run_warns_at_once_then_fails_naming_the_names(setup, local_service):
    az, directory, experiment = setup
    spec = write_sweep(directory, 'warn', ['limits: {maxConcurrentJobs: 3}'], [0.9, 0.8, 0.7], epochs=3,
                       sleep=0.05, objective=TYPO)
    run = az(*run_args(local_service, experiment, 'warn', spec))
    assert run.exit_code != 0
    assert run.stderr.count(SEEN) == 1, run.stderr
    assert 'run with --strict to stop at once' in run.stderr


def test_a_regex_that_matches_nothing_is_said_with_the_lines_read(setup, local_service):
    az, directory, experiment = setup
    spec = write_sweep(directory, 'regex', [], [0.9], epochs=3, sleep=0.01,
                       objective='{regex: "val_acc=(?P<value>[0-9.]+)", goal: max}')
    run = az(*run_args(local_service, experiment, 'regex', spec, '--strict'))
    assert run.exit_code == BAD_INPUT, run.stderr  # the sweep file's objective (docs/pipelines.md#exit-codes)
    assert "objective regex 'val_acc=(?P<value>[0-9.]+)' matches no line: no job has reported it (3 line(s) " \
        in run.stderr


@pytest.fixture(scope='module')
def finished_sweep(setup, local_service):
    """A sweep of 5 jobs that ran to the end with the right objective."""
    az, directory, experiment = setup
    spec = write_sweep(directory, 'done', ['limits: {maxConcurrentJobs: 5}'], [0.9, 0.8, 0.7, 0.6, 0.5], epochs=2,
                       sleep=0.01)
    run = az(*run_args(local_service, experiment, 'done', spec))
    assert run.exit_code == 0, run.stderr
    return az, experiment


@pytest.mark.parametrize('command', ['metrics', 'report'])
def test_metrics_and_report_with_a_metric_that_matches_nothing_fail_naming_the_names(finished_sweep, local_service,
                                                                                   command, tmp_path):
    az, experiment = finished_sweep
    extra = ['--output-file', str(tmp_path / 'r.html')] if command == 'report' else []
    result = az('batchai', 'sweep', command, *target(local_service, experiment, 'done'), '--metric', 'WRONG',
                *extra)
    assert result.exit_code == 3, result.stderr
    assert 'Metric WRONG matches nothing in the stdout.txt of the 5 finished job(s) of sweep done; names there: ' \
        'epoch, loss, val_accuracy' in result.stderr, result.stderr
    assert not (tmp_path / 'r.html').exists(), 'no empty report'


def test_metrics_counts_the_jobs_without_a_value_among_all_of_them_not_the_top(finished_sweep, local_service):
    az, experiment = finished_sweep
    # `loss` is printed by every job; a regex that only the 0.9 and 0.8 jobs' loss lines match (1 - Q: 0.1000, 0.2000)
    result = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'done'),
                '--regex', r'loss=(0\.[12]000)', '--goal', 'min', '--top', '2')
    assert result.exit_code == 0, result.stderr
    assert [row['metric'] for row in result.json()] == [0.1, 0.2]
    assert '3 of 5 job(s) have no value for the metric' in result.stderr


def test_table_headers_keep_the_metric_and_parameter_names_as_written(finished_sweep, local_service):
    az, experiment = finished_sweep
    table = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'done'), '--metric', 'val_accuracy',
               '--goal', 'max', '-o', 'table')
    assert table.exit_code == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == ['Name', 'State', 'val_accuracy', 'Q']
