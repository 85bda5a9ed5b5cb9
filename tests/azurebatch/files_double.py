"""TEST CODE ONLY: a small Azure Files REST double serving the Batch double's share folders over HTTPS, with Entra ID
(OAuth) authorization as Azure Files checks it for REST calls.

The Batch double (double/account.py `mount_source`) gives every Azure file share a pool mounts one local folder,
`<account root>/storage/<storage account>/files/<share>`; the tasks (local processes) write there through the
node's `fsmounts` link, as a real node writes to its mounted share. This double serves those folders path-style
(`/<storage account>/<share>/<path>`, as Azurite and the repository's own files_api.py do) for the calls the service
makes, and checks what Azure Files checks of an OAuth request over REST:

- `Authorization: Bearer <token>` with a token this double issued for the storage resource (401 otherwise:
  `InvalidAuthenticationInfo`, or an expired token);
- `x-ms-file-request-intent: backup` (without it the request is refused: 400 `MissingRequiredHeader` here);
- `x-ms-version` at least 2022-11-02 (the first version that accepts OAuth for Files REST) and an `x-ms-date`.

Calls: GET `?restype=directory&comp=list` (List Directories and Files: `FileId`, `Content-Length`, paging by
`maxresults`/`marker`), GET a file with `x-ms-range` (206 with those bytes; a range past the end: 416). Every
answer's body bytes are counted (`bytes_sent`) and every request recorded (`requests`), so a test can assert that a
poll read only new bytes. A file's `FileId` is its inode number here (Azure's is unique per file; a new attempt's
file, made after the wrapper deleted the last one, gets a new id there).
"""
import email.utils
import http.server
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, unquote, urlsplit
from xml.sax.saxutils import escape

MIN_OAUTH_VERSION = '2022-11-02'
_RANGE = re.compile(r'bytes=(\d+)-(\d+)$')


@dataclass
class FilesRequest:
    method: str
    path: str
    query: dict
    headers: dict
    status: int = 0
    sent: int = 0


