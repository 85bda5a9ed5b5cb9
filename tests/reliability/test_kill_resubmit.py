"""`az batchai sweep resubmit` killed with SIGKILL between a job's delete and its re-create, then run again.

Resubmit deletes a failed job and creates it again under the same name. Killed in between, the job is gone from the
service; the next resubmit must bring it back (from the plan file, or without one from its journal in the az config
dir, written before the delete), with no job duplicated and none missing. The service runs with 300 ms of injected
latency per ARM request so the window between the delete and the create is wide, and the test watches the
service's store directly (read-only) to kill az inside that window rather than through the slowed API.
"""
import os
import signal
import sqlite3
import time

import pytest

from azext_batchai_sweep.core.service.submit import submit_jobs

from .helpers import assert_exactly_planned, client_for, make_plan, plan_bodies, quick_retry, service_jobs
from .test_kill_submit import run_az, start_az

pytestmark = [pytest.mark.service, pytest.mark.az, pytest.mark.slow]

JOBS = 6
# Odd X fails until the marker exists; then a resubmit makes every job succeed.
COMMAND = 'test $((PARAM_X % 2)) -eq 0 || test -e {marker} || exit 3; echo "x=$PARAM_X"'


def jobs_in_store(service, experiment):
    """The job names of an experiment, read from the service's SQLite store (read-only, WAL: no lock taken)."""
    uri = 'file:{}?mode=ro'.format(os.path.join(service.data_dir, 'service.db'))
    conn = sqlite3.connect(uri, uri=True)
    try:
        rows = conn.execute("SELECT key FROM resources WHERE kind = 'job' AND parent LIKE ?",
                            ('%/experiments/' + experiment,)).fetchall()
    finally:
        conn.close()
    return {key.rsplit('/', 1)[-1] for (key,) in rows}


def wait_states(client, service, experiment, expected, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = sorted(str(job.execution_state) for job in service_jobs(client, service, experiment))
        if states == expected:
            return
        time.sleep(0.3)
    raise AssertionError('states never became {}'.format(expected))


@pytest.mark.parametrize('with_plan', [True, False], ids=['plan', 'journal'])
def test_resubmit_killed_between_delete_and_create_then_rerun(service_factory, tmp_path, with_plan):
    svc = service_factory(name='slow', faults='latency-ms=300', slots=JOBS)
    client = client_for(svc)
    client.experiments.begin_create(svc.resource_group, svc.workspace, 'kill', polling=False).result()
    marker = tmp_path / 'marker'
    plan = make_plan(tmp_path, svc, 'kill', JOBS, command=COMMAND.format(marker=marker))
    assert submit_jobs(client, svc.resource_group, svc.workspace, 'kill', plan_bodies(plan),
                       retry=quick_retry())['submitted'] == JOBS
    wait_states(client, svc, 'kill', ['failed'] * (JOBS // 2) + ['succeeded'] * (JOBS // 2))
    marker.write_text('')
    names = jobs_in_store(svc, 'kill')
    assert len(names) == JOBS

    config_dir = str(tmp_path / 'azure-config')
    os.makedirs(config_dir)
    args = ['batchai', 'sweep', 'resubmit', '-g', svc.resource_group, '-w', svc.workspace, '-e', 'kill', '-n', 'rel',
            '-o', 'json'] + (['--plan-file', plan] if with_plan else [])
    proc = start_az(args, config_dir, svc, str(tmp_path))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and jobs_in_store(svc, 'kill') == names:
        time.sleep(0.01)
    assert proc.poll() is None, 'resubmit ended before deleting anything: ' + proc.stderr.read()[-2000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    missing = names - jobs_in_store(svc, 'kill')
    assert missing, 'the kill was meant to fall between a delete and its re-create'

    code, out, err = run_az(args, config_dir, svc, str(tmp_path))
    assert code == 0, err[-3000:]
    assert 'Traceback' not in err
    assert jobs_in_store(svc, 'kill') == names
    wait_states(client, svc, 'kill', ['succeeded'] * JOBS)
    assert_exactly_planned(client, svc, 'kill', plan)
