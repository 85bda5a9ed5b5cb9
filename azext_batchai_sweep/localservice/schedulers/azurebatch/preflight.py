"""Checks before anything is created or spent on Azure Batch (issue 31, rules 1 and 4): each raises errors.Refusal
with the cause and the fix, or returns quietly.

`local start` (check_local_start): the installed Batch SDK speaks the data-plane API version of the contract in
tests/specs (BATCH_API_VERSION), the account allows Microsoft Entra ID authentication, one cheap data-plane call
(list one pool id) succeeds with az's token (401/403 -> the role to assign), and az's login holds the role that
adds pools, jobs and tasks (ARM permissions at the account: a Reader or Job Submitter passes the cheap call, then
fails at the first `cluster create`).

`cluster create` (check_cluster): the VM size is offered by Batch in the account's region and not retired (a
retired size names its successor), the account's vCPU quota for that family and priority covers the cluster at its
maximum node count given the pool allocation mode, and the image and node agent come from the account's
supported-image list, are not past end of life and of a Hyper-V generation the size boots. The rules themselves
are the mapping modules' (vm_sizes, priority, quota, images); this module fetches nothing: the caller passes what
account.py fetched.

The storage a cluster mounts has checks of its own (storage/roles.py), built on effective_permissions,
list_permissions and assign_hint here.
"""
import datetime
import fnmatch
from typing import NamedTuple

from .errors import Refusal
from .spelling import same

# The data-plane API version the scheduler speaks: the version of the Batch REST spec copied into
# tests/specs/batch-<version>/ (the contract the conformance tests check every request and answer against).
BATCH_API_VERSION = '2024-02-01.19.0'
BATCH_DATA_ROLE = 'Azure Batch Data Contributor'
PERMISSIONS_API_VERSION = '2022-04-01'
# What the scheduler does on the data plane (Batch authorises Entra ID calls by these ARM actions).
BATCH_DATA_ACTIONS = ('Microsoft.Batch/batchAccounts/pools/write', 'Microsoft.Batch/batchAccounts/pools/delete',
                      'Microsoft.Batch/batchAccounts/jobs/write', 'Microsoft.Batch/batchAccounts/jobs/delete')
def assign_hint(role, scope):
    """The az command that assigns ``role`` at ``scope`` (a refusal's fix)."""
    return ("az role assignment create --role '{}' --assignee <your user or principal> --scope {}"
            .format(role, scope))


# ---- local start ---------------------------------------------------------------------------------------------

def sdk_api_version():
    """The data-plane API version the installed azure-batch SDK sends by default."""
    from azure.batch import BatchClient  # pylint: disable=import-outside-toplevel
    from azure.core.credentials import AccessToken  # pylint: disable=import-outside-toplevel

    class _NoToken:  # constructing a client sends nothing; no token is ever asked for
        def get_token(self, *scopes, **kwargs):
            return AccessToken('', 0)
    client = BatchClient('https://account.region.batch.invalid', _NoToken())
    return client._config.api_version  # pylint: disable=protected-access


def check_sdk_api_version(installed=None, expected=BATCH_API_VERSION):
    """Refusal unless the Batch SDK az ships speaks the API version the scheduler was written and tested for."""
    installed = installed or sdk_api_version()
    if installed != expected:
        from importlib import metadata  # pylint: disable=import-outside-toplevel
        try:
            sdk = 'azure-batch ' + metadata.version('azure-batch')
        except metadata.PackageNotFoundError:
            sdk = 'the installed azure-batch'
        raise Refusal('{} speaks Batch API {}, but this extension is written and tested for Batch API {}: its '
                      'requests and the answers it reads may differ. Use the azure-cli release whose azure-batch '
                      'speaks {}, or an extension release made for {}.'.format(sdk, installed, expected, expected,
                                                                              installed),
                      code='BatchApiVersionMismatch')


