"""A small Azure Blob REST subset over the folders jobs mount, enough for `azure-storage-blob`, `az storage blob` and
the recipes' BlockBlobService.

Container ``c`` of account ``a`` is the folder ``<storage_root>/a/containers/c`` (layout.py's contract: a job's
``azureBlobFileSystems`` mount is that folder), a block blob ``x/y.txt`` its file ``x/y.txt``. So what is uploaded
is what a job reads, and what a job writes there is listed and downloaded as blobs. URLs are path-style, as
Azurite's: ``/<account>/<container>/<blob name>``. Supported calls, as the SDK sends them:

=======  ==========================================  =======================================================
GET      /<account>?comp=list                        list containers (prefix, marker/maxresults paging)
PUT      ?restype=container                          create a container (409 ContainerAlreadyExists)
GET/HEAD ?restype=container                          container properties (404 ContainerNotFound)
DELETE   ?restype=container                          delete a container and its blobs
GET      ?restype=container&comp=list                list blobs (prefix, delimiter, marker/maxresults)
PUT      (a blob) x-ms-blob-type: BlockBlob          Put Blob, up to MAX_PUT_BLOB_BYTES
PUT      (a blob) ?comp=block&blockid=               Put Block (staged beside the container, not in it)
PUT      (a blob) ?comp=blocklist                    Put Block List (Latest/Uncommitted of the staged blocks)
GET/HEAD (a blob)                                    download (x-ms-range or Range -> 206) / properties
DELETE   (a blob)                                    delete
=======  ==========================================  =======================================================

If-None-Match: * and If-Match are honoured on writes and reads (the SDK's overwrite=False, and its chunked download
pinned to the first chunk's ETag). Request parsing, SharedKey and service SAS checks, the confinement of the
container folder and the error format are the Files endpoint's (files_api.FilesApi, subclassed here); the blob
SAS (``sr=c`` / ``sr=b``) signs more fields than the file SAS from version 2018-11-09 on.

A blob is written whole or not at all: its bytes (or its blocks) are received into ``<account>/blob-uploads/
<container>`` beside the containers, then renamed into place, so a job or a download never sees a torn blob and
concurrent uploads of one blob leave one of them, entire. Paths never follow a symlink: parent folders are walked
with O_NOFOLLOW, and a symlink in a container is not a blob (not listed, not read, never written through).
Blob names the folder cannot hold as the service would (empty, '.' or '..' segments, a trailing '/', a backslash,
NUL, a segment over 255 bytes) are refused with InvalidResourceName; a blob and a folder of the same name (`a` and
`a/b`) cannot both exist (409 PathConflict, as a hierarchical-namespace account answers).
"""
import base64
import binascii
import errno
import hashlib
import os
import shutil
import stat as stat_module
import tempfile
import threading
from urllib.parse import unquote
from xml.etree import ElementTree
from xml.sax.saxutils import quoteattr

from .files_api import (ACCOUNT_NAME, CHUNK_BYTES, SAS_FIELDS, SHARE_NAME, FilesApi, StorageApiError, entity_headers,
                        invalid_name, list_paging, name_element, not_found, requested_range, xml_element)

MIB = 1024 * 1024
MAX_PUT_BLOB_BYTES = 5000 * MIB  # the service's limits (version 2019-12-12 and later)
MAX_BLOCK_BYTES = 4000 * MIB
MAX_COMMITTED_BLOCKS = 50000
MAX_UNCOMMITTED_BLOCKS = 100000
MAX_BLOCK_ID_BYTES = 64
MAX_BLOCK_LIST_BYTES = 8 * MIB  # 50,000 base64 ids of 64 bytes in their XML elements fit
MAX_NAME_CHARS = 1024
MAX_SEGMENT_BYTES = 255  # the local file system's limit for one folder or file name
UPLOADS = 'blob-uploads'
_RECEIVING = ('upload-', 'commit-')  # the prefixes of bodies being received and blobs being assembled
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_BLOB_SAS_SIGNS_RESOURCE = '2018-11-09'  # sr and the snapshot time join the string-to-sign
_BLOB_SAS_SIGNS_SCOPE = '2020-12-06'  # and the encryption scope


