"""A job's stdout/stderr and output directory on the pool's mounted Blob container (`azureBlobFileSystems`,
blobfuse), where the job writes them (`$AZ_BATCHAI_MOUNT_ROOT/<mount>/...`), read back through the service's API
(`job file list/stream`, `sweep status --tail`) on the Azure Batch scheduler, as for an Azure file share.

The Batch data plane is the lifecycle double (tasks as local processes writing to the container's local folder
through the node's mount link); what blobfuse does on a node (each file uploaded whole to the container) is stood
in for by double/blobfuse.py (TEST CODE), uploading that folder's changed files to Azurite over HTTPS with OAuth
(tests/fixtures_azurite.azurite_oauth). The service reads the container with List Blobs and ranged Get Blob and a
bearer token, as on Azure.

The service runs in the test's process, built with its parts (e2e_fixtures.serve), as in
test_e2e_share_outputs.py and for the same reason: `<account>.blob.core.windows.net` cannot be reached offline, so
the reader is given Azurite's endpoint, and a storage token Azurite accepts instead of az's (`az account
get-access-token --resource https://storage.azure.com/`); only construction can give them."""
import json
import os
import time

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.share_reader import ShareMirror
from tests.azurebatch.double.blobfuse import BlobfuseStandIn
from tests.azurebatch.e2e_fixtures import serve, wait_until
from tests.azurebatch.test_e2e_share_outputs import _open, _text, submit_gated
from tests.fixtures_azurite import DEV_ACCOUNT_NAME, azurite_oauth

pytestmark = [pytest.mark.az, pytest.mark.service]

STORAGE = DEV_ACCOUNT_NAME  # the cluster mounts a container of the storage account Azurite stands for
CONTAINER = 'outputs'


@pytest.fixture
def blob_service(tmp_path, monkeypatch):
    """The service on the Batch double, reading the pools' Blob container from Azurite, which the blobfuse
    stand-in fills from the container's local folder (the double's mount)."""
    from tests.azurebatch.double import BatchDouble
    double = BatchDouble(str(tmp_path / 'batch'))
    monkeypatch.setenv('REQUESTS_CA_BUNDLE', double.ca_file)
    try:
        with azurite_oauth(double.ca) as blob:
            fuse = BlobfuseStandIn(blob.blob_endpoint, blob.token, blob.ca_file)
            fuse.follow(os.path.join(double.account.root, 'storage', STORAGE, 'blobs', CONTAINER), CONTAINER)
            double.account.blobfuse = fuse
            reader = ShareMirror(credential=AzLoginCredential(source=lambda: (blob.token(), time.time() + 3600)),
                                 endpoint=lambda account, url: blob.blob_endpoint)
            handle = serve(double, tmp_path, shares=reader, task_logs=None)  # no outputFiles here
            handle.reader, handle.fuse = reader, fuse
            try:
                yield handle
            finally:
                handle.service.shutdown()
                fuse.close()
    finally:
        double.close()


def _submit(svc, experiment, before, after):
    """A cluster mounting the container at `bfs` and a sweep of one job writing its stdout and output OUT (in
    `bfs/models`) there: `before`, then it waits for the gate file, then `after`. (sweep target, gate file, job)."""
    config = os.path.join(svc.directory, experiment + '.json')
    with open(config, 'w', encoding='utf-8') as f:
        json.dump({'properties': {'nodeSetup': {'mountVolumes': {'azureBlobFileSystems': [{
            'accountName': STORAGE, 'containerName': CONTAINER, 'credentials': {'accountKey': 'bm90LWEta2V5'},
            'relativeMountPath': 'bfs'}]}}}}, f)
    created = svc.az('batchai', 'cluster', 'create', '-n', experiment, *svc.group(), '-s', 'Standard_D2s_v3', '-t',
                     '1', '-u', 'batchai', '-p', 'not-used-0A!', '-f', config)
    assert created.exit_code == 0, created.stderr
    return submit_gated(svc, experiment, 'bfs', before, after, out='models')


def _nested(svc, experiment, job):
    """OUT's `run 1/f\u00e9.txt` as `job file list -d OUT --path 'run 1'` links it."""
    import urllib.request
    listed = svc.az('batchai', 'job', 'file', 'list', *svc.group(), '-e', experiment, '-j', job, '-d', 'OUT',
                    '--path', 'run 1', '-o', 'json')
    assert listed.exit_code == 0, listed.stderr
    links = [f['downloadUrl'] for f in listed.json() if f['name'].endswith('f\u00e9.txt')]
    if not links:
        return ''
    with urllib.request.urlopen(links[0], timeout=10) as answer:  # noqa: S310 (the local service's own link)
        return answer.read().decode('utf-8')


def test_outputs_on_a_blob_mount_are_read_through_the_api(blob_service):
    svc = blob_service
    target, gate, name = _submit(
        svc, 'bl', 'echo epoch=1 loss=0.5; mkdir -p "$AZ_BATCHAI_OUTPUT_OUT/run 1"; '
                   'echo x{{X}} > "$AZ_BATCHAI_OUTPUT_OUT/run 1/f\u00e9.txt"', 'echo epoch=2 loss=0.25')
    # While it runs: its stdout and its output file (in a nested folder, a name with a space and unicode).
    wait_until(lambda: 'epoch=1' in _text(svc, 'bl', name, 'stdouterr', 'stdout.txt'), what='stdout read')
    wait_until(lambda: _nested(svc, 'bl', name) == 'x7\n', what='output read')
    assert any(c == 'outputs' and n.endswith('/stdouterr/stdout.txt') for c, n in svc.fuse.uploads)
    tail = svc.az('batchai', 'sweep', 'status', *target, '--job', name, '--tail', '5', '-o', 'tsv')
    assert tail.exit_code == 0 and 'epoch=1 loss=0.5' in tail.stdout, tail.stdout + tail.stderr

    # Polls with nothing uploaded again read nothing (listings only).
    time.sleep(1.0)
    read = svc.reader.bytes_read
    time.sleep(2.0)  # several polls (files_seconds 0.5)
    assert svc.reader.bytes_read == read

    # More lines: the file is uploaded again whole (a new ETag) and read again from 0, never doubled.
    _open(gate)
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '-o', 'json')
    assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 1, waited.stdout + waited.stderr
    stdout = _text(svc, 'bl', name, 'stdouterr', 'stdout.txt')
    assert stdout.count('epoch=1 loss=0.5\n') == 1 and stdout.endswith('epoch=2 loss=0.25\n'), stdout
    streamed = svc.az('batchai', 'job', 'file', 'stream', *svc.group(), '-e', 'bl', '-j', name, '-f', 'stdout.txt')
    assert streamed.exit_code == 0 and streamed.stdout.count('epoch=2 loss=0.25') == 1, streamed.stdout
