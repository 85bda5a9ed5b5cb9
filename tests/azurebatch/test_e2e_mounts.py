"""A cluster's storage mount on Azure Batch: a storage account that disallows shared key access is refused at
`cluster create` (Batch mounts with the key: every node would be unusable), and a mount that fails on the nodes
(a wrong key here; shared key disabled after the check, a firewall or port 445 on real Batch) makes each node
`unusable` with `errors`, as Microsoft documents it (virtual-file-mount.md, "Diagnose mount errors"): the cluster
shows the error with its causes, and the queued job fails after the service's bounded wait, its task removed. The
user's path: az's offline login, `local start --scheduler azure-batch`, every Batch call through Prism, against the
lifecycle double (TEST CODE: tests/azurebatch/double/, whose nodes fail a mount with another key than the storage
account's) and the ARM double (the storage account as ARM lists it)."""
import base64

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.names import pool_id
from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import

pytestmark = [pytest.mark.az, pytest.mark.service]


def _storage(svc, name, **properties):
    """A storage account az's login sees, with the data roles the service needs there."""
    arm = svc.login.double
    storage = arm.add_storage_account(name, 'data-rg', **properties)
    arm.assign('Reader', '/subscriptions/' + svc.login.subscription_id)
    arm.assign('Storage File Data Privileged Reader', storage)
    arm.assign('Storage Blob Data Contributor', storage)


def _create(svc, name, storage, key):
    return svc.az('batchai', 'cluster', 'create', '-n', name, *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1',
                  '-u', 'batchai', '-p', 'not-used-0A!', '--storage-account-name', storage, '--storage-account-key',
                  key, '--afs-name', 'share')


def test_shared_key_access_disabled_is_refused_at_cluster_create(batch_service):  # pylint: disable=W0621
    svc = batch_service
    _storage(svc, 'nokeys', allowSharedKeyAccess=False)
    refused = _create(svc, 'nk', 'nokeys', base64.b64encode(b'any-key').decode('ascii'))
    assert refused.exit_code != 0
    assert "Storage account 'nokeys' does not allow shared key access (allowSharedKeyAccess: false)" in \
        refused.stderr and '--allow-shared-key-access true' in refused.stderr, refused.stderr
    assert not svc.double.account.pools  # refused before any pool
    _storage(svc, 'withkeys', allowSharedKeyAccess=True)
    assert _create(svc, 'wk', 'withkeys', base64.b64encode(b'any-key').decode('ascii')).exit_code == 0


def test_a_mount_that_fails_makes_the_node_unusable_and_the_queued_job_fails_with_its_error(batch_service):  # noqa
    svc = batch_service
    _storage(svc, 'outputs')
    with svc.double.account.lock:
        svc.double.account.storage_keys['outputs'] = base64.b64encode(b'the-right-key').decode('ascii')
    assert _create(svc, 'badkey', 'outputs', base64.b64encode(b'a-wrong-key').decode('ascii')).exit_code == 0
    write_sweep(svc.directory, 's.yaml', 'echo loss={{X}}', [1])
    target = [*svc.group(), '-e', 'mnt', '-n', 's']
    assert svc.az('batchai', 'sweep', 'submit', *target, '--spec', 's.yaml', '-c', 'badkey').exit_code == 0
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '--timeout', '60',
                    '-o', 'json')
    assert waited.exit_code == 4 and waited.json()['counts']['failed'] == 1, waited.stdout + waited.stderr
    (job,) = svc.az('batchai', 'job', 'list', *svc.group(), '-e', 'mnt', '-o', 'json').json()
    error = job['executionInfo']['errors'][0]
    assert error['code'] == 'MountConfigurationError' and 'waited' in error['message'], error
    shown = svc.az('batchai', 'cluster', 'show', '-n', 'badkey', *svc.group(), '-o', 'json').json()
    (mount_error,) = [e for e in shown['errors'] if e['code'] == 'MountConfigurationError']
    assert 'is unusable' in mount_error['message'] and 'allowSharedKeyAccess' in mount_error['message']
    assert shown['nodeStateCounts']['unusableNodeCount'] == 1
    assert tasks(svc.double) == []  # removed from Batch: it never starts later
    with svc.double.account.lock:
        pool = svc.double.account.pools[pool_id('batchai', 'local', 'badkey', *LOCAL)]
        assert [n.state for n in pool.nodes.values()] == ['unusable']
