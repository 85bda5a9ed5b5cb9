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
