"""A sweep end to end through the real az on the Azure Batch scheduler: a Batch AI cluster becomes a Batch pool,
the sweep's jobs Batch tasks; states, outputs and metrics come back through the service's API; terminate and
cluster delete reach Batch. The user's path: az's offline login, `local start --scheduler azure-batch --batch-account`,
every Batch call through Prism (e2e_fixtures.py)."""
import json
import os
import re

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.names import batch_job_id, pool_id
from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import

pytestmark = [pytest.mark.az, pytest.mark.service]


def _cluster(svc, name, size='Standard_D2s_v3', nodes=2):
    return svc.az('batchai', 'cluster', 'create', '-n', name, *svc.group(), '-s', size, '-t', str(nodes),
                  '-u', 'batchai', '-p', 'not-used-0A!', '-o', 'json')



def test_sweep_runs_as_batch_tasks_and_reads_back_through_the_api(batch_service):  # pylint: disable=W0621
    svc = batch_service
    refused = _cluster(svc, 'old', size='Standard_NC6')
    assert refused.exit_code != 0 and "vmSize 'Standard_NC6' was retired by Azure" in refused.stderr, refused.stderr
    assert not svc.double.account.pools

    greedy = _cluster(svc, 'big', nodes=60)  # 120 vCPUs: more than the account's 100
    assert greedy.exit_code != 0 and 'The cluster needs 120 dedicated vCPUs' in greedy.stderr, greedy.stderr
    unknown = _cluster(svc, 'odd', size='Standard_Z9')
    assert unknown.exit_code != 0 and "vmSize 'Standard_Z9' is not offered by Azure Batch" in unknown.stderr
    assert not svc.double.account.pools

    created = _cluster(svc, 'c1')
    assert created.exit_code == 0, created.stderr
    pool, job = pool_id('batchai', 'local', 'c1', *LOCAL), batch_job_id('batchai', 'local', 'c1', *LOCAL)
    assert list(svc.double.account.pools) == [pool]
    assert svc.double.account.pools[pool].body['vmSize'] == 'Standard_D2s_v3'

    write_sweep(svc.directory, 'sweep.yaml', 'echo epoch=1 loss={{X}}; echo x{{X}} > $AZ_BATCHAI_OUTPUT_OUT/f.txt',
                [3, 1, 2], outputDirectories=[{'id': 'OUT', 'pathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/out'}])
    target = [*svc.group(), '-e', 'ab', '-n', 'lr']
    submitted = svc.az('batchai', 'sweep', 'submit', *target, '--spec', 'sweep.yaml', '-c', 'c1', '-o', 'json')
    assert submitted.exit_code == 0 and submitted.json()['submitted'] == 3, submitted.stderr
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '-o', 'json')
    assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 3, waited.stdout + waited.stderr
    ranked = svc.az('batchai', 'sweep', 'metrics', *target, '--metric', 'loss', '--goal', 'min', '-o', 'json')
    assert ranked.exit_code == 0, ranked.stderr
    rows = ranked.json()
    rows = rows.get('jobs', rows) if isinstance(rows, dict) else rows
    assert [row['metric'] for row in rows] == [1, 2, 3]
    # The report's job table names each job's id for what it is on this scheduler: a Batch task, not a Slurm job.
    made = svc.az('batchai', 'sweep', 'report', *target, '--metric', 'loss', '--goal', 'min', '-f', 'lr.html',
                  '-o', 'json')
    assert made.exit_code == 0, made.stderr
    assert made.json()['scheduler'] == 'azure-batch'
    assert all(job['schedulerJobId'].startswith(job_id + '/') for job_id in [batch_job_id(
        'batchai', 'local', 'c1', *LOCAL)] for job in made.json()['jobs']), made.json()['jobs']
    with open(os.path.join(svc.directory, 'lr.html'), encoding='utf-8') as f:
        table = json.loads(re.search(r'id="report-table-data">(.*?)</script>', f.read()).group(1))
    labels = [column['label'] for column in table['columns']]
    assert 'Batch task' in labels and 'Slurm job' not in labels, labels

    # Three tasks in one Batch job, each added once (by collection adds: the jobs queued by the time of a pass go
    # in one), followed by list calls only (never a GET per task).
    assert len(tasks(svc.double)) == 3 and list(svc.double.account.jobs) == [job]
    assert 1 <= svc.double.count('POST', '^/jobs/{}/addtaskcollection$'.format(job)) <= 3
    assert svc.double.count('GET', r'^/jobs/[^/]+/tasks/[^/]+$') == 0
    assert svc.double.count('GET', '^/jobs/{}/tasks$'.format(job)) >= 1

    # Outputs read through the task file API are served by the service's own API (job file list/stream).
    job = sorted(j['name'] for j in svc.az('batchai', 'job', 'list', *svc.group(), '-e', 'ab', '-o', 'json').json())[0]
    listed = svc.az('batchai', 'job', 'file', 'list', *svc.group(), '-e', 'ab', '-j', job, '-d', 'OUT', '-o', 'json')
    assert listed.exit_code == 0 and [f['name'] for f in listed.json()] == ['f.txt'], listed.stderr
    streamed = svc.az('batchai', 'job', 'file', 'stream', *svc.group(), '-e', 'ab', '-j', job, '-f', 'stdout.txt')
    assert streamed.exit_code == 0 and 'epoch=1 loss=' in streamed.stdout, streamed.stderr

    shown = svc.az('batchai', 'cluster', 'show', '-n', 'c1', *svc.group(), '-o', 'json')
    assert shown.exit_code == 0 and shown.json()['currentNodeCount'] == 2, shown.stdout

    deleted = svc.az('batchai', 'cluster', 'delete', '-n', 'c1', *svc.group(), '-y')
    assert deleted.exit_code == 0, deleted.stderr
    svc.double.account.wait(lambda: not svc.double.account.jobs and all(
        p.state == 'deleting' for p in svc.double.account.pools.values()), timeout=30)


