"""Plan and service agree (rule 4), waiting ends (rule 6), why did it fail (rule 7): through the real az executable
against the session's local service (and, for a service that stops answering, one of its own)."""
import os
import subprocess
import time
import uuid

import pytest

from tests.cli.test_sweep_identity import Target, read_plan, write_sweep
from tests.fixtures_az import AZ, base_env, service_az

pytestmark = [pytest.mark.az, pytest.mark.service]


@pytest.fixture
def target(local_service, tmp_path):
    return Target(local_service, str(tmp_path))


def test_status_shows_planned_jobs_missing_on_the_service_and_jobs_the_plan_lacks(target, batchai_client):
    svc = target.service
    write_sweep(target.directory, values=(1, 2, 3))
    made = target.run('submit', 'st', '--spec', 'sweep.yaml', '-c', svc.cluster, '--query', 'submitted')
    assert made.json() == 3, made.stderr
    records = sorted(read_plan(os.path.join(target.directory, 'st.plan.jsonl'))[1], key=lambda r: r['name'])
    names = [record['name'] for record in records]
    deleted = target.run('delete', 'st', '--jobs', names[0], '--yes')
    assert deleted.exit_code == 0, deleted.stderr
    # A job of the sweep that the plan does not know (made by hand, or by another plan of the sweep).
    body = {'properties': {'cluster': {'id': svc.cluster_id}, 'nodeCount': 1,
                           'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
                           'customToolkitSettings': {'commandLine': 'true'},
                           'environmentVariables': [{'name': 'BATCHAI_SWEEP_NAME', 'value': 'st'}]}}
    batchai_client.jobs.begin_create(svc.resource_group, svc.workspace, target.experiment, 'st-extra', body).result()

    status = target.run('status', 'st', '-o', 'json')  # the plan st.plan.jsonl is here: it is used
    assert status.exit_code == 0, status.stderr
    result = status.json()
    assert result['missing'] == [names[0]] and result['counts']['missing'] == 1
    assert result['notInPlan'] == ['st-extra']
    rows = {row['name']: row for row in result['jobs']}
    assert rows[names[0]]['state'] == 'missing' and rows[names[0]]['parameters'] == records[0]['parameters']
    assert '1 planned job(s) are not on the service' in status.stderr and 'st-extra' in status.stderr

    # Another directory: no plan, the service alone; or a plan given explicitly.
    os.mkdir(os.path.join(target.directory, 'elsewhere'))
    alone = target.run('status', 'st', '--query', '[length(jobs), missing]', cwd=os.path.join(target.directory,
                                                                                               'elsewhere'))
    assert alone.json() == [3, None], alone.stderr
    explicit = target.run('status', 'st', '--plan-file', 'st.plan.jsonl', '--state', 'missing', '--query',
                          'jobs[].name', cwd=os.path.join(target.directory, 'elsewhere'))
    assert explicit.exit_code == 6 and 'does not exist' in explicit.stderr  # relative to the working directory
    explicit = target.run('status', 'st', '--plan-file', os.path.join(target.directory, 'st.plan.jsonl'),
                          '--state', 'missing', '--query', 'jobs[].name')
    assert explicit.json() == [names[0]], explicit.stderr
    foreign = target.run('status', 'other', '--plan-file', 'st.plan.jsonl')
    assert foreign.exit_code == 6 and "is of sweep 'st', not 'other'" in foreign.stderr

    # A job of the sweep that its plan lacks stops submit (is it another plan of the sweep?) until the user says
    # it is fine; then the missing job is re-created and the unknown one stays as it is.
    refused = target.run('submit', 'st')
    assert refused.exit_code == 6 and 'not in this plan' in refused.stderr and 'st-extra' in refused.stderr
    again = target.run('submit', 'st', '--allow-changes', '--query', '[submitted, alreadyPresent]')
    assert again.json() == [1, 2], again.stderr


def test_tail_shows_stdout_and_stderr_and_why_a_job_failed(target):
    svc = target.service
    write_sweep(target.directory, values=(7,), command='echo "out {{X}}"; echo "err {{X}}" >&2; exit 3')
    made = target.run('submit', 'why', '--spec', 'sweep.yaml', '-c', svc.cluster, '--wait', '--interval', '0.2',
                      '--query', 'counts.failed')
    assert made.exit_code == 4 and made.json() == 1, made.stderr
    name = read_plan(os.path.join(target.directory, 'why.plan.jsonl'))[1][0]['name']
    # The hint is a command to paste, with this run's -g/-w/-e/-n.
    assert 'az batchai sweep status -g {} -w {} -e {} -n why --job {}'.format(
        svc.resource_group, svc.workspace, target.experiment, name) in made.stderr

    both = target.run('status', 'why', '--job', name, '-o', 'tsv')
    assert both.exit_code == 0, both.stderr
    assert both.stdout.splitlines() == ['==> stdout.txt <==', 'out 7', '==> stderr.txt <==', 'err 7']
    assert 'Job {} failed with exit code 3'.format(name) in both.stderr
    only = target.run('status', 'why', '--job', name, '--stderr', '--tail', '1', '-o', 'tsv')
    assert only.stdout == 'err 7\n', only.stderr
    assert '--stderr needs --job' in target.run('status', 'why', '--stderr').stderr
    other = target.run('status', 'not-why', '--job', name)
    assert other.exit_code == 3 and 'is not a job of sweep not-why (its sweep: why)' in other.stderr


