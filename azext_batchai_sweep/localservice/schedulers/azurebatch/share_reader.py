"""A job's stdout/stderr and output directories read from the pool's mounted Azure file share, where the node
wrapper wrote them (`$AZ_BATCHAI_MOUNT_ROOT/<mount>/...`, the paths Batch AI's recipes use), as Batch AI did.

Batch's task file API serves only the task's own directory on its node; a share mounted on the pool is outside it
(and outlives the node). The service reads such a directory from the storage itself: Azure Files over REST with
az's token (Entra ID: a token for https://storage.azure.com/, `x-ms-file-request-intent: backup`, which the role
"Storage File Data Privileged Reader" grants: preflight.STORAGE_READ). Each poll lists the directory (recursively)
and reads of each file only the bytes not read yet (`x-ms-range`), into the job's folders of the data dir, where
listOutputFiles, `job file stream/list`, `sweep status --tail`, metrics and the report read them.

Plain REST through azure-core (what az ships), not azure-storage-file-share: two calls (List Directories and Files,
Get File), independent of that SDK's version. What is read where (`storage_folders`):
- `$AZ_BATCHAI_MOUNT_ROOT/<relativeMountPath of a cluster's azureFileShares>/<path>` -> that share, <path>;
- `$AZ_BATCHAI_JOB_MOUNT_ROOT/<relativeMountPath of a job's azureFileShares>/<path>` -> the same share (the job's
  mount is a link to the cluster's mount of it: tasks.job_mounts);
- the same under a cluster's (or job's) `azureBlobFileSystems` mount -> that Blob container, the name prefix
  `<path>/` (blob_reader.py: List Blobs and ranged Get Blob, an offset kept with the blob's ETag);
- anything else (the task directory) through Batch's task file API (scheduler.py).

A file's offset is kept with its `FileId`: a requeued attempt's wrapper deletes the last attempt's files and writes
new ones (new ids), so a copy restarts from byte 0 when the id changes or the file shrinks: never doubled.
"""
import email.utils
import logging
import os
import posixpath
import threading
import xml.etree.ElementTree as ET
from urllib.parse import quote, unquote, urlsplit

from .auth import LoginError
from .mapping import _NODE_ROOTS

logger = logging.getLogger(__name__)

STORAGE_RESOURCE = 'https://storage.azure.com/'
STORAGE_SCOPE = STORAGE_RESOURCE + '.default'
# The first Files REST version that accepts an Entra ID token (with x-ms-file-request-intent).
FILES_API_VERSION = '2022-11-02'
MAX_READ_BYTES = 4 * 1024 * 1024  # one ranged GET at most (a large output file is read in several)
OFFSET_PREFIX = 'share:'  # the keys of a share file's offset among a task's offsets


class ShareReadError(Exception):
    """Azure Files refused or did not answer (the message names the status and code, never a token)."""


