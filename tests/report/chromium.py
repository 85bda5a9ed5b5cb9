"""Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`): stdlib only.

Chromium reads protocol messages (JSON, each ended by a NUL byte) on its file descriptor 3 and writes its answers
and events on descriptor 4; no port is opened and no websocket library is needed. A `Page` loads a file and
records what a person's browser would show in its console and network panel: console messages, uncaught
exceptions, log entries and every request the page makes.
"""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

CANDIDATES = ('chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable')


def find_chromium():
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class ChromiumError(Exception):
    pass


class Browser:
    def __init__(self, executable, width=1040, height=900):
        self.profile = tempfile.mkdtemp(prefix='report-chromium-')
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # The child's fd 3 reads our commands, its fd 4 writes the answers. dup2 makes them inheritable, and
        # close_fds=False keeps them across exec (subprocess would otherwise close them after preexec_fn); every
        # other descriptor of this process is close-on-exec, as Python opens them.
        args = [executable, '--headless=new', '--remote-debugging-pipe', '--no-first-run', '--no-default-browser-check',
                '--disable-gpu', '--disable-extensions', '--disable-background-networking', '--disable-sync',
                '--disable-component-update', '--no-sandbox', '--hide-scrollbars', '--mute-audio',
                '--user-data-dir=' + self.profile, '--window-size={},{}'.format(width, height), 'about:blank']

        def wire():
            # Through copies first: one of the pipe's ends may itself be fd 3 or 4.
            read_end, write_end = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)
        # pylint: disable-next=consider-using-with,subprocess-popen-preexec-fn
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, close_fds=False, preexec_fn=wire,
                                     start_new_session=True)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b''
        self._next_id = 0
        self.events = []

    def send(self, method, params=None, session=None, timeout=30):
        self._next_id += 1
        message = {'id': self._next_id, 'method': method, 'params': params or {}}
        if session:
            message['sessionId'] = session
        os.write(self._to_child, json.dumps(message).encode('utf-8') + b'\0')
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get('id') == self._next_id:
                if 'error' in reply:
                    raise ChromiumError('{}: {}'.format(method, reply['error']))
                return reply.get('result', {})
            self.events.append(reply)

    def _read(self, deadline):
        import select  # pylint: disable=import-outside-toplevel
        while b'\0' not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChromiumError('no answer from Chromium in time')
            ready, _, _ = select.select([self._from_child], [], [], remaining)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise ChromiumError('Chromium closed its pipe (exit code {})'.format(self.proc.poll()))
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b'\0', 1)
        return json.loads(message)

    def wait_event(self, method, session=None, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if event.get('method') == method and (session is None or event.get('sessionId') == session):
                    return event
            self.events.append(self._read(deadline))

    def page(self):
        target = self.send('Target.createTarget', {'url': 'about:blank'})['targetId']
        session = self.send('Target.attachToTarget', {'targetId': target, 'flatten': True})['sessionId']
        return Page(self, session)

    def close(self):
        try:
            self.send('Browser.close', timeout=5)
        except (ChromiumError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser, session):
        self.browser = browser
        self.session = session
        for domain in ('Page', 'Runtime', 'Log', 'Network'):
            self.send(domain + '.enable')

    def send(self, method, params=None, timeout=30):
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    def load(self, path, width=1040, height=900, timeout=60):
        self.send('Emulation.setDeviceMetricsOverride', {'width': width, 'height': height, 'deviceScaleFactor': 1,
                                                         'mobile': False})
        # A load event of an earlier navigation must not answer for this one.
        self.browser.events = [e for e in self.browser.events if not (
            e.get('sessionId') == self.session and e.get('method') == 'Page.loadEventFired')]
        self.open_url('file://' + os.path.abspath(path), timeout=timeout)

    def open_url(self, url, timeout=60):
        """Navigate to a URL (a served page) and wait for its load event."""
        self.browser.events = [e for e in self.browser.events if not (
            e.get('sessionId') == self.session and e.get('method') == 'Page.loadEventFired')]
        self.send('Page.navigate', {'url': url})
        self.browser.wait_event('Page.loadEventFired', session=self.session, timeout=timeout)

    def wait_for(self, expression, timeout=60, interval=0.2):
        """Evaluate `expression` until it is truthy (then return its value); raise after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise ChromiumError('not true in {} s: {}'.format(timeout, expression))
            time.sleep(interval)

    def pump(self):
        """Read the events Chromium has sent so far (requests made while no command was waiting)."""
        self.evaluate('1')

    def evaluate(self, expression):
        result = self.send('Runtime.evaluate', {'expression': expression, 'returnByValue': True,
                                                'awaitPromise': True})
        if 'exceptionDetails' in result:
            raise ChromiumError('evaluation failed: {}'.format(result['exceptionDetails']))
        return result['result'].get('value')

    def _events(self, *methods):
        return [event['params'] for event in self.browser.events
                if event.get('sessionId') == self.session and event.get('method') in methods]

    def errors(self):
        """Console errors and warnings, uncaught exceptions and error log entries (CSP violations among them)."""
        found = []
        for params in self._events('Runtime.consoleAPICalled'):
            if params['type'] in ('error', 'warning', 'assert'):
                found.append('console.{}: {}'.format(params['type'], [a.get('value') for a in params['args']]))
        for params in self._events('Runtime.exceptionThrown'):
            found.append('exception: {}'.format(params['exceptionDetails'].get('text')))
        for params in self._events('Log.entryAdded'):
            if params['entry']['level'] in ('error', 'warning'):
                found.append('log: {}'.format(params['entry'].get('text')))
        return found

    def requests(self):
        """The URL of every request the page made (the document itself included)."""
        return [params['request']['url'] for params in self._events('Network.requestWillBeSent')]

    def screenshot(self, path, full_page=True):
        params = {'format': 'png'}
        if full_page:
            size = self.send('Page.getLayoutMetrics')['cssContentSize']
            params.update(captureBeyondViewport=True, clip={'x': 0, 'y': 0, 'width': size['width'],
                                                           'height': size['height'], 'scale': 1})
        data = self.send('Page.captureScreenshot', params)['data']
        with open(path, 'wb') as out:
            out.write(base64.b64decode(data))
        return path

    def click(self, selector):
        box = self._centre(selector)
        for kind in ('mousePressed', 'mouseReleased'):
            self.send('Input.dispatchMouseEvent', {'type': kind, 'x': box[0], 'y': box[1], 'button': 'left',
                                                   'clickCount': 1})

    def hover(self, selector):
        box = self._centre(selector)
        self.send('Input.dispatchMouseEvent', {'type': 'mouseMoved', 'x': box[0], 'y': box[1]})

    def _centre(self, selector):
        """The element scrolled into view, and its centre in the viewport (where a click or hover lands)."""
        return self.evaluate('(function(){var e=document.querySelector(%s);e.scrollIntoView({block:"center"});'
                             'var r=e.getBoundingClientRect();return [r.x + r.width / 2, r.y + r.height / 2];})()'
                             % json.dumps(selector))
