"""What a user waiting on Azure Batch sees, end to end through the real az (issue 31 rules 1-3; the lifecycle
double of the data plane is TEST CODE, tests/azurebatch/double/): a job queued on an autoscale pool says "waiting
for the pool (next evaluation about HH:MM UTC)" in `sweep status` (not a bare "queued"), a preempted job's
requeues are shown after its end, and a job on a pool whose every node failed its start task fails after the
bounded wait with the start task's error, which `cluster show` shows too. The user's path: az's offline login,
`local start --scheduler azure-batch --batch-account`, every Batch call through Prism (e2e_fixtures.py)."""
import re

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.names import pool_id
from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import
from tests.cli.test_sweep_errors_and_tables import fits

pytestmark = [pytest.mark.az, pytest.mark.service]

WAITING = re.compile(r'^waiting for the pool \(next evaluation (about \d\d:\d\d UTC|due now)\)$')


def _status(svc, target):
    shown = svc.az('batchai', 'sweep', 'status', *target, '-o', 'json')
    assert shown.exit_code == 0, shown.stderr
    return shown


def test_a_job_queued_on_an_autoscale_pool_says_when_the_pool_is_evaluated(batch_service):  # pylint: disable=W0621
    svc = batch_service
    assert svc.az('batchai', 'cluster', 'create', '-n', 'auto1', *svc.group(), '-s', 'Standard_D2s_v3', '--min', '0',
                  '--max', '1', '-u', 'batchai', '-p', 'not-used-0A!').exit_code == 0
    gate = svc.directory + '/gate'
    write_sweep(svc.directory, 'w.yaml', 'echo loss={{X}}; while [ ! -e ' + gate + ' ]; do sleep 0.1; done', [1, 2])
    target = [*svc.group(), '-e', 'wait', '-n', 'w']
    assert svc.az('batchai', 'sweep', 'submit', *target, '--spec', 'w.yaml', '-c', 'auto1').exit_code == 0
    wait_until(lambda: [t.state for t in tasks(svc.double)].count('running') == 1, what='one job runs')

    def waiting_rows():
        return [r for r in _status(svc, target).json()['jobs'] if r.get('waiting')]
    wait_until(lambda: len(waiting_rows()) == 1, what='the queued job says why it waits')
    shown = _status(svc, target)
    rows = {r['state']: r for r in shown.json()['jobs']}
    assert WAITING.match(rows['queued']['waiting']), rows['queued']
    assert 'waiting' not in rows['running']  # only a queued job waits
    assert '1 queued job: waiting for the pool (next evaluation' in shown.stderr  # said on stderr for the table too
    table = svc.az('batchai', 'sweep', 'status', *target, '-o', 'table')
    assert '1 queued job: waiting for the pool' in table.stderr
    # local status's table: the pool's row says when it is evaluated next, within 100 columns.
    local = svc.az('batchai', 'sweep', 'local', 'status', '--data-dir', svc.data_dir, '-o', 'table')
    row = [line for line in local.stdout.splitlines() if ' auto1 ' in line]
    assert len(row) == 1 and re.search(r' auto1 +1 +(about \d\d:\d\d UTC|due now)$', row[0]), local.stdout
    fits(local.stdout)
    with open(gate, 'w', encoding='utf-8'):
        pass
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '--timeout', '60',
                    '-o', 'json')
    assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 2, waited.stdout + waited.stderr
    assert not any(r.get('waiting') for r in waited.json()['jobs'])


def test_a_preempted_jobs_requeues_are_shown_after_its_end(batch_service):  # pylint: disable=W0621
    svc = batch_service
    assert svc.az('batchai', 'cluster', 'create', '-n', 'spot1', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1',
                  '-u', 'batchai', '-p', 'not-used-0A!').exit_code == 0
    gate = svc.directory + '/gate'
    write_sweep(svc.directory, 'p.yaml', 'echo loss={{X}}; while [ ! -e ' + gate + ' ]; do sleep 0.1; done', [1])
    target = [*svc.group(), '-e', 'pre', '-n', 'p']
    assert svc.az('batchai', 'sweep', 'submit', *target, '--spec', 'p.yaml', '-c', 'spot1').exit_code == 0
    wait_until(lambda: [t.state for t in tasks(svc.double)] == ['running'], what='the task runs')
    svc.double.account.preemption_recovery_seconds = 1.0
    svc.double.account.preempt(task_id=tasks(svc.double)[0].id)
    wait_until(lambda: _status(svc, target).json()['jobs'][0].get('requeues') == 1, what='the requeue is shown')
    with open(gate, 'w', encoding='utf-8'):
        pass
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '--timeout', '60',
                    '-o', 'json')
    assert waited.exit_code == 0, waited.stdout + waited.stderr
    (row,) = waited.json()['jobs']
    assert (row['state'], row['requeues']) == ('succeeded', 1)