def check_entra_id(account):
    """Refusal unless the account accepts Microsoft Entra ID tokens (az's login; the service holds no key)."""
    modes = account.get('allowedAuthenticationModes')
    if modes is not None and not any(same(m, 'aad') for m in modes):
        raise Refusal(
            "Batch account '{}' does not allow Microsoft Entra ID authentication (allowedAuthenticationModes: {}), "
            "and the service uses only az's login, never an account key. Allow it: az resource update --ids {} "
            "--add properties.allowedAuthenticationModes AAD (or in the portal: the Batch account > Configuration "
            '> Authentication mode).'.format(account.get('batchAccount'), ', '.join(modes) or 'none',
                                             account.get('batchAccountId')),
            code='EntraIdNotAllowed')


def check_data_plane(account, credential, client=None):
    """One cheap data-plane call (one pool id) with az's token: Refusal naming the cause on 401/403 or no answer."""
    # pylint: disable=import-outside-toplevel
    from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ServiceRequestError
    if client is None:
        from .account import batch_client  # pylint: disable=import-outside-toplevel
        client = batch_client(account, credential)
    name, scope = account.get('batchAccount'), account.get('batchAccountId')
    try:
        next(iter(client.list_pools(maxresults=1, select=['id'])), None)
    except ServiceRequestError as ex:
        raise Refusal("Batch account '{}' at {} could not be reached: {}".format(
            name, account.get('batchEndpoint'), _first_line(ex)), code='BatchUnavailable') from None
    except HttpResponseError as ex:  # ClientAuthenticationError included: no answer when the token itself failed
        status = ex.status_code if ex.response is not None else None
        code = _batch_error_code(ex)
        if status is None and isinstance(ex, ClientAuthenticationError):  # az not logged in, or its login expired
            raise Refusal("az's login gave no token for Azure Batch: {} Log in with 'az login'.".format(
                _first_line(ex)), code='AzLoginMissing') from None
        if status == 403:
            raise Refusal("Batch account '{}' refused az's login ({}): it needs the role {} on the account. Assign "
                          'it: {}'.format(name, code or 'HTTP 403', BATCH_DATA_ROLE,
                                          assign_hint(BATCH_DATA_ROLE, scope)), code='BatchRoleMissing') from None
        if status == 401:
            raise Refusal("Batch account '{}' did not accept az's token ({}). Log in again with 'az login'; if it "
                          'persists, check that the account allows Microsoft Entra ID authentication and that you '
                          'hold {} on it ({}).'.format(name, code or 'HTTP 401', BATCH_DATA_ROLE,
                                                      assign_hint(BATCH_DATA_ROLE, scope)),
                          code='BatchLoginRefused') from None
        raise Refusal("Batch account '{}' answered {} ({}) to a list of its pools.".format(
            name, status, code or ex.reason), code='BatchUnavailable') from None


def _batch_error_code(ex):
    try:
        answer = ex.response.json()
    except Exception:  # pylint: disable=broad-except
        return None
    return answer.get('code') if isinstance(answer, dict) else None


def _first_line(ex):
    text = str(getattr(ex, 'message', None) or ex).strip()
    return text.splitlines()[0] if text else type(ex).__name__


def effective_permissions(permissions):
    """(actions, dataActions) granted by ARM's permissions list (each entry minus its notActions/notDataActions):
    two predicates over an action name."""
    def allows(key, not_key):
        entries = [(p.get(key) or [], p.get(not_key) or []) for p in permissions]

        def check(action):
            action = action.lower()
            return any(any(fnmatch.fnmatchcase(action, a.lower()) for a in granted)
                       and not any(fnmatch.fnmatchcase(action, n.lower()) for n in denied)
                       for granted, denied in entries)
        return check
    return allows('actions', 'notActions'), allows('dataActions', 'notDataActions')


def list_permissions(scope, credential, arm):
    """ARM's `Permissions - List For Resource` at ``scope`` (a resource id) for az's login: JSON entries with
    actions, notActions, dataActions, notDataActions."""
    from .account import arm_get_all  # pylint: disable=import-outside-toplevel
    return arm_get_all('{}/providers/Microsoft.Authorization/permissions'.format(scope.rstrip('/')),
                       PERMISSIONS_API_VERSION, credential, arm, 'Reading your permissions on {}'.format(scope))