def storage_folders(job_props, cluster_props, job_mounts):
    """[(kind, account, URL, directory in the share or container, 'stdouterr' or an output id)] of a job's
    directories that are on storage the cluster mounts: kind 'file' (an Azure file share: URL its azureFileUrl) or
    'blob' (a Blob container, blobfuse: URL its container's https://<account>.blob.<suffix>/<container>, whose
    directories are `/`-separated name prefixes). `job_mounts`: {job relativeMountPath: cluster relativeMountPath}
    (tasks.job_mounts)."""
    from ...layout import output_paths  # pylint: disable=import-outside-toplevel
    from .task_logs import default_endpoint as blob_endpoint  # pylint: disable=import-outside-toplevel
    mounts = {}  # node path -> (kind, account, URL)
    volumes = (cluster_props.get('nodeSetup') or {}).get('mountVolumes') or {}
    for ref in volumes.get('azureFileShares') or []:
        rel = ref['relativeMountPath'].strip('/')
        mounts[posixpath.join(_NODE_ROOTS['AZ_BATCHAI_MOUNT_ROOT'], rel)] = ('file', ref['accountName'],
                                                                              ref['azureFileUrl'])
    for ref in volumes.get('azureBlobFileSystems') or []:
        rel = ref['relativeMountPath'].strip('/')
        url = '{}/{}'.format(blob_endpoint(ref['accountName'], cluster_props), ref['containerName'])
        mounts[posixpath.join(_NODE_ROOTS['AZ_BATCHAI_MOUNT_ROOT'], rel)] = ('blob', ref['accountName'], url)
    for job_rel, cluster_rel in (job_mounts or {}).items():
        target = mounts.get(posixpath.join(_NODE_ROOTS['AZ_BATCHAI_MOUNT_ROOT'], cluster_rel))
        if target is not None:
            mounts[posixpath.join(_NODE_ROOTS['AZ_BATCHAI_JOB_MOUNT_ROOT'], job_rel)] = target
    stdouterr, outputs, _ = output_paths(job_props, _NODE_ROOTS)
    found = []
    for node_dir, directory_id in [(stdouterr, 'stdouterr'), *[(path, key) for key, path in outputs.items()]]:
        node_dir = posixpath.normpath(node_dir)
        for mount in sorted(mounts, key=len, reverse=True):
            if node_dir.startswith(mount + '/'):
                found.append((*mounts[mount], node_dir[len(mount) + 1:], directory_id))
                break
    return found


def share_folders(job_props, cluster_props, job_mounts):
    """storage_folders on an Azure file share: [(account, azureFileUrl, directory in the share, directory id)]."""
    return [f[1:] for f in storage_folders(job_props, cluster_props, job_mounts) if f[0] == 'file']


def default_endpoint(account, azure_file_url):  # pylint: disable=unused-argument
    """The Files service URL of a share's storage account: the azureFileUrl's scheme and host
    (https://<account>.file.core.windows.net)."""
    parts = urlsplit(azure_file_url)
    return '{}://{}'.format(parts.scheme or 'https', parts.netloc)


class StorageClient:
    """GETs of Azure Storage REST with a bearer token (azure-core's pipeline: the token policy, retries) and the
    ranged reads both services answer alike (`x-ms-range`); `headers`: what every request of the service carries."""
    service = 'Azure Storage'

    def __init__(self, credential, connection_verify=None, headers=None):
        from azure.core import PipelineClient  # pylint: disable=import-outside-toplevel
        from azure.core.pipeline.policies import (  # pylint: disable=import-outside-toplevel
            BearerTokenCredentialPolicy, HeadersPolicy, RetryPolicy)
        self._client = PipelineClient(base_url='https://localhost', policies=[
            HeadersPolicy(headers or {}), RetryPolicy(retry_total=3, retry_backoff_factor=0.5),
            BearerTokenCredentialPolicy(credential, STORAGE_SCOPE)])
        self._verify = connection_verify
        self.bytes_read = 0  # file bytes downloaded (the ranged reads' bodies)

    def _get(self, url, headers=None):
        from azure.core.exceptions import AzureError  # pylint: disable=import-outside-toplevel
        from azure.core.rest import HttpRequest  # pylint: disable=import-outside-toplevel
        headers = dict(headers or {}, **{'x-ms-date': email.utils.formatdate(usegmt=True)})
        kwargs = {} if self._verify is None else {'connection_verify': self._verify}
        try:
            response = self._client.send_request(HttpRequest('GET', url, headers=headers), **kwargs)
        except AzureError as ex:
            raise ShareReadError('{} did not answer: {}'.format(self.service, type(ex).__name__)) from None
        if response.status_code >= 300:
            code = response.headers.get('x-ms-error-code') or ''
            raise ShareReadError('{} {}'.format(response.status_code, code).strip())
        return response

    def _listing(self, url):
        """A listing's XML root; None when what it lists does not exist (404)."""
        try:
            return ET.fromstring(self._get(url).content)
        except ShareReadError as ex:
            if str(ex).startswith('404'):
                return None
            raise
        except ET.ParseError:
            raise ShareReadError('{} answered a listing that is not XML'.format(self.service)) from None

    def read_range(self, url, start, end, headers=None):
        """Bytes start..end-1 of a file or blob (`x-ms-range`, at most MAX_READ_BYTES a request)."""
        chunks = []
        while start < end:
            stop = min(end, start + MAX_READ_BYTES)
            data = self._get(url, dict(headers or {}, **{'x-ms-range': 'bytes={}-{}'.format(start, stop - 1)})).content
            if not data:
                break
            self.bytes_read += len(data)
            chunks.append(data)
            start += len(data)
        return b''.join(chunks)


