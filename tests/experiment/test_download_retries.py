"""Range reads of download URLs when the connection drops mid-body: the read is retried as a whole.

A real HTTP server on loopback cuts the first response short (its Content-Length promises more than it sends,
then the connection closes); the local service cannot be made to do that on demand.
"""
import pytest

from azext_batchai_sweep.core.outputs import download
from azext_batchai_sweep.core.outputs.download import RangeNotSupported, read_url_range

from ..loopback_http import ScriptedHandler, serving
from .service_helpers import quick_retry

DATA = bytes(range(256)) * 64  # 16 kB


class _Cutting(ScriptedHandler):
    requests_seen = []
    cut_first = True
    honour_range = True

    def do_GET(self):  # noqa: N802
        cls = type(self)
        cls.requests_seen.append(self.headers.get('Range'))
        start, _, end = self.headers['Range'].partition('=')[2].partition('-')
        body = DATA[int(start):int(end) + 1] if cls.honour_range else DATA
        if cls.cut_first and len(cls.requests_seen) == 1:
            self.reply(206, body, send=len(body) // 2)
            self.close_connection = True
            return
        self.reply(206 if cls.honour_range else 200, body)


@pytest.fixture
def cutting_server(monkeypatch):
    monkeypatch.setattr(download, '_SESSION', [])
    _Cutting.requests_seen, _Cutting.cut_first, _Cutting.honour_range = [], True, True
    with serving(_Cutting) as base:
        yield base + '/log?sig=x'


def test_a_body_cut_short_is_read_again(cutting_server):
    assert read_url_range(cutting_server, 1000, 9000, retry=quick_retry()) == DATA[1000:9000]
    assert _Cutting.requests_seen == ['bytes=1000-8999', 'bytes=1000-8999']


def test_a_server_without_range_support_is_reported_not_retried(cutting_server):
    _Cutting.cut_first, _Cutting.honour_range = False, False
    with pytest.raises(RangeNotSupported):
        read_url_range(cutting_server, 0, 100, retry=quick_retry())
    assert len(_Cutting.requests_seen) == 1


class _Redirecting(ScriptedHandler):
    paths = []

    def do_GET(self):  # noqa: N802
        type(self).paths.append(self.path)
        if self.path.startswith('/moved'):
            self.reply(302, headers={'Location': '/file?sig=second'})
        else:
            self.reply(200, b'line one\nval=0.5\n')


@pytest.fixture
def redirecting_server(monkeypatch):
    monkeypatch.setattr(download, '_SESSION', [])
    _Redirecting.paths = []
    with serving(_Redirecting) as base:
        yield base


def test_a_redirect_is_followed_as_requests_would(redirecting_server):
    chunks = download.iter_url_chunks(redirecting_server + '/moved?sig=first', retry=quick_retry())
    assert b''.join(chunks) == b'line one\nval=0.5\n'
    assert _Redirecting.paths == ['/moved?sig=first', '/file?sig=second']


def test_downloads_go_through_the_proxy_the_environment_names(redirecting_server, monkeypatch):
    """The loopback server plays an HTTP proxy: a request for another host arrives with that host's absolute URL."""
    monkeypatch.setenv('HTTP_PROXY', redirecting_server)
    monkeypatch.delenv('NO_PROXY', raising=False)
    monkeypatch.delenv('no_proxy', raising=False)
    assert b''.join(download.iter_url_chunks('http://files.example.invalid/file?sig=x')) == b'line one\nval=0.5\n'
    assert _Redirecting.paths == ['http://files.example.invalid/file?sig=x']
    monkeypatch.setattr(download, '_SESSION', [])
    monkeypatch.setenv('NO_PROXY', 'files.example.invalid')
    with pytest.raises(Exception):  # no proxy for it now: the made-up host does not resolve
        b''.join(download.iter_url_chunks('http://files.example.invalid/file?sig=x', retry=quick_retry(max_retries=0)))
    assert len(_Redirecting.paths) == 1


def test_a_failed_connection_names_no_signature(monkeypatch):
    import socket

    from azext_batchai_sweep.core.service.retry import describe_error
    monkeypatch.setattr(download, '_SESSION', [])
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    with pytest.raises(Exception) as failure:
        read_url_range('http://127.0.0.1:{}/share/f.txt?sv=1&sig=SECRETSIG'.format(port), 0, 10,
                       retry=quick_retry(max_retries=0))
    assert 'SECRETSIG' in str(failure.value)  # requests names the path and query...
    assert 'SECRETSIG' not in describe_error(failure.value) and 'sig=<redacted>' in describe_error(failure.value)
