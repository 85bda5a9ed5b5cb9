"""get_metrics retries with the caller's RetrySettings: the job listing, each job's output-file listing and each
download, proved against the real local service behind a loopback proxy that answers 503 to the first try of each
request (the service's own fault injection never touches download links, and draws its faults at random)."""
import contextlib
import http.client
import http.server
import threading
import urllib.parse

import pytest
from azure.core.exceptions import HttpResponseError

from azext_batchai_sweep.core.outputs import download
from azext_batchai_sweep.core.outputs.metrics import MetricExtractor, get_metrics
from azext_batchai_sweep.core.service.client import local_batchai_client
from azext_batchai_sweep.core.service.retry import RetrySettings
from azext_batchai_sweep.core.service.submit import submit_jobs

from .service_helpers import new_experiment, quick_retry, sweep_plan, wait_all

pytestmark = pytest.mark.service

JOBS = 3
LOSSES = 'echo "loss=$((PARAM_X + 5))"; echo "loss=$((PARAM_X * 3))"'
HOP_BY_HOP = ('connection', 'keep-alive', 'transfer-encoding', 'content-length')


def _kind(method, path):
    """Which of get_metrics' requests this is: the job listing, a job's output-file listing or a download."""
    if path.startswith('/download/'):
        return 'download'
    if path.split('?')[0].endswith('/listoutputfiles'):
        return 'files'
    if method == 'GET' and path.split('?')[0].endswith('/jobs'):
        return 'jobs'
    return 'other'


class FaultProxy:
    """A loopback HTTP proxy to the service: the first try of each request of the `faulty` kinds (method, path,
    Range) is answered 503 without reaching the service; every other request is relayed as it is (the Host header
    kept, so the download links the service answers point back at the proxy)."""

    def __init__(self, upstream, faulty):
        self.upstream = urllib.parse.urlsplit(upstream).netloc
        self.faulty = set(faulty)
        self.seen = {}  # (method, path, range) -> tries
        self.faults = []  # the kinds answered 503, in order
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def _relay(self):
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
                key = (self.command, self.path.lower(), self.headers.get('Range'))
                kind = _kind(self.command, self.path.lower())
                with proxy._lock:
                    tries = proxy.seen[key] = proxy.seen.get(key, 0) + 1
                    fault = kind in proxy.faulty and tries == 1
                    if fault:
                        proxy.faults.append(kind)
                if fault:
                    payload = b'{"error": {"code": "ServerBusy", "message": "injected by the test proxy"}}'
                    self.send_response(503)
                    self.send_header('Content-Type', 'application/json')
                    self.send_header('Content-Length', str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                connection = http.client.HTTPConnection(proxy.upstream, timeout=30)
                try:
                    connection.request(self.command, self.path, body=body or None,
                                       headers={k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP})
                    answer = connection.getresponse()
                    payload = answer.read()
                finally:
                    connection.close()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header('Content-Length', str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _relay  # noqa: N815

        self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.endpoint = 'http://127.0.0.1:{}'.format(self._server.server_address[1])

    @contextlib.contextmanager
    def serving(self):
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()


@pytest.fixture(scope='module')
def losses(request):
    """An experiment with a finished sweep of JOBS jobs, job X reporting loss X+5 then 3X."""
    client, svc = request.getfixturevalue('batchai_client'), request.getfixturevalue('local_service')
    experiment = new_experiment(client, svc)
    submit_jobs(client, svc.resource_group, svc.workspace, experiment, sweep_plan(svc, 'retried', JOBS, LOSSES),
                retry=quick_retry())
    wait_all(client, svc, experiment, 'retried')
    return svc, experiment


@contextlib.contextmanager
def _through_proxy(svc, faulty, monkeypatch):
    monkeypatch.setattr(download, '_SESSION', [])  # no kept connection to an earlier test's server
    with FaultProxy(svc.endpoint, faulty).serving() as proxy:
        yield proxy, local_batchai_client(proxy.endpoint, svc.token_file, svc.subscription)


def _recording_retry(**kwargs):
    """RetrySettings whose waits are recorded instead of slept: a retry made with other settings leaves no record."""
    slept = []
    return RetrySettings(base_delay=0.01, max_delay=0.01, sleep=slept.append, random=lambda: 0.5, **kwargs), slept


def _metrics(client, svc, experiment, retry, reduce):
    return get_metrics(client, svc.resource_group, svc.workspace, experiment,
                       MetricExtractor(metric_name='loss', reduce=reduce), sweep_name='retried', retry=retry,
                       parallel=2)


EXPECTED = {'max': lambda x: float(max(x + 5, 3 * x)), 'last': lambda x: float(3 * x)}


@pytest.mark.parametrize('reduce', ['max', 'last'])  # 'last' reads the log's end by range, 'max' all of it
def test_each_request_is_retried_with_the_callers_settings(losses, monkeypatch, reduce):
    svc, experiment = losses
    with _through_proxy(svc, ('jobs', 'files', 'download'), monkeypatch) as (proxy, client):
        retry, slept = _recording_retry()
        rows = _metrics(client, svc, experiment, retry, reduce)
    assert sorted((row['parameters']['X'], row['metric'], row['error']) for row in rows) == [
        (x, EXPECTED[reduce](x), None) for x in range(JOBS)]
    assert proxy.faults.count('jobs') == 1
    assert proxy.faults.count('files') == JOBS and proxy.faults.count('download') >= JOBS
    # every 503 was retried after one wait of the caller's settings (0.5 x 0.01 s), none with others
    assert slept == [0.005] * len(proxy.faults)
    assert all(tries == 2 for key, tries in proxy.seen.items() if _kind(key[0], key[1]) != 'other')


@pytest.mark.parametrize('kind,reduce,error', [('download', 'max', '503'), ('download', 'last', '503'),
                                               ('files', 'max', 'ServerBusy')])
def test_reads_of_a_job_that_the_callers_settings_do_not_retry_are_each_jobs_error(losses, monkeypatch, kind, reduce,
                                                                                   error):
    """A download, or a job's file listing, failed once and not retried: that job's row holds the error."""
    svc, experiment = losses
    with _through_proxy(svc, (kind,), monkeypatch) as (proxy, client):
        retry, slept = _recording_retry(max_retries=0)
        rows = _metrics(client, svc, experiment, retry, reduce)
    assert len(rows) == JOBS and slept == []
    assert all(row['metric'] is None and error in row['error'] for row in rows), rows
    assert proxy.faults == [kind] * JOBS


def test_a_job_listing_that_the_callers_settings_do_not_retry_fails_the_call(losses, monkeypatch):
    svc, experiment = losses
    with _through_proxy(svc, ('jobs',), monkeypatch) as (proxy, client):
        retry, slept = _recording_retry(max_retries=0)
        with pytest.raises(HttpResponseError) as failed:
            _metrics(client, svc, experiment, retry, 'max')
    assert failed.value.status_code == 503 and slept == [] and proxy.faults == ['jobs']
