"""`az batchai sweep run` end to end: the real az, the session's local service, tiny deterministic jobs.

- limits: never more than maxConcurrentJobs queued+running (watched from the service while the run goes on);
- early termination: the jobs bandit stops are terminated on the service and `status` shows the rule and numbers;
- jobTimeoutMinutes: a job that hangs is ended by the service (constraints.maxWallClockTime);
- Hyperband: the right configurations are promoted, as new jobs that resume from their parent's checkpoint;
- crash: the controller is SIGKILLed at three points (once with its journal deleted) and run again: no duplicate,
  nothing lost, limits held, the same Hyperband decisions as the unkilled run.
"""
import json
import os
import re
import uuid

import pytest

from azext_batchai_sweep.core.service.listing import env_of
from azext_batchai_sweep.core.tuning.loop import job_state
from tests.fixtures_az import AZ, base_env, service_az, service_env

from .run_helpers import Watcher, hyperband_decisions, kill_and_resume, steps_in_log, write_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

HYPERBAND = ['sampling: {type: hyperband, resource: EPOCHS, minResource: 1, maxResource: 9, eta: 3, seed: 4}',
             'limits: {maxConcurrentJobs: 3}']
QUALITIES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.35, 0.45, 0.55]


@pytest.fixture(scope='module')
def setup(local_service, tmp_path_factory):
    directory = str(tmp_path_factory.mktemp('sweep-run'))
    az = service_az(local_service, directory)
    experiment = 'run-' + uuid.uuid4().hex[:8]
    return az, directory, az.config_dir, experiment


def args(service, experiment, sweep, spec):
    return ['batchai', 'sweep', 'run', '-g', service.resource_group, '-w', service.workspace, '-e', experiment,
            '-n', sweep, '--spec', spec, '-c', service.cluster, '--poll-interval', '0.2', '-o', 'json']


def test_bandit_within_limits_and_job_timeout(setup, local_service, batchai_client):
    az, directory, _, experiment = setup
    spec = write_sweep(directory, 'bandit', [
        'limits: {maxConcurrentJobs: 3, jobTimeoutMinutes: 0.1}',
        'earlyTermination: {policy: bandit, slackFactor: 0.2, delayEvaluation: 2}'],
        # The good configurations first: they have all reported epoch 2 before a bad one runs, so "the best so far at
        # epoch 2" is 0.9's 0.675 whatever the timing.
        [0.9, 0.8, 0.85, 0.3, 0.2, 0.25, -1], epochs=6, sleep=0.15)
    with Watcher(batchai_client, local_service, experiment, 'bandit') as watcher:
        run = az(*args(local_service, experiment, 'bandit', spec))
    assert run.exit_code == 0, run.stderr
    assert 1 <= watcher.most <= 3 and watcher.listings > 10
    result = run.json()
    assert result['ended'] == 'exhausted' and result['jobs'] == 7
    assert result['best']['parameters'] == {'Q': 0.9} and result['best']['step'] == 6
    assert result['decisions']['stopped'] == 3 and result['decisions']['ran to the end'] == 3
    # 3 ran 6 epochs, 3 were stopped after 2 (and ran what their logs show: issue 42, item 6), the hung one
    # reported nothing; 7 full runs are 42 epochs
    stopped = [job.name for job in watcher.jobs() if env_of(job)['PARAM_Q'] in ('0.3', '0.2', '0.25')]
    ran = [steps_in_log(az, local_service, experiment, 'bandit', name) for name in stopped]
    assert all(2 <= steps < 6 for steps in ran), ran
    assert (result['compute']['jobSteps'], result['compute']['jobStepsFull']) == (3 * 6 + sum(ran), 7 * 6)
    assert 'stopped at epoch 2 by bandit: 0.15 < 0.675 / 1.2' in run.stderr

    jobs = {env_of(job)['PARAM_Q']: job for job in watcher.jobs()}
    for q in ('0.3', '0.2', '0.25'):
        errors = [e.code for e in jobs[q].execution_info.errors]
        assert errors == ['JobTerminated'], (q, errors)
    hung = jobs['-1']
    assert hung.constraints.max_wall_clock_time.total_seconds() == 6
    assert [e.code for e in hung.execution_info.errors] == ['MaxWallClockTimeExceeded']

    status = az('batchai', 'sweep', 'status', '-g', local_service.resource_group, '-w', local_service.workspace,
                '-e', experiment, '-n', 'bandit', '-o', 'json')
    rows = {row['parameters']['Q']: row for row in status.json()['jobs']}
    assert rows[0.2]['tuning']['reason'] == 'stopped at epoch 2 by bandit: 0.15 < 0.675 / 1.2'
    assert rows[0.2]['tuning']['rule'] == 'bandit' and rows[0.9]['tuning']['decision'] == 'ran to the end'
    assert rows[0.9]['tuning']['best'] == pytest.approx(0.9 * (1 - 0.5 ** 6))
    table = az('batchai', 'sweep', 'status', '-g', local_service.resource_group, '-w', local_service.workspace,
               '-e', experiment, '-n', 'bandit', '-o', 'table')
    # The table keeps within 100 columns by cutting the decision's end (-o json above has it whole).
    assert 'stopped at epoch 2' in table.stdout and max(map(len, table.stdout.splitlines())) <= 100, table.stdout
    # metrics takes its metric and goal from the run's objective
    best = az('batchai', 'sweep', 'metrics', '-g', local_service.resource_group, '-w', local_service.workspace,
              '-e', experiment, '-n', 'bandit', '--top', '1', '--query', '[0].parameters.Q')
    assert best.exit_code == 0, best.stderr
    assert best.json() == 0.9


