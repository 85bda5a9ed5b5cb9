"""The Batch double's HTTP side (TEST CODE ONLY): a threaded server on 127.0.0.1 answering the Batch data-plane REST
API (2024-02-01.19.0) for the real `azure.batch.BatchClient`, with bearer-token checks and injected faults.

It listens twice on loopback: HTTPS (`endpoint`, a certificate from a throw-away test CA, `ca_file`: azure-core
refuses a bearer token over plain HTTP) for clients, and plain HTTP (`upstream`) for Prism, which validates the
traffic and forwards it here (tests/azurebatch/prism.py; Prism's own listener is plain HTTP, so a TLS relay sits in
front of it). Links the double writes (`url`, `odata.nextLink`) use `account.base_url`, the endpoint the client
talks to (the double's HTTPS endpoint, or the relay's in front of Prism: `public_endpoint`).

Faults (`BatchDouble.faults`, a Faults): 429/503 with Retry-After, a timed-out request that was applied, token
expiry (401), pool resize errors with quota codes, the active-job and pool quotas; `preempt()` and node removal
are on the account (account.py). Every request is recorded in `requests` (method, path, query, body).
"""
import http.server
import json
import os
import re
import socket
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass

from azure.core.credentials import AccessToken

from tests.azurebatch.double import api
from tests.azurebatch.double.account import BatchAccount
from tests.azurebatch.double.spelling import as_recorded
from tests.azurebatch.double.entities import API_VERSION, BatchError, now, rfc1123
from tests.azurebatch.tls_ca import TestCA

ROUTES = [(method, re.compile('^' + re.sub(r'\{(\w+)\}', r'(?P<\1>[^/]+)', path) + '$'), handler)
          for method, path, handler in [
              ('POST', '/pools', api.pool_add), ('GET', '/pools', api.pool_list),
              ('GET', '/pools/{poolId}', api.pool_get), ('HEAD', '/pools/{poolId}', api.pool_exists),
              ('DELETE', '/pools/{poolId}', api.pool_delete),
              ('POST', '/pools/{poolId}/resize', api.pool_resize),
              ('POST', '/pools/{poolId}/enableautoscale', api.pool_enable_autoscale),
              ('POST', '/pools/{poolId}/disableautoscale', api.pool_disable_autoscale),
              ('POST', '/pools/{poolId}/evaluateautoscale', api.pool_evaluate_autoscale),
              ('POST', '/pools/{poolId}/removenodes', api.pool_remove_nodes),
              ('GET', '/pools/{poolId}/nodes', api.node_list), ('GET', '/pools/{poolId}/nodes/{nodeId}', api.node_get),
              ('GET', '/supportedimages', api.supported_images), ('GET', '/nodecounts', api.pool_node_counts),
              ('POST', '/jobs', api.job_add), ('GET', '/jobs', api.job_list), ('GET', '/jobs/{jobId}', api.job_get),
              ('DELETE', '/jobs/{jobId}', api.job_delete), ('POST', '/jobs/{jobId}/terminate', api.job_terminate),
              ('GET', '/jobs/{jobId}/taskcounts', api.job_task_counts),
              ('POST', '/jobs/{jobId}/tasks', api.task_add), ('GET', '/jobs/{jobId}/tasks', api.task_list),
              ('POST', '/jobs/{jobId}/addtaskcollection', api.task_add_collection),
              ('GET', '/jobs/{jobId}/tasks/{taskId}', api.task_get),
              ('DELETE', '/jobs/{jobId}/tasks/{taskId}', api.task_delete),
              ('POST', '/jobs/{jobId}/tasks/{taskId}/terminate', api.task_terminate),
              ('GET', '/jobs/{jobId}/tasks/{taskId}/subtasksinfo', api.task_subtasks),
              ('GET', '/jobs/{jobId}/tasks/{taskId}/files', api.file_list),
              ('GET', '/jobs/{jobId}/tasks/{taskId}/files/{filePath}', api.file_get),
              ('HEAD', '/jobs/{jobId}/tasks/{taskId}/files/{filePath}', api.file_properties),
          ]]
# A file path may hold '/': the files routes take the rest of the path.
ROUTES = [(m, re.compile(r.pattern.replace('(?P<filePath>[^/]+)', '(?P<filePath>.+)')), h) for m, r, h in ROUTES]


@dataclass
class Recorded:
    method: str
    path: str
    query: dict
    body: object
    status: int = None
    length: int = 0  # the request body's bytes, as received


