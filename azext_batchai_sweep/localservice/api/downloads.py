"""Signed download links: `/download/<path below the data dir>?se=<expiry>&sig=<hmac>`, with HTTP Range.

Range lets a client stream a growing log (`job file stream`): it asks for `bytes=<offset>-` repeatedly and gets
206 with what was appended, or 416 when nothing new is there yet.
"""
import email.utils
import os
import re
import urllib.parse

from ..auth import verify_link
from ..fileio import read_range
_RANGE = re.compile(r'bytes=(\d*)-(\d*)', re.ASCII)
# The folders of the data dir that jobs write to. Links never reach the rest (the token, the storage and link keys,
# the database), even through a symlink a job left in its output.
SERVABLE_ROOTS = ('clusters', 'jobs', 'storage')


def servable_path(real_data_dir, path, resolved=False):
    """The path of `path` (resolved, symlinks followed) relative to the data dir when a link may serve it, else None.

    :param real_data_dir: the data dir, already resolved with os.path.realpath.
    :param resolved: `path` is already resolved (no symlink in it): not resolved again.
    """
    relpath = os.path.relpath(path if resolved else os.path.realpath(path), real_data_dir)
    parts = relpath.split(os.sep)
    if parts[0] not in SERVABLE_ROOTS or len(parts) < 2 or '..' in parts:
        return None
    return relpath


def _error(status, code, message):
    body = '<?xml version="1.0" encoding="utf-8"?><Error><Code>{}</Code><Message>{}</Message></Error>'.format(
        code, message).encode('utf-8')
    return status, {'Content-Type': 'application/xml'}, body


def serve(data_dir, link_key, method, raw_path, query, range_header):
    """(status, headers, body bytes or iterable) of a download request."""
    relpath = urllib.parse.unquote(raw_path[len('/download/'):])
    if not verify_link(link_key, relpath, query.get('se'), query.get('sig')):
        return _error(403, 'AuthenticationFailed', 'The download link is invalid or has expired.')
    root = os.path.realpath(data_dir)
    path = os.path.join(root, relpath)
    if servable_path(root, path) is None:
        return _error(403, 'AuthorizationFailure', 'The path is outside the service storage.')
    path = os.path.realpath(path)
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return _error(404, 'ResourceNotFound', 'The file does not exist.')
    if not os.path.isfile(path):
        return _error(404, 'ResourceNotFound', 'Not a file.')
    size = stat.st_size
    headers = {'Content-Type': 'application/octet-stream', 'Accept-Ranges': 'bytes',
               'Last-Modified': email.utils.formatdate(stat.st_mtime, usegmt=True)}
    start, end, status = 0, size - 1, 200
    match = _RANGE.fullmatch((range_header or '').strip())
    if match and (match.group(1) or match.group(2)):
        first, last = match.groups()
        if first:
            start, end = int(first), min(int(last), size - 1) if last else size - 1
        else:  # suffix range: the last N bytes
            start, end = max(0, size - int(last)), size - 1
        if start >= size or start > end:
            headers['Content-Range'] = 'bytes */{}'.format(size)
            return 416, headers, b''
        headers['Content-Range'] = 'bytes {}-{}/{}'.format(start, end, size)
        status = 206
    length = max(0, end - start + 1)
    headers['Content-Length'] = str(length)
    if method == 'HEAD':
        return status, headers, b''
    return status, headers, read_range(path, start, length)
