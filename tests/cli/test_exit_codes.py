"""Exit codes a script branches on (issue 32): one code per outcome class, the same on every command, az's where az
has one (2 usage, 3 not found), the JSON result still on stdout; durations with units on every --timeout/--interval;
retried cleanup that succeeds. Through the real az executable; docs/pipelines.md has the table.
"""
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.cli.test_sweep_identity import Target, write_sweep
from tests.fixtures_az import AzRunner

pytestmark = [pytest.mark.az, pytest.mark.service]

NOT_FOUND, JOBS_FAILED, TIMEOUT, BAD_INPUT, NO_SERVICE = 3, 4, 5, 6, 7
SLEEPER = 'echo "x={{X}}"; sleep 60'
FAILER = 'echo "x={{X}}"; test {{X}} -lt 2'   # X=1 succeeds, X=2 fails

# Every sweep command with the arguments it needs besides -g/-w/-e/-n (a file that exists: spec.yaml).
COMMANDS = {
    'create': ['--spec', 'sweep.yaml'],
    'submit': ['--spec', 'sweep.yaml'],
    'run': ['--spec', 'sweep.yaml'],
    'status': [],
    'resubmit': [],
    'metrics': ['--metric', 'x'],
    'delete': ['--yes'],
    'download': [],
    'stop': ['--yes'],
    'report': ['--metric', 'x'],
}


@pytest.fixture
def target(local_service, tmp_path):
    return Target(local_service, str(tmp_path))


def _all(run, calls):
    """Run az calls two at a time (each is a second of start-up on a shared 2-core machine)."""
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(calls, pool.map(lambda key: run(*calls[key]), calls)))


def test_every_command_exits_bad_input_no_service_and_not_found_alike(target, tmp_path):
    write_sweep(target.directory)
    # Bad input: an invalid sweep name is refused by every command before any request.
    bad = _all(lambda command, args: target.run(command, 'not a name', *args),
               {command: (command, args) for command, args in COMMANDS.items()})
    for command, result in bad.items():
        assert result.exit_code == BAD_INPUT and 'is invalid' in result.stderr, (command, result.stderr)
        assert result.stdout == '', command
    # No service: nothing configured and no login (a fresh config dir, no target variables).
    (tmp_path / 'empty-config').mkdir()
    az = AzRunner(str(tmp_path / 'empty-config'))
    none = _all(lambda command, args: az('batchai', 'sweep', command, '-g', 'g', '-w', 'w', '-e', 'e', '-n', 's',
                                         *args, cwd=target.directory),
                {command: (command, args) for command, args in COMMANDS.items() if command != 'create'})
    for command, result in none.items():
        assert result.exit_code == NO_SERVICE and 'No Batch AI service' in result.stderr, (command, result.stderr)
    # Not found: a sweep name that matches no job, on every command that reads or acts on a sweep's jobs.
    found = _all(lambda command, args: target.run(command, 'no-such-sweep', *args),
                 {command: (command, COMMANDS[command])
                  for command in ('status', 'resubmit', 'metrics', 'download', 'stop', 'report')})
    for command, result in found.items():
        assert result.exit_code == NOT_FOUND, (command, result.stderr)
    # Usage errors stay az's: 2, also for a duration that does not parse.
    usage = _all(lambda *args: target.run(*args), {
        'option': ('status', 's', '--no-such-option'),
        'duration': ('status', 's', '--wait', '--timeout', 'soon'),
        'run duration': ('run', 's', '--spec', 'sweep.yaml', '--timeout', '5 min')})
    for case, result in usage.items():
        assert result.exit_code == 2, (case, result.stderr)
    assert 'expected a duration' in usage['duration'].stderr and '90s, 15m, 2h' in usage['duration'].stderr


