"""azurebatch/preflight.py: the checks before anything is spent (issue 31 rules 1 and 4), each refusal with its
message. Account, roles, quotas and images come from the loopback ARM double through az's real (offline) login and
the real SDKs where the check reads Azure (tests/azurebatch/login_fixtures.py); the pure rules get plain JSON."""
import datetime
import glob
import os

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import account as account_mod
from azext_batchai_sweep.localservice.schedulers.azurebatch import preflight
from azext_batchai_sweep.localservice.schedulers.azurebatch.storage import mounts as storage_mounts
from azext_batchai_sweep.localservice.schedulers.azurebatch.storage import roles as storage_roles
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal
from tests.azurebatch.arm_double.server import default_supported_images, default_vm_skus
from tests.azurebatch.login_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import (fixtures)
from tests.fixtures_az import REPO_ROOT, AzRunner

TODAY = datetime.date(2026, 11, 26)


@pytest.fixture
def credential(batch_login):
    return batch_login.credential()


def _account(batch_login, arm_target, credential, **properties):
    batch_login.double.add_batch_account('acct', resource_group='rg1', **properties)
    return account_mod.find_account('acct', 'rg1', credential=credential, arm=arm_target)


def _account_with_only(login, arm_target, credential, role, scope):
    """Account 'acct' in 'rg1', found with a Reader role; then the principal holds only ``role`` at ``scope``
    ('sub', 'group' or 'account')."""
    login.double.assign('Reader', login.double.resource_group_id('rg1'))
    found = _account(login, arm_target, credential)
    scopes = {'sub': '/subscriptions/' + login.subscription_id, 'group': login.double.resource_group_id('rg1'),
              'account': found['batchAccountId']}
    login.double.assignments = [(scopes[scope], role)]
    return found


def _refused(call, *args, **kwargs):
    with pytest.raises(Refusal) as refused:
        call(*args, **kwargs)
    return refused.value


# ---- local start: the SDK's API version ------------------------------------------------------------------------

def test_installed_sdk_speaks_the_contract_version():
    """The azure-batch az ships speaks the version the scheduler is written for (a new az with another one makes
    this fail, as `local start` then refuses)."""
    preflight.check_sdk_api_version()
    assert preflight.sdk_api_version() == preflight.BATCH_API_VERSION


def test_the_constant_is_the_spec_in_the_repository():
    specs = [os.path.basename(p)[len('batch-'):] for p in glob.glob(os.path.join(REPO_ROOT, 'tests', 'specs',
                                                                                  'batch-*'))]
    if not specs:
        pytest.skip('the Batch data-plane spec (tests/specs/batch-*) comes with the double branch')
    assert specs == [preflight.BATCH_API_VERSION]


@pytest.mark.parametrize('installed', ['2023-05-01.17.0', '2024-07-01.20.0'])
def test_another_sdk_api_version_is_refused(installed):
    refusal = _refused(preflight.check_sdk_api_version, installed)
    assert refusal.code == 'BatchApiVersionMismatch'
    assert 'speaks Batch API {}, but this extension is written and tested for Batch API 2024-02-01.19.0'.format(
        installed) in refusal.reason
    assert refusal.reason.startswith('azure-batch ')


# ---- local start: Entra ID, the cheap data-plane call, the data role -------------------------------------------

@pytest.mark.parametrize('modes, shown', [(['SharedKey'], 'SharedKey'), (['SharedKey', 'TaskAuthenticationToken'],
                                                                         'SharedKey, TaskAuthenticationToken'),
                                          ([], 'none')])
def test_account_without_entra_id_is_refused(modes, shown):
    account = {'batchAccount': 'acct', 'batchAccountId': '/subscriptions/s/resourceGroups/g/providers/'
               'Microsoft.Batch/batchAccounts/acct', 'allowedAuthenticationModes': modes}
    refusal = _refused(preflight.check_entra_id, account)
    assert refusal.code == 'EntraIdNotAllowed'
    assert ("Batch account 'acct' does not allow Microsoft Entra ID authentication (allowedAuthenticationModes: {}), "
            "and the service uses only az's login, never an account key. Allow it: az resource update --ids "
            '/subscriptions/s/resourceGroups/g/providers/Microsoft.Batch/batchAccounts/acct --add '
            'properties.allowedAuthenticationModes AAD').format(shown) in refusal.reason


@pytest.mark.parametrize('modes', [['AAD'], ['SharedKey', 'AAD', 'TaskAuthenticationToken'], ['aad'], None])
def test_account_with_entra_id_passes(modes):
    preflight.check_entra_id({'batchAccount': 'acct', 'allowedAuthenticationModes': modes})