def check_batch_data_role(account, permissions):
    """Refusal unless ``permissions`` (list_permissions at the account) let az's login add and delete pools and
    jobs: the cheap data-plane call passes with a reader's role, the first `cluster create` would not."""
    actions, _ = effective_permissions(permissions)
    missing = [a for a in BATCH_DATA_ACTIONS if not actions(a)]
    if missing:
        raise Refusal("az's login may read Batch account '{}' but not run work on it (missing {}): the service "
                      'creates pools, jobs and tasks. Assign the role {}: {}'.format(
                          account.get('batchAccount'), ', '.join(missing), BATCH_DATA_ROLE,
                          assign_hint(BATCH_DATA_ROLE, account.get('batchAccountId'))), code='BatchRoleMissing')


def check_local_start(account, credential, permissions=None, client=None):
    """Every `local start` check, cheapest first. ``credential``: az's login for the Batch audience;
    ``permissions``: list_permissions at the account (None: that check is skipped)."""
    check_sdk_api_version()
    check_entra_id(account)
    check_data_plane(account, credential, client)
    if permissions is not None:
        check_batch_data_role(account, permissions)


# ---- cluster create ------------------------------------------------------------------------------------------

class ClusterPlan(NamedTuple):
    """What the checks of a cluster chose: its offered size (ARM JSON), node priority, image and warnings."""
    sku: dict
    priority: object  # priority.NodePriority
    image: object  # images.ChosenImage
    warnings: list


def cores_in_use(pools, vm_skus, family):
    """quota.quota_lines's ``in_use`` from the account's pools (data-plane pool JSON: vmSize, allocationState and
    the current and target node counts): the cores they hold or are growing to, for ``family`` and in all. A pool
    of a size not in ``vm_skus`` (one Batch no longer lists) counts nothing: it cannot grow either. A steady pool
    below its target (its resize ended short: a quota or allocation error, a stopped resize, as recorded) counts
    what it holds: Batch allocates no more for it until it is resized again."""
    from .quota import family_key  # pylint: disable=import-outside-toplevel
    from .vm_sizes import vcpus  # pylint: disable=import-outside-toplevel
    by_name = {str(s.get('name', '')).lower(): s for s in vm_skus or []}
    used = {'family': 0, 'dedicated': 0, 'lowPriority': 0}
    for pool in pools or []:
        sku = by_name.get(str(pool.get('vmSize', '')).lower())
        if sku is None:
            continue
        cores = vcpus(sku)
        growing = str(pool.get('allocationState') or 'resizing').lower() == 'resizing'
        dedicated, low = int(pool.get('currentDedicatedNodes') or 0), int(pool.get('currentLowPriorityNodes') or 0)
        if growing:
            dedicated = max(dedicated, int(pool.get('targetDedicatedNodes') or 0))
            low = max(low, int(pool.get('targetLowPriorityNodes') or 0))
        used['dedicated'] += cores * dedicated
        used['lowPriority'] += cores * low
        if family_key(sku.get('familyName')) == family_key(family):
            used['family'] += cores * dedicated
    return used


def check_cluster(account, cluster_props, vm_skus, supported_images, today=None, in_use=None,
                  compute_usages=None):
    """The ClusterPlan of a Batch AI cluster (its create properties) on ``account`` (account.find_account's dict),
    or Refusal: size offered and current, priority available, quota covering the maximum node count, image
    supported and not past end of life. ``vm_skus``: account.list_vm_skus; ``supported_images``:
    account.list_supported_images; ``in_use``/``compute_usages``: see quota.quota_lines."""
    from . import images, pools, priority, quota, vm_sizes  # pylint: disable=import-outside-toplevel
    today = today or datetime.datetime.now(datetime.timezone.utc).date()
    sku = vm_sizes.check_vm_size(cluster_props.get('vmSize'), vm_skus, today)
    node_priority = priority.node_priority(cluster_props.get('vmPriority'), account, today)
    warnings = list(quota.check_quota(sku, pools.max_nodes(cluster_props), node_priority, account, in_use,
                                      compute_usages) or [])
    image_reference = (cluster_props.get('virtualMachineConfiguration') or {}).get('imageReference')
    image = images.choose_image(image_reference, supported_images, today, gpu=vm_sizes.gpus(sku) > 0,
                                generations=vm_sizes.hyperv_generations(sku), vm_size=cluster_props.get('vmSize'),
                                mpi=pools.max_nodes(cluster_props) > 1)
    return ClusterPlan(sku, node_priority, image, warnings + list(image.warnings))


