"""Reading jobs' output files through listOutputFiles' downloadUrl: streamed chunks, log tails, whole folders.

downloadUrl is a SAS URL (Azure Files, or the local service's files endpoint): it carries its own credential,
so the requests go out without the ARM token, and the URL itself is never logged.
"""
import http.cookiejar
import logging
import os
import posixpath
import threading
import urllib.parse
from collections import deque

import requests
import urllib3
from azure.core.exceptions import ResourceNotFoundError

from ..service.identity import sweep_jobs
from ..service.parallel import run_parallel
from ..service.rest import job_url, next_page_url, send_json
from ..service.retry import RetrySettings, call_with_retries, describe_error, redact_urls
from ..service.sessions import pooled_session

logger = logging.getLogger(__name__)

class RedactSignatures(logging.Filter):
    """Masks `sig=` values in a record: urllib3 logs every request line, query string included, at DEBUG, and with
    `az --debug` that would print the SAS signature of every downloaded file."""

    def filter(self, record):
        message = record.getMessage()
        if 'sig=' in message.lower():
            record.msg, record.args = redact_urls(message), None
        return True


def _redact_urllib3_request_lines():
    pool_logger = logging.getLogger('urllib3.connectionpool')
    if not any(isinstance(f, RedactSignatures) for f in pool_logger.filters):
        pool_logger.addFilter(RedactSignatures())


_redact_urllib3_request_lines()

STDOUTERR = 'stdouterr'
# Streamed downloads are read 1 MB at a time: each read is a trip through the GIL, and with several threads
# scanning logs (metrics) 64 kB reads spent more time waiting for the GIL than reading (docs/benchmarks.md).
CHUNK_SIZE = 1024 * 1024
HTTP_TIMEOUT = (10, 60)  # connect, read: a stalled download fails and is retried instead of hanging
LINK_EXPIRY_MINUTES = 60
MAX_REDIRECTS = 5


class OutputFile:
    """A file (or directory) of a listOutputFiles answer, with the attribute names of the SDK's File model."""

    __slots__ = ('name', 'file_type', 'download_url', 'content_length', 'last_modified')

    def __init__(self, raw):
        properties = raw.get('properties') or {}
        self.name = raw.get('name') or ''
        self.file_type = raw.get('fileType')
        self.download_url = raw.get('downloadUrl')
        self.content_length = properties.get('contentLength')
        self.last_modified = properties.get('lastModified')  # as the service wrote it (ISO 8601)

    def __repr__(self):  # never the download URL: its query string is a credential
        return 'OutputFile({!r}, {}, {} bytes)'.format(self.name, self.file_type, self.content_length)


def _list_directory(client, resource_group, workspace, experiment, job, output_directory_id, directory, retry):
    """The OutputFiles of one directory, page by page (the SDK's requests: POST, then GET of each nextLink);
    each page is retried on its own."""
    # The query the SDK sends with its default JobsListOutputFilesOptions (links valid 60 minutes, pages of 1,000).
    url = job_url(client, resource_group, workspace, experiment, job, 'listOutputFiles',
                  outputdirectoryid=output_directory_id, directory=directory, linkexpiryinminutes=LINK_EXPIRY_MINUTES,
                  maxresults=1000)
    method, files = 'POST', []
    while url:
        page = call_with_retries(lambda: send_json(client, method, url), settings=retry,  # noqa: B023
                                 what='list output files of {}'.format(job))
        files.extend(OutputFile(raw) for raw in page.get('value') or ())
        method, url = 'GET', next_page_url(page)
    return files


