"""blob_reader.py (through share_reader.ShareMirror, as the scheduler calls it): which job directories are on a
mounted Blob container, and how they are copied (List Blobs under the directory's prefix, ranged Get Blob of the
bytes not read yet, an offset kept with the ETag: a blob uploaded again read from 0, never doubled).

The container is Azurite over HTTPS with OAuth (tests/fixtures_azurite.azurite_oauth: bearer tokens checked as
Azure Storage checks them); blobs are written there with Put Blob as blobfuse writes them (double/blobfuse.py, TEST
CODE). `<account>.blob.core.windows.net` cannot be reached offline, so the reader's endpoint is Azurite's."""
import logging
import os
import time
from types import SimpleNamespace

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.mounts import storage_folders
from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.share_reader import ShareMirror
from azext_batchai_sweep.localservice.layout import JobLayout
from tests.azurebatch.double.blobfuse import BlobfuseStandIn
from tests.azurebatch.test_share_reader import assert_refused_once
from tests.azurebatch.tls_ca import TestCA
from tests.fixtures_azurite import DEV_ACCOUNT_NAME, azurite_oauth

SEGMENT = 'sub/rg/ws/exp/job/uid1'
CONTAINER = 'outputs'
CLUSTER = {'nodeSetup': {'mountVolumes': {'azureBlobFileSystems': [{
    'accountName': DEV_ACCOUNT_NAME, 'containerName': CONTAINER, 'relativeMountPath': 'bfs'}]}}}


def _job(stdouterr, *outputs):
    return {'jobOutputDirectoryPathSegment': SEGMENT, 'stdOutErrPathPrefix': stdouterr,
            'outputDirectories': [{'id': 'O{}'.format(i), 'pathPrefix': p} for i, p in enumerate(outputs)]}


@pytest.mark.parametrize('job, cluster, job_mounts, expected', [
    # Under the cluster's container mount, at its root or in a folder of it: the container, that name prefix.
    (_job('$AZ_BATCHAI_MOUNT_ROOT/bfs', '$AZ_BATCHAI_MOUNT_ROOT/bfs/out'), CLUSTER, {},
     [('blob', DEV_ACCOUNT_NAME, 'https://devstoreaccount1.blob.core.windows.net/outputs', SEGMENT + '/stdouterr',
       'stdouterr'),
      ('blob', DEV_ACCOUNT_NAME, 'https://devstoreaccount1.blob.core.windows.net/outputs',
       'out/' + SEGMENT + '/outputs', 'O0')]),
    # The job's own mount of the cluster's container; beside the mount (bfsx) or in the task's directory: not.
    (_job('$AZ_BATCHAI_JOB_MOUNT_ROOT/jb/l', '$AZ_BATCHAI_MOUNT_ROOT/bfsx', '$AZ_BATCHAI_JOB_TEMP/t'), CLUSTER,
     {'jb': 'bfs'}, [('blob', DEV_ACCOUNT_NAME, 'https://devstoreaccount1.blob.core.windows.net/outputs',
                      'l/' + SEGMENT + '/stdouterr', 'stdouterr')]),
    # The cloud's storage suffix from the cluster's Azure Files mount of the same account (as cluster create built).
    (_job('$AZ_BATCHAI_MOUNT_ROOT/bfs'), {'nodeSetup': {'mountVolumes': {
        'azureFileShares': [{'accountName': 'a', 'azureFileUrl': 'https://a.file.core.chinacloudapi.cn/s',
                             'relativeMountPath': 'afs'}],
        'azureBlobFileSystems': [{'accountName': 'a', 'containerName': 'c', 'relativeMountPath': 'bfs'}]}}}, {},
     [('blob', 'a', 'https://a.blob.core.chinacloudapi.cn/c', SEGMENT + '/stdouterr', 'stdouterr')]),
])
def test_storage_folders_on_a_blob_mount(job, cluster, job_mounts, expected):
    assert storage_folders(job, cluster, job_mounts) == expected


