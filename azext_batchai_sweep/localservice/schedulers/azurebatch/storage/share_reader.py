"""A job's stdout/stderr and output directories read from the pool's mounted Azure file share, where the node
wrapper wrote them (`$AZ_BATCHAI_MOUNT_ROOT/<mount>/...`, the paths Batch AI's recipes use), as Batch AI did.

Batch's task file API serves only the task's own directory on its node; a share mounted on the pool is outside it
(and outlives the node). The service reads such a directory from the storage itself: Azure Files over REST with
az's token (Entra ID: a token for https://storage.azure.com/, `x-ms-file-request-intent: backup`, which the role
"Storage File Data Privileged Reader" grants: roles.STORAGE_READ). Each poll lists the directory (recursively)
and reads of each file only the bytes not read yet (`x-ms-range`), into the job's folders of the data dir, where
listOutputFiles, `job file stream/list`, `sweep status --tail`, metrics and the report read them.

Plain REST through azure-core (what az ships), not azure-storage-file-share: two calls (List Directories and Files,
Get File), independent of that SDK's version. What is read where (mounts.storage_folders):
- `$AZ_BATCHAI_MOUNT_ROOT/<relativeMountPath of a cluster's azureFileShares>/<path>` -> that share, <path>;
- `$AZ_BATCHAI_JOB_MOUNT_ROOT/<relativeMountPath of a job's azureFileShares>/<path>` -> the same share (the job's
  mount is a link to the cluster's mount of it: mounts.job_mounts);
- the same under a cluster's (or job's) `azureBlobFileSystems` mount -> that Blob container, the name prefix
  `<path>/` (blob_reader.py: List Blobs and ranged Get Blob, an offset kept with the blob's ETag);
- anything else (the task directory) through Batch's task file API (the scheduler, ../scheduler.py).

A file's offset is kept with its `FileId`: a requeued attempt's wrapper deletes the last attempt's files and writes
new ones (new ids), so a copy restarts from byte 0 when the id changes or the file shrinks: never doubled.
"""
import logging
import posixpath
import threading
from urllib.parse import quote, urlsplit

from ..auth import LoginError
from ..errors import Refusal
from .blob_reader import BlobClient, copy_blobs
from .mounts import job_mounts, storage_folders
from .rest import (OFFSET_PREFIX, STORAGE_RESOURCE, ShareReadError, StorageClient, copy_new_bytes, entry_name,
                   local_file)
from .roles import STORAGE_READ, missing_role_hint

logger = logging.getLogger(__name__)

# The first Files REST version that accepts an Entra ID token (with x-ms-file-request-intent).
FILES_API_VERSION = '2022-11-02'


def default_endpoint(account, azure_file_url):  # pylint: disable=unused-argument
    """The Files service URL of a share's storage account: the azureFileUrl's scheme and host
    (https://<account>.file.core.windows.net)."""
    parts = urlsplit(azure_file_url)
    return '{}://{}'.format(parts.scheme or 'https', parts.netloc)


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
                files[entry_name(entry)] = (int(size or 0), entry.findtext('FileId'))
            directories += [entry_name(entry) for entry in root.iter('Directory')]
            marker = root.findtext('NextMarker') or ''
            if not marker:
                return files, directories

    def read(self, base, share, path, start, end):
        """Bytes start..end-1 of a share file."""
        return self.read_range(_url_path(base, share, path), start, end)


def _url_path(base, share, path):
    return '/'.join([base.rstrip('/'), quote(share, safe='')] + [quote(p, safe='') for p in path.split('/') if p])


class ShareMirror:
    """Copies what is new of a job's directories on mounted storage (an Azure file share; a Blob container:
    blob_reader.py) into its folders of the data dir.

    `credential`: a TokenCredential for the storage resource (default: az's login, asked lazily, so a service whose
    jobs write nothing to mounted storage never asks); `endpoint(account, URL)`: the account's Files or Blob service
    URL for a share's azureFileUrl or a container's URL (default default_endpoint); `connection_verify`: a CA
    bundle (tests)."""

    def __init__(self, credential=None, endpoint=None, connection_verify=None):
        if credential is None:
            from ..auth import az_credential  # pylint: disable=import-outside-toplevel
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
                    self._clients[kind] = BlobClient(self._credential, self._verify)
            return self._clients[kind]

    def folders(self, layout, cluster_body):
        """storage_folders of a job (its layout) on a cluster (its stored body); [] when none is on storage."""
        cluster_props = (cluster_body or {}).get('properties') or {}
        try:
            linked = job_mounts(layout.props, cluster_props)
        except Refusal:  # refused at submit already; nothing of it is on a share
            linked = {}
        return storage_folders(layout.props, cluster_props, linked)

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
            hint = '; ' + missing_role_hint(STORAGE_READ[kind][1], account)
        logger.warning('reading %s %s of storage account %s failed: %s%s',
                       'container' if kind == 'blob' else 'share', share, account, ex, hint)
