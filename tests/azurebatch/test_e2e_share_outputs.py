"""A job's stdout/stderr and output directories on the pool's mounted Azure file share, where Batch AI's recipes put
them (`$AZ_BATCHAI_MOUNT_ROOT/<mount>/...`), read back through the service's API on the Azure Batch scheduler.

The Batch data plane is the lifecycle double (tasks as local processes writing to the share's local folder through
the node's mount link); the share is read over HTTPS by the service as on Azure, through the Files REST double
(files_double.py, TEST CODE: there is no Azure Files here), which checks the OAuth request (bearer token for the
storage resource, `x-ms-file-request-intent: backup`) and counts the bytes it sends.

The one end-to-end file whose service runs in the test's process, built with its parts (e2e_fixtures.serve: the
account as found, tokens from the doubles) instead of `az login` + `local start --batch-account`: the share reader
must be given the Files double's endpoint, as `<account>.file.core.windows.net` cannot be reached offline, and only
construction can give it."""
import json
import os
import time

import pytest

from tests.azurebatch.e2e_fixtures import files_service, start, tasks, wait_until

pytestmark = [pytest.mark.az, pytest.mark.service]

STORAGE = 'teststore'
SHARE = 'logs'


@pytest.fixture
def share_service(tmp_path, monkeypatch):
    """The service on the Batch double, reading shares from the Files double with a storage token (TEST CODE: the
    token comes from the Files double instead of `az account get-access-token --resource storage`)."""
    # No Blob service here: the task's own outputFiles (the task-log container) are test_e2e_task_logs.py's.
    with files_service(tmp_path, monkeypatch) as handle:
        yield handle


def _cluster(svc, name, mounts=('afs',), nodes=1):
    """A cluster mounting the share at each of `mounts` (relativeMountPath), from a cluster file as in Batch AI."""
    config = os.path.join(svc.directory, name + '.json')
    with open(config, 'w', encoding='utf-8') as f:
        json.dump({'properties': {'nodeSetup': {'mountVolumes': {'azureFileShares': [{
            'accountName': STORAGE, 'azureFileUrl': 'https://{}.file.core.windows.net/{}'.format(STORAGE, SHARE),
            'credentials': {'accountKey': 'bm90LWEta2V5'}, 'relativeMountPath': mount} for mount in mounts]}}}}, f)
    created = svc.az('batchai', 'cluster', 'create', '-n', name, *svc.group(), '-s', 'Standard_D2s_v3', '-t',
                     str(nodes), '-u', 'batchai', '-p', 'not-used-0A!', '-f', config)
    assert created.exit_code == 0, created.stderr


def _submit(svc, experiment, before, after='', prefix='$AZ_BATCHAI_MOUNT_ROOT/afs'):
    """A cluster mounting the share and a sweep of one job writing its stdout and output OUT there (`prefix`), as
    Batch AI's recipes do: `before`, then it waits for the gate file, then `after`. (sweep target, gate file, job
    name)."""
    _cluster(svc, experiment)
    return submit_gated(svc, experiment, 'afs', before, after, prefix=prefix)


def submit_gated(svc, experiment, mount, before, after='', out='', prefix=None):
    """On cluster `experiment` (made), a sweep of one job writing its stdout at $AZ_BATCHAI_MOUNT_ROOT/`mount` and
    its output OUT at `mount`/`out` (`prefix`: both at that spelling instead): `before`, then it waits for the gate
    file, then `after`. (sweep target, gate file, job name)."""
    gate = os.path.join(svc.directory, experiment + '.gate')
    command = '{}; while [ ! -e {} ]; do sleep 0.1; done; {}'.format(before, gate, after or 'true')
    stdouterr = prefix or '$AZ_BATCHAI_MOUNT_ROOT/' + mount
    output = prefix or '/'.join(p for p in ('$AZ_BATCHAI_MOUNT_ROOT', mount, out) if p)
    body = {'nodeCount': 1, 'stdOutErrPathPrefix': stdouterr,
            'outputDirectories': [{'id': 'OUT', 'pathPrefix': output}],
            'customToolkitSettings': {'commandLine': command}}
    spec = os.path.join(svc.directory, experiment + '.yaml')
    with open(spec, 'w', encoding='utf-8') as f:
        f.write('jobNamePrefix: sh\nparameters:\n  - {{name: X, type: discrete, values: [7]}}\njob: {}\n'.format(
            json.dumps(body)))
    target = [*svc.group(), '-e', experiment, '-n', experiment]
    submitted = svc.az('batchai', 'sweep', 'submit', *target, '--spec', spec, '-c', experiment, '-o', 'json')
    assert submitted.exit_code == 0, submitted.stderr
    return target, gate, _job(svc, experiment)['name']


