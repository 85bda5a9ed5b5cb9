"""Bounded resources (rule 3 of issue 13): idle and slow connections from a local process never make the service
unresponsive for authenticated clients, and it recovers as soon as they close.

The service-level tests open raw sockets against a service of their own and then use the real SDK client (no
retries: each call must be answered the first time); the in-process tests drive localservice/httpserver.py
directly with short timeouts.
"""
import http.client
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest

from azext_batchai_sweep.localservice import httpserver
from azext_batchai_sweep.localservice.httpserver import BoundedHTTPServer

from .helpers import client_for

pytestmark = pytest.mark.service


def _open(endpoint, count, first_bytes=b''):
    host, port = endpoint.rsplit('/', 1)[1].rsplit(':', 1)
    sockets = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=10)
        if first_bytes:
            sock.sendall(first_bytes)
        sockets.append(sock)
    return sockets


def _close(sockets):
    for sock in sockets:
        sock.close()


def _answered(service, calls=10):
    """Authenticated SDK calls, none retried: every one must be answered (figures: the slowest)."""
    client = client_for(service, retry_total=0, connection_timeout=10, read_timeout=10)
    slowest = 0.0
    for _ in range(calls):
        started = time.monotonic()
        assert client.workspaces.get(service.resource_group, service.workspace).name == service.workspace
        assert list(client.experiments.list_by_workspace(service.resource_group, service.workspace)) is not None
        slowest = max(slowest, time.monotonic() - started)
    return slowest