@pytest.fixture(scope='module')
def hyperband_reference(setup, local_service, batchai_client):
    """An unkilled Hyperband run (22 jobs, 3 at a time)."""
    az, directory, _, experiment = setup
    spec = write_sweep(directory, 'hb', HYPERBAND, QUALITIES)
    with Watcher(batchai_client, local_service, experiment, 'hb') as watcher:
        run = az(*args(local_service, experiment, 'hb', spec))
    assert run.exit_code == 0, run.stderr
    return run.json(), watcher.jobs(), watcher.most, run.stderr


def test_hyperband_promotes_the_best_as_children_of_their_parents(hyperband_reference, setup, local_service):
    result, jobs, most, _ = hyperband_reference
    assert most <= 3
    assert result['jobs'] == 22 and result['ended'] == 'exhausted'
    assert result['decisions'] == {'promoted': 5, 'not promoted': 12, 'ran to the end': 5}
    assert result['best']['parameters'] == {'Q': 0.9} and result['best']['resource'] == 9
    by_name = {job.name: job for job in jobs}
    env = {job.name: env_of(job) for job in jobs}
    rungs = {}
    for name, e in env.items():
        rungs.setdefault((e['BATCHAI_SWEEP_BRACKET'], e['BATCHAI_SWEEP_RUNG']), []).append(name)
    # bracket 2 (EPOCHS 1, 3, 9): 9 configurations, the best 3 go on, then the best 1
    assert [len(rungs[('2', r)]) for r in '012'] == [9, 3, 1]
    best3 = sorted((float(env[n]['PARAM_Q']) for n in rungs[('2', '0')]), reverse=True)[:3]
    assert sorted(float(env[n]['PARAM_Q']) for n in rungs[('2', '1')]) == sorted(best3)
    az, _, _, experiment = setup
    for child in rungs[('2', '1')] + rungs[('2', '2')]:
        parent = env[child]['BATCHAI_SWEEP_PARENT']
        assert env[parent]['PARAM_Q'] == env[child]['PARAM_Q'] and parent in by_name
        assert env[child]['BATCHAI_SWEEP_PARENT_OUTPUT_MODEL'].endswith(
            by_name[parent].job_output_directory_path_segment + '/outputs')
    child = rungs[('2', '2')][0]  # the 9-epoch job resumed after epoch 3 of its parent: it printed epochs 4 to 9
    parent = env[child]['BATCHAI_SWEEP_PARENT']
    tail = az('batchai', 'sweep', 'status', '-g', local_service.resource_group, '-w', local_service.workspace,
              '-e', experiment, '-n', 'hb', '--job', child, '--tail', '20', '-o', 'tsv')
    assert tail.stdout.splitlines()[0] == 'resumed from epoch 3 of {}'.format(parent)
    assert tail.stdout.splitlines()[1].startswith('epoch=4 ')