def _open(gate):
    with open(gate, 'w', encoding='utf-8'):
        pass


def _job(svc, experiment):
    (job,) = svc.az('batchai', 'job', 'list', *svc.group(), '-e', experiment, '-o', 'json').json()
    return job


def _text(svc, experiment, job, directory, name):
    """A file of the job as the service serves it now (its download link from `job file list`)."""
    import urllib.request
    listed = svc.az('batchai', 'job', 'file', 'list', *svc.group(), '-e', experiment, '-j', job, '-d', directory,
                    '-o', 'json')
    assert listed.exit_code == 0, listed.stderr
    links = [f['downloadUrl'] for f in listed.json() if f['name'] == name]
    if not links:
        return ''
    with urllib.request.urlopen(links[0], timeout=10) as answer:  # noqa: S310 (the local service's own link)
        return answer.read().decode('utf-8')


def _stdout_reads(files):
    return [(r, n) for path, r, n in files.file_reads() if path.endswith('/stdouterr/stdout.txt')]


def test_outputs_on_the_share_are_read_with_range_reads_through_the_api(share_service):
    svc = share_service
    target, gate, name = _submit(svc, 'ab', 'echo epoch=1 loss=0.5; echo x{{X}} > $AZ_BATCHAI_OUTPUT_OUT/f.txt',
                                 'echo epoch=2 loss=0.25')
    # The job wrote on the share (the Batch double's folder for it), not in the task's directory.
    share_dir = os.path.join(svc.double.account.root, 'storage', STORAGE, 'files', SHARE)
    wait_until(lambda: 'epoch=1' in _text(svc, 'ab', name, 'stdouterr', 'stdout.txt'), what='stdout read')
    assert any('stdouterr' in d for d, _, _ in os.walk(share_dir))
    assert _text(svc, 'ab', name, 'OUT', 'f.txt') == 'x7\n'

    # A running job's tail through `sweep status --tail`, from the share.
    tail = svc.az('batchai', 'sweep', 'status', *target, '--job', name, '--tail', '5', '-o', 'tsv')
    assert tail.exit_code == 0 and 'epoch=1 loss=0.5' in tail.stdout, tail.stdout + tail.stderr

    # Polls with nothing new download nothing (listings only).
    first = len('epoch=1 loss=0.5\n')
    assert sum(n for _, n in _stdout_reads(svc.files)) == first
    svc.files.reset_counts()
    time.sleep(2.0)  # several polls (files_seconds 0.5)
    assert svc.files.file_reads() == [] and svc.files.requests, svc.files.file_reads()

    # New lines: the next poll reads only those bytes (a Range from the size already read).
    _open(gate)
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '-o', 'json')
    assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 1, waited.stdout + waited.stderr
    added = len('epoch=2 loss=0.25\n')
    assert _stdout_reads(svc.files) == [('bytes={}-{}'.format(first, first + added - 1), added)]
    assert svc.scheduler.shares.bytes_read == first + len('x7\n') + added

    streamed = svc.az('batchai', 'job', 'file', 'stream', *svc.group(), '-e', 'ab', '-j', name, '-f', 'stdout.txt')
    assert streamed.exit_code == 0 and streamed.stdout.splitlines()[-2:] == ['epoch=1 loss=0.5', 'epoch=2 loss=0.25']
    ranked = svc.az('batchai', 'sweep', 'metrics', *target, '--metric', 'loss', '--goal', 'min', '-o', 'json')
    assert ranked.exit_code == 0, ranked.stderr
    rows = ranked.json()
    rows = rows.get('jobs', rows) if isinstance(rows, dict) else rows
    assert [row['metric'] for row in rows] == [0.25]
    # Every read carried the OAuth headers Azure Files needs (the double refuses others): none was refused.
    assert all(r.status in (200, 206) for r in svc.files.requests)


def test_a_share_prefix_spelt_with_a_trailing_slash_or_a_double_slash_is_read_from_the_share(share_service):
    """`$AZ_BATCHAI_MOUNT_ROOT/<share>/` and `.../<share>//sub/` name the share's folders as Batch AI put them
    (docs/job-environment.md): the job's stdout is on the share there and `job file list/stream` find it (before:
    `job file list` answered InvalidDirectory, the service's folder of the job not being the path it compared)."""
    svc = share_service
    share_dir = os.path.join(svc.double.account.root, 'storage', STORAGE, 'files', SHARE)
    for experiment, prefix, below in (('slash', '$AZ_BATCHAI_MOUNT_ROOT/afs/', ''),
                                      ('sub', '$AZ_BATCHAI_MOUNT_ROOT/afs//sub/', 'sub')):
        target, gate, name = _submit(svc, experiment, 'echo in-{} loss=1'.format(experiment), prefix=prefix)
        _open(gate)
        waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '-o', 'json')
        assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 1, waited.stdout + waited.stderr
        segment = _job(svc, experiment)['jobOutputDirectoryPathSegment']
        with open(os.path.join(share_dir, below, segment, 'stdouterr', 'stdout.txt'), encoding='utf-8') as f:
            assert 'in-{} loss=1'.format(experiment) in f.read()
        wait_until(lambda e=experiment, n=name: 'in-{}'.format(e) in _text(svc, e, n, 'stdouterr', 'stdout.txt'),
                   what='stdout read from the share')
        streamed = svc.az('batchai', 'job', 'file', 'stream', *svc.group(), '-e', experiment, '-j', name, '-f',
                          'stdout.txt')
        assert streamed.exit_code == 0 and 'in-{} loss=1'.format(experiment) in streamed.stdout, streamed.stderr