def _container_not_found():
    return not_found('ContainerNotFound', 'container')


def _blob_not_found():
    return not_found('BlobNotFound', 'blob')


def _path_conflict():
    return StorageApiError(409, 'PathConflict', 'The specified path, or an element of the path, exists and its '
                           'resource type is invalid for this operation (a blob and a folder of the same name).')


def _blob_segments(name):
    """The folder/file names of blob `name`; InvalidResourceName for what the container folder cannot hold."""
    if len(name) > MAX_NAME_CHARS:
        raise StorageApiError(400, 'InvalidResourceName', 'A blob name may have at most {} characters.'
                              .format(MAX_NAME_CHARS))
    segments = name.split('/')
    for segment in segments:
        if segment in ('', '.', '..') or '\\' in segment or '\0' in segment:
            raise StorageApiError(400, 'InvalidResourceName', "The local Blob endpoint cannot store blob names with "
                                  "an empty, '.' or '..' path segment, a trailing '/', a backslash or NUL.")
        if len(segment.encode('utf-8', 'surrogateescape')) > MAX_SEGMENT_BYTES:
            raise StorageApiError(400, 'InvalidResourceName', 'Each /-separated part of a blob name may have at '
                                  'most {} bytes on the local Blob endpoint.'.format(MAX_SEGMENT_BYTES))
    return segments


def _operation(method, restype, comp, blob):
    read = method in ('GET', 'HEAD')
    if blob is None and restype == 'container':
        if comp is None and read:
            return 'container-properties'
        if comp is None and method == 'PUT':
            return 'create-container'
        if comp is None and method == 'DELETE':
            return 'delete-container'
        if comp == 'list' and method == 'GET':
            return 'list-blobs'
    elif blob is not None and restype is None:
        if comp is None and read:
            return 'get-blob'
        if comp is None and method in ('PUT', 'DELETE'):
            return method.lower() + '-blob'
        if comp in ('block', 'blocklist') and method == 'PUT':
            return 'put-' + {'block': 'block', 'blocklist': 'block-list'}[comp]
    raise StorageApiError(400, 'UnsupportedOperation', 'The local Blob endpoint does not support {} with restype={} '
                          'comp={}.'.format(method, restype, comp))


