"""What reading Azure Storage with az's token takes, for Azure Files (share_reader.py) and Blob (blob_reader.py)
alike: the token's resource, a client of GETs and ranged reads (azure-core's pipeline, which az ships, so no
storage SDK version decides the calls), a listing entry's name, and the copy of a remote file's new bytes into the
data dir (an offset kept with the file's identity: never doubled, never written outside the job's folder).
"""
import email.utils
import os
import xml.etree.ElementTree as ET
from urllib.parse import unquote

STORAGE_RESOURCE = 'https://storage.azure.com/'
STORAGE_SCOPE = STORAGE_RESOURCE + '.default'
MAX_READ_BYTES = 4 * 1024 * 1024  # one ranged GET at most (a large output file is read in several)
OFFSET_PREFIX = 'share:'  # the keys of a share file's offset among a task's offsets


class ShareReadError(Exception):
    """Azure Files or Blob Storage refused or did not answer (the message names the status and code, never a
    token)."""


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


def entry_name(entry):
    """An entry's name (names XML cannot carry come percent-encoded, with Encoded="true")."""
    name = entry.find('Name')
    text = name.text or '' if name is not None else ''
    return unquote(text) if name is not None and name.get('Encoded') == 'true' else text


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
