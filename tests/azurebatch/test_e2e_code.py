"""`--code` on the Azure Batch scheduler, end to end through the real az (docs/code.md): az uploads the snapshot to
the service's share `sweep-code` as for every scheduler; the service copies it once per content to the cluster
storage's task-log container with its storage token (task_logs.TaskLogs.readable_url) and hands it to each task as
a read-only user delegation SAS URL (code_files.py): a one-node task's `resourceFiles` entry, which Batch downloads
into the task's working directory, or a multi-instance task's `multiInstanceSettings.commonResourceFiles` entry,
which Batch downloads on every node into the task's root directory, where the node wrapper links it; each node's
job preparation unpacks it before the command runs. The cluster does not mount the share `sweep-code`.

The Batch data plane is the lifecycle double (TEST CODE) behind Prism (`batch_prism`: every request the service
sends and every answer checked against the Batch spec). Its node agent downloads `resourceFiles` and
`commonResourceFiles` with a real Get Blob as Batch's documented contract says (the Batch spec's ResourceFile and
MultiInstanceSettings: no recorded answer holds a download: see double/runner.resource_file_failure); the Blob
service is Azurite over HTTPS with OAuth (it checks the SAS as Azure Storage does). The service runs in the test's
process for the same reason as in test_e2e_task_logs.py (the storage endpoints and tokens can only be given at
construction)."""
import json
import os
import time
import urllib.parse

import pytest

from azext_batchai_sweep.core.code.snapshot import take_snapshot
from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.task_logs import CONTAINER
from tests.azurebatch.e2e_fixtures import HPC_IMAGE, SUPPORTED_IMAGES, tasks, wait_until  # noqa: F401
from tests.azurebatch.test_e2e_task_logs import (SHARE, STORAGE, _assert_no_secret, _cluster, _text, _wait,
                                                 service_with_task_logs)

pytestmark = [pytest.mark.az, pytest.mark.service]

# What each job prints: the snapshot's files it sees (sorted), one file's content and its parameter.
COMMAND = ('find . -type f | sort | grep -v "^./mounts/\\|^./hostfile" | tr "\\n" " "; echo; cat data.txt; '
           'echo "X={{X}} dir=$AZ_BATCHAI_SWEEP_CODE_DIR pwd=$(pwd)"')
KEPT = ['./.gitignore', './.sweepignore', './data.txt', './lib/util.py']


@pytest.fixture(name='code_service')
def _code_service(tmp_path, monkeypatch, batch_prism):
    """The service on the Batch double behind Prism, its task logs and code snapshots on Azurite, its share on the
    Files double; the account offers an HPC image too (a multi-node cluster's)."""
    with service_with_task_logs(tmp_path, monkeypatch, prism=batch_prism,
                                images=SUPPORTED_IMAGES + [HPC_IMAGE]) as handle:
        yield handle


def _code_folder(directory):
    code = os.path.join(directory, 'src')
    os.makedirs(os.path.join(code, 'lib'))
    files = {'data.txt': 'version 1\n', 'lib/util.py': 'print(1)\n', '.gitignore': 'secret.txt\n*.log\n',
             '.sweepignore': 'big/\n', 'secret.txt': 'do not send\n', 'run.log': 'noise\n', 'big/blob.bin': 'x' * 999,
             '.git/HEAD': 'ref: refs/heads/main\n'}
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(code, name)), exist_ok=True)
        with open(os.path.join(code, name), 'w', encoding='utf-8') as f:
            f.write(text)
    return code


def _submit(svc, name, cluster, code, values, command=COMMAND, **job):
    """A sweep of ``values`` of X sending ``code``; a week of wall clock (the double's clock runs 600 times as
    fast: held jobs wait for minutes of Batch's time)."""
    body = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/afs',
            'constraints': {'maxWallClockTime': 'P7D'}, 'customToolkitSettings': {'commandLine': command}, **job}
    spec = os.path.join(svc.directory, name + '.yaml')
    with open(spec, 'w', encoding='utf-8') as f:
        f.write('jobNamePrefix: cd\nparameters:\n  - {{name: X, type: discrete, values: {}}}\njob: {}\n'.format(
            json.dumps(list(values)), json.dumps(body)))
    target = [*svc.group(), '-e', name, '-n', name]
    submitted = svc.az('batchai', 'sweep', 'submit', *target, '--spec', spec, '-c', cluster, '--code', code,
                       '--storage-account-name', STORAGE, '-o', 'json')
    assert submitted.exit_code == 0, submitted.stderr
    return target, submitted


def _write(path, text):
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


