"""Batch's limits met at submit and at cluster create, through the real az (issue 31 rule 5; the lifecycle double
of the data plane is TEST CODE, tests/azurebatch/double/): a job whose task cannot fit a Batch request
(environment included) refused at submit with the reason, nothing added; a cluster past the account's active-job
quota refused at create naming the quota, before any pool is made. The user's path: az's offline login,
`local start --scheduler azure-batch --batch-account`, every Batch call through Prism (e2e_fixtures.py)."""
import pytest

from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import

pytestmark = [pytest.mark.az, pytest.mark.service]


def _cluster(svc, name):
    return svc.az('batchai', 'cluster', 'create', '-n', name, *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1', '-u',
                  'batchai', '-p', 'not-used-0A!')


def test_a_job_too_large_for_a_batch_request_is_refused_at_submit(batch_service):  # pylint: disable=W0621
    svc = batch_service
    assert _cluster(svc, 'big').exit_code == 0
    write_sweep(svc.directory, 'big.yaml', 'echo loss={{X}}', [1],
                environmentVariables=[{'name': 'HUGE', 'value': 'x' * 990000}])
    target = [*svc.group(), '-e', 'big', '-n', 'b']
    submitted = svc.az('batchai', 'sweep', 'submit', *target, '--spec', 'big.yaml', '-c', 'big', '-o', 'json')
    assert 'a Batch request may carry' in submitted.stderr + submitted.stdout, submitted.stderr
    assert 'environmentVariables and secrets' in submitted.stderr + submitted.stdout
    assert tasks(svc.double) == [] and svc.double.count('POST', r'/addtaskcollection$') == 0


def test_a_cluster_past_the_active_job_quota_is_refused_before_its_pool(batch_user):  # pylint: disable=W0621
    svc = batch_user
    add_account(svc.login, activeJobAndJobScheduleQuota=1)  # the account's quota (as ARM lists it): one cluster's job
    svc.start()
    assert _cluster(svc, 'one').exit_code == 0
    pools = set(svc.double.account.pools)
    refused = _cluster(svc, 'two')
    assert refused.exit_code != 0, refused.stdout
    assert 'activeJobAndJobScheduleQuota' in refused.stderr and 'holds 1 active jobs' in refused.stderr, refused.stderr
    assert set(svc.double.account.pools) == pools  # nothing made, nothing spent
    assert svc.az('batchai', 'cluster', 'show', '-n', 'two', *svc.group()).exit_code == 3  # no cluster stored


def test_no_storage_key_or_password_is_kept_on_disk(batch_service):  # pylint: disable=W0621
    """Issue 31 rule 4: the key of a mounted share is sent to Batch only; the service keeps digests of it (and of
    the admin password) to tell a repeated create from another."""
    import base64
    import os
    svc = batch_service
    arm = svc.login.double  # a storage account az's login sees (Reader) and may read outputs from (data role)
    storage = arm.add_storage_account('outputs', 'data-rg')
    arm.assign('Reader', '/subscriptions/' + svc.login.subscription_id)
    arm.assign('Storage File Data Privileged Reader', storage)
    arm.assign('Storage Blob Data Contributor', storage)  # the task-log container (task_logs.py)
    key = base64.b64encode(b'storage-key-that-must-not-be-on-disk-0123456789').decode('ascii')
    password = 'admin-Passw0rd-never-on-disk'
    args = ['batchai', 'cluster', 'create', '-n', 'mounted', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1', '-u',
            'batchai', '-p', password, '--storage-account-name', 'outputs', '--storage-account-key', key,
            '--afs-name', 'share']
    created = svc.az(*args)
    assert created.exit_code == 0, created.stderr
    (pool,) = [p for p in svc.double.account.pools.values() if p.body.get('mountConfiguration')]
    assert pool.body['mountConfiguration'][0]['azureFileShareConfiguration']['accountKey'] == key  # sent to Batch
    for folder, _, names in os.walk(svc.data_dir):
        for name in names:
            with open(os.path.join(folder, name), 'rb') as f:
                data = f.read()
            assert key.encode() not in data and password.encode() not in data, os.path.join(folder, name)


def test_generation_and_container_mismatches_are_refused_before_anything_runs(batch_user):  # pylint: disable=W0621
    """Through the real az: a generation 1 image on a generation-2-only size refused at cluster create (issue 40
    item 3), a job whose container settings do not match its cluster's pool refused at submit (issue 48 item 1).
    The region's sizes are Microsoft's documented entries and the supported images the real service's recorded list
    (tests/azurebatch/recorded/gpu_pools); both fail on the old code (the image taken, the jobs accepted)."""
    from tests.azurebatch.gpu_recorded import documented, supported_images
    svc = batch_user
    add_account(svc.login, dedicatedCoreQuotaPerVMFamily=[{'name': 'standardDSv3Family', 'coreQuota': 100},
                                                          {'name': 'standardNCADSA100v4Family', 'coreQuota': 24}])
    svc.login.double.vm_skus['eastus'] = documented('vmSkus')
    with svc.double.account.lock:
        svc.double.account.supported_images = supported_images()
    svc.start()
    refused = svc.az('batchai', 'cluster', 'create', '-n', 'a100', *svc.group(), '-s', 'Standard_NC24ads_A100_v4',
                     '-t', '1', '-i', 'canonical:0001-com-ubuntu-server-jammy:22_04-lts:latest', '-u', 'batchai',
                     '-p', 'not-used-0A!')
    assert refused.exit_code != 0
    assert "is a Hyper-V generation 1 image, but vmSize 'Standard_NC24ads_A100_v4' boots only generation 2" in \
        refused.stderr, refused.stderr
    assert svc.double.account.pools == {}  # nothing made
    assert _cluster(svc, 'plain').exit_code == 0
    docker = svc.az('batchai', 'cluster', 'create', '-n', 'docker', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1',
                    '-i', 'microsoft-dsvm:ubuntu-hpc:2204:latest', '-u', 'batchai', '-p', 'not-used-0A!')
    assert docker.exit_code == 0, docker.stderr
    made = {p.body['virtualMachineConfiguration']['imageReference']['offer']: p.body for p in
            svc.double.account.pools.values()}
    assert 'containerConfiguration' in made['ubuntu-hpc']['virtualMachineConfiguration']
    assert 'containerConfiguration' not in made['ubuntu-24_04-lts']['virtualMachineConfiguration']
    container = {'imageSourceRegistry': {'image': 'ubuntu:22.04'}}
    write_sweep(svc.directory, 'boxed.yaml', 'echo loss={{X}}', [1], containerSettings=container)
    write_sweep(svc.directory, 'plain.yaml', 'echo loss={{X}}', [1])
    for spec, cluster, words in (('boxed.yaml', 'plain', 'runs no containers'),
                                 ('plain.yaml', 'docker', 'ContainerTaskSettingsNotFound')):
        submitted = svc.az('batchai', 'sweep', 'submit', *svc.group(), '-e', 'c', '-n', cluster, '--spec', spec,
                           '-c', cluster, '-o', 'json')
        assert words in submitted.stderr + submitted.stdout, submitted.stdout + submitted.stderr
    assert tasks(svc.double) == [] and svc.double.count('POST', r'/addtaskcollection$') == 0
