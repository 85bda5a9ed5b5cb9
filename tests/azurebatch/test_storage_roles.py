"""az's data role on the clusters' storage (issue 31 rule 4), checked at `cluster create` and at `local start`
(storage_roles.py), against the offline ARM double's role assignments (TEST CODE: tests/azurebatch/arm_double/).
The user's path: az's offline login, `local start --scheduler azure-batch --batch-account`, every Batch call through
Prism (e2e_fixtures.py). A missing role refuses, naming the role and the command that assigns it; nothing is made."""
import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.roles import StorageRoleCheck
from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import

ROLE = 'Storage File Data Privileged Reader'
LOGS_ROLE = 'Storage Blob Data Contributor'  # the task-log container's (issue 31 rule 3)


def _create(svc):
    return svc.az('batchai', 'cluster', 'create', '-n', 'c1', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1',
                  '-u', 'batchai', '-p', 'not-used-0A!', '--storage-account-name', 'outputs',
                  '--storage-account-key', 'a2V5', '--afs-name', 's')


@pytest.mark.az
@pytest.mark.service
def test_storage_role_is_checked_at_cluster_create_and_local_start(batch_service):  # pylint: disable=W0621
    svc = batch_service  # no cluster yet: local start had nothing to check
    arm = svc.login.double
    storage = arm.add_storage_account('outputs', 'data-rg')
    arm.assign('Reader', '/subscriptions/' + svc.login.subscription_id)  # sees the account, reads no data

    refused = _create(svc)
    assert refused.exit_code != 0, refused.stdout
    assert 'StorageRoleMissing' in refused.stderr, refused.stderr
    assert "Assign the role {}: az role assignment create --role '{}'".format(ROLE, ROLE) in refused.stderr
    assert storage in refused.stderr
    assert svc.double.account.pools == {}  # nothing made
    assert svc.az('batchai', 'cluster', 'show', '-n', 'c1', *svc.group()).exit_code == 3  # no cluster stored

    # Both roles are named at once: the share's reader, and the task-log container's (task_logs.py).
    assert "; and the role {}: az role assignment create --role '{}'".format(LOGS_ROLE, LOGS_ROLE) in refused.stderr

    arm.assign(ROLE, storage)
    refused = _create(svc)  # the share may be read, the tasks' own stdout/stderr could not be kept there
    assert refused.exit_code != 0 and 'StorageRoleMissing' in refused.stderr, refused.stdout
    assert "Assign the role {}: az role assignment create --role '{}'".format(LOGS_ROLE, LOGS_ROLE) in \
        refused.stderr and 'generateUserDelegationKey' in refused.stderr, refused.stderr
    assert svc.double.account.pools == {}

    arm.assign(LOGS_ROLE, storage)
    created = _create(svc)  # the roles are there: the cluster is made
    assert created.exit_code == 0, created.stderr
    svc.restart()  # a restart with the roles: serves

    for removed in (ROLE, LOGS_ROLE):
        svc.kill()
        kept = list(arm.assignments)
        arm.assignments = [(a, r) for a, r in arm.assignments if r != removed]  # the role was removed meanwhile
        started = svc.az('batchai', 'sweep', 'local', 'start', '--data-dir', svc.data_dir, '--scheduler',
                         'azure-batch', '--batch-account', ACCOUNT, '-g', RESOURCE_GROUP)
        assert started.exit_code != 0, started.stdout
        assert "reads job outputs from storage account 'outputs'" in started.stderr and removed in \
            started.stderr, started.stderr
        arm.assignments = kept
        svc.start(*svc.start_args)


def test_a_cluster_without_mounts_asks_arm_nothing():
    class NoArm:  # any ARM call would fail: none is made
        subscription_id = endpoint = audience = scope = None
    StorageRoleCheck(None, NoArm())({'vmSize': 'Standard_D2s_v3'})
