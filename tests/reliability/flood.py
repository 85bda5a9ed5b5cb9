"""Unauthenticated connection floods against a local service on loopback, run as their own process so that the
flood's CPU is not the measuring client's GIL (`python -m tests.reliability.flood PORT --half-sent N --pipeliners M
--seconds S`). Every flood stops by itself after S seconds (at most 60) and holds at most 2,000 connections.

- half-sent: a connection sends the first lines of a request head and never ends it; once the service closes it
  (408, eviction), it connects again at once (a slowloris that keeps the connection cap full);
- pipeliners: a connection sends request after request (no token, or a forged download link) as fast as the
  service takes them, and never reads an answer; closed, it connects again;
- idle: a connection that sends nothing, reconnecting when closed.

At the end it prints one JSON line: connections made and closed by the service, bytes sent.
"""
import argparse
import json
import resource
import selectors
import socket
import time

MAX_CONNECTIONS = 2000
MAX_SECONDS = 60
HALF_HEAD = b'GET /subscriptions/x/resourceGroups/y HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '
PIPELINED = [
    b'GET /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.BatchAI/'
    b'workspaces/ws?api-version=2018-05-01 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' * 64,
    b'GET /download/jobs/x/stdout.txt?se=9999999999&sig=forged HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' * 64,
]


class Flood:
    def __init__(self, port, half_sent=0, pipeliners=0, idle=0):
        assert half_sent + pipeliners + idle <= MAX_CONNECTIONS
        self.port = port
        self.selector = selectors.DefaultSelector()
        self.counts = {'connected': 0, 'closedByService': 0, 'bytesSent': 0, 'connectFailed': 0}
        self.wanted = [('half', half_sent), ('pipe', pipeliners), ('idle', idle)]

    def _connect(self, kind, index):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if kind == 'pipe':  # a small window: the service's unread answers fill its send buffer sooner
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        sock.connect_ex(('127.0.0.1', self.port))
        self.selector.register(sock, selectors.EVENT_WRITE, [kind, index, False])

    def _reconnect(self, sock, state):
        self.counts['closedByService'] += 1
        self.selector.unregister(sock)
        sock.close()
        self._connect(state[0], state[1])

    def _on_event(self, sock, state, events):
        kind, index, connected = state
        if not connected:
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self.counts['connectFailed'] += 1
                self.selector.unregister(sock)
                sock.close()
                self._connect(kind, index)
                return
            state[2] = True
            self.counts['connected'] += 1
            if kind == 'half':
                self._send(sock, state, HALF_HEAD)
            if kind != 'pipe':  # wait for the service to close it (an answer or EOF), never sending more
                self.selector.modify(sock, selectors.EVENT_READ, state)
            return
        if kind == 'pipe':
            self._send(sock, state, PIPELINED[index % 2])  # never reads: only a failed send tells it closed
            return
        try:
            data = sock.recv(65536)
        except OSError:
            data = b''
        if not data or kind == 'half' or kind == 'idle':
            self._reconnect(sock, state)

    def _send(self, sock, state, data):
        try:
            self.counts['bytesSent'] += sock.send(data)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self._reconnect(sock, state)

    def run(self, seconds):
        deadline = time.monotonic() + min(seconds, MAX_SECONDS)
        for kind, count in self.wanted:
            for index in range(count):
                self._connect(kind, index)
        while time.monotonic() < deadline:
            for key, events in self.selector.select(0.2):
                self._on_event(key.fileobj, key.data, events)
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()
        return self.counts


def _raise_descriptor_limit(needed):
    """The flood holds up to 2,000 sockets: lift the soft descriptor limit towards the hard one (1,024 by default)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = needed + 64 if hard == resource.RLIM_INFINITY else min(needed + 64, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('port', type=int)
    parser.add_argument('--half-sent', type=int, default=0)
    parser.add_argument('--pipeliners', type=int, default=0)
    parser.add_argument('--idle', type=int, default=0)
    parser.add_argument('--seconds', type=float, default=10)
    args = parser.parse_args()
    _raise_descriptor_limit(args.half_sent + args.pipeliners + args.idle)
    flood = Flood(args.port, args.half_sent, args.pipeliners, args.idle)
    print(json.dumps(flood.run(args.seconds)), flush=True)


if __name__ == '__main__':
    main()