@pytest.mark.parametrize('role', ['Azure Batch Data Contributor', 'Contributor', 'Azure Batch Job Submitter'])
def test_cheap_call_passes_with_a_role_that_reads_pools(batch_login, arm_target, credential, role):
    batch_login.double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    found = _account(batch_login, arm_target, credential)
    batch_login.double.assignments = [(found['batchAccountId'], role)]
    preflight.check_data_plane(found, credential)
    assert ('batch', 'GET', '/pools') in batch_login.double.requests


@pytest.mark.parametrize('role', [None, 'Storage Blob Data Reader'])
def test_cheap_call_403_names_the_batch_role(batch_login, arm_target, credential, role):
    batch_login.double.assign('Reader', batch_login.double.resource_group_id('rg1'))
    found = _account(batch_login, arm_target, credential)
    batch_login.double.assignments = [(found['batchAccountId'], role)] if role else []
    refusal = _refused(preflight.check_data_plane, found, credential)
    assert refusal.code == 'BatchRoleMissing'
    assert ("Batch account 'acct' refused az's login (AuthorizationFailure): it needs the role Azure Batch Data "
            "Contributor on the account. Assign it: az role assignment create --role 'Azure Batch Data Contributor' "
            '--assignee <your user or principal> --scope {}'.format(found['batchAccountId'])) == refusal.reason


def test_cheap_call_401_says_log_in_again(batch_login, arm_target, credential):
    batch_login.double.assign('Azure Batch Data Contributor', '/subscriptions/' + batch_login.subscription_id)
    found = _account(batch_login, arm_target, credential)
    credential.get_token('https://batch.core.windows.net//.default')
    batch_login.double.revoke_tokens()  # the credential's cached token is no longer accepted (as after its expiry)
    refusal = _refused(preflight.check_data_plane, found, credential)
    assert refusal.code == 'BatchLoginRefused'
    assert "Batch account 'acct' did not accept az's token (AuthenticationFailed). Log in again with 'az login'" \
        in refusal.reason


def test_cheap_call_without_az_login(batch_login, arm_target, credential, tmp_path):
    """az has no login in its config dir (a user who never ran az login): the token request itself fails."""
    batch_login.double.assign('Azure Batch Data Contributor', '/subscriptions/' + batch_login.subscription_id)
    found = _account(batch_login, arm_target, credential)
    (tmp_path / 'empty-config').mkdir()
    logged_out = type(credential)(AzRunner(str(tmp_path / 'empty-config'), env=batch_login.env))
    refusal = _refused(preflight.check_data_plane, found, logged_out)
    assert refusal.code == 'AzLoginMissing'
    assert refusal.reason.startswith("az's login gave no token for Azure Batch: az account get-access-token failed")
    assert refusal.reason.endswith("Log in with 'az login'.")


def test_unreachable_endpoint(batch_login, arm_target, credential):
    import socket
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    account = {'batchAccount': 'acct', 'batchEndpoint': 'https://127.0.0.1:{}'.format(port)}
    client = account_mod.batch_client(account, credential, retry_total=0)  # the SDK's retries only add time here
    refusal = _refused(preflight.check_data_plane, account, credential, client)
    assert refusal.code == 'BatchUnavailable'
    assert refusal.reason.startswith("Batch account 'acct' at https://127.0.0.1:{} could not be reached".format(port))


@pytest.mark.parametrize('role, scope, missing', [
    ('Reader', 'sub', 'Microsoft.Batch/batchAccounts/pools/write, Microsoft.Batch/batchAccounts/pools/delete, '
                      'Microsoft.Batch/batchAccounts/jobs/write, Microsoft.Batch/batchAccounts/jobs/delete'),
    ('Azure Batch Account Reader', 'account', 'Microsoft.Batch/batchAccounts/pools/write, '
                                              'Microsoft.Batch/batchAccounts/pools/delete, '
                                              'Microsoft.Batch/batchAccounts/jobs/write, '
                                              'Microsoft.Batch/batchAccounts/jobs/delete'),
    ('Azure Batch Job Submitter', 'group', 'Microsoft.Batch/batchAccounts/pools/write, '
                                           'Microsoft.Batch/batchAccounts/pools/delete'),
])
def test_a_reading_role_is_refused_before_the_first_cluster(batch_login, arm_target, credential, role, scope, missing):
    found = _account_with_only(batch_login, arm_target, credential, role, scope)
    permissions = preflight.list_permissions(found['batchAccountId'], credential, arm_target)
    preflight.check_data_plane(found, credential)  # the cheap call alone would let it start
    refusal = _refused(preflight.check_batch_data_role, found, permissions)
    assert refusal.code == 'BatchRoleMissing'
    assert ("az's login may read Batch account 'acct' but not run work on it (missing {}): the service creates "
            'pools, jobs and tasks. Assign the role Azure Batch Data Contributor: az role assignment create --role '
            "'Azure Batch Data Contributor'").format(missing) in refusal.reason


