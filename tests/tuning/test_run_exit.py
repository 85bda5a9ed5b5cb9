"""How `az batchai sweep run` ends, as a pipeline sees it (issue 32): interrupted by SIGTERM, SIGINT or SIGHUP it names
the jobs still running and the commands that stop them or resume the run, exits 128 + the signal, and with
--stop-on-exit (or limits.stopOnExit) stops them first; ended by its --timeout it exits 5 unless it has a best job,
and its result counts the jobs it terminated as terminated, not running. The real az, the session's local service.
"""
import json
import shlex
import signal
import subprocess
import time
import uuid

import pytest

from azext_batchai_sweep.core.tuning.loop import job_state
from tests.fixtures_az import AZ, base_env, service_az, service_env

from .run_helpers import Watcher, write_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

# Jobs that never finish on their own (curve.py hangs for a negative quality).
HANGING = [-1, -2]


@pytest.fixture
def setup(local_service, tmp_path):
    directory = str(tmp_path)
    az = service_az(local_service, directory)
    return az, directory, 'exit-' + uuid.uuid4().hex[:8]


def args(service, experiment, sweep, spec, *extra):
    return ['batchai', 'sweep', 'run', '-g', service.resource_group, '-w', service.workspace, '-e', experiment,
            '-n', sweep, '--spec', spec, '-c', service.cluster, '--poll-interval', '0.2', '-o', 'json', *extra]


def interrupt(az, service, experiment, sweep, spec, signum, client, *extra):
    """Start the run, send `signum` once both its jobs run; (exit code, stdout, stderr, the jobs' names)."""
    proc = subprocess.Popen([AZ] + args(service, experiment, sweep, spec, *extra), stdin=subprocess.DEVNULL,
                            env=base_env(az.config_dir, service_env(service)), cwd=az.cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watcher = Watcher(client, service, experiment, sweep)
    try:
        deadline = time.monotonic() + 60
        while sum(job_state(job) == 'running' for job in watcher.jobs()) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err, sorted(job.name for job in watcher.jobs()), watcher


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT])
def test_interrupted_run_names_its_running_jobs_and_how_to_stop_or_resume(setup, local_service, batchai_client,
                                                                          signum):
    az, directory, experiment = setup
    spec = write_sweep(directory, 'left', [], HANGING, epochs=1)
    code, out, err, names, watcher = interrupt(az, local_service, experiment, 'left', spec, signum, batchai_client)
    assert code == 128 + signum, err
    assert out == ''  # no result: nothing but results on stdout
    assert 'interrupted by {}'.format(signal.Signals(signum).name) in err
    assert '2 job(s) still queued or running' in err and all(name in err for name in names), err
    # The jobs still run (nobody asked to stop them), and the printed command stops them.
    assert sorted(job_state(job) for job in watcher.jobs()) == ['running', 'running']
    stop = 'az batchai sweep stop -g {} -w {} -e {} -n left --yes'.format(
        local_service.resource_group, local_service.workspace, experiment)
    assert stop in err
    assert 'resume the run with "az batchai sweep run -g {}'.format(local_service.resource_group) in err
    stopped = az(*shlex.split(stop)[1:], '-o', 'json')
    assert stopped.exit_code == 0 and sorted(stopped.json()['stopped']) == names, stopped.stderr


@pytest.mark.parametrize('how', ['option', 'sweep file'])
def test_stop_on_exit_stops_the_sweeps_jobs_on_the_way_out(setup, local_service, batchai_client, how):
    az, directory, experiment = setup
    sections = ['limits: {stopOnExit: true}'] if how == 'sweep file' else []
    spec = write_sweep(directory, 'clean', sections, HANGING, epochs=1)
    extra = ['--stop-on-exit'] if how == 'option' else []
    code, out, err, names, watcher = interrupt(az, local_service, experiment, 'clean', spec, signal.SIGHUP,
                                               batchai_client, *extra)
    assert code == 128 + signal.SIGHUP, err
    assert out == ''
    assert 'stopped its 2 queued or running job(s)' in err and all(name in err for name in names), err
    assert sorted(job_state(job) for job in watcher.jobs()) == ['terminated', 'terminated']


def test_run_ended_by_its_timeout_without_a_result_exits_timeout(setup, local_service):
    az, directory, experiment = setup
    spec = write_sweep(directory, 'late', [], HANGING, epochs=1)
    # A unit on run's --timeout (its plain number stays minutes: see the next run).
    run = az(*args(local_service, experiment, 'late', spec, '--timeout', '2s'))
    assert run.exit_code == 5, run.stderr
    result = json.loads(run.stdout)
    assert result['ended'] == 'timeout' and result['best'] is None
    # The jobs the timeout terminated are not counted as running.
    assert 'running' not in result['counts'] and result['counts'].get('terminated', 0) + \
        result['counts'].get('terminating', 0) == 2, result['counts']
    assert 'reached its timeout before any job ran to the end' in run.stderr
    minutes = az(*args(local_service, experiment, 'late-minutes', spec, '--timeout', '0.04'))
    assert minutes.exit_code == 5 and json.loads(minutes.stdout)['ended'] == 'timeout', minutes.stderr
    # The sweep's jobs were created about 2.4 s (0.04 minutes) before it ended, not 0.04 seconds.
    assert 'terminated by the sweep\'s timeoutMinutes (0.04 minutes)' in minutes.stderr


def test_run_with_a_best_job_and_timeout_exits_0(setup, local_service):
    az, directory, experiment = setup
    spec = write_sweep(directory, 'budget', ['limits: {maxConcurrentJobs: 1}'], [0.5, -1], epochs=2, sleep=0.05)
    run = az(*args(local_service, experiment, 'budget', spec, '--timeout', '6s'))
    assert run.exit_code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result['ended'] == 'timeout' and result['best']['parameters'] == {'Q': 0.5}
    assert 'running' not in result['counts'], result['counts']