def test_hyperband_prints_every_promotion_and_every_job_it_does_not_promote(hyperband_reference):
    """Each of Hyperband's decisions is on stderr once, as a policy's stop is ("NAME: <decision with numbers>")."""
    result, jobs, _, stderr = hyperband_reference
    lines = [line for line in stderr.splitlines() if 'by hyperband' in line]
    promoted = [line for line in lines if ': promoted by hyperband to EPOCHS ' in line]
    dropped = [line for line in lines if ': not promoted by hyperband: rank ' in line]
    assert (len(promoted), len(dropped)) == (result['decisions']['promoted'], result['decisions']['not promoted'])
    named = [line.split(': ')[1] for line in lines]  # "WARNING: NAME: decision"
    assert len(set(named)) == len(named) and set(named) <= {job.name for job in jobs}  # each job once


def test_asha_prints_its_promotions_and_its_stops(setup, local_service):
    az, directory, _, experiment = setup
    spec = write_sweep(directory, 'asha', ['limits: {maxConcurrentJobs: 2}',
                                           'earlyTermination: {policy: asha, minResource: 1, maxResource: 9, eta: 3}'],
                       [0.9, 0.8, 0.2, 0.1, 0.85], epochs=4, sleep=0.1)
    run = az(*args(local_service, experiment, 'asha', spec))
    assert run.exit_code == 0, run.stderr
    # Q 0.9 reports 0.45 at epoch 1: the best there, whatever else had reported by then
    assert re.search(r': promoted past rung 0 \(epoch 1\) by asha: 0\.45 is in the top 1 of [12] \(cutoff 0\.45\)',
                     run.stderr), run.stderr
    stops = [line for line in run.stderr.splitlines() if ' by asha: ' in line and 'stopped at epoch' in line]
    assert len(stops) == run.json()['decisions'].get('stopped', 0) >= 1


def test_killed_controller_resumes_with_the_same_decisions(hyperband_reference, setup, local_service,
                                                           batchai_client):
    reference_result, reference_jobs, _, _ = hyperband_reference
    az, directory, config, experiment = setup
    spec = write_sweep(directory, 'hbkill', HYPERBAND, QUALITIES)
    command = [AZ] + args(local_service, experiment, 'hbkill', spec)
    env = base_env(config, service_env(local_service))
    with Watcher(batchai_client, local_service, experiment, 'hbkill') as watcher:
        kills = kill_and_resume(command, env, directory, watcher, (1, 9, 16), config, 'hbkill', delete_journal_at=(9,))
        final = az(*args(local_service, experiment, 'hbkill', spec))
    assert kills == 3  # each kill hit a running controller, not one that had already finished
    assert final.exit_code == 0, final.stderr
    jobs = watcher.jobs()
    assert watcher.most <= 3
    assert len(jobs) == len({job.name for job in jobs}) == 22  # nothing duplicated, nothing lost
    assert hyperband_decisions(jobs) == hyperband_decisions(reference_jobs)
    result = final.json()
    for key in ('jobs', 'decisions', 'ended', 'counts'):
        assert result[key] == reference_result[key], key
    assert result['best']['parameters'] == reference_result['best']['parameters']