class Faults:
    """What the test makes go wrong. Each rule matches a method and a path regex (None: any) and fires `count`
    times; all methods are thread-safe."""

    def __init__(self, account):
        self._account = account
        self._lock = threading.Lock()
        self._rules = []

    def _add(self, kind, count, method, path, **details):
        with self._lock:
            self._rules.append(dict(kind=kind, left=count, method=method,
                                    path=re.compile(path) if path else None, **details))

    def throttle(self, count=1, retry_after=1, status=429, method=None, path=None):
        """The next `count` matching requests answer `status` (429 TooManyRequests, 503 ServerBusy) with a
        Retry-After of `retry_after` seconds, without being applied."""
        self._add('throttle', count, method, path, status=status, retry_after=retry_after)

    def refuse(self, status, code, message, count=1, method=None, path=None):
        """The next `count` matching requests are refused whole, not applied: `status` with Batch's error `code`
        and `message` (400 InvalidRequestBody, 413 RequestBodyTooLarge...)."""
        self._add('refuse', count, method, path, status=status, code=code, message=message)

    def clear(self):
        """Drop every rule not fired yet (throttles, answers, timeouts; resize errors stay)."""
        with self._lock:
            self._rules.clear()

    def answer(self, status, body, count=1, method=None, path=None):
        """The next `count` matching requests are applied, and answered `status` with `body` instead of the real
        answer (a test of the contract check itself: Prism must refuse an answer the spec does not allow)."""
        self._add('answer', count, method, path, status=status, body=body)

    def time_out_after_apply(self, count=1, method='POST', path=None, seconds=3.0, drop=False):
        """The next `count` matching requests are applied, then answered only after `seconds` (the client's read
        timeout fires first) or never (`drop`: the connection closes without an answer)."""
        self._add('timeout', count, method, path, seconds=seconds, drop=drop)

    def resize_error(self, code='AccountCoreQuotaReached', message=None, pool_id=None, nodes_allowed=0,
                     dedicated=None):
        """Pool growth stops at `nodes_allowed` nodes (per kind; `dedicated` None: both kinds) and the pool shows a
        resizeErrors entry with `code` (AccountCoreQuotaReached, AccountLowPriorityCoreQuotaReached,
        AccountSpotCoreQuotaReached, AccountVMSeriesCoreQuotaReached, AllocationFailed ...). Stays until
        clear_resize_errors()."""
        with self._account.lock:
            self._account.resize_faults.append({
                'pool': pool_id, 'code': code, 'allowed': nodes_allowed, 'dedicated': dedicated,
                'message': message or 'The specified account has reached its core quota ({}).'.format(code)})

    def clear_resize_errors(self):
        with self._account.lock:
            self._account.resize_faults.clear()

    def active_job_quota(self, quota):
        """Job_Add past `quota` non-completed jobs answers 409 ActiveJobAndScheduleQuotaReached (None: no quota)."""
        with self._account.lock:
            self._account.quotas['activeJobs'] = quota

    def pool_quota(self, quota):
        with self._account.lock:
            self._account.quotas['pools'] = quota

    def take(self, method, path):
        """The fault rule a request meets now (consumed), or None."""
        with self._lock:
            for rule in self._rules:
                if rule['left'] > 0 and rule['method'] in (None, method) and (
                        rule['path'] is None or rule['path'].search(path)):
                    rule['left'] -= 1
                    return dict(rule)
        return None