def _code_blobs(svc):
    """{blob name: ETag} of the task-log container's code snapshots (Azurite, with its token)."""
    from azure.storage.blob import ContainerClient
    client = ContainerClient(svc.blob.blob_endpoint, CONTAINER, credential=_Token(svc.blob.token()),
                             connection_verify=svc.blob.ca_file)
    return {b.name: b.etag for b in client.list_blobs(name_starts_with='code/')}


class _Token:  # pylint: disable=too-few-public-methods
    def __init__(self, token):
        self.token = token

    def get_token(self, *scopes, **kwargs):  # pylint: disable=unused-argument
        from azure.core.credentials import AccessToken
        import time
        return AccessToken(self.token, int(time.time()) + 3600)


def test_one_node_jobs_of_a_sweep_run_one_snapshot_uploaded_once_while_the_folder_changes(code_service):
    """Sweep `one` (3 jobs; X=1 fails until a file exists) is held while the folder changes and the changed folder
    is uploaded by another sweep: all of one's jobs run its snapshot (one of them not even started when the folder
    changed), sweep `three` the new one, sweep `two` (the same folder as one) is not uploaded again; resubmit runs
    one's failed job on one's snapshot; `status -o json` records each job's hash."""
    svc = code_service
    _cluster(svc, 'c0', nodes=2)  # mounts its own share only: no `sweep-code` mount
    code = _code_folder(svc.directory)
    gate, fixed = os.path.join(svc.directory, 'gate'), os.path.join(svc.directory, 'fixed')
    # Held until the gate opens; what it sees also goes to the cluster's share (seen-X.txt: read there, not through
    # two az calls a job); X=1 fails until `fixed` exists.
    held = ('while [ ! -e {} ]; do sleep 0.1; done; {{ {}; }} | tee "$AZ_BATCHAI_MOUNT_ROOT/afs/seen-{{{{X}}}}.txt"; '
            'test {{{{X}}}} != 1 || test -e {}').format(gate, COMMAND, fixed)
    first_hash = take_snapshot(code).digest
    first, submitted = _submit(svc, 'one', 'c0', code, (1, 2, 3), command=held)
    assert 'Uploaded code snapshot' in submitted.stderr, submitted.stderr
    second, again = _submit(svc, 'two', 'c0', code, (4,), command=held)
    assert 'not uploaded again' in again.stderr and 'Uploaded code snapshot' not in again.stderr, again.stderr
    wait_until(lambda: [t.state for t in tasks(svc.double)].count('running') == 2, what='two jobs hold the nodes')

    _write(os.path.join(code, 'data.txt'), 'version 2\n')  # the folder changes while sweep one runs
    third, changed = _submit(svc, 'three', 'c0', code, (5,), command=held)
    assert 'Uploaded code snapshot' in changed.stderr, changed.stderr  # a new snapshot: uploaded
    assert 'active' in [t.state for t in tasks(svc.double)]  # (a job of one still waits for a node)
    _write(gate, '')
    ran = svc.az('batchai', 'sweep', 'status', *first, '--wait', '--interval', '0.5', '-o', 'json')
    assert ran.exit_code == 4, ran.stdout + ran.stderr  # X=1 failed, as it should
    assert {row['code'] for row in ran.json()['jobs']} == {first_hash} and len(ran.json()['jobs']) == 3
    assert _wait(svc, second)['succeeded'] == 1 and _wait(svc, third)['succeeded'] == 1

    share = os.path.join(svc.double.account.root, 'storage', STORAGE, 'files', SHARE)  # (the cluster's `afs`)
    for x, version in ((1, 1), (2, 1), (3, 1), (4, 1), (5, 2)):  # sweeps one and two: version 1; three: 2
        with open(os.path.join(share, 'seen-{}.txt'.format(x)), encoding='utf-8') as f:
            lines = f.read().splitlines()
        # each job sees its snapshot, less .git and what .gitignore and .sweepignore leave out
        assert lines[0].split() == KEPT and lines[1] == 'version {}'.format(version), lines
        shown_x, directory, pwd = lines[2].split()
        assert shown_x == 'X={}'.format(x), lines
        assert directory.endswith('/sweep-code') and pwd == directory.replace('dir=', 'pwd='), lines

    # Each task got its snapshot as a resource file (one blob per snapshot, a read-only SAS); no `sweep-code` mount.
    blobs = _code_blobs(svc)
    assert sorted(blobs) == sorted('code/{}.tar.gz'.format(h) for h in (first_hash, take_snapshot(code).digest))
    for task in tasks(svc.double):
        (resource,) = task.body['resourceFiles']
        url, query = resource['httpUrl'].split('?', 1)
        blob = url.rsplit('/', 2)[-2] + '/' + url.rsplit('/', 1)[-1]
        assert url == '{}/{}/{}'.format(svc.blob.blob_endpoint, CONTAINER, blob) and blob in blobs
        fields = urllib.parse.parse_qs(query)
        assert (fields['sp'], fields['sr'], fields['spr']) == (['r'], ['b'], ['https'])
        assert resource['filePath'] == 'mounts/sweep-code/' + blob.split('/')[1]
        assert not any('sig=' in e['value'] for e in task.body['environmentSettings'])
    with svc.double.account.lock:
        (pool,) = svc.double.account.pools.values()
        assert 'sweep-code' not in json.dumps(pool.body)

    # resubmit runs the failed job again on the sweep's snapshot, not on the folder as it is now (version 2).
    _write(fixed, '')
    resubmitted = svc.az('batchai', 'sweep', 'resubmit', *first, '--plan-file', 'one.plan.jsonl', '--wait',
                         '--interval', '0.5', '-o', 'json')
    assert resubmitted.exit_code == 0, resubmitted.stdout + resubmitted.stderr
    (again_name,) = resubmitted.json()['resubmitted']
    lines = _text(svc, 'one', again_name, 'stdout.txt').splitlines()  # (as `job file stream` shows it)
    assert lines[0].split() == KEPT and lines[1] == 'version 1' and lines[2].startswith('X=1 '), lines
    status = svc.az('batchai', 'sweep', 'status', *first, '-o', 'json')
    assert status.json()['counts']['succeeded'] == 3 and {r['code'] for r in status.json()['jobs']} == {first_hash}
    assert _code_blobs(svc) == blobs  # same blobs, same ETags: nothing copied again

    # The read SAS went to Batch in the task bodies only: never into the data dir, az's output or the job's view.
    shown = svc.az('batchai', 'job', 'show', *svc.group(), '-e', 'one', '-n', again_name, '-o', 'json', '--debug')
    sas = [r['httpUrl'].split('?', 1)[1] for t in tasks(svc.double) for r in t.body['resourceFiles']]
    _assert_no_secret(svc, sas, submitted.stderr + again.stderr + changed.stderr, shown.stdout + shown.stderr)