class FilesClient(StorageClient):
    """Two Azure Files REST calls: List Directories and Files, Get File."""
    service = 'Azure Files'

    def __init__(self, credential, connection_verify=None):
        super().__init__(credential, connection_verify,
                         {'x-ms-version': FILES_API_VERSION, 'x-ms-file-request-intent': 'backup'})

    def list_directory(self, base, share, path):
        """({file name: (size, FileId)}, [directory names]) of a share directory; None when it does not exist."""
        files, directories, marker = {}, [], ''
        while True:
            root = self._listing(_url_path(base, share, path) + '?restype=directory&comp=list' + (
                '&marker=' + quote(marker, safe='') if marker else ''))
            if root is None:
                return None
            for entry in root.iter('File'):
                size = entry.findtext('Properties/Content-Length')
                files[_name(entry)] = (int(size or 0), entry.findtext('FileId'))
            directories += [_name(entry) for entry in root.iter('Directory')]
            marker = root.findtext('NextMarker') or ''
            if not marker:
                return files, directories

    def read(self, base, share, path, start, end):
        """Bytes start..end-1 of a share file."""
        return self.read_range(_url_path(base, share, path), start, end)


def _name(entry):
    """An entry's name (names XML cannot carry come percent-encoded, with Encoded="true")."""
    name = entry.find('Name')
    text = name.text or '' if name is not None else ''
    return unquote(text) if name is not None and name.get('Encoded') == 'true' else text


def _url_path(base, share, path):
    return '/'.join([base.rstrip('/'), quote(share, safe='')] + [quote(p, safe='') for p in path.split('/') if p])


def copy_new_bytes(offsets, key, identity, size, local, read):
    """What is new since the last poll, copied: bytes [copied, size) of the remote file `key` into `local`, where
    `offsets[key]` = (identity, bytes copied) is kept. `identity`: what tells another file of the same name (a share
    file's FileId, a blob's ETag): another one, or a smaller size, is copied again from byte 0 (the local copy
    truncated: never doubled). `read(start, end)`: the remote bytes start..end-1. Returns the bytes read."""
    known, start = offsets.get(key, (None, 0))
    if known != identity or size < start:
        start = 0
    if size == start and os.path.exists(local):
        return 0
    data = read(start, size)
    os.makedirs(os.path.dirname(local), exist_ok=True)
    with open(local, 'r+b' if start and os.path.exists(local) else 'wb') as f:
        f.seek(start)
        f.write(data)
        f.truncate()
    offsets[key] = (identity, start + len(data))
    return len(data)


def local_file(local_root, relative):
    """The path of a remote file's copy under `local_root`, or None for a name no directory tree may hold there
    (an empty, `.` or `..` segment, a backslash): nothing outside the job's folder is written."""
    parts = relative.split('/')
    if any(p in ('', '.', '..') or '\\' in p for p in parts):
        return None
    return os.path.join(local_root, *parts)


