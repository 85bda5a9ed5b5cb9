"""az's data role on the storage the service reads job outputs from (issue 31 rule 4), checked where it matters.

The service reads what a cluster's mounted Azure Files share or Blob container holds with az's token (no key on
disk), so az's login needs a data role there: an Owner or Contributor is not enough. Checked:
- at `local start`, for every cluster the data dir already holds (a restarted service reads their outputs at once);
- at `cluster create`, for the storage the new cluster mounts, before its pool is made.
A missing role refuses with the role to assign and the `az role assignment create` that assigns it
(check_storage_data_role); the storage accounts are found, and the permissions read, through ARM with az's login
(check_cluster_storage: ../preflight.py's effective_permissions and list_permissions). A storage account that
disallows shared key access is refused too: the pool mounts with the account key (check_shared_key_access).
"""
import json

from ..errors import Refusal
from ..preflight import assign_hint, effective_permissions, list_permissions
from .mounts import cluster_storage, logs_account

# Per storage kind: the dataActions the service's reads with az's token need, and the least role that grants them.
# Azure Files over REST with an Entra ID token is authorised with backup semantics (x-ms-file-request-intent),
# which only the "privileged" file roles grant; the SMB share roles do not apply to REST.
STORAGE_READ = {
    'file': (('Microsoft.Storage/storageAccounts/fileServices/fileshares/files/read',
              'Microsoft.Storage/storageAccounts/fileServices/readFileBackupSemantics/action'),
             'Storage File Data Privileged Reader'),
    'blob': (('Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read',),
             'Storage Blob Data Reader'),
}


# The task-log container (task_logs.py) of a cluster's first storage account: az's login asks a user delegation key
# and creates the container (ARM actions of the Blob data roles), and the SAS it signs lets Batch write only what
# az's login may write itself; the service reads the copies back. The least role granting all: Storage Blob Data
# Contributor (it also grants what STORAGE_READ['blob'] needs).
TASK_LOGS_ROLE = 'Storage Blob Data Contributor'
TASK_LOGS_ACTIONS = ('Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action',
                     'Microsoft.Storage/storageAccounts/blobServices/containers/write')
TASK_LOGS_DATA_ACTIONS = ('Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write',
                          'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read')

STORAGE_API_VERSION = '2023-05-01'


def storage_account_id(subscription_id, resource_group, name):
    return '/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Storage/storageAccounts/{}'.format(
        subscription_id, resource_group, name)


def find_storage_account_id(name, credential, arm):
    """The ARM id of storage account ``name`` in az's subscription (names are global: one at most); Refusal when
    az's login cannot see it."""
    return find_storage_account(name, credential, arm)['id']


def find_storage_account(name, credential, arm):
    """Storage account ``name`` in az's subscription as ARM lists it (id, properties); Refusal when az's login
    cannot see it."""
    from ..account import arm_get_all  # pylint: disable=import-outside-toplevel
    found = [a for a in arm_get_all(
        '/subscriptions/{}/providers/Microsoft.Storage/storageAccounts'.format(arm.subscription_id),
        STORAGE_API_VERSION, credential, arm, 'Listing the storage accounts of subscription {}'.format(
            arm.subscription_id)) if str(a.get('name', '')).lower() == name.lower()]
    if not found:
        raise Refusal("Storage account '{}' is not in subscription {} (or az's login may not see it): the service "
                      "reads job outputs there with az's login. Use a storage account of this subscription, or "
                      "choose the subscription that has it (az account set -s ...).".format(
                          name, arm.subscription_id), code='StorageAccountNotFound')
    return found[0]


def check_shared_key_access(storage):
    """Refusal when a storage account (ARM JSON) a cluster mounts disallows shared key access: Batch mounts Azure
    Files and Blob containers with the account key here, so every node's mount would fail and the node be unusable
    (Microsoft's virtual-file-mount.md), a pool that never runs a job. ARM's `allowSharedKeyAccess`: absent (null)
    means allowed."""
    if (storage.get('properties') or {}).get('allowSharedKeyAccess') is False:
        raise Refusal("Storage account '{}' does not allow shared key access (allowSharedKeyAccess: false), and the "
                      "pool mounts its shares and containers with the account key: every node's mount would fail "
                      '(the node unusable, no job run). Allow it (az storage account update -n {} '
                      '--allow-shared-key-access true, if your policy permits), or mount a storage account that '
                      'allows it.'.format(storage.get('name'), storage.get('name')),
                      code='StorageSharedKeyDisabled')


