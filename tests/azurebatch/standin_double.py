"""TEST CODE ONLY: a minimal stand-in for the Azure Batch data plane, until the lifecycle double of
tests/azurebatch/double/ (with Prism and the spec) is merged; the end-to-end tests then move to it.

Supported images: one current Ubuntu (`SUPPORTED_IMAGES`). Autoscale pools start with no node; `autoscale(pool)`
is one evaluation of the pool's formula (tests/azurebatch/autoscale_eval.py reads it as Batch does) over the
pending tasks, as Batch runs it every evaluation interval; a node with a running task stays (taskcompletion).

There is no Azure Batch emulator; this is the smallest HTTPS server (loopback, its own test CA) that answers the
calls the scheduler makes through the real SDK (`azure.batch.BatchClient`), with the shapes of the REST spec:
pools (nodes = slots: targetDedicatedNodes, or an autoscale pool's node count set by the test), jobs, task
collection adds (TaskExists for a repeated id), task lists with `$filter=stateTransitionTime ge datetime'...'` and
`$select`, terminate, delete, task files (recursive list, `ocp-range` reads). Tasks run as local processes in their
own task directory (`wd` is the working directory, Batch's stdout.txt/stderr.txt beside it) with Batch's
AZ_BATCH_* variables; `preempt(task_id)` kills one and requeues it as Batch does for a preempted node. It checks
the bearer token it is given and counts every request (`requests`).
"""
import datetime
import http.server
import json
import os
import re
import shlex
import shutil
import signal
import ssl
import subprocess
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

SUPPORTED_IMAGES = [{'nodeAgentSKUId': 'batch.node.ubuntu 22.04', 'osType': 'linux', 'verificationType': 'verified',
                     'capabilities': [], 'batchSupportEndOfLife': '2027-04-30T00:00:00Z',
                     'imageReference': {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy',
                                        'sku': '22_04-lts', 'version': 'latest'}}]
_FILTER_SINCE = re.compile(r"stateTransitionTime ge datetime'([^']+)'")
_FILTER_PREFIX = re.compile(r"startswith\(id,'([^']*)'\)")


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _iso(moment):
    return moment.strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3] + 'Z'


def _parse(text):
    return datetime.datetime.strptime(text.rstrip('Z')[:23], '%Y-%m-%dT%H:%M:%S.%f').replace(
        tzinfo=datetime.timezone.utc) if '.' in text else datetime.datetime.strptime(
        text.rstrip('Z'), '%Y-%m-%dT%H:%M:%S').replace(tzinfo=datetime.timezone.utc)