class DoubleCredential:
    """An azure-core TokenCredential for the double: each get_token() asks the double for a fresh token (as az's
    login refreshes one), valid `lifetime` seconds."""

    def __init__(self, double, lifetime=3600):
        self._double, self._lifetime = double, lifetime
        self.calls = 0

    def get_token(self, *scopes, **kwargs):  # pylint: disable=unused-argument
        self.calls += 1
        token = self._double.issue_token(self._lifetime)
        return AccessToken(token, int(time.time() + self._lifetime))


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    double = None  # set on the subclass each BatchDouble makes

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass

    def do_GET(self):
        self._handle()

    do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_GET

    def _send(self, status, body=None, headers=None):
        data = b''
        content_type = None
        if isinstance(body, (bytes, bytearray)):
            data, content_type = bytes(body), 'application/octet-stream'
        elif body is not None:
            data, content_type = json.dumps(body).encode(), 'application/json;odata=minimalmetadata'
        self.send_response(status)
        out = {'request-id': str(uuid.uuid4()), 'DataServiceVersion': '3.0', 'Date': rfc1123(now())}
        if content_type:
            out['Content-Type'] = content_type
        out.update(headers or {})
        client_id = self.headers.get('client-request-id')
        if client_id and self.headers.get('return-client-request-id', '').lower() == 'true':
            out['client-request-id'] = client_id
        if self.command == 'HEAD' and 'Content-Length' in out:
            length = out.pop('Content-Length')
        else:
            length = str(len(data))
        for name, value in out.items():
            self.send_header(name, value)
        self.send_header('Content-Length', length)
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(data)

    def _error(self, error):
        self._send(error.status, None if self.command == 'HEAD' else error.body(), error.headers)

    def _handle(self):  # pylint: disable=too-many-return-statements
        double = self.double
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        parsed = urllib.parse.urlparse(self.path)
        path = urllib.parse.unquote(parsed.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(parsed.query, keep_blank_values=True).items()}
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                self._error(BatchError(400, 'InvalidRequestBody', 'The request body is not valid JSON.'))
                return
        record = Recorded(self.command, path, query, body, length=len(raw))
        with double.lock:
            double.requests.append(record)
        try:
            double.check_request(self.command, path, query, self.headers)
        except BatchError as error:
            record.status = error.status
            self._error(error)
            return
        fault = double.faults.take(self.command, path)
        if fault and fault['kind'] == 'throttle':
            record.status = fault['status']
            code, text = (('TooManyRequests', 'The server is busy; retry after the time in Retry-After.')
                          if fault['status'] == 429 else ('ServerBusy', 'The server is currently unable to receive '
                                                                        'requests. Please retry your request.'))
            self._error(BatchError(fault['status'], code, text, headers={'Retry-After': str(fault['retry_after'])}))
            return
        if fault and fault['kind'] == 'refuse':
            record.status = fault['status']
            self._error(BatchError(fault['status'], fault['code'], fault['message']))
            return
        for method, pattern, handler in ROUTES:
            match = pattern.match(path)
            if match and method == self.command:
                break
        else:
            record.status = 404
            self._error(BatchError(404, 'ResourceNotFound' if self.command != 'HEAD' else 'NotFound',
                                   'The specified resource does not exist.'))
            return
        request = api.Request(self.command, path, match.groupdict(), query, body,
                              {k.lower(): v for k, v in self.headers.items()}, len(raw))
        try:
            with double.account.lock:
                status, answer, headers = handler(double.account, request)
        except BatchError as error:
            record.status = error.status
            self._error(error)
            return
        except Exception as error:  # pylint: disable=broad-except
            # A bug in the double: answer as Batch's own failures look, and keep it for the test to see.
            double.account.events.append(('double-error', repr(error)))
            record.status = 500
            self._error(BatchError(500, 'InternalError', 'The Batch double failed: {!r}'.format(error)))
            return
        record.status = status
        if fault and fault['kind'] == 'answer':
            status, answer, headers = fault['status'], fault['body'], {}
        if fault and fault['kind'] == 'timeout':
            if fault['drop']:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            time.sleep(fault['seconds'])
        if double.account.quirks and isinstance(answer, (dict, list)):
            answer = as_recorded(answer)  # the real service's spellings (spelling.py)
        self._send(status, answer, headers)


class SwitchedUpstream:
    """A plain-HTTP loopback listener that answers each request with whichever double `current` is then (Prism
    keeps its connections to the upstream alive, so a session-wide Prism reaches each test's double through it)."""

    def __init__(self):
        self.current = None
        outer = self
        handler = type('SwitchedHandler', (_Handler,), {'double': property(lambda _self: outer.current)})
        self._server = _Server(('127.0.0.1', 0), handler)
        self.url = 'http://127.0.0.1:{}'.format(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={'poll_interval': 0.1},
                                        daemon=True)
        self._thread.start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()