def check_cluster_storage(cluster_props, credential, arm):
    """For every storage account a cluster mounts (ARM: find it, read the permissions): check_shared_key_access,
    then check_storage_data_role."""
    logs = logs_account(cluster_props)
    for name, kinds in sorted(cluster_storage(cluster_props).items()):
        storage = find_storage_account(name, credential, arm)
        check_shared_key_access(storage)
        storage_id = storage['id']
        check_storage_data_role(storage_id, sorted(kinds) + (['logs'] if name == logs else []),
                                list_permissions(storage_id, credential, arm))


def check_storage_data_role(storage_id, kinds, permissions):
    """Refusal unless ``permissions`` (list_permissions at the storage account ``storage_id``) let az's login do
    what the service does there for each kind in ``kinds``: read the job outputs of an Azure Files share ('file')
    or a Blob container ('blob'), hold the task-log container ('logs': task_logs.py). The refusal names every role
    missing, each with the command that assigns it."""
    actions, data_actions = effective_permissions(permissions)
    missing, roles = [], []
    for kind in kinds:
        if kind == 'logs':
            lacking = [a for a in TASK_LOGS_ACTIONS if not actions(a)]
            lacking += [a for a in TASK_LOGS_DATA_ACTIONS if not data_actions(a)]
            role = TASK_LOGS_ROLE
        else:
            needed, role = STORAGE_READ[kind]
            lacking = [a for a in needed if not data_actions(a)]
        if lacking:
            missing += [a for a in lacking if a not in missing]
            roles.append(role)
    if TASK_LOGS_ROLE in roles and STORAGE_READ['blob'][1] in roles:  # the contributor may read too
        roles.remove(STORAGE_READ['blob'][1])
    if missing:
        name = storage_id.rstrip('/').rsplit('/', 1)[-1]
        logs = ' and holds the tasks\' own stdout/stderr there (a container written by Batch)' \
            if 'logs' in kinds else ''
        raise Refusal("The service reads job outputs from storage account '{}' with az's login{}, which lacks "
                      '{} there (Owner or Contributor is not enough: data access needs a data role). {}'.format(
                          name, logs, ', '.join(missing), '; and '.join(
                              ('Assign the role {}: {}' if i == 0 else 'the role {}: {}').format(
                                  role, assign_hint(role, storage_id)) for i, role in enumerate(roles))),
                      code='StorageRoleMissing')


def missing_role_hint(role, account):
    """What a storage refusal (401/403) met while the service runs adds to its warning: the role az's login needs
    on storage account ``account`` and the command that assigns it."""
    return "az's login needs the role {} on storage account {}: {}".format(
        role, account, assign_hint(role, "<the storage account's resource id>"))


class StorageRoleCheck:
    """check(cluster_props): errors.Refusal unless az's login may read outputs from every storage account the
    cluster mounts. ``arm_credential``/``arm``: az's login for ARM and its target (account.ArmTarget; None: az's
    active cloud and subscription, looked up at first use)."""

    def __init__(self, arm_credential=None, arm=None):
        self._credential, self._arm = arm_credential, arm

    @property
    def arm(self):
        if self._arm is None:
            from ..account import az_arm_target  # pylint: disable=import-outside-toplevel
            self._arm = az_arm_target()
        return self._arm

    def __call__(self, cluster_props):
        if cluster_storage(cluster_props):  # no mount, no ARM call
            check_cluster_storage(cluster_props, self._credential, self.arm)


def check_stored_clusters(store, check):
    """``check`` (a StorageRoleCheck) for every cluster the store holds; errors.Refusal of the first refused."""
    for _, text in store.page_by_prefix('cluster', '', 0, 1000000):
        check(json.loads(text).get('properties') or {})