@pytest.mark.parametrize('role, scope', [('Azure Batch Data Contributor', 'account'), ('Contributor', 'group'),
                                         ('Owner', 'sub')])
def test_local_start_passes_with_a_role_that_runs_work(batch_login, arm_target, credential, role, scope):
    found = _account_with_only(batch_login, arm_target, credential, role, scope)
    preflight.check_local_start(found, credential, preflight.list_permissions(found['batchAccountId'], credential,
                                                                             arm_target))


def test_local_start_checks_entra_id_before_calling(batch_login, arm_target, credential):
    batch_login.double.assign('Owner', '/subscriptions/' + batch_login.subscription_id)
    found = _account(batch_login, arm_target, credential, allowedAuthenticationModes=['SharedKey'])
    batch_login.double.requests.clear()
    refusal = _refused(preflight.check_local_start, found, credential)
    assert refusal.code == 'EntraIdNotAllowed'
    assert not [r for r in batch_login.double.requests if r[0] == 'batch']


def test_effective_permissions_honour_not_actions():
    actions, data_actions = preflight.effective_permissions([
        {'actions': ['Microsoft.Batch/*'], 'notActions': ['Microsoft.Batch/batchAccounts/pools/delete'],
         'dataActions': ['Microsoft.Storage/storageAccounts/blobServices/containers/blobs/*'],
         'notDataActions': ['Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read']}])
    assert actions('Microsoft.Batch/batchAccounts/pools/write')
    assert actions('microsoft.batch/batchaccounts/jobs/delete')
    assert not actions('Microsoft.Batch/batchAccounts/pools/delete')
    assert not data_actions('Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read')
    assert data_actions('Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write')
    assert not actions('Microsoft.Storage/storageAccounts/read')


# ---- cluster create -------------------------------------------------------------------------------------------

def _cluster(vm_size='Standard_D2s_v3', max_nodes=4, priority='dedicated', image=None, manual=None):
    scale = ({'manual': {'targetNodeCount': manual}} if manual is not None else
             {'autoScale': {'minimumNodeCount': 0, 'maximumNodeCount': max_nodes, 'initialNodeCount': 0}})
    props = {'vmSize': vm_size, 'vmPriority': priority, 'scaleSettings': scale}
    if image:
        props['virtualMachineConfiguration'] = {'imageReference': image}
    return props


def _batch_service(**quota):
    account = {'batchAccount': 'acct', 'poolAllocationMode': 'BatchService', 'dedicatedCoreQuota': 0,
               'lowPriorityCoreQuota': 0, 'dedicatedCoreQuotaPerVMFamilyEnforced': True,
               'dedicatedCoreQuotaPerVMFamily': [{'name': 'standardDSv3Family', 'coreQuota': 0}]}
    account.update(quota)
    return account


def _check(account, cluster, today=TODAY, **kwargs):
    return preflight.check_cluster(account, cluster, default_vm_skus(), default_supported_images(), today, **kwargs)


def test_cluster_plan_through_the_account_lookups(batch_login, arm_target, credential):
    """The whole path as `cluster create` takes it: account, region's sizes and supported images from Azure (the
    double, through az's login and the SDKs), then the checks."""
    batch_login.double.assign('Azure Batch Data Contributor', '/subscriptions/' + batch_login.subscription_id)
    batch_login.double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    found = _account(batch_login, arm_target, credential, dedicatedCoreQuota=16,
                     dedicatedCoreQuotaPerVMFamily=[{'name': 'standardDSv3Family', 'coreQuota': 8}])
    plan = preflight.check_cluster(found, _cluster(max_nodes=4),
                                   account_mod.list_vm_skus(found, credential, arm_target),
                                   account_mod.list_supported_images(found, credential), TODAY)
    assert plan.sku['name'] == 'Standard_D2s_v3'
    assert plan.priority.kind == 'dedicated'
    assert plan.image.node_agent_sku_id == 'batch.node.ubuntu 24.04'
    assert plan.warnings == []