def _size(request, limit):
    try:
        size = int(request.headers.get('content-length') or 0)
    except ValueError:
        size = -1
    if size < 0:
        raise StorageApiError(400, 'InvalidHeaderValue', 'Content-Length must be a number of bytes.')
    if size > limit:
        raise StorageApiError(413, 'RequestBodyTooLarge', 'The request body is too large: at most {} bytes ({} MiB) '
                              'here, as on Azure; upload larger data in blocks.'.format(limit, limit // MIB))
    return size


def _block_file(block_id):
    """The staged block's file name: a digest of its id (which may hold any bytes)."""
    try:
        raw = base64.b64decode(block_id or '', validate=True)
    except (binascii.Error, ValueError):
        raw = b''
    if not raw or len(raw) > MAX_BLOCK_ID_BYTES:
        raise StorageApiError(400, 'InvalidQueryParameterValue', 'The block id must be base64 of 1 to {} bytes.'
                              .format(MAX_BLOCK_ID_BYTES))
    return hashlib.sha256(raw).hexdigest()


def _blob_headers(stat):
    """The headers of Get Blob; Get Blob Properties adds the access tier."""
    headers = {name: entity_headers(stat)[name] for name in ('ETag', 'Last-Modified')}
    headers.update({'Content-Type': 'application/octet-stream', 'Accept-Ranges': 'bytes',
                    'x-ms-blob-type': 'BlockBlob', 'x-ms-creation-time': headers['Last-Modified'],
                    'x-ms-lease-status': 'unlocked', 'x-ms-lease-state': 'available', 'x-ms-server-encrypted': 'true'})
    return headers


def _read_file(stream, length):
    with stream:
        while length > 0:
            chunk = stream.read(min(CHUNK_BYTES, length))
            if not chunk:
                return
            length -= len(chunk)
            yield chunk


class _Target:  # pylint: disable=too-few-public-methods
    """One request's container folder, its uploads folder and its blob's name parts."""

    def __init__(self, root, uploads, name, segments):
        self.root, self.uploads, self.name, self.segments = root, uploads, name, segments

    def staged(self):
        """The folder of this blob's staged (uncommitted) blocks."""
        return os.path.join(self.uploads, 'blocks', hashlib.sha256(self.name.encode('utf-8', 'surrogateescape'))
                            .hexdigest())


class BlobApi(FilesApi):
    """The Blob REST subset of the local service, over `<storage_root>/<account>/containers/<container>`."""

    FOLDER = 'containers'
    CONTAINER_NOUN, ITEM_NOUN = 'container', 'blob'
    SAS_SERVICE, SAS_CONTAINER, SAS_ITEM = 'blob', 'c', 'b'
    SAS_ITEM_OPERATIONS = ('get-blob', 'put-blob', 'put-block', 'put-block-list', 'delete-blob')
    # As on Azure, a service SAS can neither create nor delete a container.
    SAS_PERMISSION = {'container-properties': 'r', 'list-blobs': 'l', 'create-container': '', 'delete-container': '',
                      'get-blob': 'r', 'put-blob': 'cw', 'put-block': 'w', 'put-block-list': 'w', 'delete-blob': 'd'}

    def __init__(self, storage_root, account_key):
        super().__init__(storage_root, account_key)
        self._commit_lock = threading.Lock()  # a condition (If-None-Match) and the rename it guards, together
        self._remove_interrupted_uploads()

    def _remove_interrupted_uploads(self):
        """Bodies an earlier run was receiving when it stopped (one service per data dir: none is in flight now).
        Staged blocks stay, as on Azure, until their blob is committed or its container deleted."""
        try:
            accounts = os.listdir(self._real_root)
        except FileNotFoundError:
            return
        for account in accounts:
            uploads = os.path.join(self._real_root, account, UPLOADS)
            if os.path.islink(uploads) or not os.path.isdir(uploads):
                continue
            for container in os.listdir(uploads):
                folder = os.path.join(uploads, container)
                if os.path.islink(folder) or not os.path.isdir(folder):
                    continue
                for name in os.listdir(folder):
                    if name.startswith(_RECEIVING):
                        os.unlink(os.path.join(folder, name))

    # -- routing ---------------------------------------------------------------------------------------------------

    def _dispatch(self, request):
        if len(request.segments) == 1:
            return self._account_request(request)
        # The blob name as sent, decoded ('%2F' is '/', as on Azure), trailing '/' included.
        parts = unquote(request.raw_path).split('/', 3)
        if len(parts) < 3:
            raise StorageApiError(400, 'InvalidUri', 'The requested URI does not represent any resource.')
        account, container = parts[1].lower(), parts[2]
        name = parts[3] if len(parts) == 4 and parts[3] else None
        if not ACCOUNT_NAME.fullmatch(account) or not SHARE_NAME.fullmatch(container):
            raise invalid_name()
        segments = _blob_segments(name) if name is not None else []
        operation = _operation(request.method, request.arg('restype'), request.arg('comp'), name)
        self._authenticate(request, operation, container, segments)
        if request.on_authenticated is not None:
            request.on_authenticated()
        root = self._share_root(account, container)
        uploads = os.path.join(self._uploads_root(account), container)
        if operation == 'create-container':
            return self._create_container(root)
        if not os.path.isdir(root):
            raise _container_not_found()
        target = _Target(root, uploads, name, segments)
        return getattr(self, '_' + operation.replace('-', '_'))(target, request)

    def _uploads_root(self, account):
        path = self._real_root
        for part in (account, UPLOADS):
            path = os.path.join(path, part)
            if os.path.islink(path):
                raise StorageApiError(403, 'AuthorizationFailure', 'The uploads folder of this account is a '
                                      'symbolic link; the local service does not follow it.')
        return path

    @staticmethod
    def _sas_string_to_sign(request, fields, resource):
        """What a Blob service SAS signs: from 2018-11-09 sr and the snapshot time follow sv, from 2020-12-06 the
        encryption scope too ("Create a service SAS")."""
        version = fields['sv']
        extra = []
        if version >= _BLOB_SAS_SIGNS_RESOURCE:
            extra = [request.arg('sr', ''), request.arg('sst', '')]
            if version >= _BLOB_SAS_SIGNS_SCOPE:
                extra.append(request.arg('ses', ''))
        values = [resource if name is None else fields[name] for name in SAS_FIELDS]
        position = SAS_FIELDS.index('sv') + 1
        return '\n'.join(values[:position] + extra + values[position:])

    # -- containers ------------------------------------------------------------------------------------------------

    @staticmethod
    def _create_container(root):
        try:
            os.makedirs(root)
        except FileExistsError:
            raise StorageApiError(409, 'ContainerAlreadyExists', 'The specified container already exists.') from None
        return 201, {name: value for name, value in entity_headers(os.stat(root)).items()
                     if name in ('ETag', 'Last-Modified')}, b''

    @staticmethod
    def _container_properties(target, request):
        del request
        headers = {name: entity_headers(os.stat(target.root))[name] for name in ('ETag', 'Last-Modified')}
        headers.update({'x-ms-lease-status': 'unlocked', 'x-ms-lease-state': 'available',
                        'x-ms-has-immutability-policy': 'false', 'x-ms-has-legal-hold': 'false'})
        return 200, headers, b''

    @staticmethod
    def _delete_container(target, request):
        """The container's folder and everything in it (symlinks removed, never followed), and its staged blocks. A
        job mounting it loses it, as on Azure."""
        del request
        shutil.rmtree(target.root)
        shutil.rmtree(target.uploads, ignore_errors=True)
        return 202, {}, b''

    def _list_account(self, request, account):
        """List Containers: the real folders of `<account>/containers` with a valid name, paged by name."""
        prefix, marker, max_results = list_paging(request)
        names = []
        try:
            with os.scandir(os.path.join(self._real_root, account, self.FOLDER)) as listing:
                names = sorted((entry.name, entry.stat(follow_symlinks=False)) for entry in listing
                               if entry.is_dir(follow_symlinks=False) and SHARE_NAME.fullmatch(entry.name)
                               and entry.name.startswith(prefix) and entry.name >= marker)
        except FileNotFoundError:
            pass
        page, rest = names[:max_results], names[max_results:]
        items = ['<Container>{}<Properties>{}{}<LeaseStatus>unlocked</LeaseStatus><LeaseState>available'
                 '</LeaseState><HasImmutabilityPolicy>false</HasImmutabilityPolicy><HasLegalHold>false</HasLegalHold>'
                 '</Properties></Container>'.format(
                     xml_element('Name', name), xml_element('Last-Modified', entity_headers(stat)['Last-Modified']),
                     xml_element('Etag', entity_headers(stat)['ETag'])) for name, stat in page]
        return self._enumeration(request, '', 'Containers', items, rest[0][0] if rest else None)

    def _enumeration(self, request, attributes, tag, items, next_marker):
        prefix, marker = request.arg('prefix', ''), request.arg('marker', '')
        host = request.headers.get('host', 'localhost')
        parts = ['<?xml version="1.0" encoding="utf-8"?>',
                 '<EnumerationResults ServiceEndpoint={}{}>'.format(
                     quoteattr('http://{}/{}/'.format(host, request.segments[0])), attributes),
                 xml_element('Prefix', prefix) if prefix else '', xml_element('Marker', marker) if marker else '',
                 xml_element('MaxResults', request.arg('maxresults')) if request.arg('maxresults') else '',
                 xml_element('Delimiter', request.arg('delimiter')) if request.arg('delimiter') else '',
                 '<{}>'.format(tag)] + items + [
                     '</{}>'.format(tag), xml_element('NextMarker', next_marker) if next_marker else '<NextMarker />',
                     '</EnumerationResults>']
        return 200, {'Content-Type': 'application/xml'}, ''.join(parts).encode('utf-8')

    def _list_blobs(self, target, request):
        """List Blobs: every regular file below the container folder (symlinks are no blobs), by name; with a
        delimiter, the names past the prefix that hold it are rolled up into BlobPrefix entries."""
        prefix, marker, max_results = list_paging(request)
        delimiter = request.arg('delimiter', '')
        entries = {}
        for name, stat in self._walk(target.root):
            if not name.startswith(prefix):
                continue
            cut = name.find(delimiter, len(prefix)) if delimiter else -1
            if cut >= 0:
                entries.setdefault(name[:cut + len(delimiter)], None)
            else:
                entries[name] = stat
        names = sorted(name for name in entries if name >= marker)
        page, rest = names[:max_results], names[max_results:]
        items = []
        for name in page:
            stat = entries[name]
            if stat is None:
                items.append('<BlobPrefix>{}</BlobPrefix>'.format(name_element(name)))
                continue
            headers = _blob_headers(stat)
            items.append(
                '<Blob>{}<Properties>{}{}{}<Content-Length>{}</Content-Length><Content-Type>application/octet-stream'
                '</Content-Type><BlobType>BlockBlob</BlobType><AccessTier>Hot</AccessTier><AccessTierInferred>true'
                '</AccessTierInferred><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState>'
                '<ServerEncrypted>true</ServerEncrypted></Properties></Blob>'.format(
                    name_element(name), xml_element('Creation-Time', headers['x-ms-creation-time']),
                    xml_element('Last-Modified', headers['Last-Modified']),
                    xml_element('Etag', headers['ETag']), stat.st_size))
        attributes = ' ContainerName={}'.format(quoteattr(request.segments[1]))
        return self._enumeration(request, attributes, 'Blobs', items, rest[0] if rest else None)

    @staticmethod
    def _walk(root):
        """(blob name, stat) of every regular file below `root`, never following a symlink."""
        for folder, subfolders, files in os.walk(root, followlinks=False):
            relative = os.path.relpath(folder, root)
            base = '' if relative == '.' else relative.replace(os.sep, '/') + '/'
            subfolders.sort()
            for name in files:
                try:
                    stat = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue  # gone since the scan
                if stat_module.S_ISREG(stat.st_mode):
                    yield base + name, stat

    # -- blobs: paths ----------------------------------------------------------------------------------------------

    @staticmethod
    def _open_parent(target, create=False):
        """A descriptor of the blob's parent folder, reached from the container folder without following a
        symlink (created when `create`); BlobNotFound when a part is missing, PathConflict when one is a file."""
        fd = os.open(target.root, _DIRECTORY_FLAGS)
        try:
            for segment in target.segments[:-1]:
                if create:
                    try:
                        os.mkdir(segment, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                try:
                    child = os.open(segment, _DIRECTORY_FLAGS, dir_fd=fd)
                except OSError as error:
                    if error.errno in (errno.ENOTDIR, errno.ELOOP):
                        raise (_path_conflict() if create else _blob_not_found()) from None
                    if error.errno == errno.ENOENT:
                        raise _blob_not_found() from None
                    raise
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_blob(self, target):
        """(open file, stat) of the blob: a regular file, no symlink anywhere on its path; BlobNotFound else."""
        parent = self._open_parent(target)
        try:
            fd = os.open(target.segments[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=parent)
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.EISDIR):
                raise _blob_not_found() from None
            raise
        finally:
            os.close(parent)
        stat = os.fstat(fd)
        if not stat_module.S_ISREG(stat.st_mode):  # a folder (of other blobs' names), a FIFO...
            os.close(fd)
            raise _blob_not_found()
        return os.fdopen(fd, 'rb'), stat

    def _current_etag(self, target):
        try:
            stream, stat = self._open_blob(target)
        except StorageApiError:
            return None
        stream.close()
        return _blob_headers(stat)['ETag']

    @staticmethod
    def _check_conditions(request, etag):
        """If-Match / If-None-Match against the blob's current ETag (None: no blob). True when a read is answered
        304 Not Modified (which has no body: no error document)."""
        if_match, if_none_match = request.headers.get('if-match'), request.headers.get('if-none-match')
        if if_match and (etag is None or (if_match.strip() != '*' and etag not in
                                          [value.strip() for value in if_match.split(',')])):
            raise StorageApiError(412, 'ConditionNotMet', 'The condition specified using HTTP conditional header(s) '
                                  'is not met.')
        if not if_none_match or etag is None or (if_none_match.strip() != '*' and etag not in
                                                 [value.strip() for value in if_none_match.split(',')]):
            return False
        if request.method in ('GET', 'HEAD'):
            return True
        if request.method == 'PUT' and if_none_match.strip() == '*':
            raise StorageApiError(409, 'BlobAlreadyExists', 'The specified blob already exists.')
        raise StorageApiError(412, 'ConditionNotMet', 'The condition specified using HTTP conditional header(s) is '
                              'not met.')

    # -- blobs: reading and deleting -------------------------------------------------------------------------------

    def _get_blob(self, target, request):
        stream, stat = self._open_blob(target)
        try:
            headers = _blob_headers(stat)
            if self._check_conditions(request, headers['ETag']):
                stream.close()
                not_modified = {name: headers[name] for name in ('ETag', 'Last-Modified')}
                return 304, dict(not_modified, **{'x-ms-error-code': 'ConditionNotMet'}), b''
            size = stat.st_size
            if request.method == 'HEAD':
                headers.update({'Content-Length': str(size), 'x-ms-access-tier': 'Hot',
                                'x-ms-access-tier-inferred': 'true'})
                stream.close()
                return 200, headers, b''
            status, start, end = requested_range(request, size, headers)
        except BaseException:
            stream.close()
            raise
        stream.seek(start)
        return status, headers, _read_file(stream, end - start + 1)

    def _delete_blob(self, target, request):
        parent = self._open_parent(target)
        try:
            with self._commit_lock:
                self._check_conditions(request, self._current_etag(target))
                try:
                    if stat_module.S_ISLNK(os.lstat(target.segments[-1], dir_fd=parent).st_mode):
                        raise _blob_not_found()
                    os.unlink(target.segments[-1], dir_fd=parent)
                except (FileNotFoundError, IsADirectoryError, PermissionError):
                    raise _blob_not_found() from None
        finally:
            os.close(parent)
        self._prune(target)
        return 202, {}, b''

    @staticmethod
    def _prune(target):
        """Remove the folders the blob's name made that are empty now (a listing shows no folders, only blobs)."""
        for depth in range(len(target.segments) - 1, 0, -1):
            try:
                os.rmdir(os.path.join(target.root, *target.segments[:depth]))
            except OSError:
                return  # not empty, or not ours to remove

    # -- blobs: writing --------------------------------------------------------------------------------------------

    def _receive(self, target, request, size):
        """Write the request body (`size` bytes) into a new file of the uploads folder; its path."""
        os.makedirs(target.uploads, exist_ok=True)
        fd, path = tempfile.mkstemp(dir=target.uploads, prefix=_RECEIVING[0])
        digest = hashlib.md5()  # nosec: the protocol's integrity checksum
        received = 0
        try:
            with os.fdopen(fd, 'wb') as out:
                while received < size:
                    chunk = request.body_reader.read(min(CHUNK_BYTES, size - received))
                    if not chunk:
                        break
                    digest.update(chunk)
                    out.write(chunk)
                    received += len(chunk)
            if received != size:
                raise StorageApiError(400, 'InvalidInput', 'The request body is shorter than its Content-Length.')
            declared = request.headers.get('content-md5')
            if declared and declared.strip() != base64.b64encode(digest.digest()).decode():
                raise StorageApiError(400, 'Md5Mismatch', 'The MD5 value specified in the request did not match '
                                      'with the MD5 value calculated by the server.')
        except BaseException:
            os.unlink(path)
            raise
        return path, base64.b64encode(digest.digest()).decode()

    def _commit(self, target, request, path):
        """Rename the received file `path` into the container as the blob, in one step; the answer's headers."""
        os.chmod(path, 0o644)
        try:
            parent = self._open_parent(target, create=True)
        except BaseException:
            os.unlink(path)
            raise
        try:
            with self._commit_lock:
                self._check_conditions(request, self._current_etag(target))
                try:
                    if stat_module.S_ISLNK(os.lstat(target.segments[-1], dir_fd=parent).st_mode):
                        os.unlink(target.segments[-1], dir_fd=parent)  # a link is replaced, never written through
                except FileNotFoundError:
                    pass
                try:
                    os.replace(path, target.segments[-1], dst_dir_fd=parent)
                except (IsADirectoryError, NotADirectoryError):
                    raise _path_conflict() from None
                stat = os.stat(target.segments[-1], dir_fd=parent, follow_symlinks=False)
        except BaseException:
            if os.path.exists(path):
                os.unlink(path)
            raise
        finally:
            os.close(parent)
        headers = {name: _blob_headers(stat)[name] for name in ('ETag', 'Last-Modified')}
        headers['x-ms-request-server-encrypted'] = 'true'
        return headers

    def _put_blob(self, target, request):
        blob_type = request.headers.get('x-ms-blob-type', '')
        if blob_type != 'BlockBlob':
            raise StorageApiError(400, 'InvalidHeaderValue' if blob_type else 'MissingRequiredHeader',
                                  'The local Blob endpoint stores block blobs only (x-ms-blob-type: BlockBlob).')
        size = _size(request, MAX_PUT_BLOB_BYTES)
        self._check_conditions(request, self._current_etag(target))  # before the body: no upload for nothing
        path, md5 = self._receive(target, request, size)
        headers = self._commit(target, request, path)
        headers['Content-MD5'] = md5
        return 201, headers, b''

    def _put_block(self, target, request):
        block = _block_file(request.arg('blockid'))
        size = _size(request, MAX_BLOCK_BYTES)
        staged = target.staged()
        os.makedirs(staged, exist_ok=True)
        if len(os.listdir(staged)) >= MAX_UNCOMMITTED_BLOCKS:
            raise StorageApiError(409, 'BlockCountExceedsLimit', 'The uncommitted block count cannot exceed the '
                                  'maximum limit of {} blocks.'.format(MAX_UNCOMMITTED_BLOCKS))
        path, md5 = self._receive(target, request, size)
        os.replace(path, os.path.join(staged, block))
        return 201, {'Content-MD5': md5, 'x-ms-request-server-encrypted': 'true'}, b''

    def _put_block_list(self, target, request):
        size = _size(request, MAX_BLOCK_LIST_BYTES)
        body = request.body_reader.read(size)
        if b'<!DOCTYPE' in body.upper() or b'<!ENTITY' in body.upper():
            raise StorageApiError(400, 'InvalidXmlDocument', 'XML specified is not syntactically valid.')
        try:
            root = ElementTree.fromstring(body)
        except ElementTree.ParseError:
            raise StorageApiError(400, 'InvalidXmlDocument', 'XML specified is not syntactically valid.') from None
        if root.tag != 'BlockList':
            raise StorageApiError(400, 'InvalidXmlDocument', 'The block list must be a <BlockList> element.')
        if len(root) > MAX_COMMITTED_BLOCKS:
            raise StorageApiError(400, 'BlockListTooLong', 'The block list may not contain more than {} blocks.'
                                  .format(MAX_COMMITTED_BLOCKS))
        staged = target.staged()
        blocks = []
        for element in root:
            if element.tag not in ('Latest', 'Uncommitted', 'Committed'):
                raise StorageApiError(400, 'InvalidXmlNodeValue', 'Unknown element <{}> in the block list.'
                                      .format(element.tag))
            block = os.path.join(staged, _block_file((element.text or '').strip()))
            if element.tag == 'Committed' or not os.path.isfile(block):
                # Committed blocks are not kept once a blob is written: a new blob is built from staged blocks.
                raise StorageApiError(400, 'InvalidBlockList', 'The specified block list is invalid: a block is '
                                      'not staged (the local Blob endpoint keeps no committed blocks).')
            blocks.append(block)
        self._check_conditions(request, self._current_etag(target))
        os.makedirs(target.uploads, exist_ok=True)
        fd, path = tempfile.mkstemp(dir=target.uploads, prefix=_RECEIVING[1])
        try:
            with os.fdopen(fd, 'wb') as out:
                for block in blocks:
                    with open(block, 'rb') as source:
                        shutil.copyfileobj(source, out, CHUNK_BYTES)
        except BaseException:
            os.unlink(path)
            raise
        headers = self._commit(target, request, path)
        shutil.rmtree(staged, ignore_errors=True)  # as on Azure: uncommitted blocks go with the commit
        return 201, headers, b''
