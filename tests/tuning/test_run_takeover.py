"""`sweep run` checks before it starts (issue 42, items 3 and 8), through the real az on the session's local service,
as a user meets it: after a sweep `submit` made, or after a run, the same `-n` with another sweep file.

- A run never takes over another sweep: jobs `create`/`submit` made, or a run's jobs whose objective (a misnamed
  one fixed), sampling, early termination or job template differ, are refused before any request that changes
  anything (exit 6), naming the sweep file, what differs and both ways out (another -n, delete); the jobs stay as
  they were, so `status` and `metrics` still agree. The same sweep file again resumes (nothing refused).
- A misspelled cluster: exit 3 with the message `create` and `submit` give, no job, no "Resume the run with".
- Every job failed (a wrong script path, a jobTimeoutMinutes too small): the end says so with the first failure's
  exit code and the service's reason, not "check the objective".
"""
import pytest

from azext_batchai_sweep._exit_codes import BAD_INPUT

from .run_helpers import Watcher, run_args, service_setup, target, write_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

NOT_FOUND = 3


@pytest.fixture(scope='module')
def setup(local_service, tmp_path_factory):
    return service_setup(local_service, tmp_path_factory, 'takeover')


def _refused(run, sweep, spec, *named):
    assert run.exit_code == BAD_INPUT, run.stderr
    assert 'Sweep {}'.format(sweep) in run.stderr and spec in run.stderr, run.stderr
    assert 'A run never takes over another sweep' in run.stderr
    assert '-n {}-2'.format(sweep) in run.stderr and 'az batchai sweep delete' in run.stderr
    assert 'Resume the run with' not in run.stderr
    for words in named:
        assert words in run.stderr, (words, run.stderr)


def test_run_refuses_a_sweep_that_submit_made(setup, local_service, batchai_client):
    az, directory, experiment = setup
    grid = write_sweep(directory, 'grid', [], [0.9, 0.8], epochs=2, sleep=0.01)
    submitted = az('batchai', 'sweep', 'submit', *target(local_service, experiment, 'moons'), '--spec', grid,
                   '-c', local_service.cluster, '--wait', '-o', 'json')
    assert submitted.exit_code == 0, submitted.stderr
    adaptive = write_sweep(directory, 'adaptive', ['earlyTermination: {policy: bandit, slackFactor: 0.15}'],
                           [0.9, 0.8, 0.7], epochs=2, sleep=0.01)
    watcher = Watcher(batchai_client, local_service, experiment, 'moons')
    before = sorted(job.name for job in watcher.jobs())
    run = az(*run_args(local_service, experiment, 'moons', adaptive))
    _refused(run, 'moons', adaptive, 'made by "az batchai sweep create/submit", not by a run', '2 of its 2 job(s)',
             'planned in moons.plan.jsonl')
    assert sorted(job.name for job in watcher.jobs()) == before  # nothing submitted, nothing taken over


@pytest.fixture(scope='module')
def ran(setup, local_service):
    """A sweep that a run ran to the end."""
    az, directory, experiment = setup
    spec = write_sweep(directory, 'first', ['limits: {maxConcurrentJobs: 3}'], [0.9, 0.8, 0.7], epochs=3,
                       sleep=0.01)
    run = az(*run_args(local_service, experiment, 'ran', spec))
    assert run.exit_code == 0, run.stderr
    return az, directory, experiment, spec, run.json()


def test_the_same_sweep_file_again_resumes(ran, local_service):
    az, _, experiment, spec, first = ran
    again = az(*run_args(local_service, experiment, 'ran', spec))
    assert again.exit_code == 0, again.stderr
    assert again.json()['best']['name'] == first['best']['name']