class AccountFacts:
    """What the cluster checks read of an account, fetched when first needed: the region's VM sizes and the
    supported images once per service run (they change with Azure releases, not between clusters), the
    subscription's compute usages (UserSubscription accounts) afresh at each check. ``arm_credential``: az's login
    for ARM; ``batch_credential``: for the Batch data plane (auth.py's); ``arm``: account.ArmTarget."""

    def __init__(self, account, arm_credential=None, batch_credential=None, arm=None):
        self.account = account
        self._arm_credential, self._batch_credential, self._arm = arm_credential, batch_credential, arm
        self._vm_skus = self._images = None

    @property
    def arm(self):
        if self._arm is None:
            from .account import az_arm_target  # pylint: disable=import-outside-toplevel
            self._arm = az_arm_target()
        return self._arm

    @property
    def vm_skus(self):
        if self._vm_skus is None:
            from .account import list_vm_skus  # pylint: disable=import-outside-toplevel
            self._vm_skus = list_vm_skus(self.account, self._arm_credential, self.arm)
        return self._vm_skus

    @property
    def supported_images(self):
        if self._images is None:
            from .account import list_supported_images  # pylint: disable=import-outside-toplevel
            self._images = list_supported_images(self.account, self._batch_credential)
        return self._images

    def compute_usages(self):
        """The subscription's usages in the region for a UserSubscription account, else None (not needed)."""
        from .priority import USER_SUBSCRIPTION, allocation_mode  # pylint: disable=import-outside-toplevel
        if allocation_mode(self.account) != USER_SUBSCRIPTION:
            return None
        from .account import list_compute_usages  # pylint: disable=import-outside-toplevel
        return list_compute_usages(self.account, self._arm_credential, self.arm)


def check_pool_and_job_quota(account, pool_count, active_jobs=None):
    """Refusal when the account cannot hold one more pool (poolQuota) or one more active job
    (activeJobAndJobScheduleQuota): each cluster is one pool and one Batch job, and a refused add would leave the
    cluster without nodes. ``active_jobs``: None when not counted."""
    checks = [('poolQuota', pool_count, 'pools'), ('activeJobAndJobScheduleQuota', active_jobs,
                                                   'active jobs and job schedules')]
    for key, count, what in checks:
        quota = account.get(key)
        if quota is not None and count is not None and int(count) >= int(quota):
            raise Refusal("Batch account '{}' holds {} {} of its quota of {} ({}): a cluster needs one more. "
                          'Delete a cluster (or other pools and jobs of the account), or request more in the Azure '
                          'portal (Batch account > Quotas > Request quota increase).'.format(
                              account.get('batchAccount'), count, what, quota, key), code='QuotaExceeded')


def check_cluster_create(facts, cluster_props, pools=None, today=None, active_jobs=None):
    """check_cluster with what ``facts`` (AccountFacts) fetches; ``pools``: the account's pools as the data plane
    lists them (their cores count against the quota, their number against poolQuota); ``active_jobs``: the
    account's active jobs and job schedules (None: not counted)."""
    from .vm_sizes import check_vm_size  # pylint: disable=import-outside-toplevel
    today = today or datetime.datetime.now(datetime.timezone.utc).date()
    check_pool_and_job_quota(facts.account, len(pools or []), active_jobs)
    sku = check_vm_size(cluster_props.get('vmSize'), facts.vm_skus, today)
    return check_cluster(facts.account, cluster_props, facts.vm_skus, facts.supported_images, today,
                         cores_in_use(pools, facts.vm_skus, sku.get('familyName')), facts.compute_usages())
