"""Issue 31 rule 3's last output rule: every task's own stdout.txt/stderr.txt reach persistent storage through the
task's `outputFiles` (Batch's node agent uploads them at task completion to the cluster storage's task-log
container, with a write-only user delegation SAS the service signs with a key asked with az's storage token), so a
failure before the node wrapper or the mount works stays readable after its node is gone, through the service's
API (`job file list/stream`).

The Batch data plane is the lifecycle double (TEST CODE), whose node agent uploads outputFiles with a real Put Blob
to a loopback Blob service; the storage is Azurite over HTTPS with OAuth (tests/fixtures_azurite.azurite_oauth: it
answers Get User Delegation Key and checks the user delegation SAS as Azure Storage does). The service runs in the
test's process, built with its parts (e2e_fixtures.serve), as in test_e2e_share_outputs.py and for the same reason:
`<account>.blob.core.windows.net` (and `.file.`) cannot be reached offline, so the task-log container's endpoint is
given as Azurite's, the share's as the Files double's, and the storage tokens are ones these doubles accept instead
of az's (`az account get-access-token --resource https://storage.azure.com/`); only construction can give them."""
import contextlib
import json
import os
import time
import urllib.parse

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.task_logs import (CONTAINER, QUEUE_MARGIN_SECONDS,
                                                                               TaskLogs)
from tests.azurebatch.e2e_fixtures import files_service, start, tasks, wait_until
from tests.fixtures_azurite import DEV_ACCOUNT_NAME, azurite_oauth

pytestmark = [pytest.mark.az, pytest.mark.service]

STORAGE = DEV_ACCOUNT_NAME  # the cluster mounts a share of the storage account Azurite stands for
SHARE = 'logs'


@contextlib.contextmanager
def service_with_task_logs(tmp_path, monkeypatch, **options):
    """files_service (the service on the Batch double, its share on the Files double; ``options`` its own) with its
    task logs on Azurite, which the handle's ``blob`` names."""
    started = {}

    @contextlib.contextmanager
    def on_azurite(double):
        with azurite_oauth(double.ca) as blob:
            started['blob'] = blob
            yield TaskLogs(credential=AzLoginCredential(source=lambda: (blob.token(), time.time() + 3600)),
                           endpoint=lambda account, props: blob.blob_endpoint)

    with files_service(tmp_path, monkeypatch, on_azurite, **options) as handle:
        handle.blob = started['blob']
        yield handle


@pytest.fixture
def logs_service(tmp_path, monkeypatch):
    """The service on the Batch double, its task logs on Azurite, its share on the Files double."""
    with service_with_task_logs(tmp_path, monkeypatch) as handle:
        yield handle


def _cluster(svc, name, nodes):
    config = os.path.join(svc.directory, name + '.json')
    with open(config, 'w', encoding='utf-8') as f:
        json.dump({'properties': {'nodeSetup': {'mountVolumes': {'azureFileShares': [{
            'accountName': STORAGE, 'azureFileUrl': 'https://{}.file.core.windows.net/{}'.format(STORAGE, SHARE),
            'credentials': {'accountKey': 'bm90LWEta2V5'}, 'relativeMountPath': 'afs'}]}}}}, f)
    created = svc.az('batchai', 'cluster', 'create', '-n', name, *svc.group(), '-s', 'Standard_D2s_v3', '-t',
                     str(nodes), '-u', 'batchai', '-p', 'not-used-0A!', '-f', config)
    assert created.exit_code == 0, created.stderr


def _submit(svc, experiment, cluster, command, values=(7,)):
    """A sweep whose jobs write their stdout on the cluster's share (Batch AI's recipes), one hour of wall clock."""
    body = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/afs',
            'constraints': {'maxWallClockTime': 'PT1H'}, 'customToolkitSettings': {'commandLine': command}}
    spec = os.path.join(svc.directory, experiment + '.yaml')
    with open(spec, 'w', encoding='utf-8') as f:
        f.write('jobNamePrefix: tl\nparameters:\n  - {{name: X, type: discrete, values: {}}}\njob: {}\n'.format(
            json.dumps(list(values)), json.dumps(body)))
    target = [*svc.group(), '-e', experiment, '-n', experiment]
    submitted = svc.az('batchai', 'sweep', 'submit', *target, '--spec', spec, '-c', cluster, '-o', 'json')
    assert submitted.exit_code == 0, submitted.stderr
    return target