class FilesDouble:
    """`endpoint(account)`: the account's Files URL (path-style); `token` (valid for the storage resource);
    `issue_token()`; `requests`, `bytes_sent`, `reset_counts()`; `close()`."""

    def __init__(self, storage_root, ca, page_size=5000):
        self.storage_root = storage_root
        self.page_size = page_size
        self.lock = threading.Lock()
        self.tokens = {}
        self.requests = []
        self.token = self.issue_token()
        handler = type('Handler', (_Handler,), {'double': self})
        self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
        self._server.daemon_threads = True
        self._server.socket = ca.server_context().wrap_socket(self._server.socket, server_side=True)
        self.url = 'https://127.0.0.1:{}'.format(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={'poll_interval': 0.1},
                                        daemon=True)
        self._thread.start()

    def endpoint(self, account):
        return '{}/{}'.format(self.url, account)

    def issue_token(self, lifetime=3600):
        token = 'files-double-token-{}'.format(uuid.uuid4().hex)
        with self.lock:
            self.tokens[token] = time.time() + lifetime
        return token

    @property
    def bytes_sent(self):
        with self.lock:
            return sum(r.sent for r in self.requests)

    def file_reads(self):
        """(path, x-ms-range, bytes sent) of every file download so far."""
        with self.lock:
            return [(r.path, r.headers.get('x-ms-range'), r.sent) for r in self.requests
                    if r.method == 'GET' and 'restype' not in r.query]

    def reset_counts(self):
        with self.lock:
            self.requests = []

    def close(self):
        self._server.shutdown()
        self._server.server_close()

    # ---- the calls -------------------------------------------------------------------------------------------

    def answer(self, request):
        """(status, headers, body bytes) for a request."""
        problem = self._check(request)
        if problem:
            return problem
        parts = [unquote(p) for p in request.path.strip('/').split('/') if p]
        if len(parts) < 2:
            return _error(400, 'InvalidUri', 'The requested URI does not represent any resource on the server.')
        account, share, names = parts[0], parts[1], parts[2:]
        root = os.path.join(self.storage_root, account, 'files', share)
        if not os.path.isdir(root):
            return _error(404, 'ShareNotFound', 'The specified share does not exist.')
        path = os.path.realpath(os.path.join(root, *names))
        if not (path == os.path.realpath(root) or path.startswith(os.path.realpath(root) + os.sep)):
            return _error(400, 'InvalidUri', 'The path leaves the share.')
        if request.query.get('restype') == 'directory' and request.query.get('comp') == 'list':
            if not os.path.isdir(path):
                return _error(404, 'ResourceNotFound', 'The specified resource does not exist.')
            return self._list(path, request.query, share, '/'.join(names))
        if request.query.get('restype'):
            return _error(400, 'UnsupportedQueryParameter', 'The Files double lists directories and reads files only.')
        if not os.path.isfile(path):
            return _error(404, 'ResourceNotFound', 'The specified resource does not exist.')
        return _download(path, request.headers.get('x-ms-range'))

    def _check(self, request):
        auth = request.headers.get('authorization') or ''
        scheme, _, token = auth.partition(' ')
        with self.lock:
            expiry = self.tokens.get(token) if scheme.lower() == 'bearer' else None
        if expiry is None or expiry < time.time():
            return _error(401, 'InvalidAuthenticationInfo' if expiry is None else 'AuthenticationFailed',
                          'Server failed to authenticate the request.' if expiry is None else
                          'Lifetime validation failed. The token is expired.')
        if (request.headers.get('x-ms-file-request-intent') or '').lower() != 'backup':
            return _error(400, 'MissingRequiredHeader', 'An HTTP header that\'s mandatory for this request is not '
                          'specified: x-ms-file-request-intent (OAuth requests to Azure Files over REST).')
        if (request.headers.get('x-ms-version') or '') < MIN_OAUTH_VERSION:
            return _error(400, 'InvalidHeaderValue', 'OAuth over REST needs x-ms-version {} or later.'.format(
                MIN_OAUTH_VERSION))
        if not request.headers.get('x-ms-date'):
            return _error(400, 'MissingRequiredHeader', 'x-ms-date is required.')
        return None

    def _list(self, path, query, share, directory):
        entries = sorted(os.listdir(path))
        marker = query.get('marker') or ''
        entries = [e for e in entries if e > marker] if marker else entries
        size = min(int(query.get('maxresults') or self.page_size), self.page_size)
        page, rest = entries[:size], entries[size:]
        items = []
        for name in page:
            full = os.path.join(path, name)
            stat = os.stat(full)
            if os.path.isdir(full):
                items.append('<Directory><Name>{}</Name><FileId>{}</FileId><Properties /></Directory>'.format(
                    escape(name), stat.st_ino))
            else:
                items.append('<File><Name>{}</Name><FileId>{}</FileId><Properties><Content-Length>{}'
                             '</Content-Length></Properties></File>'.format(escape(name), stat.st_ino, stat.st_size))
        body = ('<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="{}" ShareName="{}" '
                'DirectoryPath="{}"><Entries>{}</Entries><NextMarker>{}</NextMarker></EnumerationResults>').format(
                    escape(self.url), escape(share), escape(directory), ''.join(items),
                    escape(page[-1]) if rest else '')
        return 200, {'Content-Type': 'application/xml'}, body.encode('utf-8')


def _download(path, byte_range):
    size = os.path.getsize(path)
    headers = {'Content-Type': 'application/octet-stream', 'Accept-Ranges': 'bytes', 'x-ms-type': 'File'}
    if not byte_range:
        with open(path, 'rb') as f:
            return 200, headers, f.read()
    match = _RANGE.match(byte_range)
    if not match:
        return _error(400, 'InvalidRange', 'The range specified is invalid.')
    start, end = int(match.group(1)), int(match.group(2))
    if start >= size or end < start:
        return _error(416, 'InvalidRange', 'The range specified is invalid for the current size of the resource.')
    end = min(end, size - 1)
    with open(path, 'rb') as f:
        f.seek(start)
        data = f.read(end - start + 1)
    headers['Content-Range'] = 'bytes {}-{}/{}'.format(start, start + len(data) - 1, size)
    return 206, headers, data


def _error(status, code, message):
    body = ('<?xml version="1.0" encoding="utf-8"?><Error><Code>{}</Code><Message>{}</Message></Error>'.format(
        code, escape(message))).encode('utf-8')
    return status, {'Content-Type': 'application/xml', 'x-ms-error-code': code}, body


class _Handler(http.server.BaseHTTPRequestHandler):
    double = None
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # pylint: disable=invalid-name
        split = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(split.query).items()}
        request = FilesRequest('GET', quote(unquote(split.path)), query,
                               {k.lower(): v for k, v in self.headers.items()})
        status, headers, body = self.double.answer(request)
        request.status, request.sent = status, len(body)
        with self.double.lock:
            self.double.requests.append(request)
        self.send_response(status)
        headers = dict(headers, **{'Content-Length': str(len(body)), 'x-ms-version': MIN_OAUTH_VERSION,
                                   'Date': email.utils.formatdate(usegmt=True)})
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
