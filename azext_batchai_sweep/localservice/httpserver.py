"""A bounded HTTP server for the local service: one selector thread, a fixed pool of workers, timeouts everywhere.

`http.server.ThreadingHTTPServer` spends a thread per connection and waits on sockets without a timeout: a local
process that opens hundreds of connections and sends nothing (or a byte now and then) holds as many threads, and
can keep them forever. Here:

- idle connections cost no thread: the selector thread reads every connection without blocking, and hands a
  connection to a worker only once a whole request head is there (so a worker never waits for a slow client's
  headers); after the answer a kept-alive connection goes back to the selector;
- a request head must arrive within HEAD_TIMEOUT of its first byte, and be at most MAX_HEAD_BYTES; a connection idle
  for IDLE_TIMEOUT is closed (HTTP lets a server close an idle kept-alive connection at any time; clients reconnect);
- at most `max_connections` connections are open per listener: a new one beyond that closes another, chosen among
  those not held by a worker: first the connections that never made an authenticated request, then the others, the
  one quiet longest (idle since its last answer, or reading a head for longest) first. So neither idle connections
  nor half-sent requests lock out a new client, and a flood of them evicts itself before a client with the token;
- per connection, one request at a time; a handler sets `authenticated` on a request that carried valid credentials
  (the service's handlers close the connection after answering one that did not, so a peer without credentials gets
  one small answer per connection, however many requests it pipelines without reading the answers);
- a worker writes an answer with a send timeout (a buffer, at most 64 kB, not taken within SEND_TIMEOUT closes the
  connection, much as nginx's `send_timeout`): a client that does not read its answers holds a worker that long at
  most, never for ever;
- a worker reads a request body with a socket timeout and an overall deadline (REQUEST_TIMEOUT), so no request
  holds a worker longer than that, however slowly its body trickles in;
- `workers` threads answer requests; a request waits in the queue when all are busy.

The handler classes stay `http.server.BaseHTTPRequestHandler`s: each request is one `handle_one_request()` call.
"""
import heapq
import io
import logging
import queue
import resource
import select
import selectors
import socket
import threading
import time

logger = logging.getLogger(__name__)

HEAD_TIMEOUT = 10.0
IDLE_TIMEOUT = 60.0
REQUEST_TIMEOUT = 60.0
SEND_TIMEOUT = 10.0
NEW_GRACE = 1.0
EVICT_BATCH = 32
ACCEPTS_PER_ROUND = 64  # then the selector reads what the accepted clients sent before accepting more
LISTEN_BACKLOG = 1024  # a burst of connects waits in the kernel queue instead of retrying its SYN a second later
MAX_HEAD_BYTES = 64 * 1024
RECV_BYTES = 64 * 1024
DEFAULT_WORKERS = 16
# After an answer, a worker waits this long for the same client's next request before handing the connection back to
# the selector thread (at most MAX_LINGER_REQUESTS in a row, so one client cannot keep a worker forever).
LINGER = 0.005
MAX_LINGER_REQUESTS = 1000


def default_max_connections():
    """Open connections allowed per listener: 1,024, or a quarter of the file descriptor limit when that is lower
    (two listeners, the jobs' files and the database need descriptors too)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(16, min(1024, soft // 4)) if soft > 0 else 1024


def _head_end(buffer):
    """Where the request head in `buffer` ends, or -1 while it is incomplete."""
    end = buffer.find(b'\r\n\r\n')
    return end if end >= 0 else buffer.find(b'\n\n')


class _Reader:
    """The request stream of one connection for a handler: what the selector already read, then the socket, with
    an overall deadline. `pending` holds what was read past the end of the request (a pipelined next request)."""

    def __init__(self, sock, pending, deadline):
        self._sock = sock
        self.pending = bytearray(pending)
        self._deadline = deadline

    def _fill(self):
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError('request took longer than {:g} s'.format(REQUEST_TIMEOUT))
        self._sock.settimeout(min(left, HEAD_TIMEOUT * 3))
        data = self._sock.recv(RECV_BYTES)
        if data:
            self.pending += data
        return bool(data)

    def readline(self, limit=-1):
        while True:
            end = self.pending.find(b'\n')
            if end >= 0 and (limit < 0 or end < limit):
                size = end + 1
                break
            if 0 <= limit <= len(self.pending):
                size = limit
                break
            if not self._fill():
                size = len(self.pending)
                break
        line = bytes(self.pending[:size])
        del self.pending[:size]
        return line

    def read(self, size=-1):
        if size is None or size < 0:
            while self._fill():
                pass
            size = len(self.pending)
        while len(self.pending) < size and self._fill():
            pass
        data = bytes(self.pending[:size])
        del self.pending[:size]
        return data

    def close(self):
        pass


class _Writer(io.RawIOBase):
    """The answer's stream: each write (a buffer's worth at most, behind the handler's BufferedWriter) is sent whole
    within SEND_TIMEOUT (TimeoutError then, and the connection is closed), whatever timeout reading the request left
    on the socket."""

    def __init__(self, sock):
        super().__init__()
        self._sock = sock

    def writable(self):
        return True

    def write(self, data):
        self._sock.settimeout(SEND_TIMEOUT)
        self._sock.sendall(data)
        return len(data)


class _Connection:
    __slots__ = ('sock', 'address', 'buffer', 'last_active', 'head_started', 'authenticated')

    def __init__(self, sock, address):
        self.sock, self.address = sock, address
        self.buffer = bytearray()
        self.last_active = time.monotonic()
        self.head_started = None
        self.authenticated = False  # set once a request on it carried valid credentials

    def eviction_order(self):
        """Smallest first: unauthenticated before authenticated, then quiet longest. A connection that has sent
        nothing yet counts as quiet since NEW_GRACE after it came: under a flood of reconnecting half-sent heads,
        the flood's older connections go before a new client that has not had the time to send its request."""
        quiet_since = self.head_started if self.buffer else self.last_active
        if not self.buffer and not self.authenticated:
            quiet_since += NEW_GRACE
        return self.authenticated, quiet_since