def test_a_preempted_attempt_outputs_are_not_doubled(share_service):
    svc = share_service
    target, gate, name = _submit(svc, 'pre', 'echo attempt loss={{X}}; echo attempt >> $AZ_BATCHAI_OUTPUT_OUT/log.txt')
    wait_until(lambda: 'attempt' in _text(svc, 'pre', name, 'OUT', 'log.txt'), what='the first attempt is read')
    # The node stays gone until the job was seen queued (a timed recovery can pass between two slow az polls).
    node = svc.double.account.preempt(task_id=tasks(svc.double)[0].id, recover=False)
    wait_until(lambda: _job(svc, 'pre')['executionState'] == 'queued', what='the job is queued again')
    svc.double.account.recover(node)
    _open(gate)
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '-o', 'json')
    assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 1, waited.stdout + waited.stderr
    assert tasks(svc.double)[0].requeues == 1
    assert _text(svc, 'pre', name, 'OUT', 'log.txt') == 'attempt\n'
    assert _text(svc, 'pre', name, 'stdouterr', 'stdout.txt').count('attempt') == 1


def test_outputs_on_the_share_outlive_the_node(share_service):
    """The task ends while the service is down and its node goes before the service is back: the task file API has
    nothing left, the share has every byte (issue 31 rule 3: outputs reach persistent storage before the node
    goes), and the restarted service reads them from there."""
    svc = share_service
    target, gate, name = _submit(svc, 'gone', 'true', 'echo done loss=3; echo out > $AZ_BATCHAI_OUTPUT_OUT/o')
    wait_until(lambda: [t.state for t in tasks(svc.double)] == ['running'], what='the task runs')
    svc.service.shutdown()
    _open(gate)
    svc.double.account.wait(lambda: tasks(svc.double)[0].state == 'completed', timeout=30)
    with svc.double.account.lock:
        (pool,) = svc.double.account.pools.values()
        (node,) = pool.nodes.values()
        svc.double.account.remove_node(node)
    svc.service = start(svc.double, svc.service.data_dir, **svc.extra)
    svc.az.env.update({'AZURE_BATCHAI_SWEEP_ENDPOINT': svc.service.info()['endpoint'],
                       'AZURE_BATCHAI_SWEEP_TOKEN_FILE': svc.service.info()['tokenFile']})
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '-o', 'json')
    assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 1, waited.stdout + waited.stderr
    assert 'done loss=3' in _text(svc, 'gone', name, 'stdouterr', 'stdout.txt')
    assert _text(svc, 'gone', name, 'OUT', 'o') == 'out\n'


def test_sweep_run_follows_the_job_logs_on_the_share(share_service):
    """`sweep run`'s controller (Hyperband: it promotes on the epochs a job has reported so far) reads each job's
    stdout on the share through the service while the task runs."""
    from tests.tuning.run_helpers import write_sweep
    svc = share_service
    _cluster(svc, 'hb', mounts=('logs', 'outputs'), nodes=3)  # where run_helpers' sweeps write (Batch AI's recipes)
    spec = write_sweep(svc.directory, 'hb', ['sampling: {type: hyperband, resource: EPOCHS, minResource: 1, '
                                             'maxResource: 3, eta: 3, seed: 4}', 'limits: {maxConcurrentJobs: 3}'],
                       [0.1, 0.5, 0.9])
    run = svc.az('batchai', 'sweep', 'run', *svc.group(), '-e', 'hb', '-n', 'hb', '--spec', spec, '-c', 'hb',
                 '--poll-interval', '0.3', '-o', 'json')
    assert run.exit_code == 0, run.stderr
    decisions, best = run.json()['decisions'], run.json()['best']
    assert (decisions.get('promoted', 0) >= 1, best['parameters'], best['step']) == (True, {'Q': 0.9}, 3), decisions
    assert any(path.endswith('/stdouterr/stdout.txt') for path, _, _ in svc.files.file_reads())