def list_output_files(client, resource_group, workspace, experiment, job, output_directory_id=STDOUTERR,
                      directory='.', *, recursive=False, retry=None):
    """The OutputFiles (name, file_type, download_url, content_length) of a job's output directory.

    With recursive, subdirectories are listed too and each file's `name` becomes its path relative to
    `directory`. A job or directory that does not exist yields nothing.
    """
    retry = retry or RetrySettings()
    try:
        files = _list_directory(client, resource_group, workspace, experiment, job, output_directory_id, directory,
                                retry)
    except ResourceNotFoundError:
        return []
    result = []
    for item in files:
        name = posixpath.basename(item.name.rstrip('/'))
        if str(item.file_type).lower() == 'directory':
            if recursive:
                sub = posixpath.normpath(posixpath.join(directory, name))
                for child in list_output_files(client, resource_group, workspace, experiment, job,
                                               output_directory_id, sub, recursive=True, retry=retry):
                    child.name = posixpath.join(name, child.name)
                    result.append(child)
            continue
        item.name = name
        result.append(item)
    return result


def find_output_file(client, resource_group, workspace, experiment, job, path, output_directory_id=STDOUTERR, *,
                     retry=None):
    """The File model of `path` (may contain subdirectories, e.g. logs/metrics.txt), or None if there is none."""
    directory, name = posixpath.split(path.strip('/'))
    for item in list_output_files(client, resource_group, workspace, experiment, job, output_directory_id,
                                  directory or '.', retry=retry):
        if item.name == name:
            return item
    return None


_SESSION_LOCK = threading.Lock()
_SESSION = []
# Enough kept-alive connections per host for --parallel up to this; more threads open extra, short-lived ones.
DOWNLOAD_POOL_SIZE = 64


