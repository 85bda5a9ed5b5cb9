"""`sweep report --serve`: the live page (live.py) over HTTP on loopback, for Cloud Shell's "Web preview" and for a
browser on the same machine.

Read-only and narrow: GET or HEAD of `/` (or the page's own name) answers the page, of the sidecar's name the
sidecar, as live.py last wrote them (whole files: they are renamed into place); any other path is a 404, any other
method a 405. The server binds 127.0.0.1 only, and a request whose Host header names anything but a loopback name
is refused (403): a web page elsewhere cannot reach it by DNS rebinding.
"""
import http.server
import os
import threading
from urllib.parse import urlsplit

from .live import watch

LOOPBACK_NAMES = ('127.0.0.1', 'localhost', '[::1]')


def loopback_host(host):
    """True when a Host header names this machine's loopback (with or without a port)."""
    if not host:
        return False
    host = host.strip().lower()
    if host.startswith('['):
        name = host[:host.find(']') + 1]
    else:
        name = host.split(':', 1)[0]
    return name in LOOPBACK_NAMES


def _handler(document):
    page_name = '/' + os.path.basename(document.output_file)
    sidecar_name = '/' + os.path.basename(document.sidecar)
    served = {'/': (document.output_file, 'text/html; charset=utf-8'),
              page_name: (document.output_file, 'text/html; charset=utf-8'),
              sidecar_name: (document.sidecar, 'text/javascript; charset=utf-8')}

    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = 'az-batchai-sweep-report'
        sys_version = ''

        def _answer(self, body_wanted):
            if not loopback_host(self.headers.get('Host')):
                return self._plain(403, 'Only loopback hosts (127.0.0.1, localhost) are served.\n', body_wanted)
            path = urlsplit(self.path).path
            target = served.get(path)
            if target is None:
                return self._plain(404, 'Not found.\n', body_wanted)
            try:
                with open(target[0], 'rb') as handle:
                    body = handle.read()
            except FileNotFoundError:
                return self._plain(404, 'Not written yet.\n', body_wanted)
            return self._send(200, target[1], body, body_wanted)

        def _plain(self, code, text, body_wanted):
            return self._send(code, 'text/plain; charset=utf-8', text.encode('utf-8'), body_wanted)

        def _send(self, code, kind, body, body_wanted):
            self.send_response(code)
            self.send_header('Content-Type', kind)
            self.send_header('Content-Length', str(len(body)))
            self.send_header('Cache-Control', 'no-store')
            self.send_header('X-Content-Type-Options', 'nosniff')
            self.send_header('Referrer-Policy', 'no-referrer')
            self.end_headers()
            if body_wanted:
                self.wfile.write(body)

        def do_GET(self):  # pylint: disable=invalid-name
            self._answer(True)

        def do_HEAD(self):  # pylint: disable=invalid-name
            self._answer(False)

        def _refuse(self):
            self.send_response(405)
            self.send_header('Allow', 'GET, HEAD')
            self.send_header('Content-Length', '0')
            self.end_headers()

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

        def log_message(self, format, *args):  # pylint: disable=redefined-builtin
            pass  # the page asks every few seconds: no line per request on the user's terminal

    return Handler


def start_server(document, port):
    """A started loopback server of the live page (a daemon thread); returns it (server.server_address)."""
    server = http.server.ThreadingHTTPServer(('127.0.0.1', port), _handler(document))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name='report-serve', daemon=True).start()
    return server


def how_to_open(port):
    return ('Serving the live report on http://127.0.0.1:{port}/ (loopback only; Ctrl+C to stop). In Azure Cloud '
            'Shell: "Web preview" on its toolbar, then "Configure" and port {port}, then "Open and '
            'browse"; on this machine, open the address in a browser.'.format(port=port))


def watch_and_maybe_serve(sweep, document, *, interval, port=None, say=None, open_page=None, wait_forever=None):
    """Watch the sweep (live.watch) writing the live page; with a port, serve it on loopback meanwhile, and after
    the sweep has ended keep serving the final page until interrupted (Ctrl+C). Returns the last report data.

    :param open_page: None, or a function of a URL that opens it in a browser, called once the page is first written
        (the command layer passes az's; the core never imports azure.cli).
    """
    say = say or (lambda *args: None)
    server = None
    if port is not None:
        server = start_server(document, port)
        say(how_to_open(server.server_address[1]))
    opened = [False]

    def on_update(live_sweep, changed):
        if not changed:
            return
        if open_page and not opened[0]:
            opened[0] = True
            open_page('http://127.0.0.1:{}/'.format(server.server_address[1]) if server
                      else 'file://' + document.output_file)
        summary = live_sweep.data['summary']
        say('{} jobs, best {}'.format(summary['jobs'], (summary.get('best') or {}).get('value')))

    try:
        data = watch(sweep, document, interval=interval, on_error=say, on_update=on_update)
        if data is not None:
            say('The sweep has ended: {} is final.'.format(document.output_file))
        if server is not None and data is not None:
            say('Still serving the final page; Ctrl+C to stop.')
            (wait_forever or threading.Event().wait)()
        return data
    except KeyboardInterrupt:
        return sweep.data
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