@pytest.mark.parametrize('idle, slow', [(300, 0), (0, 100), (200, 100)])
def test_idle_and_slow_connections_do_not_starve_clients(service_factory, idle, slow):
    service = service_factory(slots=1)
    held = _open(service.endpoint, idle) + _open(service.endpoint, slow, b'GET / HTTP/1.1\r\nHost: x\r\n')
    held += _open(service.files_endpoint, idle // 2)
    try:
        _answered(service)
    finally:
        _close(held)
    _answered(service, calls=3)  # and after they are gone


def test_more_idle_connections_than_the_limit_evict_the_oldest(service_factory):
    service = service_factory(slots=1)
    held = _open(service.endpoint, httpserver.default_max_connections() + 50)
    try:
        _answered(service, calls=3)
    finally:
        _close(held)


# ---- in-process: the server's own limits, with short timeouts ------------------------------------------------------

class _Echo(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass

    def do_GET(self):  # pylint: disable=invalid-name
        body = json.dumps({'path': self.path}).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):  # pylint: disable=invalid-name
        data = self.rfile.read(int(self.headers['Content-Length']))
        self.send_response(200)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setattr(httpserver, 'HEAD_TIMEOUT', 0.5)
    monkeypatch.setattr(httpserver, 'IDLE_TIMEOUT', 1.0)
    monkeypatch.setattr(httpserver, 'REQUEST_TIMEOUT', 1.0)
    monkeypatch.setattr(httpserver, 'SEND_TIMEOUT', 0.5, raising=False)  # absent before issue 24
    srv = BoundedHTTPServer(('127.0.0.1', 0), _Echo, None, workers=2, max_connections=20)
    threading.Thread(target=srv.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _get(srv, path='/x', connection=None):
    conn = connection or http.client.HTTPConnection('127.0.0.1', srv.server_address[1], timeout=5)
    conn.request('GET', path)
    response = conn.getresponse()
    return response.status, response.read()


def _wait(predicate, timeout=5):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_keep_alive_and_pipelined_requests(server):
    conn = http.client.HTTPConnection('127.0.0.1', server.server_address[1], timeout=5)
    for index in range(5):  # one connection, five requests, two workers
        assert _get(server, '/k{}'.format(index), conn) == (200, json.dumps({'path': '/k{}'.format(index)}).encode())
    sock = socket.create_connection(('127.0.0.1', server.server_address[1]), timeout=5)
    sock.sendall(b'GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n')
    data = b''
    while data.count(b'"path"') < 2:
        data += sock.recv(4096)
    assert b'"/a"' in data and b'"/b"' in data
    sock.close()


def test_a_slow_head_gets_408_and_an_idle_connection_is_closed(server):
    slow = socket.create_connection(('127.0.0.1', server.server_address[1]), timeout=5)
    slow.sendall(b'GET / HTTP/1.1\r\nHo')
    assert slow.recv(100).startswith(b'HTTP/1.1 408')
    idle = socket.create_connection(('127.0.0.1', server.server_address[1]), timeout=5)
    assert idle.recv(100) == b''  # closed by the server after IDLE_TIMEOUT
    _wait(lambda: server.connection_counts() == (0, 0))


def test_an_oversize_head_gets_431(server):
    sock = socket.create_connection(('127.0.0.1', server.server_address[1]), timeout=5)
    sock.sendall(b'GET / HTTP/1.1\r\nX: ' + b'a' * (httpserver.MAX_HEAD_BYTES + 10))
    assert sock.recv(100).startswith(b'HTTP/1.1 431')


def test_a_trickling_body_frees_its_worker_at_the_deadline(server):
    trickles = []
    for _ in range(2):  # both workers held by bodies that never finish
        sock = socket.create_connection(('127.0.0.1', server.server_address[1]), timeout=5)
        sock.sendall(b'PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab')
        trickles.append(sock)
    assert _get(server)[0] == 200  # answered once the deadline frees a worker
    for sock in trickles:  # closed without an answer once their deadline passed
        assert sock.recv(100) == b''
        sock.close()


def test_clients_that_never_read_their_answers_hold_a_worker_for_the_send_timeout_at_most(server):
    """Both workers answer pipelined requests (16 kB answers) to clients that never read: each send waits at most
    SEND_TIMEOUT for progress, then the connection is closed and the worker serves others (before: blocked for ever)."""
    request = b'GET /' + b'p' * 16000 + b' HTTP/1.1\r\nHost: x\r\n\r\n'
    stuck = []
    for _ in range(2):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(('127.0.0.1', server.server_address[1]))
        sock.settimeout(0.2)
        try:
            for _ in range(400):  # 6 MB of requests, 6 MB of answers: more than the kernel's buffers hold
                sock.sendall(request)
        except (TimeoutError, OSError):
            pass  # the server stopped reading: its workers are writing answers nobody reads
        stuck.append(sock)
    started = time.monotonic()
    assert _get(server)[0] == 200
    assert time.monotonic() - started < 3
    _wait(lambda: server.connection_counts()[1] == 0)  # the non-readers were let go
    for sock in stuck:
        sock.close()


def test_half_sent_heads_at_the_limit_make_room_for_a_new_client(server):
    """The limit (20) held by half-sent request heads: a new client is answered (before: closed at once, as long as
    the heads kept coming)."""
    held = [socket.create_connection(('127.0.0.1', server.server_address[1]), timeout=5) for _ in range(20)]
    for sock in held:
        sock.sendall(b'GET / HTTP/1.1\r\nHo')
    _wait(lambda: server.connection_counts()[0] == 20)
    assert _get(server)[0] == 200
    for sock in held:
        sock.close()


class _Authenticating(_Echo):
    def do_GET(self):  # pylint: disable=invalid-name
        self.authenticated = self.path == '/with-token'  # as the service's handlers say of a request
        super().do_GET()


def test_at_the_limit_unauthenticated_connections_go_before_an_authenticated_one(monkeypatch):
    """An authenticated kept-alive client, idle between its requests, keeps its connection while 25 half-sent heads
    come; they are evicted instead (before: the idle connection was the only one evictable, so it went first)."""
    monkeypatch.setattr(httpserver, 'HEAD_TIMEOUT', 30.0)
    srv = BoundedHTTPServer(('127.0.0.1', 0), _Authenticating, None, workers=2, max_connections=20)
    threading.Thread(target=srv.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True).start()
    try:
        client = http.client.HTTPConnection('127.0.0.1', srv.server_address[1], timeout=5)
        assert _get(srv, '/with-token', client)[0] == 200
        held = []
        for _ in range(25):
            sock = socket.create_connection(('127.0.0.1', srv.server_address[1]), timeout=5)
            sock.sendall(b'GET / HTTP/1.1\r\nHo')
            held.append(sock)
            time.sleep(0.02)  # read by the server before the next comes: the idle one is the authenticated one
        _wait(lambda: srv.connection_counts()[0] <= 20)
        time.sleep(0.2)
        first_socket = client.sock
        assert _get(srv, '/with-token', client)[0] == 200
        assert client.sock is first_socket  # the same connection, not a reconnect
        for sock in held:
            sock.close()
    finally:
        srv.shutdown()
        srv.server_close()


def test_connections_beyond_the_limit_evict_idle_ones_and_counts_recover(server):
    held = [socket.create_connection(('127.0.0.1', server.server_address[1]), timeout=5) for _ in range(40)]
    _wait(lambda: server.connection_counts()[0] <= 20)
    assert _get(server)[0] == 200
    for sock in held:
        sock.close()
    _wait(lambda: server.connection_counts() == (0, 0))
    assert _get(server)[0] == 200


def _threads(pid):
    with open('/proc/{}/status'.format(pid)) as f:
        return int(next(line.split()[1] for line in f if line.startswith('Threads:')))


def _rss_mb(pid):
    with open('/proc/{}/status'.format(pid)) as f:
        return int(next(line.split()[1] for line in f if line.startswith('VmRSS:'))) / 1024


@pytest.mark.soak
@pytest.mark.parametrize('idle, slow', [(1000, 0), (3000, 0), (1000, 500)])
def test_connection_load_figures(service_factory, idle, slow):
    """The figures of docs/reliability.md: threads and memory of the service and the slowest authenticated call
    while a local process holds `idle` idle and `slow` half-sent connections, then after they close."""
    service = service_factory(slots=1)
    before = (_threads(service.pid), _rss_mb(service.pid))
    held = _open(service.endpoint, idle) + _open(service.endpoint, slow, b'GET / HTTP/1.1\r\nHost: x\r\n')
    try:
        during = (_threads(service.pid), _rss_mb(service.pid))
        slowest = _answered(service, calls=20)
    finally:
        _close(held)
    slowest_after = _answered(service, calls=5)
    print('\nCONNECTIONS ' + json.dumps({
        'idle': idle, 'slow': slow, 'threadsBefore': before[0], 'threadsDuring': during[0],
        'rssMbBefore': round(before[1], 1), 'rssMbDuring': round(during[1], 1),
        'slowestCallDuring': round(slowest, 3), 'slowestCallAfter': round(slowest_after, 3)}))