@pytest.mark.parametrize('change, named', [
    ('objective', 'objective: {"goal": "max", "metric": "val_accuracy", "step": "epoch"} -> '
                  '{"goal": "min", "metric": "loss", "step": "epoch"}'),
    ('earlyTermination', 'earlyTermination: null -> {"delayEvaluation": 1, "policy": "median"}'),
    ('sampling', 'sampling: {"seed": null, "type": "grid"} -> {"seed": 3, "type": "random"}'),
    ('template', 'the job template'),
])
def test_run_refuses_a_run_of_another_sweep_file_under_the_same_name(ran, local_service, change, named):
    az, directory, experiment, _, first = ran
    sections, objective, epochs = ['limits: {maxConcurrentJobs: 3}'], None, 3
    if change == 'objective':
        objective = '{metric: loss, goal: min, step: epoch}'
    elif change == 'earlyTermination':
        sections.append('earlyTermination: {policy: median, delayEvaluation: 1}')
    elif change == 'sampling':
        sections.append('sampling: {type: random, count: 3, seed: 3}')
    else:
        epochs = 4  # the job's command line
    spec = write_sweep(directory, 'second-' + change, sections, [0.9, 0.8, 0.7], epochs=epochs, sleep=0.01,
                       **({'objective': objective} if objective else {}))
    run = az(*run_args(local_service, experiment, 'ran', spec))
    _refused(run, 'ran', spec, named, '(made by {})'.format(ran[3]), 'already has 3 job(s)')
    # Nothing changed: status and metrics still rank the sweep by the objective its jobs were judged by.
    status = az('batchai', 'sweep', 'status', *target(local_service, experiment, 'ran'), '-o', 'json')
    metrics = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'ran'), '--top', '1', '-o', 'json')
    assert status.exit_code == 0 and metrics.exit_code == 0, status.stderr + metrics.stderr
    assert first['best']['name'] in status.stderr
    rows = metrics.json()
    rows = rows.get('jobs', rows) if isinstance(rows, dict) else rows
    assert rows[0]['name'] == first['best']['name']


def test_a_misspelled_cluster_is_named_before_anything_starts(setup, local_service, batchai_client):
    az, directory, experiment = setup
    spec = write_sweep(directory, 'nocluster', [], [0.9], epochs=1, sleep=0.01)
    args = run_args(local_service, experiment, 'nocluster', spec)
    args[args.index('-c') + 1] = 'locall'
    run = az(*args)
    assert run.exit_code == NOT_FOUND, run.stderr
    submitted = az('batchai', 'sweep', 'submit', *target(local_service, experiment, 'nocluster'), '--spec', spec,
                   '-c', 'locall', '-o', 'json')
    assert submitted.exit_code == NOT_FOUND
    said = [line for line in run.stderr.splitlines() if line.startswith('ERROR')]
    assert said and said == [line for line in submitted.stderr.splitlines() if line.startswith('ERROR')]
    assert 'Cluster locall does not exist' in run.stderr and 'az batchai cluster list' in run.stderr
    assert 'Resume the run with' not in run.stderr and 'Traceback' not in run.stderr
    assert not Watcher(batchai_client, local_service, experiment, 'nocluster').jobs()


@pytest.mark.parametrize('case', ['wrong script path', 'job timeout too small'])
def test_when_every_job_failed_the_end_says_so_with_the_first_failure(setup, local_service, case):
    az, directory, experiment = setup
    sweep = 'allfail-' + case.split()[0]
    if case == 'wrong script path':
        spec = write_sweep(directory, sweep, [], [0.9, 0.8], epochs=2, sleep=0.01)
        with open(spec, encoding='utf-8') as f:
            text = f.read().replace('curve.py', 'no_such_script.py')
        with open(spec, 'w', encoding='utf-8') as f:
            f.write(text)
    else:
        spec = write_sweep(directory, sweep, ['limits: {jobTimeoutMinutes: 0.02}'], [0.9, 0.8], epochs=100, sleep=0.1)
    run = az(*run_args(local_service, experiment, sweep, spec))
    assert run.exit_code == 4, run.stderr  # jobs failed (docs/pipelines.md)
    assert 'Every job (2) of sweep {} failed; the first, '.format(sweep) in run.stderr, run.stderr
    assert 'check the objective' not in run.stderr
    assert '--tail 50' in run.stderr and 'jobTimeoutMinutes' in run.stderr
    # The first failure's own words: the script's exit code, or the service's reason.
    assert (': exit code 2' if case == 'wrong script path' else 'MaxWallClockTimeExceeded') in run.stderr, run.stderr