class ShareMirror:
    """Copies what is new of a job's directories on mounted storage (an Azure file share; a Blob container:
    blob_reader.py) into its folders of the data dir.

    `credential`: a TokenCredential for the storage resource (default: az's login, asked lazily, so a service whose
    jobs write nothing to mounted storage never asks); `endpoint(account, URL)`: the account's Files or Blob service
    URL for a share's azureFileUrl or a container's URL (default default_endpoint); `connection_verify`: a CA
    bundle (tests)."""

    def __init__(self, credential=None, endpoint=None, connection_verify=None):
        if credential is None:
            from .auth import az_credential  # pylint: disable=import-outside-toplevel
            credential = az_credential(STORAGE_RESOURCE)
        self._credential = credential
        self._endpoint = endpoint or default_endpoint
        self._verify = connection_verify
        self._clients = {}
        self._lock = threading.Lock()
        self._warned = set()

    @property
    def bytes_read(self):
        return sum(c.bytes_read for c in self._clients.values())

    def client(self, kind='file'):
        with self._lock:
            if kind not in self._clients:
                if kind == 'file':
                    self._clients[kind] = FilesClient(self._credential, self._verify)
                else:
                    from .blob_reader import BlobClient  # pylint: disable=import-outside-toplevel
                    self._clients[kind] = BlobClient(self._credential, self._verify)
            return self._clients[kind]

    def folders(self, layout, cluster_body):
        """storage_folders of a job (its layout) on a cluster (its stored body); [] when none is on storage."""
        from . import tasks  # pylint: disable=import-outside-toplevel
        from .errors import Refusal  # pylint: disable=import-outside-toplevel
        cluster_props = (cluster_body or {}).get('properties') or {}
        try:
            job_mounts = tasks.job_mounts(layout.props, cluster_props)
        except Refusal:  # refused at submit already; nothing of it is on a share
            job_mounts = {}
        return storage_folders(layout.props, cluster_props, job_mounts)

    def mirror(self, folders, layout, offsets):
        """Read the new bytes of every file of `folders` (storage_folders) into `layout`'s directories; `offsets`
        (the task's: {key: (FileId or ETag, bytes copied)}) is updated. A refusal is logged once per share or
        container, naming the role to assign; the next poll tries again."""
        for kind, account, url, directory, directory_id in folders:
            local_root = layout.directory(directory_id)
            if local_root is None:
                continue
            share = urlsplit(url).path.strip('/').split('/')[0]
            base = self._endpoint(account, url)
            try:
                if kind == 'blob':
                    from .blob_reader import copy_blobs  # pylint: disable=import-outside-toplevel
                    copy_blobs(self.client('blob'), base, share, directory, local_root, offsets)
                else:
                    self._copy_tree(base, share, directory, local_root, offsets)
            except (ShareReadError, LoginError, OSError) as ex:
                self._warn(kind, account, share, ex)

    def _copy_tree(self, base, share, directory, local_root, offsets):
        client = self.client()
        pending = ['']
        while pending:
            relative = pending.pop()
            listed = client.list_directory(base, share, posixpath.join(directory, relative))
            if listed is None:
                continue
            files, directories = listed
            pending += [posixpath.join(relative, d) for d in directories if d not in ('', '.', '..') and '/' not in d]
            for name, (size, file_id) in sorted(files.items()):
                local = local_file(local_root, posixpath.join(relative, name).lstrip('/'))
                if local is None or '/' in name:
                    continue  # never a name a share holds
                remote = posixpath.join(directory, relative, name)
                copy_new_bytes(offsets, '{}{}/{}/{}'.format(OFFSET_PREFIX, base, share, remote), file_id, size, local,
                               lambda start, end, remote=remote: client.read(base, share, remote, start, end))

    def _warn(self, kind, account, share, ex):
        key = (kind, account, share, str(ex).split(' ')[0])
        if key in self._warned:
            return
        self._warned.add(key)
        hint = ''
        if str(ex)[:3] in ('401', '403'):
            from .preflight import STORAGE_READ, _assign_hint  # pylint: disable=import-outside-toplevel
            role = STORAGE_READ[kind][1]
            hint = "; az's login needs the role {} on storage account {}: {}".format(
                role, account, _assign_hint(role, "<the storage account's resource id>"))
        logger.warning('reading %s %s of storage account %s failed: %s%s',
                       'container' if kind == 'blob' else 'share', share, account, ex, hint)