class BoundedHTTPServer:
    """The `socketserver` surface the service uses (serve_forever, shutdown, server_close, server_address)."""

    def __init__(self, address, handler_class, service, workers=DEFAULT_WORKERS, max_connections=None):
        family = socket.AF_INET6 if ':' in address[0] else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind(address)
            self.socket.listen(LISTEN_BACKLOG)
        except OSError:
            self.socket.close()
            raise
        self.socket.setblocking(False)
        self.server_address = self.socket.getsockname()
        self.handler_class = handler_class
        self.service = service
        self.max_connections = max_connections or default_max_connections()
        self._workers = workers
        self._selector = selectors.DefaultSelector()
        self._connections = {}  # fileno -> _Connection, those waiting in the selector
        self._busy = 0  # connections a worker holds
        self._lock = threading.Lock()
        self._ready = queue.Queue()  # (connection) with a whole request head, for the workers
        self._returned = queue.Queue()  # connections a worker gives back to the selector
        self._wakeup_r, self._wakeup_w = socket.socketpair()
        self._wakeup_r.setblocking(False)
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._threads = []
        self._serving = False

    # ---- the selector thread -----------------------------------------------------------------------------------

    def serve_forever(self, poll_interval=0.5):
        self._serving = True
        for index in range(self._workers):
            thread = threading.Thread(target=self._work, name='http-worker-{}'.format(index), daemon=True)
            thread.start()
            self._threads.append(thread)
        self._selector.register(self.socket, selectors.EVENT_READ, 'listen')
        self._selector.register(self._wakeup_r, selectors.EVENT_READ, 'wakeup')
        last_sweep = time.monotonic()
        try:
            while not self._stop.is_set():
                for key, _ in self._selector.select(poll_interval):
                    if key.data == 'listen':
                        self._accept()
                    elif key.data == 'wakeup':
                        self._drain_wakeup()
                    else:
                        self._read(key.data)
                self._take_back()
                now = time.monotonic()
                if now - last_sweep >= 1.0:
                    self._sweep(now)
                    last_sweep = now
        finally:
            self._stopped.set()

    def _accept(self):
        for _ in range(ACCEPTS_PER_ROUND):
            try:
                sock, address = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # out of descriptors, say: stop accepting for this round
                logger.warning('accept failed: %s', error)
                return
            with self._lock:
                open_now = len(self._connections) + self._busy
            if open_now >= self.max_connections and not self._evict():
                sock.close()  # every connection is busy with a request: no room
                continue
            sock.setblocking(False)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            self._watch(_Connection(sock, address))

    def _watch(self, connection):
        self._connections[connection.sock.fileno()] = connection
        self._selector.register(connection.sock, selectors.EVENT_READ, connection)

    def _forget(self, connection):
        self._connections.pop(connection.sock.fileno(), None)
        try:
            self._selector.unregister(connection.sock)
        except (KeyError, ValueError):
            pass

    def _close(self, connection):
        self._forget(connection)
        try:
            connection.sock.close()
        except OSError:
            pass

    def _evict(self):
        """Make room for new connections: close the first in `eviction_order` of those no worker holds (idle, or
        reading a head), EVICT_BATCH of them when they are unauthenticated (one pass over the connections for that
        many new ones), else one; False when a worker holds every connection."""
        if not self._connections:
            return False
        victims = heapq.nsmallest(EVICT_BATCH, self._connections.values(), key=_Connection.eviction_order)
        for connection in [c for c in victims if not c.authenticated] or victims[:1]:
            self._close(connection)
        return True

    def _read(self, connection):
        try:
            data = connection.sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b''
        if not data:
            self._close(connection)
            return
        connection.last_active = time.monotonic()
        if not connection.buffer:
            connection.head_started = connection.last_active
        connection.buffer += data
        self._dispatch_if_ready(connection)

    def _dispatch_if_ready(self, connection):
        head_end = _head_end(connection.buffer)
        if head_end < 0 and len(connection.buffer) > MAX_HEAD_BYTES:
            self._refuse(connection, b'431 Request Header Fields Too Large')
            return
        if head_end < 0:
            return
        self._forget(connection)
        with self._lock:
            self._busy += 1
        self._ready.put(connection)

    def _refuse(self, connection, status):
        try:
            connection.sock.send(b'HTTP/1.1 ' + status + b'\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
        except OSError:
            pass
        self._close(connection)

    def _sweep(self, now):
        """Close connections idle too long, and those whose request head is too slow to arrive."""
        for connection in list(self._connections.values()):
            if connection.buffer and now - connection.head_started > HEAD_TIMEOUT:
                self._refuse(connection, b'408 Request Timeout')
            elif not connection.buffer and now - connection.last_active > IDLE_TIMEOUT:
                self._close(connection)

    def _take_back(self):
        while True:
            try:
                connection = self._returned.get_nowait()
            except queue.Empty:
                return
            with self._lock:
                self._busy -= 1
            if self._stop.is_set():
                connection.sock.close()
                continue
            connection.sock.setblocking(False)
            connection.last_active = time.monotonic()
            connection.head_started = connection.last_active if connection.buffer else None
            self._watch(connection)
            if connection.buffer:  # a pipelined request already read
                self._dispatch_if_ready(connection)

    def _drain_wakeup(self):
        try:
            while self._wakeup_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError, OSError):
            pass

    # ---- the workers -------------------------------------------------------------------------------------------

    def _work(self):
        while True:
            connection = self._ready.get()
            if connection is None:
                return
            keep = False
            try:
                keep = self._handle(connection)
                for _ in range(MAX_LINGER_REQUESTS):  # the same client's next request, if it comes at once
                    if not keep or self._stop.is_set() or not self._next_head(connection):
                        break
                    keep = self._handle(connection)
            except Exception:  # pylint: disable=broad-except
                logger.debug('connection from %s failed', connection.address, exc_info=True)
                keep = False
            if keep and not self._stop.is_set():
                self._returned.put(connection)
                try:
                    self._wakeup_w.send(b'x')
                except OSError:
                    pass
            else:
                with self._lock:
                    self._busy -= 1
                try:
                    connection.sock.close()
                except OSError:
                    pass

    @staticmethod
    def _next_head(connection):
        """Wait LINGER seconds for the client's next request on this connection; True once its whole head is in the
        buffer. A client sending request after request (a metrics run reading hundreds of logs) is answered without
        the hand-over to the selector thread and back, which costs more than the request itself on a loaded machine.
        """
        if _head_end(connection.buffer) >= 0:
            return True
        if connection.buffer:
            return False  # a partial head: the selector times it
        # poll, not select: under many connections a descriptor number passes FD_SETSIZE (1024), which select refuses.
        poller = select.poll()
        poller.register(connection.sock, select.POLLIN)
        if not poller.poll(LINGER * 1000):
            return False
        connection.sock.settimeout(LINGER)
        try:
            data = connection.sock.recv(RECV_BYTES)
        except OSError:
            return False
        if not data:
            raise ConnectionResetError('closed by the client')
        connection.buffer += data
        return _head_end(connection.buffer) >= 0

    def _handle(self, connection):
        """Answer the request whose head is in the connection's buffer; True to keep the connection open."""
        sock = connection.sock
        sock.settimeout(SEND_TIMEOUT)  # never blocking without a timeout (the reader sets its own for each read)
        reader = _Reader(sock, connection.buffer, time.monotonic() + REQUEST_TIMEOUT)
        writer = _Writer(sock)
        if self.handler_class.wbufsize != 0:
            writer = io.BufferedWriter(writer, io.DEFAULT_BUFFER_SIZE)
        try:
            handler = self.handler_class.__new__(self.handler_class)
            handler.request = handler.connection = sock
            handler.client_address = connection.address
            handler.server = self
            handler.rfile, handler.wfile = reader, writer
            handler.close_connection = True
            handler.authenticated = False
            handler.handle_one_request()
            writer.flush()
            connection.authenticated = connection.authenticated or handler.authenticated
        finally:
            try:
                writer.close()
            except OSError:
                pass
        connection.buffer = reader.pending
        return not handler.close_connection

    # ---- stopping ----------------------------------------------------------------------------------------------

    def shutdown(self):
        self._stop.set()
        try:
            self._wakeup_w.send(b'x')
        except OSError:
            pass
        if self._serving:
            self._stopped.wait(5)
        for _ in self._threads:
            self._ready.put(None)

    def server_close(self):
        for connection in list(self._connections.values()):
            self._close(connection)
        for sock in (self.socket, self._wakeup_r, self._wakeup_w):
            try:
                sock.close()
            except OSError:
                pass
        try:
            self._selector.close()
        except (OSError, RuntimeError):
            pass

    def connection_counts(self):
        """(idle or reading a head, held by a worker): for tests and the reliability figures."""
        with self._lock:
            return len(self._connections), self._busy
