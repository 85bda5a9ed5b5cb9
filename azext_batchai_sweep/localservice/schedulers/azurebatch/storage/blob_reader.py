"""A job's directories on a mounted Blob container (`azureBlobFileSystems`, blobfuse) read from the container itself,
as share_reader.py reads a mounted Azure file share (its ShareMirror drives both; storage_folders says which
directory is where).

blobfuse maps a directory of the mount to a `/`-separated blob name prefix of the container (the container's root
at the mount's root), and uploads a file as a whole blob when it is closed (or flushed). So each poll lists the
blobs under the prefix the job's directory maps to (List Blobs, flat, with their size and ETag) and reads of each
blob only the bytes not read yet (Get Blob with `x-ms-range` and `If-Match` of the listed ETag). The offset is kept
with the ETag: a blob uploaded again has a new ETag and is read again from byte 0, its copy rewritten, never
doubled (its start may have changed: blobfuse uploads the whole file); a blob whose ETag did not change is not
read at all. A blob that changes between the listing and the read (412) is read at the next poll.

Plain REST through azure-core with az's storage token (rest.py), as share_reader (the role: Storage Blob Data Reader,
roles.STORAGE_READ['blob'], which `cluster create` and `local start` check for a cluster's Blob mounts).
"""
from urllib.parse import quote

from .rest import OFFSET_PREFIX, ShareReadError, StorageClient, copy_new_bytes, entry_name, local_file

BLOB_API_VERSION = '2021-08-06'
FOLDER_MARKER = 'hdi_isfolder'  # the metadata of the empty blob blobfuse (and ADLS) keep for a directory


class BlobClient(StorageClient):
    """Two Blob REST calls: List Blobs (flat, under a prefix) and Get Blob (ranged, If-Match)."""
    service = 'Azure Blob Storage'

    def __init__(self, credential, connection_verify=None):
        super().__init__(credential, connection_verify, {'x-ms-version': BLOB_API_VERSION})

    def list_blobs(self, base, container, prefix):
        """{blob name: (size, ETag)} of the container's blobs under `prefix` (directory markers left out); None
        when the container does not exist."""
        blobs, marker = {}, ''
        while True:
            root = self._listing('{}/{}?restype=container&comp=list&include=metadata&prefix={}{}'.format(
                base.rstrip('/'), quote(container, safe=''), quote(prefix, safe=''),
                '&marker=' + quote(marker, safe='') if marker else ''))
            if root is None:
                return None
            for entry in root.iter('Blob'):
                if (entry.findtext('Metadata/' + FOLDER_MARKER) or '').lower() == 'true':
                    continue
                size = entry.findtext('Properties/Content-Length')
                blobs[entry_name(entry)] = (int(size or 0), entry.findtext('Properties/Etag'))
            marker = root.findtext('NextMarker') or ''
            if not marker:
                return blobs

    def read(self, base, container, name, start, end, etag):
        """Bytes start..end-1 of the blob as it was when listed with `etag`."""
        url = '/'.join([base.rstrip('/'), quote(container, safe=''), quote(name, safe='/')])
        return self.read_range(url, start, end, {'If-Match': etag} if etag else None)


def copy_blobs(client, base, container, directory, local_root, offsets):
    """Copy what is new of the blobs under `directory`/ into `local_root` (copy_new_bytes, keyed by ETag)."""
    prefix = directory.strip('/') + '/' if directory.strip('/') else ''
    listed = client.list_blobs(base, container, prefix)
    for name, (size, etag) in sorted((listed or {}).items()):
        local = local_file(local_root, name[len(prefix):])
        if local is None or not name.startswith(prefix):
            continue  # a name no directory of the mount holds (`a//b`, `..`): nothing outside the job's folder
        key = '{}{}/{}/{}'.format(OFFSET_PREFIX, base, container, name)
        try:
            copy_new_bytes(offsets, key, etag, size, local,
                           lambda start, end, name=name, etag=etag: client.read(base, container, name, start, end,
                                                                                 etag))
        except ShareReadError as ex:
            if not str(ex).startswith(('412', '404')):  # uploaded again, or removed, since listed: next poll
                raise

