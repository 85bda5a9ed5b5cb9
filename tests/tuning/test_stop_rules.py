"""Stop when it is good enough (issue 28, item 4): limits.stopAt and limits.noImprovementJobs end a sweep by its
results, each with its own reason, its running jobs terminated as a timeout does; the rule is a pure function of what
the service reports, so a resumed run ends where an uninterrupted one would. Unit cases on controller.results_end
and the controller, the sweep file's checks, and two runs through the real az."""
import os

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file
from azext_batchai_sweep.core.tuning.controller import (END_PLATEAU, END_REASONS, END_STOP_AT, Controller, Limits,
                                                         results_end)
from azext_batchai_sweep.core.tuning.decision import TIMEOUT
from azext_batchai_sweep.core.tuning.loop import job_state
from azext_batchai_sweep.core.tuning.samplers.grid import GridSampler
from azext_batchai_sweep.core.spec.params import DiscreteParamSpec

from .helpers import trial
from .run_helpers import Watcher, run_args, service_setup, target, write_sweep


def finished(values, goal_state='succeeded'):
    """Jobs that ran to the end, in submission order, each with one final report."""
    return [trial('j{}'.format(i), [value], state=goal_state, index=i) for i, value in enumerate(values)]


@pytest.mark.parametrize('goal, values, stop_at, ends', [
    ('max', [0.5, 0.91], 0.9, True),
    ('max', [0.5, 0.9], 0.9, True),       # reaching it is enough
    ('max', [0.5, 0.89], 0.9, False),
    ('min', [0.5, 0.09], 0.1, True),
    ('min', [0.5, 0.11], 0.1, False),
    ('max', [1e308, -1e308], 1e307, True),  # any finite value a job prints
    ('max', [], 0.9, False),
])
def test_stop_at(goal, values, stop_at, ends):
    reached = results_end(finished(values), Limits(stop_at=stop_at), goal)
    assert (reached is not None) == ends
    if ends:
        assert reached[0] == END_STOP_AT and reached[2]['stopAt'] == stop_at


def test_stop_at_counts_only_jobs_that_ran_to_the_end():
    running = trial('r', [0.99], state='running', index=0)
    stopped = trial('s', [0.99], state='terminated', index=1, stopped_early=True)
    failed = trial('f', [0.99], state='failed', index=2)
    assert results_end([running, stopped, failed], Limits(stop_at=0.9), 'max') is None


@pytest.mark.parametrize('goal, values, n, since', [
    ('max', [0.5, 0.6, 0.4, 0.3], 2, 2),     # the best (0.6), then two jobs without a better one
    ('max', [0.5, 0.6, 0.4, 0.7], 2, None),  # the last one improved: the count starts again
    ('max', [0.5, 0.6, 0.6], 1, 1),          # an equal value is no improvement
    ('min', [0.5, 0.6, 0.7], 2, 2),
    ('min', [0.5, 0.4, 0.7], 2, None),
    ('max', [0.5], 1, None),                 # the first job is the best so far
])
def test_no_improvement_jobs(goal, values, n, since):
    ended = results_end(finished(values), Limits(no_improvement_jobs=n), goal)
    if since is None:
        assert ended is None
    else:
        assert ended[0] == END_PLATEAU and '{} jobs in a row'.format(since) in ended[1]


def test_plateau_follows_submission_order_not_the_order_of_the_list():
    jobs = finished([0.5, 0.9, 0.4, 0.3])
    assert results_end(list(reversed(jobs)), Limits(no_improvement_jobs=2), 'max')[0] == END_PLATEAU


def test_the_controller_ends_the_sweep_and_terminates_its_running_jobs_and_a_resumed_one_agrees():
    sampler = GridSampler([DiscreteParamSpec('X', ['a', 'b', 'c', 'd', 'e'])])
    jobs = finished([0.95]) + [trial('j1', [0.2], state='running', index=1)]
    controller = Controller(sampler, None, Limits(max_concurrent_jobs=2, stop_at=0.9), goal='max')
    actions = controller.step(jobs)
    assert actions.end == END_STOP_AT and actions.submit == []
    assert [(d.job, d.kind, d.rule) for d in actions.terminate] == [('j1', TIMEOUT, 'limits')]
    assert 'limits.stopAt' in actions.terminate[0].text
    # A run killed after its decision and started again: the same end, the decision kept, nothing terminated twice.
    again = Controller(sampler, None, Limits(max_concurrent_jobs=2, stop_at=0.9), goal='max',
                       decisions=controller.decisions)
    resumed = again.step(jobs)
    assert resumed.end == END_STOP_AT and resumed.terminate == [] and resumed.submit == []