def test_terminate_ends_the_batch_task(batch_service):  # pylint: disable=redefined-outer-name
    svc = batch_service
    assert _cluster(svc, 'c2', nodes=1).exit_code == 0
    write_sweep(svc.directory, 'hang.yaml', 'echo started {{X}}; sleep 300', [1])
    target = [*svc.group(), '-e', 'ab', '-n', 'hang']
    assert svc.az('batchai', 'sweep', 'submit', *target, '--spec', 'hang.yaml', '-c', 'c2').exit_code == 0
    wait_until(lambda: any(t.state == 'running' for t in tasks(svc.double)), what='the task runs')
    stopped = svc.az('batchai', 'sweep', 'stop', *target, '--yes', '-o', 'json')
    assert stopped.exit_code == 0, stopped.stderr
    (task,) = tasks(svc.double)
    wait_until(lambda: task.state == 'completed', what='the Batch task is terminated')
    assert svc.double.count('POST', '^/jobs/{}/tasks/[^/]+/terminate$'.format(
        batch_job_id('batchai', 'local', 'c2', *LOCAL))) == 1
    (job,) = svc.az('batchai', 'job', 'list', *svc.group(), '-e', 'ab', '-o', 'json').json()
    assert job['executionState'] == 'failed' and job['executionInfo']['errors'][0]['code'] == 'JobTerminated'
    streamed = svc.az('batchai', 'job', 'file', 'stream', *svc.group(), '-e', 'ab', '-j', job['name'], '-f',
                      'stdout.txt')
    assert streamed.exit_code == 0 and 'started 1' in streamed.stdout, streamed.stderr


def test_sweep_run_with_hyperband_on_batch_tasks(batch_service):  # pylint: disable=redefined-outer-name
    """`sweep run`'s controller (Hyperband: promotions start new jobs of more epochs) on Batch tasks: it reads each
    job's reports through the service while the task runs, as on the other schedulers."""
    import os
    import sys
    from tests.tuning.run_helpers import CURVE
    svc = batch_service
    assert svc.az('batchai', 'cluster', 'create', '-n', 'hb', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '3', '-u',
                  'batchai', '-p', 'not-used-0A!').exit_code == 0
    command = '{} {} {{{{Q}}}} {{{{EPOCHS}}}} 0.05'.format(sys.executable, CURVE)
    spec = os.path.join(svc.directory, 'hb.yaml')
    with open(spec, 'w', encoding='utf-8') as f:
        f.write('\n'.join([
            'jobNamePrefix: hb', 'objective: {metric: val_accuracy, goal: max, step: epoch}',
            'sampling: {type: hyperband, resource: EPOCHS, minResource: 1, maxResource: 3, eta: 3, seed: 4}',
            'limits: {maxConcurrentJobs: 3}', 'parameters:', '  - {name: Q, type: discrete, values: [0.1, 0.5, 0.9]}',
            'job:', '  nodeCount: 1', '  stdOutErrPathPrefix: $AZ_BATCHAI_JOB_TEMP/logs',
            '  customToolkitSettings: {{commandLine: "{}"}}'.format(command), '']))
    run = svc.az('batchai', 'sweep', 'run', *svc.group(), '-e', 'hb', '-n', 'hb', '--spec', spec, '-c', 'hb',
                 '--poll-interval', '0.3', '-o', 'json')
    assert run.exit_code == 0, run.stderr
    result = run.json()
    assert result['decisions'].get('promoted', 0) >= 1, result['decisions']
    assert result['best']['parameters'] == {'Q': 0.9} and result['best']['step'] == 3
    assert len(tasks(svc.double)) == result['jobs']