def test_a_job_on_a_pool_whose_nodes_fail_their_start_task_fails_with_its_error(batch_service):  # pylint: disable=W0621
    svc = batch_service
    created = svc.az('batchai', 'cluster', 'create', '-n', 'badsetup', *svc.group(), '-s', 'Standard_D2s_v3', '-t',
                     '1', '-u', 'batchai', '-p', 'not-used-0A!', '--setup-task', 'exit 3',
                     '--setup-task-output', '$AZ_BATCHAI_MOUNT_ROOT/setup')
    assert created.exit_code == 0, created.stderr
    write_sweep(svc.directory, 's.yaml', 'echo loss={{X}}', [1])
    target = [*svc.group(), '-e', 'setup', '-n', 's']
    assert svc.az('batchai', 'sweep', 'submit', *target, '--spec', 's.yaml', '-c', 'badsetup').exit_code == 0
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '--timeout', '60',
                    '-o', 'json')
    assert waited.exit_code == 4 and waited.json()['counts']['failed'] == 1, waited.stdout + waited.stderr
    jobs = svc.az('batchai', 'job', 'list', *svc.group(), '-e', 'setup', '-o', 'json').json()
    error = jobs[0]['executionInfo']['errors'][0]
    assert error['code'] == 'SetupTaskFailed' and 'waited' in error['message'], error
    shown = svc.az('batchai', 'cluster', 'show', '-n', 'badsetup', *svc.group(), '-o', 'json').json()
    assert 'SetupTaskFailed' in [e['code'] for e in shown['errors']]
    assert tasks(svc.double) == []  # removed from Batch: it never starts later
    assert pool_id('batchai', 'local', 'badsetup', *LOCAL) in svc.double.account.pools


WAITING_LINE = re.compile(r'^WARNING: \d queued jobs?: waiting for the pool \(next evaluation (about \d\d:\d\d UTC|due '
                          r'now)\)$', re.M)


def _autoscale_sweep(svc, cluster, spec):
    """An autoscale cluster of at most one node and a 2-job sweep whose jobs last 3 s: one waits for the other."""
    assert svc.az('batchai', 'cluster', 'create', '-n', cluster, *svc.group(), '-s', 'Standard_D2s_v3', '--min', '0',
                  '--max', '1', '-u', 'batchai', '-p', 'not-used-0A!').exit_code == 0
    write_sweep(svc.directory, spec, 'echo loss={{X}}; sleep 3', [1, 2])


def test_sweep_run_says_why_its_queued_jobs_wait(batch_service):  # pylint: disable=W0621
    # The run's progress on stderr (not a terminal here: az's logger, a periodic line) says why queued jobs wait,
    # after the counts line, which stays as on the other schedulers.
    svc = batch_service
    _autoscale_sweep(svc, 'runwait', 'r.yaml')
    run = svc.az('batchai', 'sweep', 'run', *svc.group(), '-e', 'runwait', '-n', 'r', '--spec', 'r.yaml', '-c',
                 'runwait', '--poll-interval', '0.3', '-o', 'json')
    assert run.exit_code == 0, run.stderr
    waiting = WAITING_LINE.search(run.stderr)
    assert waiting, run.stderr
    # The counts line before it is the one every scheduler prints (how many are queued or already running depends on
    # when the first poll lands).
    counts = re.findall(r'^WARNING: Sweep r: .*$', run.stderr[:waiting.start()], re.M)
    assert counts and re.fullmatch(r'WARNING: Sweep r: 2 job\(s\): \d queued(, \d running)?', counts[-1]), run.stderr
    assert run.json()['counts']['succeeded'] == 2


def test_submit_wait_says_why_its_queued_jobs_wait(batch_service):  # pylint: disable=W0621
    svc = batch_service
    _autoscale_sweep(svc, 'subwait', 's.yaml')
    submitted = svc.az('batchai', 'sweep', 'submit', *svc.group(), '-e', 'subwait', '-n', 's', '--spec', 's.yaml',
                       '-c', 'subwait', '--wait', '--interval', '0.3', '-o', 'json')
    assert submitted.exit_code == 0, submitted.stderr
    assert re.search(r'^WARNING: Waiting for the jobs: \d of 2 finished \(\d queued', submitted.stderr, re.M)
    assert WAITING_LINE.search(submitted.stderr), submitted.stderr