@pytest.fixture(scope='module')
def blob(tmp_path_factory):
    ca = TestCA(str(tmp_path_factory.mktemp('tls')))
    with azurite_oauth(ca) as service:
        writer = BlobfuseStandIn(service.blob_endpoint, service.token, service.ca_file)
        writer.create_container(CONTAINER)
        yield SimpleNamespace(blob_endpoint=service.blob_endpoint, token=service.token, ca_file=service.ca_file,
                              writer=writer)


def _mirror(blob, token=None):
    return ShareMirror(credential=AzLoginCredential(source=lambda: (token or blob.token(), time.time() + 3600)),
                       endpoint=lambda account, url: blob.blob_endpoint, connection_verify=blob.ca_file)


def _layout(tmp_path, segment):
    props = dict(_job('$AZ_BATCHAI_MOUNT_ROOT/bfs', '$AZ_BATCHAI_MOUNT_ROOT/bfs/out'),
                 jobOutputDirectoryPathSegment=segment)
    return JobLayout(str(tmp_path / 'data'), {'name': 'job', 'properties': props}, 'sub/rg/ws/clusters/c')


def _read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def test_blobs_are_read_once_and_again_whole_when_uploaded_again(blob, tmp_path):
    segment = SEGMENT + '-a'
    layout, mirror = _layout(tmp_path, segment), _mirror(blob)
    folders = mirror.folders(layout, {'properties': CLUSTER})
    stdouterr = segment + '/stdouterr/'
    blob.writer.upload(CONTAINER, stdouterr + 'stdout.txt', b'line 1\n')
    blob.writer.upload(CONTAINER, stdouterr + 'a/b c/d\u00e9j\u00e0 vu.txt', 'nested \u2713\n'.encode())
    blob.writer.upload(CONTAINER, 'out/' + segment + '/outputs/model.bin', b'\x00\x01' * 5000)
    blob.writer.upload(CONTAINER, segment + '/stdouterr-other/not-mine.txt', b'x')  # the same prefix but no `/`
    offsets = {}
    mirror.mirror(folders, layout, offsets)
    assert _read(os.path.join(layout.stdouterr_dir, 'stdout.txt')) == 'line 1\n'
    assert _read(os.path.join(layout.stdouterr_dir, 'a', 'b c', 'd\u00e9j\u00e0 vu.txt')) == 'nested \u2713\n'
    with open(os.path.join(layout.directory('O0'), 'model.bin'), 'rb') as f:
        assert f.read() == b'\x00\x01' * 5000
    assert sorted(os.listdir(layout.stdouterr_dir)) == ['a', 'stdout.txt']
    first = mirror.bytes_read
    assert first == 7 + len('nested \u2713\n'.encode()) + 10000

    mirror.mirror(folders, layout, offsets)  # nothing new: a listing only
    assert mirror.bytes_read == first

    # blobfuse uploads the file again whole (appended, or rewritten shorter): a new ETag, read from byte 0.
    blob.writer.upload(CONTAINER, stdouterr + 'stdout.txt', b'line 1\nline 2\n')
    mirror.mirror(folders, layout, offsets)
    assert _read(os.path.join(layout.stdouterr_dir, 'stdout.txt')) == 'line 1\nline 2\n'
    assert mirror.bytes_read == first + 14
    blob.writer.upload(CONTAINER, stdouterr + 'stdout.txt', b'new\n')
    mirror.mirror(folders, layout, offsets)
    assert _read(os.path.join(layout.stdouterr_dir, 'stdout.txt')) == 'new\n'
    # The same size, other bytes: the ETag tells it.
    blob.writer.upload(CONTAINER, stdouterr + 'stdout.txt', b'NEW\n')
    mirror.mirror(folders, layout, offsets)
    assert _read(os.path.join(layout.stdouterr_dir, 'stdout.txt')) == 'NEW\n'


