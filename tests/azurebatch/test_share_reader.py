"""share_reader.py: which job directories are on a mounted Azure file share, and how they are copied (Range reads
of new bytes, a new attempt's files read from byte 0, a refusal logged with the role to assign). The share is served
by the Files REST double (files_double.py, TEST CODE) over HTTPS with its OAuth checks."""
import logging
import os
import time

import pytest
import requests

from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.mounts import share_folders
from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.share_reader import (FILES_API_VERSION, ShareMirror,
                                                                                  default_endpoint)
from azext_batchai_sweep.localservice.layout import JobLayout
from tests.azurebatch.files_double import FilesDouble
from tests.azurebatch.tls_ca import TestCA

URL = 'https://acct.file.core.windows.net/logs'
SEGMENT = 'sub/rg/ws/exp/job/uid1'


def _cluster(*file_mounts, blob=None):
    volumes = {'azureFileShares': [{'accountName': a, 'azureFileUrl': u, 'relativeMountPath': p}
                                   for a, u, p in file_mounts]}
    if blob:
        volumes['azureBlobFileSystems'] = [{'accountName': 'acct', 'containerName': 'c', 'relativeMountPath': blob}]
    return {'nodeSetup': {'mountVolumes': volumes}}


def _job(stdouterr, *outputs):
    return {'jobOutputDirectoryPathSegment': SEGMENT, 'stdOutErrPathPrefix': stdouterr,
            'outputDirectories': [{'id': 'O{}'.format(i), 'pathPrefix': p} for i, p in enumerate(outputs)]}


@pytest.mark.parametrize('job, cluster, job_mounts, expected', [
    # Batch AI's recipes: both under the cluster's share mount, at its root or in a folder of it.
    (_job('$AZ_BATCHAI_MOUNT_ROOT/afs', '$AZ_BATCHAI_MOUNT_ROOT/afs/out'), _cluster(('acct', URL, 'afs')), {},
     [('acct', URL, SEGMENT + '/stdouterr', 'stdouterr'), ('acct', URL, 'out/' + SEGMENT + '/outputs', 'O0')]),
    # In the task's directory (the task file API reads them), on a blob mount, or beside a mount: not on a share.
    (_job('$AZ_BATCHAI_JOB_TEMP/logs', '$AZ_BATCHAI_MOUNT_ROOT/bfs', '$AZ_BATCHAI_MOUNT_ROOT/afsx'),
     _cluster(('acct', URL, 'afs'), blob='bfs'), {}, []),
    # The job's own mount of the cluster's share (a link on the node): the same share; another job folder is not.
    (_job('$AZ_BATCHAI_JOB_MOUNT_ROOT/jm/l', '$AZ_BATCHAI_JOB_MOUNT_ROOT/other'), _cluster(('acct', URL, 'afs')),
     {'jm': 'afs'}, [('acct', URL, 'l/' + SEGMENT + '/stdouterr', 'stdouterr')]),
    # Nested mount paths: the longest one holds the directory.
    (_job('$AZ_BATCHAI_MOUNT_ROOT/a/b/c'), _cluster(('one', 'https://one.file.core.windows.net/s1', 'a'),
                                                     ('two', 'https://two.file.core.windows.net/s2', 'a/b')), {},
     [('two', 'https://two.file.core.windows.net/s2', 'c/' + SEGMENT + '/stdouterr', 'stdouterr')]),
])
def test_share_folders(job, cluster, job_mounts, expected):
    assert share_folders(job, cluster, job_mounts) == expected


def test_default_endpoint_is_the_share_url_host():
    assert default_endpoint('acct', URL) == 'https://acct.file.core.windows.net'


@pytest.fixture
def files(tmp_path):
    ca = TestCA(str(tmp_path / 'tls'))
    double = FilesDouble(str(tmp_path / 'storage'), ca)
    double.ca_file = ca.ca_file
    share = tmp_path / 'storage' / 'acct' / 'files' / 'logs'
    share.mkdir(parents=True)
    double.share = share
    try:
        yield double
    finally:
        double.close()


def _mirror(files, token_source=None):
    source = token_source or (lambda: (files.issue_token(), time.time() + 3600))
    return ShareMirror(credential=AzLoginCredential(source=source), endpoint=lambda account, url: files.endpoint(
        account), connection_verify=files.ca_file)


def _layout(tmp_path):
    body = {'name': 'job', 'properties': _job('$AZ_BATCHAI_MOUNT_ROOT/afs', '$AZ_BATCHAI_MOUNT_ROOT/afs')}
    return JobLayout(str(tmp_path / 'data'), body, 'sub/rg/ws/clusters/c')