def download_session():
    """The one requests session every download of this process goes through, created on first use.

    Keeping connections alive matters when a command reads a small piece of many files (metrics' log tails): a new
    session per request means a new TCP (and TLS) connection and a new server thread for each one. The session is
    shared by the worker threads: urllib3's connection pool is thread-safe. Requests go to its adapter (_send), so
    no cookie a response sets rides along to the next file (a SAS URL carries its own credential); the cookie
    policy says so again for any caller that uses the session itself.
    """
    with _SESSION_LOCK:
        if not _SESSION:
            session = pooled_session(DOWNLOAD_POOL_SIZE)
            session.cookies.set_policy(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
            _SESSION.append(session)
        return _SESSION[0]


def disable_download_verification():
    """Downloads without TLS certificate checks: az's AZURE_CLI_DISABLE_CONNECTION_VERIFICATION, for the downloads
    as for az's own clients."""
    download_session().verify = False


def _send(url, headers):
    """One streamed GET of a download URL through the download session's connection pool.

    It goes to the session's adapter directly rather than through Session.get: the session's request machinery
    (hooks, cookies, auth, redirects, settings merged again for every call) costs more CPU than the request
    itself when metrics reads the tails of hundreds of logs, and a SAS download needs none of it. The proxy and
    CA-bundle environment is still honoured (read once per host by the session), and requests' adapter still
    turns connection failures into requests' exceptions, which are retried.
    """
    session = download_session()
    for _ in range(MAX_REDIRECTS + 1):
        # The session reads the environment once per host; merging it with the session's own settings is cheap.
        settings = session.merge_environment_settings(url, {}, True, None, None)
        request = requests.PreparedRequest()
        request.prepare(method='GET', url=url, headers=headers)
        response = session.get_adapter(url).send(request, timeout=HTTP_TIMEOUT, **settings)
        if response.is_redirect:  # followed as requests would (no credential header here to strip)
            url = urllib.parse.urljoin(url, response.headers['Location'])
            response.close()
            continue
        if response.status_code >= 400:
            response.close()
            response.raise_for_status()
        return response
    response.close()
    raise requests.TooManyRedirects('more than {} redirects'.format(MAX_REDIRECTS), response=response)


def _get(url, headers=None, retry=None):
    """A streamed GET of a download URL, retried on throttling, server errors and dropped connections."""
    return call_with_retries(lambda: _send(url, headers or {}), settings=retry or RetrySettings(), what='download')


class RangeNotSupported(Exception):
    """The server answered a Range request with the whole file: read it as a stream instead."""


def _whole_body(response):
    """The body in one read: urllib3 reads it in one go where requests' `content` would join 10 kB chunks (a
    tenth of a small download's CPU). urllib3's errors become the ones requests' `content` raises: a body cut
    short or a stalled read is retried, a body that does not decode is not."""
    try:
        return response.raw.read(decode_content=True)
    except urllib3.exceptions.ProtocolError as exc:
        raise requests.exceptions.ChunkedEncodingError(exc) from exc
    except urllib3.exceptions.DecodeError as exc:
        raise requests.exceptions.ContentDecodingError(exc) from exc
    except urllib3.exceptions.ReadTimeoutError as exc:
        raise requests.ConnectionError(exc) from exc
    except urllib3.exceptions.SSLError as exc:
        raise requests.exceptions.SSLError(exc) from exc


def read_url_range(url, start, end, retry=None):
    """Bytes [start, end) of a download URL through one HTTP Range request; raises RangeNotSupported on a 200.

    The request and the reading of its body are retried together, so a connection dropped mid-body is retried too.
    """
    def attempt():
        with _send(url, {'Range': 'bytes={}-{}'.format(start, end - 1)}) as response:
            if response.status_code != 206:
                raise RangeNotSupported()
            return _whole_body(response)
    return call_with_retries(attempt, settings=retry or RetrySettings(), what='download')


def iter_url_chunks(url, chunk_size=CHUNK_SIZE, retry=None):
    """Yield the content of a download URL in chunks of at most chunk_size bytes, never the whole file at once."""
    with _get(url, retry=retry) as response:
        yield from response.iter_content(chunk_size=chunk_size)


def _tail_bytes(url, size, retry):
    """(bytes, complete): the last `size` bytes of the file through a Range request; complete when whole file."""
    try:
        response = _get(url, headers={'Range': 'bytes=-{}'.format(size)}, retry=retry)
    except requests.HTTPError as exc:
        if exc.response is not None and exc.response.status_code == 416:  # an empty file has no last bytes
            return b'', True
        raise
    with response:
        if response.status_code == 206:
            data = response.content
            total = response.headers.get('Content-Range', '').rpartition('/')[2]
            return data, total.isdigit() and int(total) <= len(data)
        # No Range support: stream the whole file, keeping only its end.
        window = deque()
        kept = 0
        for chunk in response.iter_content(chunk_size=CHUNK_SIZE):
            window.append(chunk)
            kept += len(chunk)
            while window and kept - len(window[0]) >= size:
                kept -= len(window.popleft())
        return b''.join(window), True


def master_output_files(job):
    """(stdout, stderr) names of the output of a job's master process, as Batch AI named them: TensorFlow's master is
    worker 0 (stdout-wk-0.txt), Caffe2 and PyTorch on several nodes write per node (stdout-0.txt), every other job
    writes stdout.txt (the local service's launcher.py names them the same way)."""
    if getattr(job, 'tensor_flow_settings', None) is not None:
        return 'stdout-wk-0.txt', 'stderr-wk-0.txt'
    per_node = getattr(job, 'caffe2_settings', None) is not None or getattr(job, 'py_torch_settings', None) is not None
    if per_node and (getattr(job, 'node_count', None) or 1) > 1:
        return 'stdout-0.txt', 'stderr-0.txt'
    return 'stdout.txt', 'stderr.txt'


def tail_job_output(client, resource_group, workspace, experiment, job, file='stdout.txt',
                    output_directory_id=STDOUTERR, lines=100, *, retry=None):
    """The last `lines` lines of one output file of a job, as {job, file, lines: [str], found}.

    Reads only the end of the file (HTTP Range), growing the range until it holds enough lines.
    """
    retry = retry or RetrySettings()
    result = {'job': job, 'file': file, 'outputDirectoryId': output_directory_id, 'found': False, 'lines': []}
    item = find_output_file(client, resource_group, workspace, experiment, job, file, output_directory_id,
                            retry=retry)
    if item is None or not item.download_url or lines <= 0:
        result['found'] = item is not None
        return result
    size = max(4096, lines * 160)
    while True:
        data, complete = _tail_bytes(item.download_url, size, retry)
        text_lines = data.decode('utf-8', errors='replace').splitlines()
        # Without the whole file, the first line may be cut: it only counts once there are more than enough.
        if complete or len(text_lines) > lines:
            break
        size *= 4
    result['found'] = True
    result['lines'] = text_lines[-lines:]
    return result


class NoDownloadLink(Exception):
    """The service lists a file without a download link: a symlink out of the job's output, or a link loop."""


def _download_file(url, target, retry, dest_dir):
    """Stream one file to disk through a temporary name, so an interrupted download never looks complete.

    Nothing is written through a symlink: the folder must resolve inside `dest_dir` (a link planted there, say
    <dest>/<job>/stdouterr -> /etc, is refused) and the temporary file is created afresh, never followed.
    """
    _make_folder_inside(dest_dir, os.path.dirname(target))
    partial = target + '.partial'
    if os.path.lexists(partial):
        os.unlink(partial)  # a leftover (or a planted link): removed, never followed
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o666)
    with os.fdopen(fd, 'wb') as out:
        for chunk in iter_url_chunks(url, retry=retry):
            out.write(chunk)
    os.replace(partial, target)  # replaces a link at `target` itself, never what it points to


