"""A small Azure Files REST subset over a local directory tree, enough for `azure-storage-file-share`.

URLs are path-style, as Azurite's: ``/<account>/<share>/<directory...>/<file>``; share ``s`` of account ``a`` is the
directory ``<storage_root>/a/shares/s`` (the layout contract of layout.py). Supported calls, as the SDK sends them:

=======  =====================================  ==========================================================
GET      /<account>?comp=list                   list the account's shares (prefix, marker/maxresults paging)
GET      ?restype=directory&comp=list           list a directory (prefix, marker/maxresults paging)
GET/HEAD ?restype=directory                     directory properties
GET/HEAD ?restype=share                         share properties
GET/HEAD (a file)                               file properties / download (x-ms-range or Range -> 206)
PUT      ?restype=share                         create a share
DELETE   ?restype=share                         delete a share and its files (SharedKey only, as on Azure)
PUT      ?restype=directory                     create a directory
PUT      (a file) with x-ms-type: file          create (or replace) a file of x-ms-content-length bytes
PUT      (a file) ?comp=range                   write (x-ms-write: update) or zero (clear) a byte range
=======  =====================================  ==========================================================

Every request is authenticated, with SharedKey (the single local account key, whatever the account name) or with a
service SAS (share or file, ``sr=s``/``sr=f``) signed with that key; listing shares (an account-level operation) takes
SharedKey only, as a service SAS cannot grant it. Account SAS and stored access policies are not
supported: nothing local hands them out, and a refusal is clearer than a half-checked grant. Errors use the Storage
XML error format and the x-ms-error-code header. Only the standard library is used.
"""
import base64
import binascii
import email.utils
import errno
import hashlib
import hmac
import http.server
import logging
import os
import re
import shutil
import time
import uuid
from datetime import datetime, timezone
from urllib.parse import quote, unquote, urlsplit
from xml.sax.saxutils import escape, quoteattr

from ..fileio import is_within, read_range

logger = logging.getLogger(__name__)

API_VERSION = '2025-11-05'  # answered when the request names none
MAX_RESULTS = 5000  # the service's own page size limit
MAX_RANGE_BYTES = 4 * 1024 * 1024  # the service's limit for one Put Range
CHUNK_BYTES = 64 * 1024
CLOCK_SKEW_SECONDS = 15 * 60
SHARE_QUOTA_GIB = 5120  # the service's default share quota, answered in List Shares (local shares have no quota)  # as the service: older or later signed requests are refused

# Matched whole (fullmatch): with `$`, a name ending in a newline passed.
ACCOUNT_NAME = re.compile(r'[a-z0-9]{3,24}')
SHARE_NAME = re.compile(r'[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}')
_RANGE = re.compile(r'bytes=(\d+)-(\d*)', re.ASCII)
# Characters XML 1.0 cannot carry: such names are sent percent-encoded with Encoded="true", as the service does.
_XML_UNSAFE = re.compile('[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')
_SIGNED_HEADERS = ('content-encoding', 'content-language', 'content-length', 'content-md5', 'content-type', 'date',
                   'if-modified-since', 'if-match', 'if-none-match', 'if-unmodified-since', 'range')
SAS_FIELDS = ('sp', 'st', 'se', None, 'si', 'sip', 'spr', 'sv', 'rscc', 'rscd', 'rsce', 'rscl', 'rsct')
_SAS_MIN_VERSION = '2015-04-05'  # the first version whose string-to-sign has sip and spr


class StorageApiError(Exception):
    """An error answer: HTTP status, Storage error code and message."""

    def __init__(self, status, code, message, detail=None):
        super().__init__(message)
        self.status, self.code, self.message, self.detail = status, code, message, detail


