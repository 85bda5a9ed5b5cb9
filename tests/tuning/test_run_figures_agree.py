"""One answer for a sweep's figures (issue 27, item 3): `run`'s result, `status`, `metrics` and `report` show the same
best job, counts by state and by decision, job-steps used and saved, through a kill of the controller, stops,
a resubmit of a stopped job (which then runs to its end: no longer stopped, its steps counted once, from its new
attempt) and Hyperband's promotions. The real az against the session's local service."""
import pytest

from azext_batchai_sweep.core.tuning.result import describe_figures
from tests.fixtures_az import AZ, base_env

from .run_helpers import Watcher, kill_and_resume, run_args, service_setup, target, write_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

FIGURES = ('goal', 'metric', 'best', 'jobs', 'counts', 'decisions', 'compute')


@pytest.fixture(scope='module')
def setup(local_service, tmp_path_factory):
    return service_setup(local_service, tmp_path_factory, 'figures')


def figures_of(result):
    return {key: result[key] for key in FIGURES}


def assert_four_agree(az, service, experiment, sweep, result, tmp_path):
    expected = figures_of(result)
    status = az('batchai', 'sweep', 'status', *target(service, experiment, sweep), '-o', 'json')
    assert status.exit_code == 0, status.stderr
    assert status.json()['figures'] == expected
    line = 'Sweep {}: {}'.format(sweep, describe_figures(expected))
    assert line in status.stderr
    metrics = az('batchai', 'sweep', 'metrics', *target(service, experiment, sweep), '-o', 'json')
    assert metrics.exit_code == 0, metrics.stderr
    assert line in metrics.stderr
    best = max((row for row in metrics.json() if row['state'] == 'succeeded'), key=lambda row: row['metric'])
    assert best['name'] == expected['best']['name']
    report = az('batchai', 'sweep', 'report', *target(service, experiment, sweep), '--output-file',
                str(tmp_path / (sweep + '.html')), '--query', 'summary', '-o', 'json')
    assert report.exit_code == 0, report.stderr
    summary = report.json()
    assert line in report.stderr
    assert summary['figures'] == expected and summary['best']['name'] == expected['best']['name']
    assert (summary['compute']['jobSteps'], summary['compute']['savedJobSteps']) == (
        expected['compute']['jobSteps'], expected['compute']['jobStepsSaved'])
    html = (tmp_path / (sweep + '.html')).read_text()
    assert 'ran as planned' not in html


def test_stops_a_kill_and_a_resubmit_give_one_answer(setup, local_service, batchai_client, tmp_path):
    az, directory, experiment = setup
    spec = write_sweep(directory, 'agree', [
        'limits: {maxConcurrentJobs: 3}', 'earlyTermination: {policy: bandit, slackFactor: 0.2, delayEvaluation: 2}'],
        [0.9, 0.8, 0.85, 0.3, 0.2, 0.25], epochs=6, sleep=0.15)
    command = [AZ] + run_args(local_service, experiment, 'agree', spec)
    with Watcher(batchai_client, local_service, experiment, 'agree') as watcher:
        # Killed once the first 2 jobs are on the service (before the poor ones run), then run again.
        kill_and_resume(command, base_env(az.config_dir, az.env), directory, watcher, [2], az.config_dir, 'agree')
        run = az(*run_args(local_service, experiment, 'agree', spec))
    assert run.exit_code == 0, run.stderr
    first = run.json()
    stops = first['decisions']['stopped']
    assert stops >= 1 and first['decisions']['ran to the end'] == 6 - stops
    # Steps as the logs show them (issue 42, item 6): a stopped job's 2 judged epochs and any it printed after the
    # decision, before it was gone.
    shown = {row['name']: row['tuning']['step'] for row in az('batchai', 'sweep', 'status', *target(
        local_service, experiment, 'agree'), '-o', 'json').json()['jobs'] if row['state'] == 'terminated'}
    ran = {name: sum(1 for line in az('batchai', 'sweep', 'status', *target(local_service, experiment, 'agree'),
                                      '--job', name, '--tail', '50', '-o', 'json').json() if line.startswith('epoch='))
           for name in shown}
    assert len(ran) == stops and all(2 <= steps <= 6 for steps in ran.values()), ran
    assert (first['compute']['jobSteps'], first['compute']['jobStepsFull']) == (
        (6 - stops) * 6 + sum(ran.values()), 6 * 6)
    assert_four_agree(az, local_service, experiment, 'agree', first, tmp_path)

    # One stopped job resubmitted: it runs its 6 epochs to the end as a new attempt under the same name.
    stopped = next(row['name'] for row in az('batchai', 'sweep', 'status', *target(local_service, experiment, 'agree'),
                                             '-o', 'json').json()['jobs'] if row['state'] == 'terminated')
    again = az('batchai', 'sweep', 'resubmit', *target(local_service, experiment, 'agree'), '--jobs', stopped,
               '--wait', '--interval', '0.5')
    assert again.exit_code == 0, again.stderr
    status = az('batchai', 'sweep', 'status', *target(local_service, experiment, 'agree'), '-o', 'json').json()
    figures = status['figures']
    assert figures['decisions'] == dict({'ran to the end': 7 - stops}, **({'stopped': stops - 1} if stops > 1 else {}))
    # the new attempt's 6 steps; the old attempt's are not counted
    assert figures['compute']['jobSteps'] == first['compute']['jobSteps'] + 6 - ran[stopped]
    row = next(row for row in status['jobs'] if row['name'] == stopped)
    assert row['tuning']['decision'] == 'ran to the end' and row['tuning']['step'] == 6
    # The run started again sees the same: the new attempt is no longer stopped, its log read from its start.
    rerun = az(*run_args(local_service, experiment, 'agree', spec))
    assert rerun.exit_code == 0, rerun.stderr
    second = rerun.json()
    assert figures_of(second) == figures
    assert_four_agree(az, local_service, experiment, 'agree', second, tmp_path)


def test_hyperband_promotions_give_one_answer(setup, local_service, tmp_path):
    az, directory, experiment = setup
    spec = write_sweep(directory, 'hbagree', [
        'sampling: {type: hyperband, resource: EPOCHS, minResource: 1, maxResource: 3, eta: 3, seed: 4}',
        'limits: {maxConcurrentJobs: 3}'], [0.1, 0.5, 0.9, 0.3, 0.7])
    run = az(*run_args(local_service, experiment, 'hbagree', spec))
    assert run.exit_code == 0, run.stderr
    result = run.json()
    assert result['decisions'].get('promoted', 0) >= 1
    assert_four_agree(az, local_service, experiment, 'hbagree', result, tmp_path)


def test_a_bayesian_sweep_gives_one_answer_and_is_not_said_to_have_run_as_planned(setup, local_service, tmp_path):
    az, directory, experiment = setup
    spec = write_sweep(directory, 'tpe', ['sampling: {type: bayesian, count: 4, seed: 3, startupJobs: 2}',
                                          'limits: {maxConcurrentJobs: 2}'], [0.1, 0.5, 0.9, 0.3, 0.7], epochs=2,
                       sleep=0.01)
    run = az(*run_args(local_service, experiment, 'tpe', spec))
    assert run.exit_code == 0, run.stderr
    assert_four_agree(az, local_service, experiment, 'tpe', run.json(), tmp_path)
    assert 'No job was stopped early or promoted: each ran to its end.' in (tmp_path / 'tpe.html').read_text()