@pytest.mark.parametrize('size, successor', [('Standard_NC6', 'Standard_NC4as_T4_v3'),
                                             ('standard_nc12', 'Standard_NC64as_T4_v3'),
                                             ('Standard_NC6s_v3', 'Standard_NC24ads_A100_v4')])
def test_retired_size_names_its_successor(size, successor):
    refusal = _refused(_check, _batch_service(dedicatedCoreQuota=1000), _cluster(vm_size=size))
    assert refusal.code == 'VmSizeRetired'
    assert "vmSize '{}' was retired by Azure on".format(size) in refusal.reason
    assert 'successor, e.g. -s {} (it is not swapped for you'.format(successor) in refusal.reason


@pytest.mark.parametrize('size', ['Standard_E2s_v5', 'Standard_D8s_v3'])
def test_size_not_offered_in_the_region(size):
    refusal = _refused(_check, _batch_service(dedicatedCoreQuota=1000), _cluster(vm_size=size))
    assert refusal.code == 'VmSizeNotOffered'
    assert "vmSize '{}' is not offered by Azure Batch in this account's region".format(size) in refusal.reason


@pytest.mark.parametrize('account, cluster, quota_name, needed, left', [
    # a new account: 0 for the family
    (_batch_service(dedicatedCoreQuota=100), _cluster(max_nodes=1), 'standardDSv3Family dedicated vCPUs', 2, 0),
    # family quota 8: 4 nodes of 2 fit, 5 do not
    (_batch_service(dedicatedCoreQuota=100, dedicatedCoreQuotaPerVMFamily=[{'name': 'standardDSv3Family',
                                                                            'coreQuota': 8}]),
     _cluster(max_nodes=5), 'standardDSv3Family dedicated vCPUs', 10, 8),
    # the account's total dedicated quota binds when the family's is not enforced
    (_batch_service(dedicatedCoreQuota=6, dedicatedCoreQuotaPerVMFamilyEnforced=False),
     _cluster(vm_size='Standard_D4s_v3', manual=2), 'total dedicated vCPUs', 8, 6),
])
def test_quota_does_not_cover_max_nodes(account, cluster, quota_name, needed, left):
    refusal = _refused(_check, account, cluster)
    assert refusal.code == 'QuotaExceeded'
    assert 'The cluster needs {} dedicated vCPUs'.format(needed) in refusal.reason
    assert "the quota '{} (Batch account)' leaves {}".format(quota_name, left) in refusal.reason


@pytest.mark.parametrize('max_nodes', [1, 4])
def test_quota_covers_max_nodes(max_nodes):
    account = _batch_service(dedicatedCoreQuota=8, dedicatedCoreQuotaPerVMFamily=[{'name': 'standardDSv3Family',
                                                                                  'coreQuota': 8}])
    assert _check(account, _cluster(max_nodes=max_nodes)).sku['familyName'] == 'standardDSv3Family'


def test_quota_counts_what_other_pools_hold():
    account = _batch_service(dedicatedCoreQuota=8, dedicatedCoreQuotaPerVMFamily=[{'name': 'standardDSv3Family',
                                                                                  'coreQuota': 8}])
    refusal = _refused(_check, account, _cluster(max_nodes=2), in_use={'family': 6, 'dedicated': 6})
    assert "leaves 2 (limit 8, in use 6)" in refusal.reason


def test_low_priority_on_a_batch_service_account_after_its_retirement_is_spot_on_the_account_quota():
    """batch-spot-vms.md after the retirement: Spot nodes on a Batch-service account; batch-quota-limit.md: for Spot
    nodes Batch enforces only the account's total (lowPriorityCoreQuota), whatever the family's dedicated quota."""
    plan = _check(_batch_service(lowPriorityCoreQuota=100), _cluster(priority='lowpriority'))
    assert plan.priority.kind == 'spot'
    refusal = _refused(_check, _batch_service(lowPriorityCoreQuota=6, dedicatedCoreQuota=1000),
                       _cluster(priority='lowpriority', max_nodes=4))
    assert 'Spot/low-priority vCPUs (Batch account)' in refusal.reason


def test_spot_on_a_user_subscription_account_uses_the_subscription_quota(batch_login, arm_target, credential):
    batch_login.double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    batch_login.double.compute_usages['eastus'] = [
        {'name': {'value': 'lowPriorityCores', 'localizedValue': 'Total Regional Spot vCPUs'}, 'currentValue': 0,
         'limit': 4, 'unit': 'Count'}]
    found = _account(batch_login, arm_target, credential, poolAllocationMode='UserSubscription',
                     dedicatedCoreQuota=None,
                     lowPriorityCoreQuota=None, dedicatedCoreQuotaPerVMFamily=None)
    usages = account_mod.list_compute_usages(found, credential, arm_target)
    plan = _check(found, _cluster(priority='lowpriority', max_nodes=2), compute_usages=usages)
    assert plan.priority.kind == 'spot'
    refusal = _refused(_check, found, _cluster(priority='lowpriority', max_nodes=3), compute_usages=usages)
    assert "The cluster needs 6 spot vCPUs" in refusal.reason
    assert "'Total Regional Spot vCPUs (subscription)' leaves 4" in refusal.reason


