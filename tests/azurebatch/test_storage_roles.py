"""az's data role on the clusters' storage (issue 31 rule 4), checked at `cluster create` and at `local start`
(storage_roles.py), against the offline ARM double's role assignments (TEST CODE: tests/azurebatch/arm_double/,
az logged in for real with `az login --identity` there) and the Batch lifecycle double (tests/azurebatch/double/).
A missing role refuses, naming the role and the command that assigns it; nothing is made."""
import time

import pytest

from azext_batchai_sweep.localservice.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.azurebatch.connect import connect
from azext_batchai_sweep.localservice.azurebatch.storage_roles import StorageRoleCheck
from azext_batchai_sweep.localservice.errors import ArmError
from azext_batchai_sweep.localservice.store import Store
from tests.azurebatch.e2e_fixtures import account_info
from tests.azurebatch.login_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import (fixtures)

ROLE = 'Storage File Data Privileged Reader'


def _cluster(storage):
    return {'name': 'c1', 'properties': {
        'vmSize': 'Standard_D2s_v3', 'scaleSettings': {'manual': {'targetNodeCount': 1}},
        'nodeSetup': {'mountVolumes': {'azureFileShares': [{
            'accountName': storage, 'azureFileUrl': 'https://{}.file.core.windows.net/s'.format(storage),
            'relativeMountPath': 'afs', 'credentials': {'accountKey': 'a2V5'}}]}}}}


def _options(batch_double, check):
    return {'account_info': account_info(batch_double), 'facts': None, 'storage_check': check,
            'credential': AzLoginCredential(source=lambda: (batch_double.token, time.time() + 3600))}


def test_storage_role_is_checked_at_cluster_create_and_local_start(batch_login, arm_target, batch_double, tmp_path):
    batch_login.trust(batch_double.ca_file)
    arm = batch_login.double
    storage = arm.add_storage_account('outputs', 'data-rg')
    arm.assign('Reader', '/subscriptions/' + batch_login.subscription_id)  # sees the account, reads no data
    check = StorageRoleCheck(batch_login.credential(), arm_target)
    store = Store(str(tmp_path / 'db.sqlite'))
    scheduler = connect(store, str(tmp_path), _options(batch_double, check))  # no cluster yet: nothing to check
    key = 'sub/rg/ws/clusters/c1'
    cluster = _cluster('outputs')

    with pytest.raises(ArmError) as refused:
        scheduler.check_cluster(key, cluster, cluster)
    assert refused.value.code == 'StorageRoleMissing'
    assert "Assign the role {}: az role assignment create --role '{}'".format(ROLE, ROLE) in str(refused.value)
    assert storage in str(refused.value)

    arm.assign(ROLE, storage)
    scheduler.check_cluster(key, cluster, cluster)  # the role is there: the cluster may be made
    store.insert('x/resourcegroups/rg/providers/microsoft.batchai/workspaces/ws/clusters/c1', 'cluster', 'ws',
                 dict(cluster, id='/subscriptions/x/resourceGroups/rg/providers/Microsoft.BatchAI/workspaces/ws/'
                                  'clusters/c1'))
    connect(store, str(tmp_path), _options(batch_double, check))  # a restart with the role: serves

    arm.assignments = [(a, r) for a, r in arm.assignments if r != ROLE]  # the role was removed meanwhile
    with pytest.raises(RuntimeError, match="reads job outputs from storage account 'outputs'.*{}".format(ROLE)):
        connect(store, str(tmp_path), _options(batch_double, check))


def test_a_cluster_without_mounts_asks_arm_nothing():
    class NoArm:  # any ARM call would fail: none is made
        subscription_id = endpoint = audience = scope = None
    StorageRoleCheck(None, NoArm())({'vmSize': 'Standard_D2s_v3'})