def _os_error(error):
    """The Storage error for what the file system refused: a full disk says so (not "Internal error"), a symlink
    loop is a missing resource, anything else a server error that names the system's reason."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageApiError(507, 'InsufficientStorage', "The local service's disk is full: free space on its "
                               'data dir, then retry.')
    if error.errno in (errno.ELOOP, errno.ENOENT, errno.ENOTDIR):
        return not_found('ResourceNotFound', 'resource')
    logger.warning('files API: %s', error)
    return StorageApiError(500, 'InternalError', 'The local service could not access the file: {}.'.format(
        error.strerror or 'operating system error'))


def not_found(code, what):
    return StorageApiError(404, code, 'The specified {} does not exist.'.format(what))


def list_paging(request):
    """(prefix, marker, maxresults) of a list request (shares, or a directory's entries): 400 for a bad maxresults."""
    try:
        max_results = int(request.arg('maxresults', MAX_RESULTS))
    except ValueError:
        max_results = 0
    if not 1 <= max_results <= MAX_RESULTS:
        raise StorageApiError(400, 'OutOfRangeQueryParameterValue', 'maxresults must be between 1 and {}.'
                              .format(MAX_RESULTS))
    return request.arg('prefix', ''), request.arg('marker', ''), max_results


def _auth_failed(detail):
    return StorageApiError(403, 'AuthenticationFailed', 'Server failed to authenticate the request. Make sure the '
                           'value of the Authorization header is formed correctly including the signature.', detail)


def invalid_name():
    return StorageApiError(400, 'InvalidResourceName', 'The specified resource name contains invalid characters.')


class _Request:
    """One request, parsed: decoded path segments and query, lower-cased headers."""

    def __init__(self, method, path, query, headers, body_reader):
        self.method = method.upper()
        self.raw_path = path
        self.query = {}
        if isinstance(query, str):
            # unquote, not unquote_plus: the Storage SDKs percent-encode spaces and sign '+' as a literal '+'.
            for part in query.split('&'):
                if part:
                    name, _, value = part.partition('=')
                    self.query.setdefault(unquote(name).lower(), []).append(unquote(value))
        else:
            for name, value in (query or {}).items():
                self.query.setdefault(name.lower(), []).extend([value] if isinstance(value, str) else value)
        self.headers = {name.lower(): value for name, value in headers.items()}
        self.body_reader = body_reader
        # Decoded before splitting: the SDK sends a nested directory name as one segment, 'in%2Fdeep'.
        self.segments = unquote(path).split('/')[1:]
        if self.segments and self.segments[-1] == '':
            self.segments.pop()

    def arg(self, name, default=None):
        values = self.query.get(name)
        return values[0] if values else default


class FilesApi:
    """The Azure Files REST subset of the local service, over `<storage_root>/<account>/shares/<share>`."""

    # What differs for the Blob endpoint (blob_api.py, a subclass): the folder of the account holding the shares,
    # the service SAS it takes ({sr}: share or file; its canonical resource's service), what a SAS for one file may
    # do, and the permission letters each operation needs (any one of them).
    FOLDER = 'shares'
    CONTAINER_NOUN, ITEM_NOUN = 'share', 'file'
    SAS_SERVICE, SAS_CONTAINER, SAS_ITEM = 'file', 's', 'f'
    SAS_ITEM_OPERATIONS = ('file-properties', 'create-file', 'put-range')

    def __init__(self, storage_root, account_key):
        self.storage_root = os.path.abspath(storage_root)
        self._real_root = os.path.realpath(storage_root)
        self._key = base64.b64decode(account_key)

    def handle(self, method, path, query, headers, body_reader, on_authenticated=None):
        """Answer one request.

        `path` is the request path as received (still percent-encoded); `query` the raw query string (preferred) or
        a mapping of decoded values (parse_qs-style: a '+' decoded to a space then breaks the signature of a request
        whose prefix or marker holds a '+'); `headers` a mapping; `body_reader` a binary file object holding the
        body (at most Content-Length bytes are read); `on_authenticated` is called once the request's signature held
        (the server keeps such connections open). Returns (status, headers, body): body is bytes or an iterable
        of bytes, empty for HEAD; Content-Length is always set.
        """
        request = _Request(method, path, query, headers, body_reader)
        request.on_authenticated = on_authenticated
        request_id = str(uuid.uuid4())
        try:
            try:
                status, out_headers, body = self._dispatch(request)
            except OSError as error:
                raise _os_error(error) from None
        except StorageApiError as error:
            logger.debug('%s %s -> %s %s', request.method, path, error.status, error.code)
            status, out_headers, body = error.status, {'x-ms-error-code': error.code}, _error_xml(error, request_id)
            out_headers['Content-Type'] = 'application/xml'
        out_headers.update({'x-ms-request-id': request_id, 'x-ms-version': request.headers.get('x-ms-version',
                                                                                              API_VERSION),
                            'Date': email.utils.formatdate(usegmt=True)})
        if isinstance(body, bytes):  # a HEAD of a file has set the file's length already
            out_headers.setdefault('Content-Length', str(len(body)))
        if request.method == 'HEAD':  # headers only, errors included, whatever the adapter does with a body
            body = b''
        return status, out_headers, body

    # -- routing ---------------------------------------------------------------------------------------------------

    def _dispatch(self, request):
        if len(request.segments) == 1:
            return self._account_request(request)
        if len(request.segments) < 2:
            raise StorageApiError(400, 'InvalidUri', 'The requested URI does not represent any resource on the '
                                  'server (account-level operations are not supported).')
        account, share, names = request.segments[0].lower(), request.segments[1], request.segments[2:]
        if not ACCOUNT_NAME.fullmatch(account) or not SHARE_NAME.fullmatch(share):
            raise invalid_name()
        if any(name in ('', '.', '..') or '\\' in name or '\0' in name for name in names):
            raise invalid_name()
        restype, comp = request.arg('restype'), request.arg('comp')
        operation = _operation(request.method, restype, comp, names)
        self._authenticate(request, operation, share, names)
        if request.on_authenticated is not None:
            request.on_authenticated()

        share_root = self._share_root(account, share)
        if operation == 'create-share':
            return self._create_share(share_root)
        if not os.path.isdir(share_root):
            raise not_found('ShareNotFound', 'share')
        target = self._resolve(share_root, names)
        handler = {
            'share-properties': self._directory_properties,
            'directory-properties': self._directory_properties,
            'list': lambda path, req: self._list(path, req, share, names),
            'create-directory': self._create_directory,
            'file-properties': self._file_properties,
            'create-file': self._create_file,
            'put-range': self._put_range,
            'delete-share': self._delete_share,
        }[operation]
        return handler(target, request)

    def _share_root(self, account, share):
        """The share's directory below the (resolved) storage root.

        The account folder, its `shares` folder and the share folder must be real folders: a job can plant a symlink
        in their place (it writes to the storage below the data dir), and following one would make the data dir's
        token and keys a "share", readable and writable with the storage key or a SAS.
        """
        path = self._real_root
        for part in ('', account, self.FOLDER, share):  # '': the storage folder itself, replaced since the start
            path = os.path.join(path, part) if part else path
            if os.path.islink(path):
                raise StorageApiError(403, 'AuthorizationFailure', 'The storage of this {} is a symbolic link; '
                                      'the local service does not follow it.'.format(self.CONTAINER_NOUN))
        return path

    def _resolve(self, share_root, names):
        """The local path of `names` in the share, symlinks resolved; they must not lead out of it."""
        real_target = os.path.realpath(os.path.join(share_root, *names))
        if not is_within(share_root, real_target):
            raise not_found('ResourceNotFound', 'resource')
        return real_target

    # -- the account: List Shares -------------------------------------------------------------------------------

    def _account_request(self, request):
        """`GET /<account>?comp=list` (List Shares, what `az storage share list` sends; List Containers on the Blob
        endpoint); nothing else at this level."""
        account = request.segments[0].lower()
        if not ACCOUNT_NAME.match(account):
            raise invalid_name()
        if request.method != 'GET' or request.arg('comp') != 'list' or request.arg('restype') is not None:
            raise StorageApiError(400, 'UnsupportedOperation', 'The local {} endpoint supports only listing its {}s '
                                  '(GET ?comp=list) on an account.'.format(self.SAS_SERVICE, self.CONTAINER_NOUN))
        authorization = request.headers.get('authorization')
        if not authorization:
            raise _auth_failed('Listing {0}s needs the account key (SharedKey): a {0} or {1} SAS cannot grant it, '
                               'and account SAS is not supported.'.format(self.CONTAINER_NOUN, self.ITEM_NOUN))
        self._check_shared_key(request, authorization)
        if request.on_authenticated is not None:
            request.on_authenticated()
        return self._list_account(request, account)

    def _list_account(self, request, account):
        """The shares of `account` in the List Shares XML (names, Last-Modified, Etag, Quota), paged by name."""
        prefix, marker, max_results = list_paging(request)
        shares_dir = os.path.join(self.storage_root, account, 'shares')
        shares = []
        try:
            with os.scandir(shares_dir) as listing:
                for entry in listing:
                    # A share is a real directory of the storage tree: a link could lead out of it.
                    if (entry.is_dir(follow_symlinks=False) and SHARE_NAME.match(entry.name)
                            and entry.name.startswith(prefix) and entry.name >= marker):
                        shares.append((entry.name, entry.stat(follow_symlinks=False)))
        except FileNotFoundError:
            pass  # an account nothing was created in yet has no shares
        shares.sort()
        page, rest = shares[:max_results], shares[max_results:]
        host = request.headers.get('host', 'localhost')
        parts = ['<?xml version="1.0" encoding="utf-8"?>',
                 '<EnumerationResults ServiceEndpoint={}>'.format(
                     quoteattr('http://{}/{}/'.format(host, request.segments[0]))),
                 xml_element('Prefix', prefix) if prefix else '', xml_element('Marker', marker) if marker else '',
                 xml_element('MaxResults', str(max_results)) if request.arg('maxresults') else '', '<Shares>']
        for name, stat in page:
            headers = entity_headers(stat)
            parts.append('<Share>{}<Properties>{}{}<Quota>{}</Quota></Properties></Share>'.format(
                xml_element('Name', name), xml_element('Last-Modified', headers['Last-Modified']),
                xml_element('Etag', headers['ETag']), SHARE_QUOTA_GIB))
        parts += ['</Shares>', xml_element('NextMarker', rest[0][0]) if rest else '<NextMarker />',
                  '</EnumerationResults>']
        return 200, {'Content-Type': 'application/xml'}, ''.join(parts).encode('utf-8')

    # -- authentication ----------------------------------------------------------------------------------------------

    def _authenticate(self, request, operation, share, names):
        authorization = request.headers.get('authorization')
        if authorization:
            self._check_shared_key(request, authorization)
        elif request.arg('sig') is not None:
            self._check_sas(request, operation, share, names)
        else:
            raise StorageApiError(403, 'AuthenticationFailed', 'Anonymous access is not allowed: sign the request '
                                  'with the account key (SharedKey) or use a SAS.')

    def _sign(self, text):
        return base64.b64encode(hmac.new(self._key, text.encode('utf-8'), hashlib.sha256).digest()).decode()

    def _check_shared_key(self, request, authorization):
        scheme, _, credential = authorization.partition(' ')
        account, _, signature = credential.rpartition(':')
        if scheme != 'SharedKey' or not account:
            raise _auth_failed('Only the SharedKey authorization scheme is supported.')
        if account.lower() != request.segments[0].lower():
            raise _auth_failed('The account in the Authorization header is not the account of the URL.')
        request_date = request.headers.get('x-ms-date') or request.headers.get('date')
        try:
            signed_at = email.utils.parsedate_to_datetime(request_date).timestamp()
        except (TypeError, ValueError):
            raise _auth_failed('The request has no valid x-ms-date or Date header.') from None
        if abs(time.time() - signed_at) > CLOCK_SKEW_SECONDS:
            raise _auth_failed('Request date header too old or too far in the future.')
        expected = [self._sign(text) for text in _shared_key_strings(request, account)]
        if not any(_same(signature, candidate) for candidate in expected):
            raise _auth_failed('The MAC signature found in the HTTP request is not the same as any computed '
                               'signature.')

    def _check_sas(self, request, operation, share, names):
        fields = {name: request.arg(name, '') for name in SAS_FIELDS if name}
        resource_type = request.arg('sr')
        if request.arg('ss') or request.arg('srt') or resource_type not in (self.SAS_CONTAINER, self.SAS_ITEM):
            raise _auth_failed('Only service SAS for a {0} (sr={1}) or a {2} (sr={3}) is supported.'.format(
                self.CONTAINER_NOUN, self.SAS_CONTAINER, self.ITEM_NOUN, self.SAS_ITEM))
        if fields['si'] or fields['sip']:
            raise _auth_failed('SAS with a stored access policy (si) or an IP range (sip) is not supported.')
        if fields['sv'] < _SAS_MIN_VERSION:
            raise _auth_failed('SAS versions older than {} are not supported.'.format(_SAS_MIN_VERSION))
        if fields['spr'] == 'https':
            raise StorageApiError(403, 'AuthorizationProtocolMismatch', 'This SAS only allows HTTPS; the local '
                                  'service answers HTTP.')
        resource = '/{}/{}/{}'.format(self.SAS_SERVICE, request.segments[0], share)
        if resource_type == self.SAS_ITEM:
            resource += '/' + '/'.join(names)
        if not _same(request.arg('sig'), self._sign(self._sas_string_to_sign(request, fields, resource))):
            raise _auth_failed('Signature did not match.')
        now = datetime.now(timezone.utc)
        expiry, start = _parse_time(fields['se']), _parse_time(fields['st']) if fields['st'] else None
        if expiry is None or now > expiry or (fields['st'] and (start is None or now < start)):
            raise _auth_failed('Signed expiry time or start time does not allow access now.')
        if resource_type == self.SAS_ITEM and operation not in self.SAS_ITEM_OPERATIONS:
            raise StorageApiError(403, 'AuthorizationResourceTypeMismatch', 'A {0} SAS only grants access to its '
                                  '{0}.'.format(self.ITEM_NOUN))
        needed = self.SAS_PERMISSION[operation]
        if not any(letter in fields['sp'] for letter in needed):
            raise StorageApiError(403, 'AuthorizationPermissionMismatch', 'This request is not authorized to '
                                  'perform this operation using this permission.')

    @staticmethod
    def _sas_string_to_sign(request, fields, resource):
        """What a File service SAS signs (the same fields in every version since 2015-04-05)."""
        del request
        return '\n'.join(resource if name is None else fields[name] for name in SAS_FIELDS)

    # -- shares and directories ------------------------------------------------------------------------------------

    @staticmethod
    def _create_share(share_root):
        try:
            os.makedirs(share_root)
        except FileExistsError:
            raise StorageApiError(409, 'ShareAlreadyExists', 'The specified share already exists.') from None
        return 201, entity_headers(os.stat(share_root)), b''

    @staticmethod
    def _delete_share(share_root, request):
        """Delete Share: the share's folder and everything in it (a symlink in it is removed, never followed; the
        share folder itself is no symlink, _share_root checked). A job mounting the share loses it, as on Azure."""
        del request
        shutil.rmtree(share_root)
        return 202, {}, b''

    @staticmethod
    def _directory_properties(path, request):
        del request
        if not os.path.isdir(path):
            raise not_found('ResourceNotFound', 'resource')
        headers = entity_headers(os.stat(path))
        headers['x-ms-file-attributes'] = 'Directory'
        return 200, headers, b''

    @staticmethod
    def _create_directory(path, request):
        del request
        if not os.path.isdir(os.path.dirname(path)):
            raise not_found('ParentNotFound', 'parent path')
        try:
            os.mkdir(path)
        except FileExistsError:
            raise StorageApiError(409, 'ResourceAlreadyExists', 'The specified resource already exists.') from None
        return 201, entity_headers(os.stat(path)), b''

    def _list(self, path, request, share, names):
        if not os.path.isdir(path):
            raise not_found('ResourceNotFound', 'resource')
        prefix, marker, max_results = list_paging(request)
        entries = []
        with os.scandir(path) as listing:
            for entry in listing:
                if entry.name.startswith(prefix) and entry.name >= marker and self._is_inside(path, entry):
                    entries.append(entry)
        entries.sort(key=lambda entry: entry.name)
        page, rest = entries[:max_results], entries[max_results:]
        host = request.headers.get('host', 'localhost')
        parts = ['<?xml version="1.0" encoding="utf-8"?>',
                 '<EnumerationResults ServiceEndpoint={} ShareName={} DirectoryPath={}>'.format(
                     quoteattr('http://{}/{}/'.format(host, request.segments[0])), quoteattr(share),
                     quoteattr('/'.join(names))),
                 xml_element('Prefix', prefix) if prefix else '', xml_element('Marker', marker) if marker else '',
                 xml_element('MaxResults', str(max_results)) if request.arg('maxresults') else '', '<Entries>']
        for entry in page:
            name = name_element(entry.name)
            if entry.is_dir():
                parts.append('<Directory>{}<Properties /></Directory>'.format(name))
                continue
            try:
                size = entry.stat().st_size
            except OSError:  # a symlink loop, or gone since the scan: listed without a size it does not have
                size = 0
            parts.append('<File>{}<Properties><Content-Length>{}</Content-Length></Properties></File>'
                         .format(name, size))
        parts += ['</Entries>', xml_element('NextMarker', rest[0].name) if rest else '<NextMarker />',
                  '</EnumerationResults>']
        return 200, {'Content-Type': 'application/xml'}, ''.join(parts).encode('utf-8')

    def _is_inside(self, directory, entry):
        # Listing a symlink that leads out of the share would reveal what the share must not expose.
        if not entry.is_symlink():
            return True
        try:
            self._resolve(directory, [entry.name])
        except StorageApiError:
            return False
        return True

    # -- files -----------------------------------------------------------------------------------------------------

    @staticmethod
    def _file_properties(path, request):
        if not os.path.isfile(path):
            raise not_found('ResourceNotFound', 'resource')
        stat = os.stat(path)
        headers = entity_headers(stat)
        headers.update({'Content-Type': 'application/octet-stream', 'Accept-Ranges': 'bytes', 'x-ms-type': 'File',
                        'x-ms-file-attributes': 'Archive'})
        size = stat.st_size
        if request.method == 'HEAD':
            headers['Content-Length'] = str(size)
            return 200, headers, b''
        status, start, end = requested_range(request, size, headers)
        return status, headers, read_range(path, start, end - start + 1)

    @staticmethod
    def _create_file(path, request):
        if request.headers.get('x-ms-type', '').lower() != 'file':
            raise StorageApiError(400, 'MissingRequiredHeader', 'An HTTP header that is mandatory for this request '
                                  'is not specified: x-ms-type.')
        try:
            size = int(request.headers['x-ms-content-length'])
        except (KeyError, ValueError):
            raise StorageApiError(400, 'MissingRequiredHeader', 'An HTTP header that is mandatory for this request '
                                  'is not specified: x-ms-content-length.') from None
        if size < 0:
            raise StorageApiError(400, 'InvalidHeaderValue', 'x-ms-content-length must not be negative.')
        if not os.path.isdir(os.path.dirname(path)):
            raise not_found('ParentNotFound', 'parent path')
        if os.path.isdir(path):
            raise StorageApiError(409, 'ResourceTypeMismatch', 'The specified resource type does not match the type '
                                  'of the existing resource.')
        with open(path, 'wb') as created:
            created.truncate(size)
        return 201, entity_headers(os.stat(path)), b''

    @staticmethod
    def _put_range(path, request):
        if not os.path.isfile(path):
            raise not_found('ResourceNotFound', 'resource')
        size = os.path.getsize(path)
        start, end = parse_range(request.headers.get('x-ms-range') or request.headers.get('range') or '', size,
                                  exact=True)
        length = end - start + 1
        if length > MAX_RANGE_BYTES:
            raise StorageApiError(413, 'RequestBodyTooLarge', 'A range may hold at most {} bytes.'
                                  .format(MAX_RANGE_BYTES))
        write = request.headers.get('x-ms-write', '').lower()
        if write == 'clear':
            data = bytes(length)
        elif write == 'update':
            if int(request.headers.get('content-length') or 0) != length:
                raise StorageApiError(400, 'InvalidHeaderValue', 'Content-Length must equal the size of the range.')
            data = request.body_reader.read(length)
            if len(data) != length:
                raise StorageApiError(400, 'InvalidInput', 'The request body is shorter than its Content-Length.')
            _check_md5(request, data)
        else:
            raise StorageApiError(400, 'InvalidHeaderValue', "x-ms-write must be 'update' or 'clear'.")
        with open(path, 'r+b') as target:
            target.seek(start)
            target.write(data)
        headers = entity_headers(os.stat(path))
        if write == 'update':
            headers['Content-MD5'] = base64.b64encode(hashlib.md5(data).digest()).decode()  # nosec: a checksum
        return 201, headers, b''


# Which SAS permission letters allow each operation (any one of them).
_SAS_PERMISSION = {
    'share-properties': 'r', 'directory-properties': 'r', 'file-properties': 'r', 'list': 'l',
    'create-directory': 'cw', 'create-file': 'cw', 'put-range': 'w', 'create-share': '',
    'delete-share': '',  # as on Azure: a service SAS cannot create or delete a share
}
FilesApi.SAS_PERMISSION = _SAS_PERMISSION


def _operation(method, restype, comp, names):
    """The name of the supported operation a request asks for."""
    read = method in ('GET', 'HEAD')
    if restype == 'share' and not names and comp is None:
        if read:
            return 'share-properties'
        if method == 'PUT':
            return 'create-share'
        if method == 'DELETE':
            return 'delete-share'
    elif restype == 'directory':
        if comp == 'list' and method == 'GET':
            return 'list'
        if comp is None and read:
            return 'directory-properties'
        if comp is None and method == 'PUT' and names:
            return 'create-directory'
    elif restype is None and names:
        if comp is None and read:
            return 'file-properties'
        if comp is None and method == 'PUT':
            return 'create-file'
        if comp == 'range' and method == 'PUT':
            return 'put-range'
    raise StorageApiError(400, 'UnsupportedOperation', 'The local Azure Files endpoint does not support {} with '
                          'restype={} comp={}.'.format(method, restype, comp))


def _same(sent, expected):
    """Constant-time comparison of a signature as sent (any characters) with the expected one."""
    # Bytes: compare_digest raises TypeError on a non-ASCII str, which would turn a forged signature into a 500.
    return hmac.compare_digest(sent.encode('utf-8', 'surrogateescape'), expected.encode('utf-8'))


def _shared_key_strings(request, account):
    """The strings a SharedKey client may have signed for this request (see "Authorize with Shared Key").

    Path-style URLs put the account in the path too; the SDKs sign '/<account>' + the path as sent, while a client
    written for the service's host-style URLs signs the path without it; both are accepted. Likewise the Date line
    is empty when x-ms-date is given (the documented form) or the Date value (what the Python SDK signs).
    """
    headers = request.headers
    x_ms = sorted((name, value) for name, value in headers.items() if name.startswith('x-ms-'))
    # The service orders headers ignoring hyphens (a culture-aware sort); equal names then fall back to ordinal.
    x_ms.sort(key=lambda item: (item[0].replace('-', ''), item[0]))
    canonical_headers = ''.join('{}:{}\n'.format(name, ' '.join(value.split())) for name, value in x_ms)
    query = ''.join('\n{}:{}'.format(name, ','.join(sorted(values))) for name, values in sorted(request.query.items()))
    resources = ['/' + account + request.raw_path]
    account_prefix = '/' + request.segments[0]
    if request.raw_path.startswith(account_prefix + '/'):
        resources.append('/' + account + request.raw_path[len(account_prefix):])
    standard = [headers.get(name, '') for name in _SIGNED_HEADERS]
    if standard[2] == '0':  # Content-Length: empty when zero (versions 2015-02-21 and later)
        standard[2] = ''
    date_forms = {standard[5], ''} if 'x-ms-date' in headers else {standard[5]}
    strings = []
    for date in date_forms:
        standard[5] = date
        lines = '\n'.join([request.method] + standard) + '\n' + canonical_headers
        strings += [lines + resource + query for resource in resources]
    return strings


def _parse_time(text):
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def parse_range(header, size, exact=False):
    """(start, end) of a 'bytes=a-b' range, clipped to the file; `exact` ranges (writes) must fit as given."""
    match = _RANGE.fullmatch(header.strip())
    if not match or (exact and not match.group(2)):
        raise StorageApiError(400, 'InvalidHeaderValue', 'The value for one of the HTTP headers is not in the '
                              'correct format: x-ms-range.')
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else size - 1
    if end < start or start >= size or (exact and end >= size):
        raise StorageApiError(416, 'InvalidRange', 'The range specified is invalid for the current size of the '
                              'resource.')
    return start, min(end, size - 1)


def requested_range(request, size, headers):
    """(status, start, end) of a GET of `size` bytes: the whole (200), or its x-ms-range / Range (206, with
    Content-Range); sets Content-Length in `headers` to what is sent (Files' Get File and Blob's Get Blob)."""
    byte_range = request.headers.get('x-ms-range') or request.headers.get('range')
    start, end, status = 0, size - 1, 200
    if byte_range:
        start, end = parse_range(byte_range, size)
        status = 206
        headers['Content-Range'] = 'bytes {}-{}/{}'.format(start, end, size)
    headers['Content-Length'] = str(end - start + 1)
    return status, start, end


def _check_md5(request, data):
    declared = request.headers.get('content-md5')
    if not declared:
        return
    try:
        expected = base64.b64decode(declared, validate=True)
    except binascii.Error:
        expected = None
    if expected != hashlib.md5(data).digest():  # nosec: an integrity checksum, as the protocol defines it
        raise StorageApiError(400, 'Md5Mismatch', 'The MD5 value specified in the request did not match with the '
                              'MD5 value calculated by the server.')


def entity_headers(stat):
    """ETag, Last-Modified and the SMB timestamps the SDK reads into its properties models."""
    iso = datetime.fromtimestamp(stat.st_mtime, timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%f0Z')
    created = datetime.fromtimestamp(stat.st_ctime, timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%f0Z')
    return {'ETag': '"0x{:X}"'.format(stat.st_mtime_ns), 'Last-Modified': email.utils.formatdate(stat.st_mtime,
                                                                                                 usegmt=True),
            'x-ms-server-encrypted': 'false', 'x-ms-file-creation-time': created, 'x-ms-file-last-write-time': iso,
            'x-ms-file-change-time': created, 'x-ms-file-id': str(stat.st_ino), 'x-ms-file-parent-id': '0'}


# Beyond &, < and >: a parser turns a raw CR (and CR LF) into LF, so a name holding '\r' would come back changed
# and a FILE parameter would plan a path that does not exist. A character reference keeps it.
_XML_ENTITIES = {'\r': '&#13;'}


def xml_element(tag, text):
    return '<{0}>{1}</{0}>'.format(tag, escape(text, _XML_ENTITIES))


def name_element(name):
    if _XML_UNSAFE.search(name):
        return '<Name Encoded="true">{}</Name>'.format(quote(os.fsencode(name), safe=''))
    return xml_element('Name', name)


def _error_xml(error, request_id):
    message = '{}\nRequestId:{}\nTime:{}'.format(error.message, request_id,
                                                 datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%f0Z'))
    detail = xml_element('AuthenticationErrorDetail', error.detail) if error.detail else ''
    return ('<?xml version="1.0" encoding="utf-8"?><Error>{}{}{}</Error>'.format(
        xml_element('Code', error.code), xml_element('Message', message), detail)).encode('utf-8')


class _BodyReader:
    """The request body: at most Content-Length bytes of the connection, so a handler cannot read past it."""

    def __init__(self, stream, length):
        self._stream, self.remaining = stream, length

    def read(self, size=-1):
        size = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self._stream.read(size) if size else b''
        self.remaining -= len(data)
        return data


def make_handler(files_api):
    """A `http.server` request handler class serving `files_api` (for a ThreadingHTTPServer)."""

    class FilesRequestHandler(http.server.BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'  # keep-alive, as the SDK's connection pool expects

        def _serve(self):
            if self.headers.get('Transfer-Encoding'):
                self.send_error(411, 'Content-Length required')
                return
            body = _BodyReader(self.rfile, int(self.headers.get('Content-Length') or 0))
            url = urlsplit(self.path)
            status, headers, payload = files_api.handle(self.command, url.path, url.query, self.headers, body)
            if body.remaining > MAX_RANGE_BYTES:
                self.close_connection = True  # not worth draining: the client gets its answer, then a new socket
            else:
                while body.read(CHUNK_BYTES):  # an unread body would be taken for the next request
                    pass
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if self.command == 'HEAD':
                return
            for chunk in [payload] if isinstance(payload, bytes) else payload:
                self.wfile.write(chunk)

        do_GET = do_HEAD = do_PUT = do_DELETE = do_POST = _serve

        def log_message(self, format, *args):  # pylint: disable=redefined-builtin
            logger.debug('%s - %s', self.address_string(), format % args)

    return FilesRequestHandler