def _make_folder_inside(dest_dir, folder):
    """Create `folder` below `dest_dir` one level at a time, refusing any level that is a symlink (the destination
    itself may be one: the user chose it)."""
    path = os.path.abspath(dest_dir)
    relative = os.path.relpath(os.path.abspath(folder), path)
    for part in [] if relative == '.' else relative.split(os.sep):
        path = os.path.join(path, part)
        if os.path.islink(path):
            raise ValueError('refusing to write through a symbolic link out of the destination: {}'.format(path))
        if not os.path.isdir(path):
            os.makedirs(path, exist_ok=True)


def _safe_join(root, relative):
    """root/relative, refusing names that would escape root (a file named '../x' in a listing)."""
    target = os.path.normpath(os.path.join(root, *relative.split('/')))
    if os.path.commonpath([os.path.abspath(root), os.path.abspath(target)]) != os.path.abspath(root):
        raise ValueError('unsafe output file name: {}'.format(relative))
    return target


def _one_name(name):
    """A job name or output directory id as one folder name: what the service says is never a path here."""
    if name in ('', '.', '..') or '/' in name or '\\' in name or '\0' in name:
        raise ValueError('unsafe folder name from the service: {!r}'.format(name))
    return name


def download_outputs(client, resource_group, workspace, experiment, dest_dir, job_names=None, output_directory_id=None,
                     *, sweep_name=None, parallel=8, progress=None, retry=None):
    """Download jobs' output files to dest_dir/<job>/<output directory id>/<path>, one folder per job.

    output_directory_id None means stdouterr and every output directory the job declares. A file already on disk
    with the size the service reports is not downloaded again, so an interrupted download can simply be re-run.
    Returns {jobs, files, bytes, skipped, failed: [{job, file, error}]}; progress(done, total) counts jobs.
    """
    retry = retry or RetrySettings()
    jobs = sweep_jobs(client, resource_group, workspace, experiment, sweep_name, job_names=job_names, retry=retry)
    result = {'jobs': len(jobs), 'files': 0, 'bytes': 0, 'skipped': 0, 'failed': []}
    done = [0]

    def directories_of(job):
        if output_directory_id is not None:
            return [output_directory_id]
        return [STDOUTERR] + [out.id for out in (job.output_directories or []) if out.id != STDOUTERR]

    def work(job):
        counts = {'files': 0, 'bytes': 0, 'skipped': 0, 'failed': []}
        for directory_id in directories_of(job):
            root = os.path.join(dest_dir, _one_name(job.name), _one_name(directory_id))
            for item in list_output_files(client, resource_group, workspace, experiment, job.name, directory_id,
                                          recursive=True, retry=retry):
                try:
                    target = _safe_join(root, item.name)
                    if not item.download_url:
                        raise NoDownloadLink('the service gives no download link for this file (a symbolic link '
                                             "out of the job's output, or a link loop)")
                    if (not os.path.islink(target) and os.path.isfile(target)
                            and os.path.getsize(target) == (item.content_length or 0)):
                        counts['skipped'] += 1
                        continue
                    _download_file(item.download_url, target, retry, dest_dir)
                    counts['files'] += 1
                    counts['bytes'] += os.path.getsize(target)
                except Exception as exc:  # pylint: disable=broad-except
                    counts['failed'].append({'job': job.name, 'file': posixpath.join(directory_id, item.name),
                                             'error': describe_error(exc)})
        return counts

    def on_result(job, counts, exc):
        if exc is not None:
            result['failed'].append({'job': job.name, 'file': None, 'error': describe_error(exc)})
        else:
            for key in ('files', 'bytes', 'skipped'):
                result[key] += counts[key]
            result['failed'].extend(counts['failed'])
        done[0] += 1
        if progress is not None:
            progress(done[0], len(jobs))

    run_parallel(work, jobs, parallel=parallel, on_result=on_result)
    return result


