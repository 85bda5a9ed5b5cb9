"""`az batchai sweep submit` killed with SIGKILL at K submitted jobs, then run again: the sweep ends complete, with no
job duplicated and none missing, each with its own parameters (compared with the plan file).

The real az executable against the local service. The kill points are chosen by watching the service's job count
(SDK listing) while az runs; `make test` kills a 60-job submit at 3 points, the soak target a 300-job one at 10.
Also: the whole 1,000-job fault run through az (soak), and az's exit code and message when retries run out.
"""
import json
import os
import signal
import subprocess
import time

import pytest

from tests.fixtures_az import AZ, base_env, service_env

from .helpers import assert_exactly_planned, client_for, make_plan, service_jobs

pytestmark = [pytest.mark.service, pytest.mark.az]


def submit_args(service, experiment, plan, *extra):
    return ['batchai', 'sweep', 'submit', '-g', service.resource_group, '-w', service.workspace, '-e', experiment,
            '-n', 'rel', '--plan-file', plan, '-o', 'json', *extra]


def start_az(args, config_dir, service, cwd):
    env = base_env(config_dir, service_env(service))
    return subprocess.Popen([AZ, *args], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def run_az(args, config_dir, service, cwd, timeout=900):
    proc = start_az(args, config_dir, service, cwd)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def kill_at(proc, client, service, experiment, count, timeout=120):
    """SIGKILL the az process (its whole group) once the service holds at least `count` jobs; returns the count
    at the kill, or None when az finished first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        try:
            seen = len(service_jobs(client, service, experiment))
        except Exception:  # pylint: disable=broad-except  # the experiment may not exist yet
            seen = 0
        if seen >= count:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return seen
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    raise AssertionError('az submit did not reach {} jobs in {}s'.format(count, timeout))


def kill_and_rerun(service_factory, tmp_path, jobs, points, slots=2):
    # 50 ms per request and 2 in flight (~40 creates/s): slow enough that the kill lands at the chosen count.
    svc = service_factory(name='kills', slots=slots, faults='latency-ms=50')
    client = client_for(svc)
    config_dir = str(tmp_path / 'azure-config')
    os.makedirs(config_dir)
    figures = []
    for index, point in enumerate(points):
        experiment = 'kill-{}'.format(index)
        workdir = tmp_path / experiment
        workdir.mkdir()
        plan = make_plan(workdir, svc, experiment, jobs)
        args = submit_args(svc, experiment, plan, '--parallel', '2')
        proc = start_az(args, config_dir, svc, str(workdir))
        at_kill = kill_at(proc, client, svc, experiment, point)
        assert at_kill is not None, 'az submit finished before the kill at {}'.format(point)
        code, out, err = run_az(args, config_dir, svc, str(workdir))
        assert code == 0, err
        result = json.loads(out)
        assert result['submitted'] + result['alreadyPresent'] == jobs and result['notSubmitted'] == []
        assert_exactly_planned(client, svc, experiment, plan)
        figures.append({'killAt': point, 'jobsAtKill': at_kill, 'rerunSubmitted': result['submitted'],
                        'rerunAlreadyPresent': result['alreadyPresent']})
    return figures


def test_sigkill_submit_at_3_points_of_a_60_job_sweep_then_rerun(service_factory, tmp_path):
    figures = kill_and_rerun(service_factory, tmp_path, 60, [1, 25, 50])
    print('\nFIGURES sigkill submit (60 jobs): {}'.format(json.dumps(figures)))


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_sigkill_submit_at_10_points_of_a_300_job_sweep_then_rerun(service_factory, tmp_path):
    figures = kill_and_rerun(service_factory, tmp_path, 300, [1, 10, 30, 60, 100, 150, 200, 240, 280, 299])
    print('\nFIGURES sigkill submit: {}'.format(json.dumps(figures)))


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_az_submit_of_1000_jobs_through_faults(service_factory, tmp_path):
    svc = service_factory(name='faulty-az', faults='5xx=0.2,429=0.1,drop=0.02,seed=21', slots=2)
    plan = make_plan(tmp_path, svc, 'faults', 1000)
    config_dir = str(tmp_path / 'azure-config')
    os.makedirs(config_dir)
    started = time.monotonic()
    code, out, err = run_az(submit_args(svc, 'faults', plan), config_dir, svc, str(tmp_path))  # default --max-retries
    elapsed = time.monotonic() - started
    assert code == 0, err[-3000:]
    result = json.loads(out)
    assert result['submitted'] + result['alreadyPresent'] == 1000 and result['notSubmitted'] == []
    assert_exactly_planned(client_for(svc, retry_total=20), svc, 'faults', plan)
    print('\nFIGURES az submit through faults: {}'.format(json.dumps(
        {'jobs': 1000, 'seconds': round(elapsed, 1), 'submitted': result['submitted'],
         'alreadyPresent': result['alreadyPresent']})))


def test_az_submit_when_everything_fails_exits_non_zero_in_bounded_time(service_factory, tmp_path):
    svc = service_factory(name='down', faults='5xx=1.0')
    plan = make_plan(tmp_path, svc, 'down', 5)
    config_dir = str(tmp_path / 'azure-config')
    os.makedirs(config_dir)
    started = time.monotonic()
    code, out, err = run_az(submit_args(svc, 'down', plan, '--max-retries', '2'), config_dir, svc, str(tmp_path))
    elapsed = time.monotonic() - started
    assert code != 0 and elapsed < 60, (code, elapsed)
    assert 'Traceback' not in err
    errors = [line for line in err.splitlines() if line.startswith('ERROR:')]
    assert len(errors) == 1 and ('ServiceUnavailable' in errors[0] or 'InternalServerError' in errors[0]), err