def test_user_subscription_quota_unknown_is_said():
    account = {'batchAccount': 'acct', 'poolAllocationMode': 'UserSubscription'}
    plan = _check(account, _cluster(max_nodes=3))
    assert plan.warnings == ['The vCPU quota of this user-subscription Batch account comes from the subscription and '
                             'was not checked: 6 dedicated vCPUs are needed at the maximum node count.']


def test_default_image_is_a_current_ubuntu_from_the_list():
    plan = _check(_batch_service(dedicatedCoreQuota=100, dedicatedCoreQuotaPerVMFamily=[
        {'name': 'standardDSv3Family', 'coreQuota': 100}]), _cluster(
            image={'publisher': 'microsoft-dsvm', 'offer': 'amlcompute', 'sku': 'runtime-gen1-ubuntu18'}))
    assert plan.image.node_agent_sku_id == 'batch.node.ubuntu 24.04'
    assert plan.image.image_reference['publisher'] == 'canonical'


@pytest.mark.parametrize('image, today, code, words', [
    ({'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-focal', 'sku': '20_04-lts'}, TODAY,
     'ImageEndOfLife', 'reached its Batch end of life on 2025-04-23'),
    ({'publisher': 'canonical', 'offer': 'UbuntuServer', 'sku': '18.04-LTS'}, TODAY, 'UnsupportedImage',
     "is not supported by Azure Batch (not in the account's supported-image list)"),
    ({'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy', 'sku': '22_04-lts'},
     datetime.date(2027, 7, 1), 'ImageEndOfLife', 'reached its Batch end of life on 2027-06-30'),
])
def test_unsupported_or_end_of_life_image(image, today, code, words):
    account = _batch_service(dedicatedCoreQuota=100, dedicatedCoreQuotaPerVMFamily=[
        {'name': 'standardDSv3Family', 'coreQuota': 100}])
    refusal = _refused(_check, account, _cluster(image=image), today=today)
    assert refusal.code == code
    assert words in refusal.reason


def test_image_near_end_of_life_warns():
    account = _batch_service(dedicatedCoreQuota=100, dedicatedCoreQuotaPerVMFamily=[
        {'name': 'standardDSv3Family', 'coreQuota': 100}])
    plan = _check(account, _cluster(image={'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy',
                                           'sku': '22_04-lts'}), today=datetime.date(2027, 5, 1))
    assert plan.image.node_agent_sku_id == 'batch.node.ubuntu 22.04'
    assert len(plan.warnings) == 1
    assert 'reaches its Batch end of life on 2027-06-30' in plan.warnings[0]


def test_gpu_size_quota_of_a_new_account():
    """Batch AI's recipes' GPU cluster, on the successor size, on a new account: the GPU family quota is 0."""
    refusal = _refused(_check, _batch_service(dedicatedCoreQuota=100), _cluster(vm_size='Standard_NC4as_T4_v3',
                                                                                max_nodes=2))
    assert "The cluster needs 8 dedicated vCPUs (2 nodes of Standard_NC4as_T4_v3 x 4 vCPUs) but the quota " \
        "'Standard NCASv3_T4 Family dedicated vCPUs (Batch account)' leaves 0" in refusal.reason


# ---- storage: the service's reads with az's token (rule 4) ----------------------------------------------------

@pytest.fixture
def storage(batch_login):
    return storage_roles.storage_account_id(batch_login.subscription_id, 'data-rg', 'outputs')