def read_new_bytes(url, offset, retry=None):
    """The bytes of a download URL from `offset` to its current end, with one open-ended HTTP Range request
    (`bytes=<offset>-`): 206 with what was appended, 416 (b'') when nothing is new. A server that ignores Range
    answers 200 with the whole file: the bytes before `offset` are dropped. A growing log is followed this way
    (core/tuning/logs.py), each poll costing what was appended, not the log's size.
    """
    def attempt():
        try:
            response = _send(url, {'Range': 'bytes={}-'.format(offset)})
        except requests.HTTPError as exc:
            if exc.response is not None and exc.response.status_code == 416:
                return b''
            raise
        with response:
            data = _whole_body(response)
            return data if response.status_code == 206 else data[offset:]
    return call_with_retries(attempt, settings=retry or RetrySettings(), what='download')


def read_new_bytes_of(link, offset, retry=None):
    """read_new_bytes of the file whose download URL `link()` gives (None: the file is not there yet, b''), asking
    `link(renew=True)` once for a new URL when the one in hand is refused (403, 404: an expired or revoked SAS), as
    a log followed for hours outlives its link (core/tuning/logs.py, core/report/live.py)."""
    return _with_one_renewal(link, lambda url: read_new_bytes(url, offset, retry=retry), b'')


def _with_one_renewal(link, read, nothing):
    """read(url) of the URL `link()` gives (None when it gives none); when that URL is refused (403, 404: an expired
    or revoked SAS), read(url) of `link(renew=True)`'s once, `nothing` when there is none."""
    url = link()
    if url is None:
        return None
    try:
        return read(url)
    except requests.HTTPError as exc:
        if exc.response is None or exc.response.status_code not in (403, 404):
            raise
    url = link(renew=True)
    return read(url) if url else nothing


def _chunks_after(response, skip):
    """The response's body in chunks, its first `skip` bytes left out; the response is closed at the end."""
    with response:
        for chunk in response.iter_content(chunk_size=CHUNK_SIZE):
            if skip:
                if len(chunk) <= skip:
                    skip -= len(chunk)
                    continue
                chunk, skip = chunk[skip:], 0
            yield chunk


def iter_new_bytes(url, offset, retry=None):
    """read_new_bytes as a stream: the chunks of a download URL from `offset` to its current end (one open-ended
    Range request, none when nothing is new), holding one chunk at a time however much was appended."""
    try:
        response = _get(url, {'Range': 'bytes={}-'.format(offset)}, retry=retry)
    except requests.HTTPError as exc:
        if exc.response is not None and exc.response.status_code == 416:
            return iter(())
        raise
    return _chunks_after(response, 0 if response.status_code == 206 else offset)


def iter_new_bytes_of(link, offset, retry=None):
    """iter_new_bytes of the file whose download URL `link()` gives (None: the file is not there yet), with
    read_new_bytes_of's one renewal of a refused link."""
    return _with_one_renewal(link, lambda url: iter_new_bytes(url, offset, retry=retry), iter(()))