def _wait(svc, target, exit_code=0):
    """The sweep's counts once it ended (`sweep status --wait` exits 4 when a job failed)."""
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '-o', 'json')
    assert waited.exit_code == exit_code, waited.stdout + waited.stderr
    return waited.json()['counts']


def _job_names(svc, experiment):
    return [j['name'] for j in svc.az('batchai', 'job', 'list', *svc.group(), '-e', experiment, '-o', 'json').json()]


def _text(svc, experiment, job, name):
    """A file of the job's stdouterr directory as `job file stream` shows it ('' when there is none)."""
    listed = svc.az('batchai', 'job', 'file', 'list', *svc.group(), '-e', experiment, '-j', job, '-d', 'stdouterr',
                    '-o', 'json').json()
    if name not in [f['name'] for f in listed]:
        return ''
    streamed = svc.az('batchai', 'job', 'file', 'stream', *svc.group(), '-e', experiment, '-j', job, '-f', name)
    assert streamed.exit_code == 0, streamed.stderr
    return streamed.stdout


def _sas_urls(svc):
    """Every outputFiles container URL the tasks were added with (as Batch received them)."""
    return {o['destination']['container']['containerUrl'] for t in tasks(svc.double)
            for o in t.body.get('outputFiles') or []}


def _assert_no_secret(svc, secrets, *outputs):
    """None of ``secrets`` in any file of the data dir (SQLite, service.json, service.log...) or in ``outputs``."""
    secrets = [s for s in secrets if s]
    assert secrets
    variants = {v for s in secrets for v in (s, urllib.parse.quote(s, safe=''), urllib.parse.unquote(s))}
    for folder, _, names in os.walk(svc.service.data_dir):
        for name in names:
            with open(os.path.join(folder, name), 'rb') as f:
                data = f.read()
            for secret in variants:
                assert secret.encode() not in data, os.path.join(folder, name)
    for text in outputs:
        for secret in variants:
            assert secret not in text


def test_a_failure_before_the_wrapper_is_read_from_the_task_log_container_after_its_node_is_gone(logs_service):
    """The mount fails on the node (its mount point is not a directory), so the node wrapper fails before it writes
    anything on the share; the task ends while the service is down and its node is gone before the service is back
    (the task file API has nothing left). Batch's stderr.txt was uploaded at the task's completion: the restarted
    service reads it from the task-log container with its storage token, and `job file list/stream` show it."""
    svc = logs_service
    _cluster(svc, 'c0', nodes=1)
    account = svc.double.account
    with account.lock:  # its node is not there yet (TEST CODE: the double's pool shrunk to none)
        (pool,) = account.pools.values()
        account._set_targets(pool, 0, 0)  # pylint: disable=protected-access
        account._allocate(pool)  # pylint: disable=protected-access
    target = _submit(svc, 'pre', 'c0', 'echo never')
    wait_until(lambda: [t.state for t in tasks(svc.double)] == ['active'], what='the task is added')
    svc.service.shutdown()  # Cloud Shell ended the session
    with account.lock:  # the node comes, and its share fails to mount
        account._set_targets(pool, 1, 0)  # pylint: disable=protected-access
        account._allocate(pool)  # pylint: disable=protected-access
        (node,) = pool.nodes.values()
        mount = os.path.join(node.root, 'fsmounts', 'afs')
        os.remove(mount)
        with open(mount, 'w', encoding='utf-8') as f:
            f.write('not mounted')
    account.wait(lambda: tasks(svc.double)[0].state == 'completed', timeout=30)
    assert sorted(name for _, name, _ in account.uploads) == sorted(
        '{}/{}'.format(tasks(svc.double)[0].id, s) for s in ('stdout.txt', 'stderr.txt'))
    with account.lock:
        account.remove_node(node)  # the pool drained: the node and its task files are gone
    svc.service = start(svc.double, svc.service.data_dir, **svc.extra)
    svc.az.env.update({'AZURE_BATCHAI_SWEEP_ENDPOINT': svc.service.info()['endpoint'],
                       'AZURE_BATCHAI_SWEEP_TOKEN_FILE': svc.service.info()['tokenFile']})

    assert _wait(svc, target, exit_code=4)['failed'] == 1
    (name,) = _job_names(svc, 'pre')
    listed = svc.az('batchai', 'job', 'file', 'list', *svc.group(), '-e', 'pre', '-j', name, '-d', 'stdouterr',
                    '-o', 'json', '--debug')
    assert listed.exit_code == 0, listed.stderr
    assert 'batch-stderr.txt' in [f['name'] for f in listed.json()], listed.stdout
    streamed = svc.az('batchai', 'job', 'file', 'stream', *svc.group(), '-e', 'pre', '-j', name, '-f',
                      'batch-stderr.txt')
    assert streamed.exit_code == 0, streamed.stderr
    assert 'afs' in streamed.stdout and 'Error' in streamed.stdout, streamed.stdout  # the wrapper's failure
    shown = svc.az('batchai', 'job', 'show', *svc.group(), '-e', 'pre', '-n', name, '-o', 'json', '--debug')
    (url,) = _sas_urls(svc)
    _assert_no_secret(svc, [url.split('?', 1)[1], urllib.parse.parse_qs(url.split('?', 1)[1])['sig'][0]],
                      listed.stdout + listed.stderr, shown.stdout + shown.stderr)