@pytest.mark.parametrize('role, scope, kind, missing, assign', [
    (None, None, 'file', 'Microsoft.Storage/storageAccounts/fileServices/fileshares/files/read, '
                         'Microsoft.Storage/storageAccounts/fileServices/readFileBackupSemantics/action',
     'Storage File Data Privileged Reader'),
    ('Contributor', 'group', 'file', 'Microsoft.Storage/storageAccounts/fileServices/fileshares/files/read, '
                                     'Microsoft.Storage/storageAccounts/fileServices/readFileBackupSemantics/action',
     'Storage File Data Privileged Reader'),
    ('Storage File Data SMB Share Reader', 'storage', 'file',
     'Microsoft.Storage/storageAccounts/fileServices/readFileBackupSemantics/action',
     'Storage File Data Privileged Reader'),
    ('Storage File Data Privileged Reader', 'sub', 'blob',
     'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read', 'Storage Blob Data Reader'),
    # The task-log container (task_logs.py): a user delegation key, the container, blobs written and read back.
    ('Storage Blob Data Reader', 'storage', 'logs',
     'Microsoft.Storage/storageAccounts/blobServices/containers/write, '
     'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write', 'Storage Blob Data Contributor'),
    ('Contributor', 'group', 'logs',
     'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write, '
     'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read', 'Storage Blob Data Contributor'),
])
def test_storage_without_the_data_role_names_it(batch_login, arm_target, credential, storage, role, scope, kind,
                                                missing,
                                                assign):
    scopes = {'sub': '/subscriptions/' + batch_login.subscription_id,
              'group': batch_login.double.resource_group_id('data-rg'),
              'storage': storage}
    if role:
        batch_login.double.assign(role, scopes[scope])
    permissions = preflight.list_permissions(storage, credential, arm_target)
    refusal = _refused(storage_roles.check_storage_data_role, storage, [kind], permissions)
    assert refusal.code == 'StorageRoleMissing'
    assert "The service reads job outputs from storage account 'outputs' with az's login" in refusal.reason
    assert "which lacks {} there".format(missing) in refusal.reason
    assert "Assign the role {}: az role assignment create --role '{}' --assignee <your user or principal> --scope {}" \
        .format(assign, assign, storage) in refusal.reason


@pytest.mark.parametrize('roles, kinds', [
    (['Storage File Data Privileged Reader'], ['file']),
    (['Storage File Data Privileged Contributor', 'Storage Blob Data Contributor'], ['file', 'blob']),
    (['Storage Blob Data Reader'], ['blob']),
    (['Storage File Data Privileged Reader', 'Storage Blob Data Contributor'], ['file', 'logs']),
    (['Storage Blob Data Owner'], ['blob', 'logs']),
])
def test_storage_with_the_data_role_passes(batch_login, arm_target, credential, storage, roles, kinds):
    for role in roles:
        batch_login.double.assign(role, batch_login.double.resource_group_id('data-rg'))
    storage_roles.check_storage_data_role(storage, kinds, preflight.list_permissions(storage, credential, arm_target))


# ---- cluster create with what the account holds ---------------------------------------------------------------

def _pool(size, dedicated=0, low=0, target_dedicated=None):
    return {'id': 'p-' + size, 'vmSize': size, 'currentDedicatedNodes': dedicated, 'currentLowPriorityNodes': low,
            'targetDedicatedNodes': dedicated if target_dedicated is None else target_dedicated,
            'targetLowPriorityNodes': low}


@pytest.mark.parametrize('pools, expected', [
    ([], {'family': 0, 'dedicated': 0, 'lowPriority': 0}),
    ([_pool('Standard_D2s_v3', 2), _pool('standard_d4s_v3', 1)], {'family': 8, 'dedicated': 8, 'lowPriority': 0}),
    # growing to its target: the target counts; another family counts in the total only; preemptible apart
    ([_pool('Standard_D2s_v3', 0, target_dedicated=3), _pool('Standard_NC4as_T4_v3', 1, low=2)],
     {'family': 6, 'dedicated': 10, 'lowPriority': 8}),
    ([_pool('Standard_Retired_X', 5)], {'family': 0, 'dedicated': 0, 'lowPriority': 0}),
])
def test_cores_in_use(pools, expected):
    assert preflight.cores_in_use(pools, default_vm_skus(), 'standardDSv3Family') == expected


def test_a_stuck_pools_unreachable_target_is_not_in_use():
    """Issue 48 item 5 (fails on the old code, which counted the target of 1 node). Recorded: a steady pool
    short of its target after its resize ended (Azure PowerShell's PoolTests/TestResizeAndStopResizePool)."""
    from tests.azurebatch.gpu_recorded import recorded
    stuck = recorded('pool get after a stopped resize')['response']
    assert stuck['vmSize'] == 'standard_d2s_v3' and stuck['targetDedicatedNodes'] == 1
    assert preflight.cores_in_use([stuck], default_vm_skus(), 'standardDSv3Family') == \
        {'family': 0, 'dedicated': 0, 'lowPriority': 0}
    holding = dict(stuck, currentDedicatedNodes=2, targetDedicatedNodes=5)  # partial: what it holds counts
    assert preflight.cores_in_use([holding], default_vm_skus(), 'standardDSv3Family')['dedicated'] == 4
    growing = dict(stuck, allocationState='resizing', resizeErrors=[])  # still allocating: its target counts
    assert preflight.cores_in_use([growing], default_vm_skus(), 'standardDSv3Family')['dedicated'] == 2


