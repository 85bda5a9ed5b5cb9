"""Prism in proxy mode in front of the Batch double (TEST CODE ONLY): every request the SDK sends and every answer
the double gives is validated against the Batch data-plane spec (tests/specs/batch-2024-02-01.19.0).

    client --HTTPS--> Relay(TLS) --HTTP--> prism proxy <spec> <upstream> --errors --HTTP--> the double

Prism (pinned in package.json, ./node_modules/.bin/prism) reads the spec (its `x-ms-*` extensions are ignored,
`x-ms-paths` is absent from this version, the `$ref`s to examples resolve from the copied examples/ folder), but
some of its spellings make Prism refuse what the real service sends, hence `derived_spec()`, a copy written to a
temporary folder (beside a link to the examples) with exactly these changes, each counted:
1. The three binary answers (File_GetFromTask, File_GetFromComputeNode, ComputeNode_GetRemoteDesktop) declare
   `{"type": "object", "format": "file"}`, AutoRest's spelling of "a stream"; Prism takes it literally and refuses
   every file's bytes ("Response body must be object"). The copy says `{"type": "string", "format": "binary"}`.
2. Durations are `{"type": "string", "format": "duration"}`, and Prism's duration format (ajv-formats) refuses a
   decimal fraction, which ISO 8601 allows and Batch sends: an unset maxWallClockTime comes back as
   `P10675199DT2H48M5.4775807S` (recorded from the real service, tests/azurebatch/recorded/task_create.json).
   The copy keeps the type and replaces the format by an ISO 8601 duration pattern that allows the fraction.
3. Answers as the real service spells them (tests/azurebatch/recorded/, the table of docs/azure-batch-double.md):
   every answer schema refers to `Answer*` copies of the definitions it uses, in which the lowercase enums the
   service answers capitalised (task add `status`, `nodeFillType`, node placement `policy`, `failureInfo.category`)
   also take their capitalised values (CAPITALISED, the double's double/spelling.py), and a user account's
   `password` is not required (never answered back). The task and node file answers' `ocp-batch-file-isdirectory`
   header takes `True`/`False` as well as the boolean, and their GET may answer `text/plain`. Requests are checked
   against the spec's own definitions, untouched: Prism still refuses a request in the answers' spelling.

Prism listens on plain HTTP only, while azure-core sends a bearer token over HTTPS only, hence the TLS relay in
front (a byte pump that ends TLS with a test CA's certificate). Prism takes a few seconds to start, so one Prism
serves the whole test session; its upstream (double/server.py SwitchedUpstream) answers as each test's double in
turn (Prism keeps its upstream connections alive, so switching a TCP relay's target would not do).

With `--errors`, a request that breaks the spec is answered 422 and an answer that breaks it 500 (both with a
problem+json body naming the violation) instead of reaching the client, so a test sees a violation as a failed
call; `PrismProxy.violations()` lists what Prism logged, and the fixtures fail a test that left any. Prism mocks
an answer when the upstream answers 501 ("remocking"): the double never answers 501, and `violations()` reports
a remock too.
"""
import json
import os
import re
import socket
import ssl
import subprocess
import threading
import time

from tests.fixtures_az import SPECS_DIR

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRISM = os.path.join(REPO_ROOT, 'node_modules', '.bin', 'prism')
BATCH_SPEC = os.path.join(SPECS_DIR, 'batch-2024-02-01.19.0', 'BatchService.json')
START_TIMEOUT = 90
_PROBLEM = re.compile(r'(✖\s+error|⚠\s+warning|Remocking|VIOLATIONS)')
# Prism's own notes that are not about the traffic (content negotiation for a body-less answer).
_BENIGN = re.compile(r'Unable to find content for|NEGOTIATOR')


ISO_DURATION = r'^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$'
DURATIONS_IN_SPEC = 29  # `format: duration` properties and parameters in BatchService.json 2024-02-01.19.0


def _derive(node, counts):
    if isinstance(node, dict):
        if node.get('schema') == {'type': 'object', 'format': 'file'}:
            node['schema'] = {'type': 'string', 'format': 'binary'}
            counts['file'] += 1
        if node.get('format') == 'duration' and node.get('type') == 'string':
            del node['format']
            node['pattern'] = ISO_DURATION
            counts['duration'] += 1
        for value in node.values():
            _derive(value, counts)
    elif isinstance(node, list):
        for value in node:
            _derive(value, counts)


# The spec's lowercase enums the real service answers capitalised (recorded: Success, Spread, Zonal, UserError;
# the other values of the same enums by the same rule), as the double writes them (double/spelling.py).
from tests.azurebatch.double.spelling import CAPITALISED  # noqa: E402  pylint: disable=wrong-import-position
ANSWER_CHANGES = {'enum': 4, 'password': 1, 'isdirectory': 4, 'text/plain': 2}  # counted in this spec version
FILE_OPERATIONS = ('File_GetFromTask', 'File_GetPropertiesFromTask', 'File_GetFromComputeNode',
                   'File_GetPropertiesFromComputeNode')


