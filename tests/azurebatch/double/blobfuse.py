"""What blobfuse does on a node, stood in for (TEST CODE ONLY): the Batch double mounts a Blob container as a local
folder (account.mount_source: `storage/<account>/blobs/<container>`); this uploads that folder's files to the
container on a loopback Blob service (Azurite over HTTPS with OAuth), as blobfuse does: each file as one whole
blob (Put Blob), its name the file's path under the mount with `/` between directories, uploaded again whole when
it changed (blobfuse uploads on close or flush; here: when its size or mtime changed since the last sweep, every
`interval` seconds while a task runs, and once more when a task's process ended, before the double reports its end:
the node agent's `flush()`, as its files were closed). Real blobfuse's timing is only visible on Azure
(docs/azure-batch.md)."""
import os
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request

BLOB_VERSION = '2021-08-06'


class BlobfuseStandIn:
    """``endpoint``: the Blob service (path-style, Azurite's .../devstoreaccount1); ``token()``: a bearer token it
    accepts; ``ca_file``: the bundle trusting its certificate."""

    def __init__(self, endpoint, token, ca_file):
        self.endpoint = endpoint.rstrip('/')
        self._token = token
        self._context = ssl.create_default_context(cafile=ca_file)
        self._seen = {}  # (container, name) -> (size, mtime_ns) uploaded
        self._folders = []  # (local folder, container) synced by the thread
        self._stop = threading.Event()
        self._thread = None
        self._sync_lock = threading.Lock()
        self.uploads = []  # (container, name) in the order uploaded

    def _request(self, method, path, data=None, headers=None):
        request = urllib.request.Request(self.endpoint + path, data=data, method=method, headers=dict(
            headers or {}, **{'Authorization': 'Bearer ' + self._token(), 'x-ms-version': BLOB_VERSION}))
        try:
            with urllib.request.urlopen(request, timeout=10, context=self._context) as answer:  # noqa: S310
                return answer.status
        except urllib.error.HTTPError as ex:
            return ex.code

    def create_container(self, container):
        status = self._request('PUT', '/{}?restype=container'.format(urllib.parse.quote(container)))
        assert status in (201, 409), status

    def upload(self, container, name, data):
        """Put Blob: the whole blob, replaced (a new ETag)."""
        status = self._request('PUT', '/{}/{}'.format(urllib.parse.quote(container), urllib.parse.quote(name)),
                               data, {'x-ms-blob-type': 'BlockBlob', 'Content-Type': 'application/octet-stream'})
        assert status == 201, status
        self.uploads.append((container, name))

    def sync(self, folder, container):
        """Upload every file of `folder` that changed since its last upload."""
        for directory, _, names in os.walk(folder):
            for file_name in sorted(names):
                path = os.path.join(directory, file_name)
                try:
                    stat = os.stat(path)
                    name = os.path.relpath(path, folder).replace(os.sep, '/')
                    if self._seen.get((container, name)) == (stat.st_size, stat.st_mtime_ns):
                        continue
                    with open(path, 'rb') as f:
                        data = f.read()
                except OSError:
                    continue  # removed meanwhile
                self.upload(container, name, data)
                self._seen[(container, name)] = (stat.st_size, stat.st_mtime_ns)

    def flush(self):
        """Sync every followed folder now (a task's process ended: its files are closed)."""
        with self._sync_lock:
            for watched, target in list(self._folders):
                self.sync(watched, target)

    def follow(self, folder, container, interval=0.2):
        """Sync `folder` to `container` every `interval` seconds until close()."""
        self.create_container(container)
        os.makedirs(folder, exist_ok=True)
        self._folders.append((folder, container))
        if self._thread is None:
            def loop():
                while not self._stop.wait(interval):
                    self.flush()
            self._thread = threading.Thread(target=loop, name='blobfuse-stand-in', daemon=True)
            self._thread.start()

    def close(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