def test_family_cores_in_use_match_whatever_the_family_spelling():
    """Issue 48 item 3: the family of the cluster and of another pool's size compared by quota.family_key."""
    from tests.azurebatch.gpu_recorded import documented
    pools = [_pool('Standard_NC4as_T4_v3', 2)]
    assert preflight.cores_in_use(pools, documented('vmSkus'), 'standardNCASv3_T4Family')['family'] == 8


def test_check_cluster_create_fetches_once_and_counts_other_pools(batch_login, arm_target, credential):
    batch_login.double.assign('Azure Batch Data Contributor', '/subscriptions/' + batch_login.subscription_id)
    batch_login.double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    found = _account(batch_login, arm_target, credential, dedicatedCoreQuota=16,
                     dedicatedCoreQuotaPerVMFamily=[{'name': 'standardDSv3Family', 'coreQuota': 8}])
    facts = preflight.AccountFacts(found, credential, credential, arm_target)
    plan = preflight.check_cluster_create(facts, _cluster(max_nodes=2), pools=[_pool('Standard_D2s_v3', 2)],
                                          today=TODAY)
    assert plan.sku['name'] == 'Standard_D2s_v3'
    refusal = _refused(preflight.check_cluster_create, facts, _cluster(max_nodes=3),
                       pools=[_pool('Standard_D2s_v3', 2)], today=TODAY)
    assert "The cluster needs 6 dedicated vCPUs (3 nodes of Standard_D2s_v3 x 2 vCPUs) but the quota " \
        "'standardDSv3Family dedicated vCPUs (Batch account)' leaves 4 (limit 8, in use 4)" in refusal.reason
    seen = batch_login.double.requests
    assert len([r for r in seen if r[2].endswith('/virtualMachineSkus')]) == 1
    assert len([r for r in seen if r[2] == '/supportedimages']) == 1
    assert not [r for r in seen if r[2].endswith('/usages')]  # a BatchService account's quota is its own


def test_check_cluster_create_on_a_user_subscription_account(batch_login, arm_target, credential):
    batch_login.double.assign('Owner', '/subscriptions/' + batch_login.subscription_id)
    batch_login.double.compute_usages['eastus'] = [
        {'name': {'value': 'cores', 'localizedValue': 'Total Regional vCPUs'}, 'currentValue': 0, 'limit': 100},
        {'name': {'value': 'standardDSv3Family', 'localizedValue': 'DSv3'}, 'currentValue': 0, 'limit': 0}]
    found = _account(batch_login, arm_target, credential, poolAllocationMode='UserSubscription',
                     dedicatedCoreQuota=None, dedicatedCoreQuotaPerVMFamily=None)
    facts = preflight.AccountFacts(found, credential, credential, arm_target)
    refusal = _refused(preflight.check_cluster_create, facts, _cluster(max_nodes=1), today=TODAY)
    assert "'standardDSv3Family vCPUs (subscription)' leaves 0 (limit 0, in use 0)" in refusal.reason
    assert 'Subscriptions > Usage + quotas' in refusal.reason
    batch_login.double.compute_usages['eastus'][1]['limit'] = 8  # quota raised: read afresh at the next check
    assert preflight.check_cluster_create(facts, _cluster(max_nodes=4), today=TODAY).priority.kind == 'dedicated'


# ---- storage a cluster mounts -------------------------------------------------------------------------------

def _mounting(files=(), blobs=()):
    return {'nodeSetup': {'mountVolumes': {
        'azureFileShares': [{'accountName': a, 'azureFileUrl': 'https://{}.file.core.windows.net/s'.format(a),
                             'relativeMountPath': 'afs', 'credentials': {'accountKey': 'k'}} for a in files],
        'azureBlobFileSystems': [{'accountName': a, 'containerName': 'c', 'relativeMountPath': 'bfs',
                                  'credentials': {'accountKey': 'k'}} for a in blobs]}}}


def test_cluster_storage_kinds():
    assert storage_mounts.cluster_storage(_mounting(files=['a', 'b'], blobs=['a'])) == {'a': {'file', 'blob'},
                                                                                    'b': {'file'}}
    assert storage_mounts.cluster_storage({'vmSize': 'x'}) == {}


