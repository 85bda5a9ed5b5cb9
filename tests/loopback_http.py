"""Tiny scripted HTTP servers on loopback, for client behaviour the local service cannot be made to show on demand
(a body cut short, a redirect, a cookie, a proxy): real sockets and real HTTP/1.1 keep-alive, no mocks."""
import contextlib
import http.server
import threading


class ScriptedHandler(http.server.BaseHTTPRequestHandler):
    """Base class: HTTP/1.1, quiet; `reply` answers with a status, a body and headers."""
    protocol_version = 'HTTP/1.1'

    def reply(self, status, body=b'', headers=None, send=None):
        """Answer; `send` (default: the whole body) is how many body bytes actually go out before returning."""
        self.send_response(status)
        self.send_header('Content-Length', str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body if send is None else body[:send])

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(handler_class):
    """Serve handler_class on a free loopback port; yields 'http://127.0.0.1:<port>'."""
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler_class)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield 'http://127.0.0.1:{}'.format(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