def test_sweep_stop_ends_a_run(setup, local_service, batchai_client):
    """`az batchai sweep stop` while `run` goes on: the run submits nothing more and ends, saying why."""
    import subprocess
    import time
    az, directory, config, experiment = setup
    spec = write_sweep(directory, 'stopped', ['limits: {maxConcurrentJobs: 2}'], [0.1, 0.2, 0.3, 0.4, 0.5],
                       epochs=40, sleep=0.25)
    proc = subprocess.Popen([AZ] + args(local_service, experiment, 'stopped', spec),
                            env=base_env(config, service_env(local_service)), cwd=directory,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watcher = Watcher(batchai_client, local_service, experiment, 'stopped')
    deadline = time.monotonic() + 60
    while sum(1 for job in watcher.jobs() if job_state(job) == 'running') < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    stop = az('batchai', 'sweep', 'stop', '-g', local_service.resource_group, '-w', local_service.workspace,
              '-e', experiment, '-n', 'stopped', '--yes')
    assert stop.exit_code == 0, stop.stderr
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, err  # jobs failed or stopped (docs/pipelines.md), the result still on stdout
    result = json.loads(out)
    assert result['ended'] == 'stopped' and result['jobs'] == 2, result
    assert 'terminated by someone else' in err
    assert len(watcher.jobs()) == 2


def test_random_run_without_seed_resumes_with_the_seed_its_jobs_carry(setup, local_service, batchai_client):
    """maxTotalJobs ends a run; running it again with a larger budget goes on with the seed the jobs recorded, so the
    sweep is the random search `create` would plan with that seed."""
    from azext_batchai_sweep.core.spec.params import DiscreteParamSpec
    from azext_batchai_sweep.core.spec.sweep import ParameterSweep
    az, directory, _, experiment = setup
    spec = write_sweep(directory, 'rand', ['sampling: {type: random, count: 4}'], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
                       epochs=2, sleep=0.01)
    first = az(*args(local_service, experiment, 'rand', spec), '--max-total-jobs', '2')
    assert first.exit_code == 0, first.stderr
    assert first.json()['ended'] == 'maxTotalJobs' and first.json()['jobs'] == 2
    assert 'Sweep seed: ' in first.stderr
    second = az(*args(local_service, experiment, 'rand', spec))
    assert second.exit_code == 0, second.stderr
    assert second.json()['ended'] == 'exhausted' and second.json()['jobs'] == 4
    jobs = Watcher(batchai_client, local_service, experiment, 'rand').jobs()
    seeds = {env_of(job)['BATCHAI_SWEEP_SEED'] for job in jobs}
    assert len(seeds) == 1
    drawn = ParameterSweep([DiscreteParamSpec(parameterName='Q', values=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6])]) \
        .generate_jobs_random_search({'properties': {}}, 4, seed=int(seeds.pop()), job_name_prefix='rand',
                                     sweep_name='rand')
    assert {job.name for job in drawn} == {job.name for job in jobs}
    order = sorted(jobs, key=lambda job: int(env_of(job)['BATCHAI_SWEEP_INDEX']))
    assert [float(env_of(job)['PARAM_Q']) for job in order] == [job.parameters['Q'] for job in drawn]


def test_status_rebuilds_the_decisions_from_the_service_without_the_journal(hyperband_reference, setup,
                                                                            local_service):
    """status on another machine (no journal): Hyperband's decisions, objectives and steps come from the jobs'
    environment and logs, the same as the journal's."""
    import glob
    import shutil
    az, directory, config, experiment = setup
    status_args = ['batchai', 'sweep', 'status', '-g', local_service.resource_group, '-w', local_service.workspace,
                   '-e', experiment, '-n', 'hb', '-o', 'json']
    with_journal = az(*status_args)
    assert with_journal.exit_code == 0, with_journal.stderr
    journal = glob.glob(os.path.join(config, 'batchai-sweep', 'journals', 'hb-*.run.json'))[0]
    shutil.move(journal, journal + '.away')
    try:
        without = az(*status_args)
        metrics = az('batchai', 'sweep', 'metrics', *status_args[3:11], '--top', '1', '--query', '[0].state')
    finally:
        shutil.move(journal + '.away', journal)
    assert without.exit_code == 0, without.stderr
    rows = {row['name']: row['tuning'] for row in with_journal.json()['jobs']}
    rebuilt = {row['name']: row['tuning'] for row in without.json()['jobs']}
    assert rebuilt == rows and len(rows) == 22
    assert metrics.exit_code == 0 and metrics.json() == 'succeeded', metrics.stderr
