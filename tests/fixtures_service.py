"""The local Batch AI service for tests: started once per session (foreground module in a subprocess) on a free
loopback port with a temporary data dir.

Fixtures:
- `local_service`: a ServiceInfo (endpoint, files_endpoint, blob_endpoint, token_file, data_dir, subscription, resource_group,
  workspace, cluster, pid) of the session's service (default cluster: 4 slots);
- `batchai_client`: the real `azure.mgmt.batchai.BatchAI` client for it (core.service.client.local_batchai_client);
- `service_factory`: starts extra services (own data dirs, options) and stops them at the end of the test;
  `service_factory.restart(info)` crashes one (SIGKILL) and starts it again on its data dir.
Helpers: `start_service(data_dir, ...)`, `stop_service(info)`, `kill_service(info)` (SIGKILL) and
`restart_service(info)` (SIGKILL, then start again on the same data dir: the crash test).
"""
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT = 60
SESSION_SLOTS = 4


@dataclass
class ServiceInfo:
    endpoint: str
    files_endpoint: str
    token_file: str
    data_dir: str
    subscription: str
    resource_group: str
    workspace: str
    cluster: str
    pid: int
    proc: subprocess.Popen = field(repr=False, compare=False, default=None)
    options: dict = field(repr=False, compare=False, default_factory=dict)
    blob_endpoint: str = ''

    @property
    def cluster_id(self):
        return ('/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}/clusters/{}'
                .format(self.subscription, self.resource_group, self.workspace, self.cluster))

    @property
    def token(self):
        with open(self.token_file, encoding='ascii') as f:
            return f.read().strip()


def start_service(data_dir, slots=SESSION_SLOTS, faults=None, extra_args=()):
    """Start the foreground service on `data_dir`; return its ServiceInfo once service.json says it listens."""
    os.makedirs(data_dir, exist_ok=True)
    service_file = os.path.join(data_dir, 'service.json')
    if os.path.exists(service_file):
        os.unlink(service_file)
    cmd = [sys.executable, '-m', 'azext_batchai_sweep.localservice', '--data-dir', data_dir, '--port', '0',
           '--files-port', '0', '--slots', str(slots), *extra_args]
    if faults:
        cmd += ['--faults', faults]
    log = open(os.path.join(data_dir, 'service.log'), 'ab')  # pylint: disable=consider-using-with
    proc = subprocess.Popen(  # pylint: disable=consider-using-with
        cmd, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    log.close()
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            with open(os.path.join(data_dir, 'service.log'), encoding='utf-8', errors='replace') as f:
                pytest.fail('local service exited with {}:\n{}'.format(proc.returncode, f.read()[-4000:]))
        try:
            with open(service_file, encoding='utf-8') as f:
                info = json.load(f)
        except (FileNotFoundError, ValueError):
            time.sleep(0.05)
            continue
        if info['pid'] == proc.pid:
            return ServiceInfo(endpoint=info['endpoint'], files_endpoint=info['filesEndpoint'],
                               token_file=info['tokenFile'], data_dir=info['dataDir'],
                               subscription=info['subscriptionId'], resource_group=info['resourceGroup'],
                               workspace=info['workspace'], cluster=info['cluster'], pid=proc.pid, proc=proc,
                               options={'slots': slots, 'faults': faults, 'extra_args': tuple(extra_args)},
                               blob_endpoint=info.get('blobEndpoint', ''))
        time.sleep(0.05)
    proc.kill()
    pytest.fail('local service did not start within {}s'.format(START_TIMEOUT))
    return None


def stop_service(info, timeout=20):
    """SIGTERM (clean stop: running jobs are killed and recorded), SIGKILL after `timeout`; return the exit code."""
    if info.proc.poll() is None:
        info.proc.send_signal(signal.SIGTERM)
        try:
            info.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            info.proc.kill()
            info.proc.wait()
    return info.proc.returncode


def kill_service(info):
    """SIGKILL the service (a crash): nothing of it runs cleanup."""
    if info.proc.poll() is None:
        info.proc.kill()
    info.proc.wait()


def restart_service(info, **options):
    """Crash the service with SIGKILL and start it again on the same data dir (same options unless overridden)."""
    kill_service(info)
    merged = {**info.options, **options}
    return start_service(info.data_dir, **merged)


@pytest.fixture(scope='session')
def local_service(tmp_path_factory):
    info = start_service(str(tmp_path_factory.mktemp('batchai-local')))
    yield info
    stop_service(info)


@pytest.fixture(scope='session')
def batchai_client(local_service):  # pylint: disable=redefined-outer-name
    """The client the extension builds for a local endpoint, plus a policy that checks every request body it sends
    and every response body it gets against the Batch AI swagger (tests/spec_conformance.py)."""
    from azext_batchai_sweep.core.service.client import local_batchai_client
    from tests.spec_conformance import SpecCheckPolicy
    return local_batchai_client(local_service.endpoint, local_service.token_file, local_service.subscription,
                                per_retry_policies=[SpecCheckPolicy()])


@pytest.fixture
def service_factory(tmp_path):
    """Start extra services for one test: `service_factory(name='svc', **start_service options)`."""
    started = []

    def start(name='svc', **options):
        info = start_service(str(tmp_path / name), **options)
        started.append(info)
        return info

    def restart(info, **options):
        info = restart_service(info, **options)
        started.append(info)
        return info
    start.restart = restart
    yield start
    for info in started:
        if info.proc.poll() is None:
            stop_service(info)
