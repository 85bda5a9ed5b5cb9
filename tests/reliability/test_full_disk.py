"""A full disk loses nothing and hangs nothing (rule 4 of issue 13), on a small tmpfs holding the data dir.

Mounting needs root: the tests skip (saying so) when not root, and fail instead in CI (CI=true), where they must
run. The disk is filled by a file the test writes and by a job that writes until the disk is full; then requests,
jobs, the wait of `status --wait` (the core's wait_for_jobs) and the Files API are checked, space is freed, and the
service must answer and run jobs again.
"""
import os
import sqlite3
import subprocess
import time
import uuid

import pytest
from azure.core.exceptions import HttpResponseError
from azure.storage.fileshare import ShareServiceClient

from azext_batchai_sweep.core.service.status import wait_for_jobs
from tests.fixtures_service import start_service, stop_service
from tests.localservice.conftest import job_params, raw

from .helpers import client_for

pytestmark = [pytest.mark.service, pytest.mark.slow]

TMPFS_MB = 24


def _need_root_and_mount(where):
    why = None
    if os.geteuid() != 0:
        why = 'the full-disk tests need root to mount a {} MB tmpfs'.format(TMPFS_MB)
    else:
        proc = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size={}m'.format(TMPFS_MB), 'tmpfs', where],
                              capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            return
        why = 'mounting a tmpfs failed: {}'.format(proc.stderr.strip())
    if os.environ.get('CI') == 'true':
        pytest.fail('{} (in CI they must run)'.format(why))
    pytest.skip('FULL-DISK TESTS NOT RUN: {}'.format(why))


@pytest.fixture
def small_disk(tmp_path):
    where = tmp_path / 'disk'
    where.mkdir()
    _need_root_and_mount(str(where))
    services = []
    yield where, services
    for info in services:
        stop_service(info)
    subprocess.run(['umount', '-l', str(where)], check=False)


def _fill(path):
    """Write `path` until the disk is full; returns its size."""
    written = 0
    with open(path, 'wb') as f:
        try:
            while True:
                f.write(b'\0' * 65536)
                f.flush()
                written += 65536
        except OSError:
            pass
    return written


def _put_until_full(service, base):
    """PUT experiments until the service says the disk is full (SQLite may still have room in its log at first)."""
    for index in range(400):
        status, _, body = raw(service, 'PUT', base + '/experiments/fill{}'.format(index))
        assert status in (200, 202, 507), (status, body)
        if status == 507:
            return body
    raise AssertionError('the service never said the disk was full')


def _db_state(service, key_suffix):
    conn = sqlite3.connect('file:{}?mode=ro'.format(os.path.join(service.data_dir, 'service.db')), uri=True)
    try:
        row = conn.execute('SELECT state FROM resources WHERE key LIKE ?', ('%' + key_suffix,)).fetchone()
    finally:
        conn.close()
    return row[0] if row else None