def test_cluster_storage_roles_through_arm(batch_login, arm_target, credential):
    double = batch_login.double
    outputs = double.add_storage_account('outputs', 'data-rg')
    data = double.add_storage_account('data', 'other-rg')
    double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    double.assign('Storage File Data Privileged Reader', outputs)
    # The task-log container is on the cluster's one storage account: its Blob role is needed there too.
    refusal = _refused(storage_roles.check_cluster_storage, _mounting(files=['outputs']), credential, arm_target)
    assert "Assign the role Storage Blob Data Contributor: az role assignment create --role 'Storage Blob Data " \
        "Contributor' --assignee <your user or principal> --scope {}".format(outputs) in refusal.reason
    double.assign('Storage Blob Data Contributor', outputs)
    storage_roles.check_cluster_storage(_mounting(files=['outputs']), credential, arm_target)
    # Two accounts: the task logs go to the first by name ('data'), where the contributor role covers the reads.
    refusal = _refused(storage_roles.check_cluster_storage, _mounting(files=['outputs'], blobs=['data']), credential,
                       arm_target)
    assert refusal.code == 'StorageRoleMissing'
    assert "storage account 'data'" in refusal.reason and 'Storage Blob Data Reader' not in refusal.reason
    assert "Assign the role Storage Blob Data Contributor: az role assignment create --role 'Storage Blob Data " \
        "Contributor' --assignee <your user or principal> --scope {}".format(data) in refusal.reason
    double.assign('Storage Blob Data Reader', data)  # reads, but cannot hold the task logs
    refusal = _refused(storage_roles.check_cluster_storage, _mounting(files=['outputs'], blobs=['data']), credential,
                       arm_target)
    assert 'Storage Blob Data Contributor' in refusal.reason
    double.assign('Storage Blob Data Contributor', data)
    storage_roles.check_cluster_storage(_mounting(files=['outputs'], blobs=['data']), credential, arm_target)


def test_cluster_storage_not_visible(batch_login, arm_target, credential):
    batch_login.double.add_storage_account('elsewhere', 'data-rg')  # no role: ARM does not list it
    refusal = _refused(storage_roles.check_cluster_storage, _mounting(files=['elsewhere']), credential, arm_target)
    assert refusal.code == 'StorageAccountNotFound'
    assert refusal.reason.startswith("Storage account 'elsewhere' is not in subscription {} (or az's login may not "
                                     'see it)'.format(batch_login.subscription_id))


@pytest.mark.parametrize('quota, pools, jobs, words', [
    ({'poolQuota': 2}, 2, None, "holds 2 pools of its quota of 2 (poolQuota)"),
    ({'poolQuota': 100, 'activeJobAndJobScheduleQuota': 100}, 3, 100,
     'holds 100 active jobs and job schedules of its quota of 100 (activeJobAndJobScheduleQuota)'),
    ({'poolQuota': 0}, 0, 0, 'holds 0 pools of its quota of 0 (poolQuota)'),
])
def test_pool_or_job_quota_full(quota, pools, jobs, words):
    refusal = _refused(preflight.check_pool_and_job_quota, dict(quota, batchAccount='acct'), pools, jobs)
    assert refusal.code == 'QuotaExceeded'
    assert "Batch account 'acct' " + words + ': a cluster needs one more.' in refusal.reason


@pytest.mark.parametrize('quota, pools, jobs', [({'poolQuota': 3}, 2, None), ({}, 500, 500),
                                                ({'poolQuota': 100, 'activeJobAndJobScheduleQuota': 300}, 99, 299)])
def test_pool_and_job_quota_with_room(quota, pools, jobs):
    preflight.check_pool_and_job_quota(quota, pools, jobs)


def test_check_cluster_create_counts_pools_against_the_pool_quota(batch_login, arm_target, credential):
    batch_login.double.assign('Owner', '/subscriptions/' + batch_login.subscription_id)
    found = _account(batch_login, arm_target, credential, poolQuota=1, dedicatedCoreQuota=100,
                     dedicatedCoreQuotaPerVMFamily=[{'name': 'standardDSv3Family', 'coreQuota': 100}])
    facts = preflight.AccountFacts(found, credential, credential, arm_target)
    assert preflight.check_cluster_create(facts, _cluster(max_nodes=1), pools=[], today=TODAY)
    refusal = _refused(preflight.check_cluster_create, facts, _cluster(max_nodes=1),
                       pools=[_pool('Standard_D2s_v3', 0)], today=TODAY)
    assert 'holds 1 pools of its quota of 1 (poolQuota)' in refusal.reason