def make_test_ca(directory):
    """(cert file, key file) of a self-signed certificate for 127.0.0.1 (the test's own CA and server)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, '127.0.0.1')])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(_now() - datetime.timedelta(days=1))
            .not_valid_after(_now() + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address('127.0.0.1'))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = os.path.join(directory, 'ca.pem'), os.path.join(directory, 'ca.key')
    with open(cert_file, 'wb') as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_file, 'wb') as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return cert_file, key_file


@dataclass
class Task:
    job_id: str
    body: dict
    directory: str
    state: str = 'active'
    previous: str = None
    transition: datetime.datetime = field(default_factory=_now)
    created: datetime.datetime = field(default_factory=_now)
    process: subprocess.Popen = None
    exit_code: int = None
    start: datetime.datetime = None
    end: datetime.datetime = None
    requeues: int = 0
    terminated: bool = False
    nodes: int = 1

    def set_state(self, state):
        self.previous, self.state, self.transition = self.state, state, _now()

    def json(self):
        info = {'retryCount': 0, 'requeueCount': self.requeues}
        if self.start:
            info['startTime'] = _iso(self.start)
        if self.state == 'completed':
            info.update(endTime=_iso(self.end), exitCode=self.exit_code,
                        result='success' if self.exit_code == 0 and not self.terminated else 'failure')
            if self.terminated:
                info['failureInfo'] = {'category': 'usererror', 'code': 'TaskEnded',
                                       'message': 'The task was terminated.'}
            elif self.exit_code:
                info['failureInfo'] = {'category': 'usererror', 'code': 'FailureExitCode',
                                       'message': 'The task process exited with an unexpected exit code'}
        answer = {'id': self.body['id'], 'commandLine': self.body['commandLine'], 'state': self.state,
                  'stateTransitionTime': _iso(self.transition), 'creationTime': _iso(self.created),
                  'executionInfo': info}
        if self.previous:
            answer['previousState'] = self.previous
        if self.state in ('running', 'completed') and self.start:
            answer['nodeInfo'] = {'nodeId': 'tvmps_{}'.format(abs(hash(self.body['id'])) % 10000)}
        return answer


class BatchDouble:
    """The stand-in service: `endpoint`, `token` (the bearer token it accepts), `requests` (method, path) seen."""

    def __init__(self, root, token='test-token'):
        self.root = root
        os.makedirs(root, exist_ok=True)
        self.token = token
        self.pools, self.jobs, self.tasks = {}, {}, {}  # tasks: (job id, task id) -> Task
        self.requests = []
        self.lock = threading.RLock()
        self._stop = threading.Event()
        self.cert_file, key_file = make_test_ca(root)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, key_file)
        double = self

        class Handler(_Handler):
            service = double
        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.endpoint = 'https://127.0.0.1:{}'.format(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        threading.Thread(target=self._run, daemon=True).start()

    def close(self):
        self._stop.set()
        self.server.shutdown()
        with self.lock:
            for task in self.tasks.values():
                if task.process is not None and task.process.poll() is None:
                    os.killpg(task.process.pid, signal.SIGKILL)

    # ---- what the test controls ------------------------------------------------------------------------------

    def count(self, method, prefix):
        with self.lock:
            return sum(1 for m, p in self.requests if m == method and p.startswith(prefix))

    def preempt(self, task_id):
        """The node under a running task is preempted: its process dies and Batch requeues the task."""
        with self.lock:
            task = next(t for (_, tid), t in self.tasks.items() if tid == task_id)
            assert task.state == 'running', task.state
            os.killpg(task.process.pid, signal.SIGKILL)
            task.process.wait()
            task.process = None
            task.requeues += 1
            task.start = None
            shutil.rmtree(task.directory, ignore_errors=True)  # the node's files go with it
            task.set_state('active')

    def autoscale(self, pool_id):
        """One evaluation of an autoscale pool's formula, as Batch makes every evaluation interval: its node count
        becomes the formula's target (never below the nodes running tasks: taskcompletion)."""
        from tests.azurebatch.autoscale_eval import evaluate
        with self.lock:
            pool = self.pools[pool_id]
            jobs = [j for j, body in self.jobs.items() if body['poolInfo']['poolId'] == pool_id]
            pending = sum(t.nodes for (j, _), t in self.tasks.items() if j in jobs and t.state in ('active', 'running'))
            running = sum(t.nodes for (j, _), t in self.tasks.items() if j in jobs and t.state == 'running')
            result = evaluate(pool['autoScaleFormula'], [(0, pending)])
            for target, current in (('$TargetDedicatedNodes', 'currentDedicatedNodes'),
                                    ('$TargetLowPriorityNodes', 'currentLowPriorityNodes')):
                if target in result:
                    pool[current] = int(result[target])
            if pool['currentDedicatedNodes'] + pool['currentLowPriorityNodes'] < running:
                pool['currentDedicatedNodes'] = running - pool['currentLowPriorityNodes']
            pool['autoScaleRun'] = {'timestamp': _iso(_now()), 'results': '$TargetDedicatedNodes={}'.format(
                pool['currentDedicatedNodes'])}
            return pool['currentDedicatedNodes'] + pool['currentLowPriorityNodes']

    def task(self, task_id):
        with self.lock:
            return next(t for (_, tid), t in self.tasks.items() if tid == task_id)

    # ---- the nodes -------------------------------------------------------------------------------------------

    def _slots(self, pool_id):
        pool = self.pools.get(pool_id) or {}
        return int(pool.get('currentDedicatedNodes') or 0) + int(pool.get('currentLowPriorityNodes') or 0)

    def _run(self):
        while not self._stop.wait(0.05):
            with self.lock:
                for task in self.tasks.values():
                    if task.state == 'running' and task.process.poll() is not None:
                        task.exit_code = task.process.returncode
                        task.end = _now()
                        task.set_state('completed')
                used = {}
                for task in self.tasks.values():
                    if task.state == 'running':
                        pool = self.jobs[task.job_id]['poolInfo']['poolId']
                        used[pool] = used.get(pool, 0) + task.nodes
                for task in sorted(self.tasks.values(), key=lambda t: t.created):
                    if task.state != 'active' or task.job_id not in self.jobs:
                        continue
                    pool = self.jobs[task.job_id]['poolInfo']['poolId']
                    if used.get(pool, 0) + task.nodes <= self._slots(pool):
                        used[pool] = used.get(pool, 0) + task.nodes
                        self._start(task)

    def _start(self, task):
        wd = os.path.join(task.directory, 'wd')
        os.makedirs(wd, exist_ok=True)
        env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'), 'HOME': task.directory,
               'AZ_BATCH_TASK_DIR': task.directory, 'AZ_BATCH_TASK_WORKING_DIR': wd,
               'AZ_BATCH_JOB_ID': task.job_id, 'AZ_BATCH_TASK_ID': task.body['id'], 'AZ_BATCH_NODE_ID': 'node'}
        if task.body.get('multiInstanceSettings'):
            # A multi-instance task: all its "nodes" are this machine (its primary runs here; the stand-in runs no
            # coordination command on the others).
            env.update({'AZ_BATCH_HOST_LIST': ','.join(['127.0.0.1'] * task.nodes),
                        'AZ_BATCH_MASTER_NODE': '127.0.0.1:6000', 'AZ_BATCH_IS_CURRENT_NODE_MASTER': 'true',
                        'AZ_BATCH_TASK_SHARED_DIR': task.directory})
        env.update({s['name']: s.get('value', '') for s in task.body.get('environmentSettings') or []})
        with open(os.path.join(task.directory, 'stdout.txt'), 'wb') as out, \
                open(os.path.join(task.directory, 'stderr.txt'), 'wb') as err:
            task.process = subprocess.Popen(shlex.split(task.body['commandLine']), cwd=wd, env=env, stdout=out,
                                            stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        task.start = _now()
        task.set_state('running')


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    service = None

    def log_message(self, *args):
        pass

    def _reply(self, status, body=None, headers=None):
        data = b'' if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None and not isinstance(body, bytes):
            self.send_header('Content-Type', 'application/json; odata=minimalmetadata')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status, code, message):
        self._reply(status, {'odata.metadata': 'x', 'code': code, 'message': {'lang': 'en-US', 'value': message}})

    def _dispatch(self):
        svc = self.service
        split = urllib.parse.urlsplit(self.path)
        query = {k: v[0] for k, v in urllib.parse.parse_qs(split.query).items()}
        parts = [urllib.parse.unquote(p) for p in split.path.split('/') if p]
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        with svc.lock:
            svc.requests.append((self.command, split.path))
        if self.headers.get('Authorization') != 'Bearer ' + svc.token:
            return self._error(401, 'InvalidAuthenticationTokenAudience', 'bad token')
        with svc.lock:
            return self._route(svc, parts, query, body)

    def _route(self, svc, parts, query, body):  # pylint: disable=too-many-return-statements,too-many-branches
        method = self.command
        if parts == ['pools'] and method == 'POST':
            if body['id'] in svc.pools:
                return self._error(409, 'PoolExists', 'The specified pool already exists.')
            svc.pools[body['id']] = dict(body, state='active', allocationState='steady',
                                         currentDedicatedNodes=int(body.get('targetDedicatedNodes') or 0),
                                         currentLowPriorityNodes=int(body.get('targetLowPriorityNodes') or 0))
            return self._reply(201)
        if parts == ['pools'] and method == 'GET':
            prefix = _FILTER_PREFIX.search(query.get('$filter', ''))
            pools = [p for i, p in svc.pools.items() if not prefix or i.startswith(prefix.group(1))]
            return self._reply(200, {'value': [_select(p, query) for p in pools]})
        if parts == ['supportedimages']:
            return self._reply(200, {'value': SUPPORTED_IMAGES})
        if len(parts) == 3 and parts[0] == 'pools' and parts[2] == 'nodes':
            pool = svc.pools.get(parts[1])
            if pool is None:
                return self._error(404, 'PoolNotFound', 'The specified pool does not exist.')
            count = pool['currentDedicatedNodes'] + pool['currentLowPriorityNodes']
            busy = sum(t.nodes for (j, _), t in svc.tasks.items() if t.state == 'running'
                       and svc.jobs[j]['poolInfo']['poolId'] == parts[1])
            return self._reply(200, {'value': [_select({'id': 'tvmps_{}'.format(i), 'state': 'running' if i < busy
                                                        else 'idle'}, query) for i in range(count)]})
        if len(parts) == 2 and parts[0] == 'pools':
            pool = svc.pools.get(parts[1])
            if pool is None:
                return self._error(404, 'PoolNotFound', 'The specified pool does not exist.')
            if method == 'DELETE':
                del svc.pools[parts[1]]
                return self._reply(202)
            return self._reply(200, _select(pool, query))
        if parts == ['jobs'] and method == 'POST':
            if body['id'] in svc.jobs:
                return self._error(409, 'JobExists', 'The specified job already exists.')
            svc.jobs[body['id']] = dict(body, state='active')
            return self._reply(201)
        if len(parts) >= 2 and parts[0] == 'jobs' and parts[1] not in svc.jobs:
            return self._error(404, 'JobNotFound', 'The specified job does not exist.')
        if len(parts) == 2 and method == 'DELETE':
            for key in [k for k in svc.tasks if k[0] == parts[1]]:
                self._kill(svc.tasks.pop(key))
            del svc.jobs[parts[1]]
            return self._reply(202)
        if len(parts) == 3 and parts[2] == 'addtaskcollection':
            results = []
            for task in body['value']:
                key = (parts[1], task['id'])
                if key in svc.tasks:
                    results.append({'status': 'clienterror', 'taskId': task['id'], 'error': {
                        'code': 'TaskExists', 'message': {'value': 'The specified task already exists.'}}})
                    continue
                directory = os.path.join(svc.root, 'nodes', parts[1], task['id'])
                svc.tasks[key] = Task(parts[1], task, directory,
                                      nodes=(task.get('multiInstanceSettings') or {}).get('numberOfInstances', 1))
                results.append({'status': 'success', 'taskId': task['id'], 'eTag': '0x1'})
            return self._reply(200, {'value': results})
        if len(parts) == 3 and parts[2] == 'tasks':
            since = _FILTER_SINCE.search(query.get('$filter', ''))
            tasks = [t for (j, _), t in svc.tasks.items() if j == parts[1]
                     and (not since or t.transition >= _parse(since.group(1)))]
            return self._reply(200, {'value': [_select(t.json(), query) for t in tasks]})
        if len(parts) >= 4 and parts[2] == 'tasks':
            task = svc.tasks.get((parts[1], parts[3]))
            if task is None:
                return self._error(404, 'TaskNotFound', 'The specified task does not exist.')
            if len(parts) == 4 and method == 'GET':
                return self._reply(200, _select(task.json(), query))
            if len(parts) == 4 and method == 'DELETE':
                self._kill(svc.tasks.pop((parts[1], parts[3])))
                return self._reply(200)
            if parts[4:] == ['terminate']:
                if task.state != 'completed':
                    task.terminated = True
                    if task.process is not None and task.process.poll() is None:
                        os.killpg(task.process.pid, signal.SIGKILL)
                        task.process.wait()
                    task.exit_code = task.process.returncode if task.process else None
                    task.end = _now()
                    task.set_state('completed')
                return self._reply(204)
            if parts[4:] == ['files']:
                return self._reply(200, {'value': _files(task)})
            if len(parts) > 5 and parts[4] == 'files':
                path = os.path.join(task.directory, *parts[5:])
                if not os.path.isfile(path):
                    return self._error(404, 'FileNotFound', 'The specified file does not exist.')
                with open(path, 'rb') as f:
                    data = f.read()
                match = re.fullmatch(r'bytes=(\d+)-(\d*)', self.headers.get('ocp-range') or '')
                if match:
                    end = int(match.group(2)) + 1 if match.group(2) else len(data)
                    data = data[int(match.group(1)):end]
                return self._reply(200, data, {'Content-Type': 'application/octet-stream'})
        return self._error(400, 'InvalidUri', 'not served by the stand-in: {} {}'.format(method, parts))

    @staticmethod
    def _kill(task):
        if task.process is not None and task.process.poll() is None:
            os.killpg(task.process.pid, signal.SIGKILL)
            task.process.wait()

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _dispatch


def _select(item, query):
    fields = query.get('$select')
    if not fields:
        return item
    keep = set(fields.split(','))
    return {k: v for k, v in item.items() if k in keep}


def _files(task):
    files = []
    for folder, dirs, names in os.walk(task.directory):
        for name in dirs + names:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, task.directory)
            entry = {'name': relative, 'isDirectory': os.path.isdir(path), 'url': relative}
            if not entry['isDirectory']:
                entry['properties'] = {'contentLength': os.path.getsize(path),
                                       'lastModified': _iso(_now()), 'creationTime': _iso(_now())}
            files.append(entry)
    return files