def test_a_large_blob_is_read_in_ranges_and_a_read_cut_off_resumes(blob, tmp_path, monkeypatch):
    from azext_batchai_sweep.localservice.schedulers.azurebatch.storage import rest
    monkeypatch.setattr(rest, 'MAX_READ_BYTES', 1000)
    segment = SEGMENT + '-b'
    layout, mirror = _layout(tmp_path, segment), _mirror(blob)
    folders = mirror.folders(layout, {'properties': CLUSTER})
    data = bytes(range(256)) * 10
    blob.writer.upload(CONTAINER, segment + '/stdouterr/big.bin', data)
    offsets = {}
    mirror.mirror(folders, layout, offsets)
    with open(os.path.join(layout.stdouterr_dir, 'big.bin'), 'rb') as f:
        assert f.read() == data
    assert mirror.bytes_read == len(data)
    # Its offset is kept with its ETag: a copy that stopped part-way (the service stopped) reads only the rest.
    ((key, (etag, copied)),) = offsets.items()
    assert copied == len(data) and etag
    offsets[key] = (etag, 1000)
    mirror.mirror(folders, layout, offsets)
    assert mirror.bytes_read == len(data) * 2 - 1000
    with open(os.path.join(layout.stdouterr_dir, 'big.bin'), 'rb') as f:
        assert f.read() == data


def test_a_refused_read_is_logged_once_with_the_blob_role_and_no_token(blob, tmp_path, caplog):
    segment = SEGMENT + '-c'
    layout = _layout(tmp_path, segment)
    blob.writer.upload(CONTAINER, segment + '/stdouterr/stdout.txt', b'x\n')
    assert_refused_once(lambda token: _mirror(blob, token=token), layout, {'properties': CLUSTER}, caplog,
                        'container outputs of storage account devstoreaccount1', 'Storage Blob Data Reader')


def test_a_missing_container_or_prefix_reads_nothing_and_warns_nothing(blob, tmp_path, caplog):
    layout, mirror = _layout(tmp_path, SEGMENT + '-none'), _mirror(blob)
    cluster = {'nodeSetup': {'mountVolumes': {'azureBlobFileSystems': [{
        'accountName': DEV_ACCOUNT_NAME, 'containerName': 'absent', 'relativeMountPath': 'bfs'}]}}}
    with caplog.at_level(logging.WARNING):
        for body in (CLUSTER, cluster):
            mirror.mirror(mirror.folders(layout, {'properties': body}), layout, {})
    assert mirror.bytes_read == 0 and not os.path.exists(layout.stdouterr_dir)
    assert 'failed' not in caplog.text


def test_a_blob_uploaded_again_between_listing_and_read_is_read_at_the_next_poll(blob, tmp_path, monkeypatch):
    """Get Blob carries If-Match of the listed ETag: Azurite answers 412 for the newer upload, nothing is copied
    from a mix of two uploads, and the next poll reads the new one whole."""
    from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.blob_reader import BlobClient
    segment = SEGMENT + '-d'
    name = segment + '/stdouterr/stdout.txt'
    layout, mirror = _layout(tmp_path, segment), _mirror(blob)
    folders = mirror.folders(layout, {'properties': CLUSTER})
    blob.writer.upload(CONTAINER, name, b'first\n')
    listed = BlobClient.list_blobs

    def list_then_upload_again(self, *args):
        answer = listed(self, *args)
        blob.writer.upload(CONTAINER, name, b'second upload\n')
        return answer
    monkeypatch.setattr(BlobClient, 'list_blobs', list_then_upload_again)
    offsets = {}
    mirror.mirror(folders, layout, offsets)
    assert mirror.bytes_read == 0 and offsets == {}
    monkeypatch.setattr(BlobClient, 'list_blobs', listed)
    mirror.mirror(folders, layout, offsets)
    assert _read(os.path.join(layout.stdouterr_dir, 'stdout.txt')) == 'second upload\n'