def test_a_full_disk_is_said_loses_nothing_and_the_service_recovers(small_disk):
    where, services = small_disk
    service = start_service(str(where / 'data'), slots=1)
    services.append(service)
    client = client_for(service, retry_total=0)
    rg, ws = service.resource_group, service.workspace
    base = '/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}'.format(
        service.subscription, rg, ws)
    client.experiments.begin_create(rg, ws, 'full').result()
    gate = where / 'gate'
    started = where / 'a-started'
    client.jobs.begin_create(rg, ws, 'full', 'a', job_params(
        service, 'touch {}; while [ ! -e {} ]; do sleep 0.05; done; exit 0'.format(started, gate)), polling=False)
    client.jobs.begin_create(rg, ws, 'full', 'b', job_params(service, 'echo b-done'), polling=False)
    deadline = time.monotonic() + 30
    # 'running' is answered as soon as the job is taken, before its process exists: wait for the process, or the
    # disk could fill while the job's folders are still being made (it would then fail DiskFull, as it should).
    while client.jobs.get(rg, ws, 'full', 'a').execution_state != 'running' or not started.exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)

    filler = where / 'filler'
    assert _fill(str(filler)) > 0
    error = _put_until_full(service, base)
    assert error['error']['code'] == 'InsufficientStorage' and 'disk is full' in error['error']['message']
    with pytest.raises(HttpResponseError) as refused:  # through the SDK too, at once (507 is not retried)
        client.jobs.begin_create(rg, ws, 'full', 'c', job_params(service, 'true'), polling=False)
    assert refused.value.status_code == 507 and 'disk is full' in str(refused.value)
    assert client.workspaces.get(rg, ws).name == ws  # reads still answered

    # Job a ends while nothing can be written: it is answered ended (never running without a process), b stays
    # queued (never started without a record), and the wait of `status --wait` ends.
    gate.touch()  # an empty file needs no data blocks
    result = wait_for_jobs(client, rg, ws, 'full', job_names=['a'], interval=0.1, timeout=60)
    assert result['finished'] and client.jobs.get(rg, ws, 'full', 'a').execution_state == 'succeeded'
    time.sleep(1.5)  # the scheduler tries to start b meanwhile
    assert client.jobs.get(rg, ws, 'full', 'b').execution_state == 'queued'
    assert _db_state(service, '/jobs/a') == 'running'  # truly not written yet: kept in memory

    # The Files API says so too.
    with open(os.path.join(service.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    share = ShareServiceClient('{}/acct'.format(service.files_endpoint), retry_total=0,
                               credential={'account_name': 'acct', 'account_key': key}).get_share_client('logs')
    with pytest.raises(HttpResponseError) as files_refused:
        share.get_file_client('big.bin').upload_file(b'x' * (4 * 1024 * 1024))
    assert files_refused.value.status_code == 507 and 'disk is full' in str(files_refused.value)

    os.unlink(str(filler))  # space returns: everything is written and runs again
    assert wait_for_jobs(client, rg, ws, 'full', job_names=['b'], interval=0.1, timeout=60)['finished']
    assert client.jobs.get(rg, ws, 'full', 'b').execution_state == 'succeeded'
    assert _db_state(service, '/jobs/a') == 'succeeded'
    assert raw(service, 'PUT', base + '/experiments/after')[0] in (200, 202)
    client.jobs.begin_create(rg, ws, 'full', 'd', job_params(service, 'echo d-done'), polling=False)
    assert wait_for_jobs(client, rg, ws, 'full', job_names=['d'], interval=0.1, timeout=60)['finished']


def test_a_job_that_fills_the_disk_fails_with_its_reason_and_others_carry_on(small_disk):
    where, services = small_disk
    service = start_service(str(where / 'data'), slots=2)
    services.append(service)
    client = client_for(service, retry_total=0)
    rg, ws = service.resource_group, service.workspace
    experiment = 'hog-' + uuid.uuid4().hex[:4]
    client.experiments.begin_create(rg, ws, experiment).result()
    hog = 'head -c {}M /dev/zero > "$AZ_BATCHAI_STDOUTERR_DIR/big"'.format(TMPFS_MB * 2)
    client.jobs.begin_create(rg, ws, experiment, 'hog', job_params(service, hog), polling=False)
    status = wait_for_jobs(client, rg, ws, experiment, job_names=['hog'], interval=0.1, timeout=60)
    assert status['finished']
    job = client.jobs.get(rg, ws, experiment, 'hog')
    assert job.execution_state == 'failed' and job.execution_info.exit_code != 0
    big = [os.path.join(d, 'big') for d, _, files in os.walk(service.data_dir) if 'big' in files]
    assert big and os.path.getsize(big[0]) < TMPFS_MB * 2 * 1024 * 1024  # cut short by the full disk
    # (its stderr cannot hold the reason: the disk was full; its exit code says it failed)
    # Its output is deleted by hand (the user frees space): the service runs the next job.
    os.unlink(big[0])
    client.jobs.begin_create(rg, ws, experiment, 'next', job_params(service, 'echo next'), polling=False)
    assert wait_for_jobs(client, rg, ws, experiment, job_names=['next'], interval=0.1, timeout=60)['finished']
    assert client.jobs.get(rg, ws, experiment, 'next').execution_state == 'succeeded'