def test_the_goal_comes_from_the_sampler_when_not_given():
    sampler = GridSampler([DiscreteParamSpec('X', ['a'])])
    sampler.goal = 'min'
    assert Controller(sampler).goal == 'min'


JOB = ('job: {nodeCount: 1, stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs, customToolkitSettings: '
       '{commandLine: "echo {{X}}"}}\n')
PARAMETERS = 'parameters: [{name: X, type: discrete, values: [1, 2]}]\n'


@pytest.mark.parametrize('limits, adaptive, where, expected', [
    ('{stopAt: 0.9}', True, 'objective', 'limits.stopAt compares'),
    ('{noImprovementJobs: 3}', True, 'objective', 'limits.noImprovementJobs compares'),
    ('{noImprovementJobs: 0}', True, 'limits.noImprovementJobs', ''),
    ('{stopAt: 0.9}', False, 'limits.stopAt', 'only `az batchai sweep run`'),
])
def test_the_sweep_file_checks_the_new_limits(tmp_path, limits, adaptive, where, expected):
    path = tmp_path / 'sweep.yaml'
    path.write_text(PARAMETERS + 'limits: ' + limits + '\n' + JOB)
    with pytest.raises(SpecError) as refused:
        load_sweep_file(str(path), adaptive=adaptive)
    assert where in str(refused.value) and expected in str(refused.value)


def test_the_sweep_file_keeps_the_new_limits(tmp_path):
    path = tmp_path / 'sweep.yaml'
    path.write_text(PARAMETERS + 'objective: {metric: loss, goal: min}\nlimits: {stopAt: 0.1, noImprovementJobs: 4}\n'
                    + JOB)
    assert load_sweep_file(str(path), adaptive=True).limits == {'stopAt': 0.1, 'noImprovementJobs': 4}


@pytest.fixture(scope='module')
def setup(local_service, tmp_path_factory):
    return service_setup(local_service, tmp_path_factory, 'good-enough')


@pytest.mark.az
@pytest.mark.service
def test_run_ends_at_stop_at_and_terminates_the_job_still_running(setup, local_service, batchai_client):
    az, directory, experiment = setup
    # Q=-1 hangs; Q=0.95 reaches 0.95 * (1 - 0.5 ** 3) = 0.83 at its third epoch.
    spec = write_sweep(directory, 'stopat', ['limits: {maxConcurrentJobs: 2, stopAt: 0.8}'], [0.95, -1, 0.5, 0.4],
                       epochs=3, sleep=0.05)
    with Watcher(batchai_client, local_service, experiment, 'stopat') as watcher:
        run = az(*run_args(local_service, experiment, 'stopat', spec))
    assert run.exit_code == 0, run.stderr
    result = run.json()
    assert result['ended'] == END_STOP_AT, result
    assert 'reached limits.stopAt' in run.stderr
    assert_report_says(az, local_service, experiment, 'stopat', directory, END_STOP_AT, 'stopAt 0.8')
    jobs = watcher.jobs()
    assert len(jobs) == 2  # the other two were never submitted
    assert sorted(job_state(job) for job in jobs) in (['succeeded', 'terminated'], ['succeeded', 'terminating'])


@pytest.mark.az
@pytest.mark.service
def test_run_ends_on_a_plateau(setup, local_service, batchai_client):
    az, directory, experiment = setup
    spec = write_sweep(directory, 'plateau', ['limits: {maxConcurrentJobs: 1, noImprovementJobs: 2}'],
                       [0.9, 0.5, 0.4, 0.3, 0.2], epochs=2, sleep=0.01)
    with Watcher(batchai_client, local_service, experiment, 'plateau') as watcher:
        run = az(*run_args(local_service, experiment, 'plateau', spec))
    assert run.exit_code == 0, run.stderr
    result = run.json()
    assert result['ended'] == END_PLATEAU and result['best']['objective'] == pytest.approx(0.9 * 0.75), result
    assert len(watcher.jobs()) == 3
    assert_report_says(az, local_service, experiment, 'plateau', directory, END_PLATEAU, 'noImprovementJobs 2')


def assert_report_says(az, service, experiment, sweep, directory, ended, limit):
    """The report's Run card names why the run ended, with the run's sentence, and the limit that ended it."""
    html_file = os.path.join(directory, sweep + '.html')
    report = az('batchai', 'sweep', 'report', *target(service, experiment, sweep), '--output-file', html_file,
                '--query', 'run', '-o', 'json')
    assert report.exit_code == 0, report.stderr
    assert (report.json()['ended'], report.json()['endedBecause']) == (ended, END_REASONS[ended])
    with open(html_file, encoding='utf-8') as f:
        html = f.read()
    assert '<div class="big ended">{}</div>'.format(ended) in html and 'limits: ' + limit in html
