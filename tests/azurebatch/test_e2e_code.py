"""`--code` on the Azure Batch scheduler, end to end through the real az (docs/code.md): az uploads the snapshot to
the service's share `sweep-code` as for every scheduler; the service copies it once per content to the cluster
storage's task-log container with its storage token (task_logs.TaskLogs.readable_url) and hands it to each
one-node task as a `resourceFiles` entry (a read-only user delegation SAS URL; code_files.py), which Batch downloads
into the task's working directory before the command runs, where the job's preparation unpacks it: the cluster does
not mount the share `sweep-code`.

The Batch data plane is the lifecycle double (TEST CODE), whose node agent downloads `resourceFiles` with a real Get
Blob as Batch's documented contract says (the Batch spec's ResourceFile: no recorded answer holds a download: see
double/runner.resource_file_failure); the Blob service is Azurite over HTTPS with OAuth (it checks the SAS as Azure
Storage does). The service runs in the test's process for the same reason as in test_e2e_task_logs.py (the storage
endpoints and tokens can only be given at construction): its fixture is used here."""
import json
import os
import urllib.parse

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.task_logs import CONTAINER
from tests.azurebatch.e2e_fixtures import tasks
from tests.azurebatch.test_e2e_task_logs import (  # noqa: F401 pylint: disable=unused-import
    STORAGE, _assert_no_secret, _cluster, _job_names, _text, _wait, logs_service)

pytestmark = [pytest.mark.az, pytest.mark.service]

# What each job prints: the snapshot's files it sees (sorted), one file's content and its parameter.
COMMAND = ('find . -type f | sort | grep -v "^./mounts/\\|^./hostfile" | tr "\\n" " "; echo; cat data.txt; '
           'echo "X={{X}} dir=$AZ_BATCHAI_SWEEP_CODE_DIR pwd=$(pwd)"')


def _code_folder(directory):
    code = os.path.join(directory, 'src')
    os.makedirs(os.path.join(code, 'lib'))
    files = {'data.txt': 'version 1\n', 'lib/util.py': 'print(1)\n', '.gitignore': 'secret.txt\n*.log\n',
             '.sweepignore': 'big/\n', 'secret.txt': 'do not send\n', 'run.log': 'noise\n', 'big/blob.bin': 'x' * 999}
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(code, name)), exist_ok=True)
        with open(os.path.join(code, name), 'w', encoding='utf-8') as f:
            f.write(text)
    return code


def _submit(svc, name, cluster, code, values):
    body = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/afs',
            'constraints': {'maxWallClockTime': 'PT1H'}, 'customToolkitSettings': {'commandLine': COMMAND}}
    spec = os.path.join(svc.directory, name + '.yaml')
    with open(spec, 'w', encoding='utf-8') as f:
        f.write('jobNamePrefix: cd\nparameters:\n  - {{name: X, type: discrete, values: {}}}\njob: {}\n'.format(
            json.dumps(list(values)), json.dumps(body)))
    target = [*svc.group(), '-e', name, '-n', name]
    submitted = svc.az('batchai', 'sweep', 'submit', *target, '--spec', spec, '-c', cluster, '--code', code,
                       '--storage-account-name', STORAGE, '-o', 'json')
    assert submitted.exit_code == 0, submitted.stderr
    return target, submitted


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


def test_a_three_job_sweep_with_code_runs_its_snapshot_from_resource_files(logs_service):
    svc = logs_service
    _cluster(svc, 'c0', nodes=2)  # mounts its own share only: no `sweep-code` mount
    code = _code_folder(svc.directory)
    first, submitted = _submit(svc, 'one', 'c0', code, (1, 2, 3))
    assert 'Uploaded code snapshot' in submitted.stderr, submitted.stderr
    assert _wait(svc, first)['succeeded'] == 3

    names = _job_names(svc, 'one')
    assert len(names) == 3
    seen = set()
    for name in names:
        lines = _text(svc, 'one', name, 'stdout.txt').splitlines()
        # every job sees the snapshot, less what .gitignore and .sweepignore leave out (and .git, none here)
        assert lines[0].split() == ['./.gitignore', './.sweepignore', './data.txt', './lib/util.py'], lines
        assert lines[1] == 'version 1'
        x, directory, pwd = lines[2].split()
        seen.add(x)
        assert directory.endswith('/sweep-code') and pwd == directory.replace('dir=', 'pwd='), lines
    assert seen == {'X=1', 'X=2', 'X=3'}

    # Each task got the snapshot as a resource file (one blob, a read-only SAS); the pool mounts no `sweep-code`.
    bodies = [t.body for t in tasks(svc.double)]
    blobs = _code_blobs(svc)
    (blob,) = blobs
    for body in bodies:
        (resource,) = body['resourceFiles']
        url, query = resource['httpUrl'].split('?', 1)
        assert url == '{}/{}/{}'.format(svc.blob.blob_endpoint, CONTAINER, blob)
        fields = urllib.parse.parse_qs(query)
        assert (fields['sp'], fields['sr'], fields['spr']) == (['r'], ['b'], ['https'])
        assert resource['filePath'] == 'mounts/sweep-code/' + blob.split('/')[1]
        assert not any('sig=' in e['value'] for e in body['environmentSettings'])
    with svc.double.account.lock:
        (pool,) = svc.double.account.pools.values()
        assert 'sweep-code' not in json.dumps(pool.body)

    # The same folder again (another sweep): az does not upload it again, nor the service copy it again.
    second, again = _submit(svc, 'two', 'c0', code, (4,))
    assert 'not uploaded again' in again.stderr and 'Uploaded code snapshot' not in again.stderr, again.stderr
    assert _wait(svc, second)['succeeded'] == 1
    assert _code_blobs(svc) == blobs  # same blob, same ETag: not written again
    (name,) = _job_names(svc, 'two')
    assert _text(svc, 'two', name, 'stdout.txt').splitlines()[1] == 'version 1'

    # A changed folder is a new snapshot: a new blob, and the job sees the change.
    with open(os.path.join(code, 'data.txt'), 'w', encoding='utf-8') as f:
        f.write('version 2\n')
    third, changed = _submit(svc, 'three', 'c0', code, (5,))
    assert 'Uploaded code snapshot' in changed.stderr, changed.stderr
    assert _wait(svc, third)['succeeded'] == 1
    assert len(_code_blobs(svc)) == 2
    (name,) = _job_names(svc, 'three')
    assert _text(svc, 'three', name, 'stdout.txt').splitlines()[1] == 'version 2'

    # The read SAS went to Batch in the task bodies only: never into the data dir, az's output or the job's view.
    shown = svc.az('batchai', 'job', 'show', *svc.group(), '-e', 'three', '-n', name, '-o', 'json', '--debug')
    sas = [r['httpUrl'].split('?', 1)[1] for t in tasks(svc.double) for r in t.body['resourceFiles']]
    _assert_no_secret(svc, sas, submitted.stderr + again.stderr + changed.stderr, shown.stdout + shown.stderr)
