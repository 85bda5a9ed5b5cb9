"""Service lifecycle: crash recovery (SIGKILL), clean stop via control.py, fault injection, client endpoint rules."""
import http.client
import os
import sqlite3
import stat
import time
import urllib.error
import urllib.request

import pytest
from azure.core.exceptions import HttpResponseError
from azure.mgmt.batchai import models

from azext_batchai_sweep.core.service.client import local_batchai_client
from azext_batchai_sweep.core.errors import SweepError
from azext_batchai_sweep.localservice import control
from azext_batchai_sweep.localservice.faults import FaultInjector, parse_spec
from tests.fixtures_service import kill_service
from tests.localservice.conftest import job_params, job_pids, process_alive, raw, wait_state


def _client(info, **kwargs):
    return local_batchai_client(info.endpoint, info.token_file, info.subscription, **kwargs)


def test_sigkill_restart_keeps_state_and_fails_running_jobs(service_factory, tmp_path):
    info = service_factory(slots=1)
    client = _client(info)
    rg, ws = info.resource_group, info.workspace
    client.experiments.begin_create(rg, ws, 'crash').result()
    pid_file = tmp_path / 'pid'
    client.jobs.begin_create(rg, ws, 'crash', 'running', job_params(
        info, 'sleep 60 & echo $! > {}; wait'.format(pid_file)), polling=False)
    client.jobs.begin_create(rg, ws, 'crash', 'waiting', job_params(info, 'echo later'), polling=False)
    wait_state(client, info, 'crash', 'running', ('running',))
    (child,) = job_pids(pid_file)

    info = service_factory.restart(info)
    client = _client(info)
    assert not process_alive(child), 'the orphaned job process group must be killed at restart'
    job = client.jobs.get(rg, ws, 'crash', 'running')
    assert job.execution_state == 'failed' and job.execution_info.errors[0].code == 'ServiceInterrupted'
    assert wait_state(client, info, 'crash', 'waiting').execution_state == 'succeeded'
    assert [e.name for e in client.experiments.list_by_workspace(rg, ws)] == ['crash']
    assert [j.name for j in client.jobs.list_by_experiment(rg, ws, 'crash')] == ['running', 'waiting']


def test_control_start_status_stop(tmp_path):
    data_dir = str(tmp_path / 'bg')
    info = control.start_background(data_dir, slots=1)
    try:
        assert stat.S_IMODE(os.stat(info['tokenFile']).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.join(data_dir, 'storage.key')).st_mode) == 0o600
        assert set(info) == {'endpoint', 'filesEndpoint', 'blobEndpoint', 'pid', 'tokenFile', 'dataDir', 'subscriptionId',
                             'resourceGroup', 'workspace', 'cluster', 'scheduler'}
        assert info['scheduler'] == 'processes'
        assert control.status(data_dir)['running'] is True
        assert control.start_background(data_dir)['pid'] == info['pid']  # already running: same service
        client = local_batchai_client(info['endpoint'], info['tokenFile'])
        rg, ws = info['resourceGroup'], info['workspace']
        client.experiments.begin_create(rg, ws, 'bg').result()
        cluster = client.clusters.get(rg, ws, info['cluster'])
        client.jobs.begin_create(rg, ws, 'bg', 'long', models.JobCreateParameters(
            cluster=models.ResourceId(id=cluster.id), node_count=1, std_out_err_path_prefix='$AZ_BATCHAI_JOB_TEMP',
            custom_toolkit_settings=models.CustomToolkitSettings(command_line='sleep 60')), polling=False)
        while client.jobs.get(rg, ws, 'bg', 'long').execution_state != 'running':
            time.sleep(0.05)
    finally:
        assert control.stop(data_dir) is True
    assert control.status(data_dir)['running'] is False
    assert control.stop(data_dir) is False
    info = control.start_background(data_dir)
    try:
        client = local_batchai_client(info['endpoint'], info['tokenFile'])
        job = client.jobs.get(info['resourceGroup'], info['workspace'], 'bg', 'long')
        assert job.execution_state == 'failed' and job.execution_info.errors[0].code == 'ServiceStopped'
    finally:
        control.stop(data_dir)


