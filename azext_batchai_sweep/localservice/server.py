"""The service process: three HTTP listeners (ARM API + download links, Files API, Blob API), the store and the
scheduler (schedulers/: processes, Slurm or Azure Batch).

Every ARM request needs the bearer token of `<data-dir>/token`; fault injection applies to ARM requests only.
Download links carry their own HMAC signature; the Files and Blob APIs do their own (Shared Key, SAS)
authentication.
"""
import fcntl
import json
import logging
import os
import socket
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler

from . import (DEFAULT_CLUSTER, DEFAULT_LOCATION, DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION, DEFAULT_WORKSPACE,
               SERVICE_FILE)
from ..core.service.loopback import is_loopback
from .api import downloads
from .api.arm_api import ArmApi, JSON
from .auth import check_bearer, load_or_create_secrets
from .data import datadir
from .data.store import Store, resource_key
from .errors import ArmError, disk_full, is_disk_full
from .faults import FaultInjector
from .httpserver import BoundedHTTPServer
from .resources import cluster_body, utcnow, workspace_body
from .schedulers.processes.runner import Runner
from .schedulers.slurm.commands import SlurmCli, SlurmError
from .schedulers.slurm.scheduler import SlurmScheduler

logger = logging.getLogger(__name__)

# The largest ARM request body read (a job create body is a few kB); larger ones are refused unread (413).
MAX_ARM_BODY = 4 * 1024 * 1024


class _LimitedReader:
    """The request body as a file-like object that stops at Content-Length (for the files API)."""

    def __init__(self, stream, length):
        self._stream = stream
        self._left = length

    def read(self, size=-1):
        if self._left <= 0:
            return b''
        size = self._left if size is None or size < 0 else min(size, self._left)
        data = self._stream.read(size)
        self._left -= len(data)
        return data

    @property
    def remaining(self):
        return max(self._left, 0)