def _read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def test_mirror_reads_only_new_bytes_and_restarts_a_new_attempts_file(files, tmp_path):
    layout = _layout(tmp_path)
    mirror = _mirror(files)
    folders = mirror.folders(layout, {'properties': _cluster(('acct', URL, 'afs'))})
    remote = files.share / SEGMENT / 'stdouterr'
    (remote / 'sub').mkdir(parents=True)
    (remote / 'stdout.txt').write_text('line 1\n')
    (remote / 'sub' / 'deep.txt').write_text('deep\n')
    offsets = {}
    mirror.mirror(folders, layout, offsets)
    assert _read(os.path.join(layout.stdouterr_dir, 'stdout.txt')) == 'line 1\n'
    assert _read(os.path.join(layout.stdouterr_dir, 'sub', 'deep.txt')) == 'deep\n'

    files.reset_counts()
    mirror.mirror(folders, layout, offsets)  # nothing new: listings only
    assert files.file_reads() == []
    with open(remote / 'stdout.txt', 'a', encoding='utf-8') as f:
        f.write('line 2\n')
    mirror.mirror(folders, layout, offsets)
    assert files.file_reads() == [('/acct/logs/{}/stdouterr/stdout.txt'.format(SEGMENT), 'bytes=7-13', 7)]
    assert _read(os.path.join(layout.stdouterr_dir, 'stdout.txt')) == 'line 1\nline 2\n'

    # A new attempt: the wrapper deleted the file and wrote a longer one (another FileId): read from byte 0. The new
    # file is made while the old one still exists, so it has another inode (the double's FileId) on any file system
    # (made after an unlink, it may get the freed inode back).
    (remote / 'stdout.txt.new').write_text('attempt 2 line 1\n')
    os.replace(remote / 'stdout.txt.new', remote / 'stdout.txt')
    mirror.mirror(folders, layout, offsets)
    assert _read(os.path.join(layout.stdouterr_dir, 'stdout.txt')) == 'attempt 2 line 1\n'


def test_a_refused_read_is_logged_once_with_the_role_and_no_token(files, tmp_path, caplog):
    layout = _layout(tmp_path)
    (files.share / SEGMENT / 'stdouterr').mkdir(parents=True)
    (files.share / SEGMENT / 'stdouterr' / 'stdout.txt').write_text('x\n')
    assert_refused_once(lambda token: _mirror(files, token_source=lambda: (token, time.time() + 3600)), layout,
                        {'properties': _cluster(('acct', URL, 'afs'))}, caplog, 'share logs of storage account acct',
                        'Storage File Data Privileged Reader')


def assert_refused_once(reader, layout, cluster_body, caplog, words, role):
    """`reader(token)` (a ShareMirror) with a token the storage refuses, polled twice: one warning with `words` and
    `role`, never the token, nothing copied."""
    bad = 'not-a-storage-token-1234'
    mirror = reader(bad)
    folders = mirror.folders(layout, cluster_body)
    with caplog.at_level(logging.WARNING):
        mirror.mirror(folders, layout, {})
        mirror.mirror(folders, layout, {})
    warnings = [r.getMessage() for r in caplog.records if words in r.getMessage()]
    assert len(warnings) == 1 and role in warnings[0], warnings
    assert bad not in caplog.text
    assert not os.path.exists(os.path.join(layout.stdouterr_dir, 'stdout.txt'))


@pytest.mark.parametrize('drop', ['authorization', 'x-ms-file-request-intent', 'x-ms-date'])
def test_the_files_double_refuses_what_azure_files_refuses(files, drop):
    """The double's checks hold (the service's reads pass them, so they carry what Azure Files needs)."""
    headers = {'authorization': 'Bearer ' + files.token, 'x-ms-file-request-intent': 'backup',
               'x-ms-version': FILES_API_VERSION, 'x-ms-date': 'Thu, 26 Nov 2026 18:00:00 GMT'}
    url = files.endpoint('acct') + '/logs?restype=directory&comp=list'
    assert requests.get(url, headers=headers, verify=files.ca_file, timeout=10).status_code == 200
    del headers[drop]
    assert requests.get(url, headers=headers, verify=files.ca_file, timeout=10).status_code in (400, 401)


def test_listing_names_azure_files_percent_encodes_are_decoded():
    import xml.etree.ElementTree as ET
    from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.rest import entry_name
    assert entry_name(ET.fromstring('<File><Name Encoded="true">a%0Bb.txt</Name></File>')) == 'a\x0bb.txt'
    assert entry_name(ET.fromstring('<File><Name>a%20b.txt</Name></File>')) == 'a%20b.txt'