def test_every_node_of_a_multi_node_job_unpacks_the_snapshot(code_service):
    """Issue 50 (fails on the old code: a job of several nodes kept the `sweep-code` mount, refused on a cluster
    without it). Each node's job preparation runs from its own unpacked copy (it writes what it sees on the
    cluster's share, one file per node), then the command runs from the master's."""
    svc = code_service
    _cluster(svc, 'mn', nodes=2)
    code = _code_folder(svc.directory)
    preparation = ('(find . -type f | sort | grep -v "^./mounts/" | tr "\\n" " "; cat data.txt; pwd) '
                   '> "$AZ_BATCHAI_MOUNT_ROOT/afs/prep-$AZ_BATCHAI_JOB_NAME-$AZ_BATCH_NODE_ID.txt"')
    command = '{{ {}; }} > "$AZ_BATCHAI_MOUNT_ROOT/afs/main-$AZ_BATCHAI_JOB_NAME.txt"'.format(COMMAND)
    target, submitted = _submit(svc, 'multi', 'mn', code, (1,), command=command, nodeCount=2,
                                jobPreparation={'commandLine': preparation})
    assert 'Uploaded code snapshot' in submitted.stderr, submitted.stderr
    assert _wait(svc, target)['succeeded'] == 1

    digest = take_snapshot(code).digest
    for task in tasks(svc.double):
        assert 'resourceFiles' not in task.body  # (the primary's alone: not enough)
        (common,) = task.body['multiInstanceSettings']['commonResourceFiles']
        assert common['filePath'] == 'sweep-code/{}.tar.gz'.format(digest)
        assert common['httpUrl'].split('?')[0].endswith('/{}/code/{}.tar.gz'.format(CONTAINER, digest))
    share = os.path.join(svc.double.account.root, 'storage', STORAGE, 'files', SHARE)  # (the cluster's `afs`)
    views = sorted(f for f in os.listdir(share) if f.startswith('prep-'))
    assert len(views) == 2, os.listdir(share)  # one per node
    folders = set()
    for view in views:
        with open(os.path.join(share, view), encoding='utf-8') as f:
            files, rest = f.read().split('./lib/util.py ', 1)
        assert files.split() + ['./lib/util.py'] == KEPT
        version, folder = rest.split('\n')[:2]
        assert version == 'version 1' and folder.endswith('/wd/sweep-code')
        folders.add(folder)
    assert len(folders) == 2  # each node unpacked into its own working directory
    (main,) = [f for f in os.listdir(share) if f.startswith('main-')]
    with open(os.path.join(share, main), encoding='utf-8') as f:
        lines = f.read().splitlines()
    assert lines[0].split() == KEPT and lines[1] == 'version 1', lines  # the master's command, from its copy
    assert lines[2].split()[1][len('dir='):] in folders  # (the master's working directory's copy)