def test_faults_are_survived_by_the_sdk_retries(service_factory):
    info = service_factory(faults='5xx=0.2,429=0.1,drop=0.05,seed=7')
    client = _client(info, retry_backoff_factor=0.01, retry_total=20, retry_status=20, retry_connect=20,
                     retry_read=20)
    rg, ws = info.resource_group, info.workspace
    client.experiments.begin_create(rg, ws, 'flaky').result()
    for index in range(10):
        client.jobs.begin_create(rg, ws, 'flaky', 'j{}'.format(index), job_params(info), polling=False)
    assert len(list(client.jobs.list_by_experiment(rg, ws, 'flaky'))) == 10
    faults = []
    for _ in range(80):
        try:
            faults.append(raw(info, 'GET', '/subscriptions/00000000-0000-0000-0000-00000000000f/resourceGroups/r/'
                                            'providers/Microsoft.BatchAI/'
                                            'workspaces/w')[0])
        except (http.client.HTTPException, ConnectionError):
            faults.append('drop')
    assert {500, 503, 429, 'drop', 404} <= set(faults)
    for _ in range(20):  # download links never get injected faults
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(info.endpoint + '/download/x?se=1&sig=x')
        assert refused.value.code == 403


def test_write_budget_throttles_with_retry_after(service_factory):
    info = service_factory(faults='writes-per-s=2')
    base = '/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}/experiments/'.format(
        info.subscription, info.resource_group, info.workspace)
    answers = [raw(info, 'PUT', base + 'e{}'.format(i)) for i in range(6)]
    throttled = [a for a in answers if a[0] == 429]
    assert throttled and all(int(a[1]['Retry-After']) >= 1 for a in throttled)
    assert throttled[0][2]['error']['code'] == 'TooManyRequests'
    assert raw(info, 'GET', base + 'e0')[0] == 200  # reads are outside the write budget


def test_fault_spec_parsing_and_seeded_draws():
    assert parse_spec('5xx=0.2, 429=0.1,drop=0.02,latency-ms=200,writes-per-s=20,seed=3') == {
        '5xx': 0.2, '429': 0.1, 'drop': 0.02, 'latency-ms': 200.0, 'writes-per-s': 20.0, 'seed': 3}
    for bad in ('5xx=2', 'nope=1', '429', 'drop=x'):
        with pytest.raises(ValueError):
            parse_spec(bad)
    draws = [FaultInjector('5xx=0.3,429=0.3,seed=1') for _ in range(2)]
    sequence = [draws[0].draw('GET') for _ in range(50)]
    assert sequence == [draws[1].draw('GET') for _ in range(50)] and any(sequence) and not all(sequence)
    assert FaultInjector(None).draw('PUT') is None


def test_client_refuses_plain_http_off_loopback(tmp_path):
    token = tmp_path / 'token'
    token.write_text('t')
    for endpoint in ('http://127.0.0.1:1', 'http://localhost:1', 'http://[::1]:1', 'https://example.com'):
        local_batchai_client(endpoint, str(token))
    with pytest.raises(SweepError, match='plain http'):
        local_batchai_client('http://example.com:8080', str(token))


def test_service_refuses_remote_bind_without_flag(tmp_path):
    from azext_batchai_sweep.localservice.server import LocalService
    with pytest.raises(ValueError, match='allow-remote'):
        LocalService(str(tmp_path / 'remote'), host='0.0.0.0')


def test_wrong_token_is_401_for_the_sdk(local_service, tmp_path):
    token = tmp_path / 'token'
    token.write_text('not-the-token')
    client = local_batchai_client(local_service.endpoint, str(token))
    with pytest.raises(HttpResponseError) as error:
        client.workspaces.get(local_service.resource_group, local_service.workspace)
    assert error.value.status_code == 401


def test_restart_kills_a_jobs_processes_even_without_a_recorded_group(service_factory, tmp_path):
    # The service stores a job's marker before starting it and its process group only after: killed in between,
    # it must still find the job's processes on restart, by the marker in their environment. A child that moved to
    # a session of its own is found the same way.
    info = service_factory(slots=1)
    client = _client(info)
    rg, ws = info.resource_group, info.workspace
    client.experiments.begin_create(rg, ws, 'window').result()
    pids = tmp_path / 'pids'
    client.jobs.begin_create(rg, ws, 'window', 'job', job_params(
        info, 'setsid sleep 60 & echo $! >> {0}; sleep 60 & echo $! >> {0}; wait'.format(pids)), polling=False)
    wait_state(client, info, 'window', 'job', ('running',))
    children = job_pids(pids, count=2)

    kill_service(info)
    with sqlite3.connect(os.path.join(info.data_dir, 'service.db')) as db:  # as if killed before the pgid write
        assert db.execute("UPDATE resources SET pgid = NULL WHERE kind = 'job'").rowcount == 1
    info = service_factory.restart(info)
    deadline = time.monotonic() + 5
    while any(process_alive(pid) for pid in children):
        assert time.monotonic() < deadline, 'orphans left: {}'.format([p for p in children if process_alive(p)])
        time.sleep(0.05)
    job = _client(info).jobs.get(rg, ws, 'window', 'job')
    assert job.execution_state == 'failed' and job.execution_info.errors[0].code == 'ServiceInterrupted'