def test_a_wait_ends_at_its_timeout_naming_the_unfinished_jobs(target):
    svc = target.service
    write_sweep(target.directory, values=(1,), command='sleep 60')
    try:
        started = time.monotonic()
        waited = target.run('submit', 'slow', '--spec', 'sweep.yaml', '-c', svc.cluster, '--wait', '--interval',
                            '0.2', '--timeout', '2', '-o', 'json')
        elapsed = time.monotonic() - started
        assert waited.exit_code == 5, waited.stderr
        assert waited.json()['submitted'] == 1  # the result is printed all the same
        assert 'did not finish within --timeout 2s: 1 running' in waited.stderr or \
            'did not finish within --timeout 2s: 1 queued' in waited.stderr, waited.stderr
        assert elapsed < 30
        # Without a terminal, a short progress line every few checks shows that the wait is alive.
        lines = [line for line in waited.stderr.splitlines() if 'Waiting for the jobs: 0 of 1 finished' in line]
        assert len(lines) >= 2, waited.stderr
        assert 'queued job' not in waited.stderr  # the processes scheduler says nothing of why a job waits
        assert 'az batchai sweep stop -g {} -w {} -e {} -n slow'.format(
            svc.resource_group, svc.workspace, target.experiment) in waited.stderr
        status = target.run('status', 'slow', '--wait', '--timeout', '0.5', '--interval', '0.2')
        assert status.exit_code == 5 and 'did not finish within --timeout 0.5s' in status.stderr
        assert 'it needs --wait' in target.run('status', 'slow', '--timeout', '5').stderr
        # resubmit --wait --timeout too: the stopped job runs again and is still running at the timeout.
        assert target.run('stop', 'slow', '--yes').exit_code == 0
        again = target.run('resubmit', 'slow', '--state', 'terminated', '--wait', '--timeout', '1', '--interval',
                           '0.2', '--query', 'resubmitted')
        assert again.exit_code == 5 and len(again.json()) == 1, again.stderr
        assert 'did not finish within --timeout 1s' in again.stderr
    finally:
        target.run('stop', 'slow', '--yes')


def _until_polling(stderr_path, timeout=120):
    """Return once the wait has made its first poll: it says so on stderr ("Waiting for the jobs: ..."), after it
    read the jobs. Neither a fixed sleep (a loaded machine starts az far slower) nor the wait's CPU time (az got
    cheaper: a threshold of it was reached only after the jobs had ended) says when that is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(stderr_path, encoding='utf-8', errors='replace') as f:
            if 'Waiting for the jobs' in f.read():
                return
        time.sleep(0.1)
    pytest.fail('the wait made no poll within {} s'.format(timeout))


def test_a_service_that_stops_answering_ends_the_wait(service_factory, tmp_path):
    svc = service_factory(name='dying', slots=1)
    az = service_az(svc, str(tmp_path))
    write_sweep(str(tmp_path), values=(1,), command='sleep 60')
    args = ['-g', svc.resource_group, '-w', svc.workspace, '-e', 'e-' + uuid.uuid4().hex[:6], '-n', 'd']
    made = az('batchai', 'sweep', 'submit', *args, '--spec', 'sweep.yaml', '-c', svc.cluster)
    assert made.exit_code == 0, made.stderr
    # The wait as its own process (the executable), its stderr a file the test reads while it runs.
    stderr_path = tmp_path / 'wait.err'
    with open(stderr_path, 'wb') as err:
        wait = subprocess.Popen(  # pylint: disable=consider-using-with
            [AZ, 'batchai', 'sweep', 'status', *args, '--wait', '--interval', '0.2', '--max-retries', '1'],
            stdout=subprocess.DEVNULL, stderr=err, env=base_env(az.config_dir, az.env), cwd=str(tmp_path))
    try:
        _until_polling(stderr_path)
        svc.proc.kill()  # the service dies during the wait
        code = wait.wait(90)
    finally:
        if wait.poll() is None:
            wait.kill()
    stderr = stderr_path.read_text(encoding='utf-8', errors='replace')
    assert code == 7 and 'stopped answering while waiting' in stderr, stderr
    assert 'Traceback' not in stderr