class _Handler(BaseHTTPRequestHandler):
    """Shared HTTP plumbing: keep-alive, no Nagle delay, one write per small response. Served by httpserver.py's
    bounded server: one `handle_one_request()` per request, on a worker, once the request head is there."""
    protocol_version = 'HTTP/1.1'
    server_version = 'batchai-local'
    sys_version = ''
    wbufsize = -1  # buffered: headers and a small body leave in one segment
    # Whether this request carried valid credentials: an answer without them closes its connection, and
    # httpserver.py evicts connections that never had them first.
    authenticated = False

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass  # request lines carry signed query strings: access logging stays off (see `_log`)

    def _log(self, status):
        logger.debug('%s %s -> %s', self.command, urllib.parse.urlsplit(self.path).path, status)

    def _has_body(self):
        return bool(self.headers.get('Transfer-Encoding')) or (self.headers.get('Content-Length') or '0').strip() != '0'

    def _content_length(self):
        """The request's Content-Length; ValueError when it is not a plain non-negative number."""
        text = (self.headers.get('Content-Length') or '0').strip()
        if not text.isdigit():
            raise ValueError(text)
        return int(text)

    def _send(self, status, headers, body):
        if not self.authenticated:
            # No valid credentials: the connection ends with this answer, so such a peer gets one answer per
            # connection however many requests it pipelines (httpserver.py: no worker waits on its unread answers).
            self.close_connection = True
        self.send_response(status)
        iterable = not isinstance(body, (bytes, bytearray))
        chunked = iterable and 'Content-Length' not in headers and self.command != 'HEAD'
        for name, value in headers.items():
            self.send_header(name, str(value))
        if self.close_connection:
            self.send_header('Connection', 'close')
        if chunked:
            self.send_header('Transfer-Encoding', 'chunked')
        elif not iterable and 'Content-Length' not in headers:
            self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if not iterable:
            self.wfile.write(body)
        else:
            for chunk in body:
                self.wfile.write(b'%x\r\n%s\r\n' % (len(chunk), chunk) if chunked else chunk)
            if chunked:
                self.wfile.write(b'0\r\n\r\n')
        self._log(status)

    def _drop(self):
        """Close the connection without an answer (an injected network fault)."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _ArmHandler(_Handler):
    def _read_arm_body(self):
        """The body of an authenticated ARM request: at most MAX_ARM_BODY bytes (a job is a few kB)."""
        try:
            length = self._content_length()
        except ValueError:
            raise ArmError(400, 'InvalidContentLength', 'The Content-Length header is not a number.') from None
        if length > MAX_ARM_BODY:
            raise ArmError(413, 'RequestEntityTooLarge',
                           'The request body is larger than {} bytes.'.format(MAX_ARM_BODY)) from None
        return self.rfile.read(length) if length else b''

    def _dispatch(self):
        service = self.server.service
        split = urllib.parse.urlsplit(self.path)
        query = {k.lower(): v[0] for k, v in urllib.parse.parse_qs(split.query, keep_blank_values=True).items()}
        # Until a body is read, an early answer closes the connection: an unread body would be taken for the next
        # request, and reading it before knowing who sends it would let anyone make the service hold it.
        client_closes = self.close_connection  # the client's own "Connection: close", set by parse_request
        self.close_connection = client_closes or self._has_body()
        if split.path.startswith('/download/') and self.command in ('GET', 'HEAD'):
            answer = downloads.serve(service.data_dir, service.secrets.link_key, self.command, split.path, query,
                                     self.headers.get('Range'))
            self.authenticated = answer[0] != 403  # the link's signature held
            self._send(*answer)
            return
        request_id = str(uuid.uuid4())
        fault = service.faults.draw(self.command)
        if service.faults.latency:
            time.sleep(service.faults.latency)
        if fault is not None and fault.drop:
            self._drop()
            return
        try:
            if not check_bearer(self.headers.get('Authorization'), service.secrets.token):
                raise ArmError(401, 'AuthenticationFailed',
                               'Authentication failed: the bearer token of the local service is missing or wrong.',
                               {'WWW-Authenticate': 'Bearer'})
            self.authenticated = True  # the connection is preferred when the server must evict one
            body = self._read_arm_body()
            self.close_connection = client_closes
            if fault is not None:
                headers = {'Retry-After': str(fault.retry_after)} if fault.retry_after else {}
                code = {429: 'TooManyRequests', 500: 'InternalServerError', 503: 'ServiceUnavailable'}[fault.status]
                raise ArmError(fault.status, code, 'Injected fault.', headers)
            base_url = 'http://{}'.format(self.headers.get('Host') or service.endpoint_host)
            status, headers, data = service.api.handle(self.command, split.path, query, base_url, body)
        except ArmError as ex:
            status, headers, data = ex.status, {'Content-Type': JSON, **ex.headers}, json.dumps(ex.body()).encode()
        except Exception as ex:  # pylint: disable=broad-except
            if is_disk_full(ex):  # said as such (507, not retried), never "Internal error"
                logger.warning('%s %s refused: the disk is full', self.command, split.path)
                error = disk_full()
                status, headers, data = error.status, {'Content-Type': JSON}, json.dumps(error.body()).encode()
            else:
                # An unexpected bug answers as ARM would (500, retried by the SDK) instead of killing the connection.
                logger.exception('%s %s failed', self.command, split.path)
                status, headers = 500, {'Content-Type': JSON}
                data = json.dumps({'error': {'code': 'InternalServerError', 'message': 'Internal error.'}}).encode()
        headers['x-ms-request-id'] = request_id
        self._send(status, headers, data)

    do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = do_HEAD = _dispatch


class _FilesHandler(_Handler):
    API = 'files_api'  # the LocalService attribute that answers this listener's requests

    def _dispatch(self):
        files_api = getattr(self.server.service, self.API)
        if files_api is None:
            self.close_connection = self.close_connection or self._has_body()  # the body is never read
            self._send(501, {'Content-Type': 'application/xml'},
                       b'<?xml version="1.0" encoding="utf-8"?><Error><Code>NotImplemented</Code>'
                       b'<Message>The files API is not available in this build.</Message></Error>')
            return
        split = urllib.parse.urlsplit(self.path)
        try:
            reader = _LimitedReader(self.rfile, self._content_length())
        except ValueError:
            self.close_connection = True
            self._send(400, {'Content-Type': 'application/xml', 'x-ms-error-code': 'InvalidHeaderValue'},
                       b'<?xml version="1.0" encoding="utf-8"?><Error><Code>InvalidHeaderValue</Code>'
                       b'<Message>The Content-Length header is not a number.</Message></Error>')
            return
        try:
            # The raw query string: the files API checks Shared Key signatures over the values as sent.
            status, headers, body = files_api.handle(self.command, split.path, split.query, self.headers, reader,
                                                     on_authenticated=self._set_authenticated)
        except Exception:  # pylint: disable=broad-except
            logger.exception('files API %s %s failed', self.command, split.path)
            status, headers, body = 500, {'Content-Type': 'application/xml'}, b''
        if reader.remaining:
            # A body the files API did not read (a refused upload): close rather than read it into memory.
            self.close_connection = True
        self._send(status, dict(headers), body)

    def _set_authenticated(self):
        self.authenticated = True

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_OPTIONS = _dispatch


class _BlobHandler(_FilesHandler):
    """The Blob endpoint's listener: the same plumbing as the Files endpoint's, answered by blob_api.BlobApi."""
    API = 'blob_api'


def _load_files_api(data_dir, storage_key):
    """The files API of files_api.py when that module exists (written separately); None answers 501."""
    try:
        from .api.files_api import FilesApi  # pylint: disable=import-outside-toplevel
    except ImportError:
        logger.warning('files API not available: files_api.py is missing')
        return None
    return FilesApi(os.path.join(data_dir, 'storage'), storage_key)


class LocalService:
    """One running service on a data dir (exclusive: a second one on the same dir refuses to start)."""

    def __init__(self, data_dir, host='127.0.0.1', port=0, files_port=0, slots=None, faults=None,
                 allow_remote=False, scheduler='processes', gpus=None, slurm=None, azure_batch=None, blob_port=0):
        if not is_loopback(host) and not allow_remote:
            raise ValueError("refusing to listen on non-loopback address '{}' without --allow-remote".format(host))
        self.data_dir = os.path.abspath(data_dir)
        self.host, self.port, self.files_port, self.blob_port = host, port, files_port, blob_port
        self.slots = slots or os.cpu_count() or 1
        self.faults = FaultInjector(faults)
        self.scheduler_name = scheduler
        self.gpus = gpus  # processes scheduler: device indexes (None: GPUs not managed)
        self.slurm = dict(slurm or {})  # Slurm scheduler: conf, partition, account, poll_seconds
        # Azure Batch scheduler: batch_account, resource_group, pool_prefix, poll_seconds (azurebatch/connect.py)
        self.azure_batch = dict(azure_batch or {})
        self.secrets = None
        self.store = self.runner = self.api = self.files_api = self.blob_api = None
        self._servers = []
        self._lock_file = None
        self.endpoint_host = None

    def start(self):
        """Open the store, recover from a crash, create the default resources, listen, write service.json."""
        datadir.prepare(self.data_dir)  # created private, or used as it is (never chmod-ed), or refused
        self._lock_file = open(os.path.join(self.data_dir, 'service.lock'), 'w')  # pylint: disable=consider-using-with
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError('another local service is running on {}'.format(self.data_dir)) from None
        self.secrets = load_or_create_secrets(self.data_dir)
        self.store = Store(os.path.join(self.data_dir, 'service.db'))
        datadir.make_private(self.data_dir)
        self.runner = self._make_scheduler()
        self.runner.recover()
        self._create_defaults()
        self.api = ArmApi(self.store, self.runner, self.data_dir, self.secrets.link_key)
        self.files_api = _load_files_api(self.data_dir, self.secrets.storage_key)
        from .api.blob_api import BlobApi  # pylint: disable=import-outside-toplevel
        self.blob_api = BlobApi(os.path.join(self.data_dir, 'storage'), self.secrets.storage_key)
        arm = BoundedHTTPServer((self.host, self.port), _ArmHandler, self)
        files = BoundedHTTPServer((self.host, self.files_port), _FilesHandler, self)
        blob = BoundedHTTPServer((self.host, self.blob_port), _BlobHandler, self)
        self._servers = [arm, files, blob]
        self.endpoint_host = self._host_port(arm)
        self.runner.start()
        for server in self._servers:
            threading.Thread(target=server.serve_forever, kwargs={'poll_interval': 0.2}, daemon=True,
                             name='http').start()
        info = self.info()
        path = os.path.join(self.data_dir, SERVICE_FILE)
        datadir.write_private(path, json.dumps(info, indent=2))
        logger.info('listening on %s (files %s, blob %s), data dir %s, %s slots%s', info['endpoint'],
                    info['filesEndpoint'], info['blobEndpoint'],
                    self.data_dir, self.slots, ', faults ' + json.dumps(self.faults.settings) if self.faults.enabled
                    else '')
        return info

    def _make_scheduler(self):
        """The scheduler behind the ARM layer: this machine's processes, or a Slurm cluster (checked first)."""
        if self.scheduler_name == 'processes':
            on_slurm = [r for r in self.store.in_states(('queued', 'running', 'terminating')) if r['sched_id']]
            if on_slurm:
                # The processes scheduler would run them a second time, and could not follow the Slurm jobs.
                raise RuntimeError('{} job(s) of this data dir were handed to Slurm by an earlier start: start the '
                                   'service with --scheduler slurm to follow them (or use another data dir)'.format(
                                       len(on_slurm)))
            runner = Runner(self.store, self.data_dir, gpus=self.gpus)
            # A cluster may grow (az batchai cluster resize) to this machine's CPUs, or to the --slots given if more.
            cpus = os.cpu_count() or 1
            runner.node_limit = max(cpus, self.slots)
            runner.node_limit_source = ("this machine's CPUs" if runner.node_limit == cpus
                                        else 'the service was started with --slots {}'.format(self.slots))
            runner.total_cores = cpus
            return runner
        if self.scheduler_name == 'azure-batch':
            on_elsewhere = [r for r in self.store.in_states(('queued', 'running', 'terminating'))
                            if r['sched_id'] and '/' not in r['sched_id']]
            if on_elsewhere:
                raise RuntimeError('{} job(s) of this data dir were handed to Slurm by an earlier start: start the '
                                   'service with --scheduler slurm to follow them (or use another data dir)'.format(
                                       len(on_elsewhere)))
            from .schedulers.azurebatch.connect import connect  # pylint: disable=import-outside-toplevel
            return connect(self.store, self.data_dir, self.azure_batch)
        if self.scheduler_name != 'slurm':
            raise ValueError("unknown scheduler '{}'".format(self.scheduler_name))
        cli = SlurmCli(self.slurm.get('conf'), self.slurm.get('partition'), self.slurm.get('account'))
        scheduler = SlurmScheduler(self.store, self.data_dir, cli,
                                   **({'poll_seconds': self.slurm['poll_seconds']} if self.slurm.get('poll_seconds')
                                      else {}))
        try:
            info = scheduler.connect()
        except SlurmError as ex:
            raise RuntimeError('cannot use Slurm: {}'.format(ex)) from None
        # The default cluster has the partition's nodes: a job of more nodes is refused at submit, and no cluster
        # grows past them.
        self.slots = info['nodes']
        scheduler.node_limit = info['nodes']
        scheduler.node_limit_source = "the nodes of Slurm partition '{}'".format(info['partition'])
        scheduler.total_cores = info.get('cpus') or info['nodes']
        scheduler.cores_per_node = max(1, scheduler.total_cores // info['nodes'])
        return scheduler

    def _host_port(self, server):
        host = self.host if ':' not in self.host else '[{}]'.format(self.host)
        return '{}:{}'.format(host, server.server_address[1])

    def info(self):
        return {
            'endpoint': 'http://' + self.endpoint_host,
            'filesEndpoint': 'http://' + self._host_port(self._servers[1]),
            'blobEndpoint': 'http://' + self._host_port(self._servers[2]),
            'pid': os.getpid(), 'tokenFile': self.secrets.token_file, 'dataDir': self.data_dir,
            'subscriptionId': DEFAULT_SUBSCRIPTION, 'resourceGroup': DEFAULT_RESOURCE_GROUP,
            'workspace': DEFAULT_WORKSPACE,
            'cluster': DEFAULT_CLUSTER if self.runner.has_default_cluster else None, **self.runner.describe(),
        }

    def _create_defaults(self):
        """The default workspace and cluster, so a sweep can be submitted at once; the cluster follows --slots."""
        now = utcnow()
        sub, rg = DEFAULT_SUBSCRIPTION, DEFAULT_RESOURCE_GROUP
        ws_key = resource_key(sub, rg, DEFAULT_WORKSPACE)
        params = {'location': DEFAULT_LOCATION}
        self.store.insert(ws_key, 'workspace', resource_key(sub, rg),
                          workspace_body(sub, rg, DEFAULT_WORKSPACE, params, now), spec=params)
        if not self.runner.has_default_cluster:  # its clusters are made through the API (Batch pools)
            return
        cluster_params = {'properties': {
            'vmSize': 'LOCAL', 'userAccountSettings': {'adminUserName': os.environ.get('USER') or 'batchai'},
            'scaleSettings': {'manual': {'targetNodeCount': self.slots}}}}
        key = resource_key(sub, rg, DEFAULT_WORKSPACE, 'clusters', DEFAULT_CLUSTER)
        body = cluster_body(sub, rg, DEFAULT_WORKSPACE, DEFAULT_CLUSTER, cluster_params, now)
        if not self.store.insert(key, 'cluster', ws_key, body, spec=cluster_params):
            self.store.update(key, lambda b: b['properties'].update(
                currentNodeCount=self.slots, scaleSettings=body['properties']['scaleSettings']))

    def shutdown(self):
        """Stop listening, kill and record the running jobs, close the store, remove service.json."""
        for server in self._servers:
            server.shutdown()
            server.server_close()
        if self.runner is not None:
            self.runner.stop()
        if self.store is not None:
            self.store.close()
        try:
            os.unlink(os.path.join(self.data_dir, SERVICE_FILE))
        except FileNotFoundError:
            pass
        if self._lock_file is not None:
            self._lock_file.close()
        logger.info('stopped')