def test_every_task_carries_a_write_only_sas_and_a_second_submission_reuses_the_container(logs_service):
    svc = logs_service
    _cluster(svc, 'c1', nodes=1)
    before = time.time()
    first = _submit(svc, 'ok', 'c1', 'echo out {{X}}; echo err {{X}} >&2', values=(1, 2))
    assert _wait(svc, first)['succeeded'] == 2
    second = _submit(svc, 'again', 'c1', 'echo more')
    assert _wait(svc, second)['succeeded'] == 1

    urls = _sas_urls(svc)
    assert {u.split('?')[0] for u in urls} == {'{}/{}'.format(svc.blob.blob_endpoint, CONTAINER)}  # one container
    assert svc.scheduler.task_logs.keys_asked == 1  # one key for both submissions
    for url in urls:
        fields = urllib.parse.parse_qs(url.split('?', 1)[1])
        assert (fields['sp'], fields['spr'], fields['sr']) == (['cw'], ['https'], ['c'])
        expiry = time.mktime(time.strptime(fields['se'][0], '%Y-%m-%dT%H:%M:%SZ')) - time.timezone
        assert before + 3600 + QUEUE_MARGIN_SECONDS - 5 <= expiry <= time.time() + 3600 + QUEUE_MARGIN_SECONDS + 5
    for task in tasks(svc.double):
        assert all(o['uploadOptions'] == {'uploadCondition': 'taskcompletion'} for o in task.body['outputFiles'])
        assert not any('sig=' in e['value'] for e in task.body['environmentSettings'])  # never in the job's env
    # Batch uploaded each task's own streams there (the wrapper's; the job's are on the share); the service reads
    # them with its token, and they are what the task file API served while the node lived.
    cluster = {'nodeSetup': {'mountVolumes': {'azureFileShares': [{'accountName': STORAGE}]}}}
    copies = {(t.id, s): svc.scheduler.task_logs.read(cluster, '{}/{}.txt'.format(t.id, s))
              for t in tasks(svc.double) for s in ('stdout', 'stderr')}
    assert len(copies) == 6 and None not in copies.values(), copies
    (name,) = _job_names(svc, 'again')
    (task,) = [t for t in tasks(svc.double) if t.body['displayName'] == name]
    for stream in ('stdout', 'stderr'):
        assert copies[task.id, stream].decode() == _text(svc, 'again', name, 'batch-{}.txt'.format(stream))
    assert _text(svc, 'again', name, 'stdout.txt').strip() == 'more'  # the job's own, from the share
    key = next(iter(svc.scheduler.task_logs._keys.values()))[0]  # pylint: disable=protected-access
    status = svc.az('batchai', 'sweep', 'status', *first, '-o', 'json', '--debug')
    _assert_no_secret(svc, [u.split('?', 1)[1] for u in urls] + [key.value], status.stdout + status.stderr)