def _answers_as_recorded(document, counts):
    """Change 3 of the module's docstring, in `document` (counts what it changed)."""
    definitions = document['definitions']
    copies = {}

    def copy_of(name):
        answer_name = 'Answer' + name
        if answer_name not in copies:
            copies[answer_name] = {}  # (a reference cycle finds it while it is being made)
            made = rewrite(json.loads(json.dumps(definitions[name])))
            if name == 'UserAccount' and 'password' in made.get('required', []):
                made['required'] = [r for r in made['required'] if r != 'password']
                counts['password'] += 1
            copies[answer_name].update(made)
        return answer_name

    def rewrite(node):
        if isinstance(node, dict):
            ref = node.get('$ref', '')
            if ref.startswith('#/definitions/'):
                node['$ref'] = '#/definitions/' + copy_of(ref[len('#/definitions/'):])
            enum = node.get('enum')
            if enum and all(value in CAPITALISED for value in enum):
                node['enum'] = enum + [CAPITALISED[value] for value in enum]
                counts['enum'] += 1
            for key, value in node.items():
                if key != '$ref':
                    rewrite(value)
        elif isinstance(node, list):
            for value in node:
                rewrite(value)
        return node

    for operations in document['paths'].values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for answer in (operation.get('responses') or {}).values():
                if 'schema' in answer:
                    answer['schema'] = rewrite(answer['schema'])
                if operation.get('operationId') in FILE_OPERATIONS:
                    header = (answer.get('headers') or {}).get('ocp-batch-file-isdirectory')
                    if header and header.get('type') == 'boolean':
                        answer['headers']['ocp-batch-file-isdirectory'] = {
                            'description': header.get('description', ''), 'type': 'string',
                            'enum': ['true', 'false', 'True', 'False']}
                        counts['isdirectory'] += 1
            if operation.get('operationId') in FILE_OPERATIONS and 'application/octet-stream' in (
                    operation.get('produces') or []):
                operation['produces'] = operation['produces'] + ['text/plain']
                counts['text/plain'] += 1
    definitions.update(copies)


def derived_spec(directory, spec=BATCH_SPEC):
    """The spec with the changes the module's docstring explains, written to `directory` beside a link to the
    examples; its path."""
    with open(spec, encoding='utf-8') as f:
        document = json.load(f)
    counts = {'file': 0, 'duration': 0}
    _derive(document, counts)
    answers = {key: 0 for key in ANSWER_CHANGES}
    _answers_as_recorded(document, answers)
    if counts != {'file': 3, 'duration': DURATIONS_IN_SPEC} or answers != ANSWER_CHANGES:
        raise RuntimeError('unexpected spec {}: changed {} {}'.format(spec, counts, answers))
    os.makedirs(directory, exist_ok=True)
    examples = os.path.join(directory, 'examples')
    if not os.path.exists(examples):
        os.symlink(os.path.join(os.path.dirname(spec), 'examples'), examples)
    path = os.path.join(directory, os.path.basename(spec))
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(document, f, indent=1)
    return path


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class PrismProxy:
    """A running `prism proxy`: `url` (plain HTTP on loopback), `pid`, `log_path`; `stop()` by pid."""

    def __init__(self, upstream, log_path, spec):
        if not os.path.exists(PRISM):
            raise RuntimeError('Prism is not installed in {}: run `make test-tools`'.format(PRISM))
        self.port = free_port()
        self.url = 'http://127.0.0.1:{}'.format(self.port)
        self.log_path = log_path
        with open(log_path, 'wb') as log:
            self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
                [PRISM, 'proxy', spec, upstream, '--errors', '-h', '127.0.0.1', '-p', str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=dict(os.environ, NO_COLOR='1'))
        self.pid = self.proc.pid
        self._seen = 0
        self._wait_listening()

    def _wait_listening(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError('Prism exited with code {}:\n{}'.format(self.proc.returncode, self.log()[-4000:]))
            if 'Prism is listening' in self.log():
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError('Prism did not start within {} s:\n{}'.format(START_TIMEOUT, self.log()[-4000:]))

    def log(self):
        with open(self.log_path, encoding='utf-8', errors='replace') as f:
            return f.read()

    def violations(self, since_mark=True):
        """Prism's log lines about a request or answer that broke the spec (since the last mark())."""
        lines = self.log().splitlines()
        start = self._seen if since_mark else 0
        return [line for line in lines[start:] if _PROBLEM.search(line) and not _BENIGN.search(line)]

    def mark(self):
        self._seen = len(self.log().splitlines())

    def validated(self):
        """How many requests Prism forwarded (each validated both ways)."""
        return self.log().count('Forwarding "')

    def stop(self):
        try:
            os.killpg(self.pid, 15)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.pid, 9)
            self.proc.wait()


class Relay:
    """A loopback TCP relay, byte for byte, to `target_port` (settable: the next connection goes there): with a
    `server_context` it ends TLS (`endpoint` https://...), without one it is plain (`endpoint` http://...)."""

    def __init__(self, target_port, server_context=None):
        self._context = server_context
        self.target_port = target_port
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(('127.0.0.1', 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self.endpoint = '{}://127.0.0.1:{}'.format('https' if server_context else 'http', self.port)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True, name='relay')
        self._thread.start()

    def _accept(self):
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        try:
            near = self._context.wrap_socket(client, server_side=True) if self._context else client
            far = socket.create_connection(('127.0.0.1', self.target_port))
        except (OSError, ssl.SSLError):
            client.close()
            return
        threading.Thread(target=_pump, args=(far, near), daemon=True).start()
        _pump(near, far)

    def close(self):
        self._closed.set()
        self._listener.close()


def _pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except (OSError, ssl.SSLError):
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