class BatchDouble:
    """The Batch data-plane double (TEST CODE ONLY). `endpoint` (HTTPS, trust `ca_file`), `upstream` (plain HTTP
    for Prism), `account` (account.BatchAccount: pools, jobs, preempt(), remove_node(), wait()), `faults`,
    `requests`, `credential()` (a TokenCredential), `token` (a valid token for raw HTTP), `close()`."""

    def __init__(self, directory, account_name='testaccount', **account_options):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.ca = TestCA(os.path.join(directory, 'tls'))
        self.ca_file = self.ca.ca_file
        self.cert_file = self.ca.ca_file  # the bundle to trust (the name the stand-in double used)
        self.account = BatchAccount(os.path.join(directory, 'account'), account_name, **account_options)
        self.account.upload_ca_file = self.ca_file  # a loopback Blob service (Azurite) serves with this CA
        self.lock = threading.Lock()
        self.requests = []
        self.tokens = {}  # token -> expiry (time.time())
        self.faults = Faults(self.account)
        self._token = self.issue_token(24 * 3600)
        handler = type('Handler', (_Handler,), {'double': self})
        self._tls = _Server(('127.0.0.1', 0), handler)
        self._tls.socket = self.ca.server_context().wrap_socket(self._tls.socket, server_side=True)
        self._plain = _Server(('127.0.0.1', 0), handler)
        self.endpoint = 'https://127.0.0.1:{}'.format(self._tls.server_address[1])
        self.upstream = 'http://127.0.0.1:{}'.format(self._plain.server_address[1])
        self.account.base_url = self.endpoint
        self._threads = [threading.Thread(target=s.serve_forever, kwargs={'poll_interval': 0.1}, daemon=True)
                         for s in (self._tls, self._plain)]
        for thread in self._threads:
            thread.start()
        self.account.start()

    @property
    def public_endpoint(self):
        return self.account.base_url

    @public_endpoint.setter
    def public_endpoint(self, value):
        """The endpoint clients use (Prism's TLS relay): the links the double writes point there."""
        self.account.base_url = value

    # ---- authentication -------------------------------------------------------------------------------------
    @property
    def token(self):
        """A valid bearer token (a new one once expire_tokens() expired the last: what a refreshed login gives)."""
        with self.lock:
            valid = self.tokens.get(self._token, 0) > time.time()
        if not valid:
            self._token = self.issue_token(24 * 3600)
        return self._token

    def issue_token(self, lifetime=3600):
        token = 'batch-double-token-{}'.format(uuid.uuid4().hex)
        with self.lock:
            self.tokens[token] = time.time() + lifetime
        return token

    def expire_tokens(self):
        """Every token issued so far is now expired: the next request with one answers 401 (token expiry)."""
        with self.lock:
            for token in self.tokens:
                self.tokens[token] = time.time() - 1

    def credential(self, lifetime=3600):
        return DoubleCredential(self, lifetime)

    def check_request(self, method, path, query, headers):  # pylint: disable=unused-argument
        """What the real service checks first: the api-version and the bearer token (401 as Batch answers it)."""
        version = query.get('api-version')
        if not version:
            raise BatchError(400, 'MissingRequiredQueryParameter', 'A query parameter that\'s mandatory for this '
                             'request is not specified.', [('QueryParameterName', 'api-version')])
        if version != API_VERSION:
            raise BatchError(400, 'InvalidQueryParameterValue', 'The double speaks api-version {} only.'.format(
                API_VERSION), [('QueryParameterName', 'api-version'), ('QueryParameterValue', version)])
        auth = headers.get('Authorization') or ''
        scheme, _, token = auth.partition(' ')
        with self.lock:
            expiry = self.tokens.get(token) if scheme.lower() == 'bearer' else None
        if expiry is None or expiry < time.time():
            detail = 'Lifetime validation failed. The token is expired.' if expiry else \
                'The access token is missing or invalid.'
            raise BatchError(401, 'AuthenticationFailed', 'Server failed to authenticate the request. Make sure the '
                             'value of Authorization header is formed correctly including the signature.',
                             [('AuthenticationErrorDetail', detail)],
                             headers={'WWW-Authenticate': 'Bearer authorization_uri="https://login.microsoftonline.'
                                                          'com/common", error="invalid_token"'})

    def count(self, method, path_regex):
        with self.lock:
            return sum(1 for r in self.requests if r.method == method and re.search(path_regex, r.path))

    def client(self, **kwargs):
        """The real SDK client for the double's HTTPS endpoint (or kwargs['endpoint'])."""
        from azure.batch import BatchClient
        endpoint = kwargs.pop('endpoint', self.endpoint)
        kwargs.setdefault('connection_verify', self.ca_file)
        return BatchClient(endpoint, kwargs.pop('credential', None) or self.credential(), **kwargs)

    def close(self):
        for server in (self._tls, self._plain):
            server.shutdown()
            server.server_close()
        self.account.close()