def test_bad_sweep_file_and_values_exit_bad_input(target):
    path = write_sweep(target.directory, name='bad.yaml')
    with open(path, 'a', encoding='utf-8') as f:
        f.write('limits: {stopOnExit: maybe}\n')
    write_sweep(target.directory, name='create.yaml')
    with open(target.directory + '/create.yaml', 'a', encoding='utf-8') as f:
        f.write('limits: {stopOnExit: true}\n')  # a run's option: create refuses it, pointing to run
    results = _all(lambda *args: target.run(*args), {
        'run file': ('run', 's', '--spec', 'bad.yaml'),
        'create file': ('create', 's', '--spec', 'create.yaml', '--plan-only'),
        'value': ('status', 's', '--wait', '--timeout', '0'),
        'needs --wait': ('status', 's', '--timeout', '5m')})
    for case, result in results.items():
        assert result.exit_code == BAD_INPUT, (case, result.stderr)
    assert 'limits.stopOnExit' in results['run file'].stderr
    assert 'limits.stopOnExit' in results['create file'].stderr and 'sweep run' in results['create file'].stderr
    # Checked before the first request: the run did not even create the experiment.
    assert target.run('status', 's').exit_code == NOT_FOUND


def test_wait_outcomes_timeout_failed_and_stopped_by_someone_else(target):
    svc = target.service
    write_sweep(target.directory, values=(1, 2), command=FAILER, name='fail.yaml')
    write_sweep(target.directory, values=(7,), command=SLEEPER, name='slow.yaml')
    failed = target.run('submit', 'f', '--spec', 'fail.yaml', '-c', svc.cluster, '--wait', '--interval', '0.2',
                        '-o', 'json')
    assert failed.exit_code == JOBS_FAILED, failed.stderr
    assert failed.json()['counts']['failed'] == 1 and 'failed' in failed.stderr
    slow = target.run('submit', 'slow', '--spec', 'slow.yaml', '-c', svc.cluster, '-o', 'none')
    assert slow.exit_code == 0, slow.stderr
    try:
        # A unit on --timeout and --interval; the status is still printed on stdout.
        waited = target.run('status', 'slow', '--wait', '--timeout', '1s', '--interval', '0.2s', '-o', 'json')
        assert waited.exit_code == TIMEOUT, waited.stderr
        assert 'did not finish within --timeout 1s' in waited.stderr and json.loads(waited.stdout)['jobs']
    finally:
        stopped = target.run('stop', 'slow', '--yes', '-o', 'none')
    assert stopped.exit_code == 0, stopped.stderr
    # Someone else stopped the jobs: the wait did not see them run to the end.
    after = target.run('status', 'slow', '--wait', '--interval', '0.2', '-o', 'json')
    assert after.exit_code == JOBS_FAILED, after.stderr
    assert after.json()['counts']['terminated'] == 1 and 'terminated before they finished' in after.stderr
    assert '--state terminated' in after.stderr  # the command that runs them again
    # A plain number keeps its old unit (seconds) with --wait.
    assert target.run('status', 'f', '--wait', '--timeout', '30', '-o', 'none').exit_code == JOBS_FAILED


def test_retried_cleanup_is_a_no_op_and_a_typo_is_not_found(target):
    svc = target.service
    write_sweep(target.directory)
    assert target.run('submit', 'c', '--spec', 'sweep.yaml', '-c', svc.cluster, '--wait', '--interval', '0.2s',
                      '-o', 'none').exit_code == 0
    first = target.run('delete', 'c', '--yes', '-o', 'json')
    assert first.exit_code == 0 and len(first.json()['deleted']) == 2, first.stderr
    again = _all(lambda *args: target.run(*args), {
        'delete': ('delete', 'c', '--yes', '-o', 'json'),
        'delete jobs': ('delete', 'c', '--jobs', first.json()['deleted'][0], '--yes', '-o', 'json'),
        'resubmit typo': ('resubmit', 'c-typo', '-o', 'json'),
        'resubmit state typo': ('resubmit', 'c-typo', '--state', 'terminated')})
    for case in ('delete', 'delete jobs'):
        assert again[case].exit_code == 0, again[case].stderr
        assert again[case].json()['deleted'] == [] and 'nothing to delete' in again[case].stderr
    for case in ('resubmit typo', 'resubmit state typo'):
        assert again[case].exit_code == NOT_FOUND and 'has no jobs' in again[case].stderr, again[case].stderr
        assert again[case].stdout == ''
    # A workspace that does not exist is not "already deleted".
    wrong = target.az('batchai', 'sweep', 'delete', '-g', svc.resource_group, '-w', 'no-such-workspace', '-e',
                      target.experiment, '-n', 'c', '--yes')
    assert wrong.exit_code == NOT_FOUND, wrong.stderr
