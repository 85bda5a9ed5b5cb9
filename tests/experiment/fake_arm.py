"""A scripted stand-in for the Batch AI jobs API, for failures the local service cannot produce on demand.

It answers from a per-job script (429 with Retry-After, 5xx, a connection dropped after the job was created,
a 400 with an ARM error body) and records every request with its time, so tests can check exactly what was sent.
Everything else behaves like the real API: one paged listing, GET/PUT/DELETE of single jobs, 409 for a PUT of a
job that exists.
"""
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

from azure.core.pipeline.policies import SansIOHTTPPolicy
from azure.mgmt.batchai import BatchAI

SUBSCRIPTION = '00000000-0000-0000-0000-000000000000'
_JOB = re.compile(r'/experiments/(?P<exp>[^/]+)/jobs(?:/(?P<job>[^/?]+))?$')


class FakeArm:
    """script: {job name: [action, ...]} consumed one action per PUT; actions are 'created' (the default once the
    script is used up), 'retry-after:<seconds>' (429), '<status>' (an error), 'drop' (create, then close the
    connection without answering), 'hang' (never answer nor create, until close()).
    Like Batch AI, a job read back has its `secrets` without their values."""

    def __init__(self, script=None):
        self.script = {name: list(actions) for name, actions in (script or {}).items()}
        self.jobs = {}
        self.requests = []
        self.lock = threading.Lock()
        self.closing = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                fake.handle(self, 'GET')

            def do_PUT(self):
                fake.handle(self, 'PUT')

            def do_DELETE(self):
                fake.handle(self, 'DELETE')

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.05},
                                       daemon=True)
        self.thread.start()
        self.endpoint = 'http://127.0.0.1:{}'.format(self.server.server_address[1])

    def close(self):
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()

    def client(self):
        return client_for(self.endpoint)

    def set_state(self, name, state, exit_code=None):
        with self.lock:
            self.jobs[name]['properties'].update(executionState=state, executionInfo={'exitCode': exit_code})

    def calls(self, method, job=None):
        return [r for r in self.requests if r[0] == method and (job is None or r[1] == job)]

    # --- request handling -------------------------------------------------------------------------------------

    def handle(self, handler, method):
        path = urlparse(handler.path).path
        match = _JOB.search(path)
        length = int(handler.headers.get('Content-Length') or 0)
        body = json.loads(handler.rfile.read(length)) if length else None
        name = match.group('job') if match else None
        with self.lock:
            self.requests.append((method, name, time.monotonic()))
            action = None
            if method == 'PUT' and self.script.get(name):
                action = self.script[name].pop(0)
        if match is None:
            return self.reply(handler, 404, {'error': {'code': 'NotFound', 'message': path}})
        if name is None:
            return self.reply(handler, 200, {'value': [self.jobs[n] for n in sorted(self.jobs)]})
        if method == 'GET':
            if name in self.jobs:
                return self.reply(handler, 200, self.jobs[name])
            return self.reply(handler, 404, {'error': {'code': 'NotFound', 'message': 'no job ' + name}})
        if method == 'DELETE':
            return self.reply(handler, 202 if self.jobs.pop(name, None) else 204, None)
        return self.put(handler, name, body, action)

    def put(self, handler, name, body, action):
        if action == 'hang':
            self.closing.wait(30)
            handler.close_connection = True
            return None
        if action and action.startswith('retry-after:'):
            return self.reply(handler, 429, {'error': {'code': 'TooManyRequests', 'message': 'slow down'}},
                              {'Retry-After': action.split(':', 1)[1]})
        if action and action.isdigit():
            return self.reply(handler, int(action), {'error': {'code': 'BadRequest' if action == '400' else 'Error',
                                                               'message': 'scripted ' + action}})
        with self.lock:
            if name in self.jobs:
                conflict = True
            else:
                conflict = False
                properties = dict((body or {}).get('properties', {}), provisioningState='succeeded',
                                  executionState='queued')
                if properties.get('secrets'):
                    properties['secrets'] = [{'name': secret['name']} for secret in properties['secrets']]
                self.jobs[name] = {'id': '/jobs/' + name, 'name': name, 'properties': properties}
        if action == 'drop':
            handler.close_connection = True
            handler.connection.close()
            return None
        if conflict:
            return self.reply(handler, 409, {'error': {'code': 'Conflict', 'message': 'job exists'}})
        return self.reply(handler, 202, self.jobs[name])  # a create is accepted, as Batch AI answers it

    @staticmethod
    def reply(handler, status, payload, headers=None):
        data = json.dumps(payload).encode() if payload is not None else b''
        handler.send_response(status)
        handler.send_header('Content-Type', 'application/json')
        handler.send_header('Content-Length', str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)


def client_for(endpoint):
    """The real SDK client, pointed at a fake server (a static bearer token; plain HTTP on loopback)."""
    class StaticToken(SansIOHTTPPolicy):
        def on_request(self, request):
            request.http_request.headers['Authorization'] = 'Bearer test-token'
    # The policy replaces the credential's, so the credential itself is never asked for a token.
    return BatchAI(credential=object(), subscription_id=SUBSCRIPTION, base_url=endpoint,
                   authentication_policy=StaticToken())
