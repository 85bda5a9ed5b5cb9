"""The Batch account the scheduler runs on, as Azure describes it: found with azure-mgmt-batch and az's login.

Everything comes back as plain REST JSON (camelCase, as ARM and the Batch data plane answer it), never as SDK model
objects, so the mapping modules (quota.py, priority.py, images.py, vm_sizes.py) read it whatever SDK version az
ships:
- `find_account(name, resource_group)` -> the account dict: its ARM `properties` (accountEndpoint,
  poolAllocationMode, allowedAuthenticationModes, dedicatedCoreQuota, lowPriorityCoreQuota,
  dedicatedCoreQuotaPerVMFamily, dedicatedCoreQuotaPerVMFamilyEnforced, poolQuota, activeJobAndJobScheduleQuota...)
  plus what the scheduler shows (batchAccount, batchResourceGroup, batchEndpoint as an https URL, batchLocation,
  batchAccountId, subscriptionId).
- `list_vm_skus(account)` -> the VM sizes Batch offers in the account's region (ARM `virtualMachineSkus`).
- `list_compute_usages(account)` -> the subscription's vCPU quotas in that region (Microsoft.Compute usages), which
  is what a UserSubscription account's pools draw on.
- `list_supported_images(account, credential)` -> the data plane's `supportedimages` (with batchSupportEndOfLife).

ARM is reached the way az reaches it: az's active cloud (its resource manager endpoint and audience) and default
subscription (`ArmTarget`, from `az cloud show` / `az account show` run as this Python's az unless given), with a
TokenCredential from az's login (auth.py's, for the cloud's ARM audience, unless given). SDKs are imported inside
the functions: `--scheduler processes` never loads them.
"""
import json
import subprocess
import sys
from dataclasses import dataclass

from .errors import Refusal

AZ_TIMEOUT = 120


@dataclass(frozen=True)
class ArmTarget:
    """Where ARM calls go: the cloud's resource manager endpoint, its token audience, and the subscription."""
    endpoint: str
    audience: str
    subscription_id: str

    @property
    def scope(self):
        return self.audience.rstrip('/') + '/.default'


def _az_json(*args):
    """`az ARGS -o json` run as this Python's az (the same login and AZURE_CONFIG_DIR); Refusal with az's words."""
    cmd = [sys.executable, '-m', 'azure.cli', *args, '--only-show-errors', '-o', 'json']
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=AZ_TIMEOUT,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as ex:
        raise Refusal('Could not run az {}: {}.'.format(' '.join(args), type(ex).__name__), code='AzLoginMissing') \
            from None
    if done.returncode != 0:
        words = done.stderr.strip().splitlines()
        raise Refusal("az {} failed: {} Log in with 'az login' (and choose the subscription with 'az account set "
                      "-s ...').".format(' '.join(args), words[-1] if words else 'no message'),
                      code='AzLoginMissing')
    return json.loads(done.stdout)


def az_arm_target():
    """The ArmTarget of az's login: its active cloud's ARM endpoint and audience, its default subscription."""
    cloud = _az_json('cloud', 'show')
    account = _az_json('account', 'show')
    endpoints = cloud.get('endpoints') or {}
    return ArmTarget(endpoint=endpoints['resourceManager'].rstrip('/'),
                     audience=endpoints.get('activeDirectoryResourceId') or endpoints['resourceManager'],
                     subscription_id=account['id'])


def az_credential(audience):
    """az's login as a TokenCredential for ``audience`` (auth.az_credential)."""
    from .auth import az_credential as credential  # pylint: disable=import-outside-toplevel
    return credential(audience)


def _arm_failure(ex, what):
    """A Refusal for an ARM call that failed: which call, ARM's code, and the fix for the usual causes."""
    status = getattr(ex, 'status_code', None)
    error = getattr(ex, 'error', None)
    code = getattr(error, 'code', None) or type(ex).__name__
    message = getattr(error, 'message', None) or ''
    if status == 401:
        return Refusal("{}: ARM refused az's login ({}). Log in again with 'az login'.".format(what, code),
                       code='AzLoginRefused')
    if status == 403:
        return Refusal('{}: az\'s login may not read it ({}: {}). Assign the Reader role (or Azure Batch Account '
                       'Reader) on the Batch account or its resource group, e.g. az role assignment create --role '
                       'Reader --assignee <your user or principal> --scope <the account or group id>.'.format(
                           what, code, message), code='AuthorizationFailed')
    if status == 404:
        return Refusal('{}: not found ({}).'.format(what, code), code='BatchAccountNotFound')
    return Refusal('{}: {} {}'.format(what, code, message).strip(), code='AzureResourceManagerError')


def _mgmt_client(credential, arm):
    from azure.mgmt.batch import BatchManagementClient  # pylint: disable=import-outside-toplevel
    return BatchManagementClient(credential, arm.subscription_id, base_url=arm.endpoint,
                                 credential_scopes=[arm.scope])


def _parse_id(resource_id):
    parts = resource_id.strip('/').split('/')
    lower = [p.lower() for p in parts]
    return parts[lower.index('resourcegroups') + 1]


def _raw_json(pipeline_response, deserialized, headers):  # pylint: disable=unused-argument
    return json.loads(pipeline_response.http_response.text())


def account_view(arm_json, subscription_id):
    """The account dict from ARM's BatchAccount JSON: its properties, plus batchAccount, batchResourceGroup,
    batchEndpoint (https URL), batchLocation, batchAccountId, subscriptionId."""
    props = dict(arm_json.get('properties') or {})
    endpoint = props.get('accountEndpoint') or ''
    if endpoint and '://' not in endpoint:
        endpoint = 'https://' + endpoint
    props.update(batchAccount=arm_json['name'], batchResourceGroup=_parse_id(arm_json['id']),
                 batchEndpoint=endpoint, batchLocation=arm_json.get('location'), batchAccountId=arm_json['id'],
                 subscriptionId=subscription_id)
    return props


def find_account(name, resource_group=None, credential=None, arm=None):
    """The account dict (see account_view) of Batch account ``name`` (in ``resource_group``, else the one of that
    name in the subscription); Refusal naming what is missing and how to fix it."""
    from azure.core.exceptions import HttpResponseError  # pylint: disable=import-outside-toplevel
    arm = arm or az_arm_target()
    credential = credential or az_credential(arm.audience)
    client = _mgmt_client(credential, arm)
    where = "Batch account '{}'{} in subscription {}".format(
        name, " in resource group '{}'".format(resource_group) if resource_group else '', arm.subscription_id)
    if not resource_group:
        try:
            found = [a for a in client.batch_account.list() if (a.name or '').lower() == name.lower()]
        except HttpResponseError as ex:
            raise _arm_failure(ex, 'Listing the Batch accounts of subscription {}'.format(arm.subscription_id)) \
                from None
        if not found:
            raise Refusal("{}: not found. Create it (az batch account create -n {} -g GROUP -l LOCATION), or choose "
                          "the subscription that has it (az account set -s ...).".format(where, name),
                          code='BatchAccountNotFound')
        groups = sorted({_parse_id(a.id) for a in found})
        if len(groups) > 1:
            raise Refusal('{}: several accounts have this name (resource groups {}): give the resource group with '
                          '-g.'.format(where, ', '.join(groups)), code='BatchAccountAmbiguous')
        resource_group = groups[0]
    try:
        answer = client.batch_account.get(resource_group, name, cls=_raw_json)
    except HttpResponseError as ex:
        failure = _arm_failure(ex, where)
        if failure.code == 'BatchAccountNotFound':
            failure = Refusal("{}: not found. Check the name and group (az batch account list -o table), or choose "
                              "the subscription that has it (az account set -s ...).".format(where),
                              code='BatchAccountNotFound')
        raise failure from None
    return account_view(answer, arm.subscription_id)


def _arm_for(account, arm):  # pylint: disable=unused-argument
    return arm or az_arm_target()


def rest_json(model):
    """An SDK model as the REST JSON it came from (camelCase), whichever generator made the SDK."""
    if hasattr(model, 'serialize'):  # msrest-style models (azure-mgmt-* today)
        return model.serialize(keep_readonly=True)
    return model.as_dict()  # azure-core typespec models (azure-batch 15)


def arm_get_all(path, api_version, credential, arm, what):
    """The `value` entries of an ARM GET of ``path`` (following nextLink), as JSON; Refusal (what failed) on error.
    For ARM APIs the scheduler reads raw, whatever the version of the SDK that would wrap them."""
    from azure.core import PipelineClient  # pylint: disable=import-outside-toplevel
    from azure.core.exceptions import HttpResponseError  # pylint: disable=import-outside-toplevel
    from azure.core.pipeline import policies  # pylint: disable=import-outside-toplevel
    from azure.core.rest import HttpRequest  # pylint: disable=import-outside-toplevel
    client = PipelineClient(arm.endpoint, policies=[
        policies.HeadersPolicy(), policies.UserAgentPolicy('azext-batchai-sweep'), policies.RetryPolicy(),
        policies.BearerTokenCredentialPolicy(credential or az_credential(arm.audience), arm.scope)])
    url = '{}{}?api-version={}'.format(arm.endpoint, path, api_version)
    values = []
    while url:
        response = client.send_request(HttpRequest('GET', url))
        try:
            response.raise_for_status()
        except HttpResponseError as ex:
            if ex.error is None:  # send_request does not parse ARM's error body: do it for _arm_failure
                from azure.core.exceptions import ODataV4Format  # pylint: disable=import-outside-toplevel
                try:
                    ex.error = ODataV4Format(response.json())
                except Exception:  # pylint: disable=broad-except
                    pass
            raise _arm_failure(ex, what) from None
        answer = response.json()
        values.extend(answer.get('value') or [])
        url = answer.get('nextLink')
    return values


def list_vm_skus(account, credential=None, arm=None):
    """The VM sizes Batch offers in the account's region: ARM JSON (name, familyName, capabilities [{name, value}],
    batchSupportEndOfLife)."""
    from azure.core.exceptions import HttpResponseError  # pylint: disable=import-outside-toplevel
    arm = _arm_for(account, arm)
    client = _mgmt_client(credential or az_credential(arm.audience), arm)
    try:
        return [rest_json(sku)
                for sku in client.location.list_supported_virtual_machine_skus(account['batchLocation'])]
    except HttpResponseError as ex:
        raise _arm_failure(ex, 'Listing the VM sizes Batch offers in {}'.format(account['batchLocation'])) from None


def list_compute_usages(account, credential=None, arm=None):
    """The subscription's compute usages in the account's region (Microsoft.Compute usages JSON: name {value,
    localizedValue}, currentValue, limit): the vCPU quotas a UserSubscription account's pools draw on."""
    from azure.core.exceptions import HttpResponseError  # pylint: disable=import-outside-toplevel
    from azure.mgmt.compute import ComputeManagementClient  # pylint: disable=import-outside-toplevel
    arm = _arm_for(account, arm)
    client = ComputeManagementClient(credential or az_credential(arm.audience), arm.subscription_id,
                                     base_url=arm.endpoint, credential_scopes=[arm.scope])
    try:
        return [rest_json(usage) for usage in client.usage.list(account['batchLocation'])]
    except HttpResponseError as ex:
        raise _arm_failure(ex, 'Reading the vCPU quotas of subscription {} in {}'.format(
            arm.subscription_id, account['batchLocation'])) from None


def batch_client(account, credential, **options):
    """The SDK's BatchClient for the account's data plane with a Batch-audience credential (az's login);
    ``options``: azure-core client options (retry_total...)."""
    from azure.batch import BatchClient  # pylint: disable=import-outside-toplevel
    return BatchClient(account['batchEndpoint'], credential, **options)


def list_supported_images(account, credential, client=None):
    """The data plane's `supportedimages` (ImageInformation JSON: nodeAgentSKUId, imageReference, osType,
    capabilities, batchSupportEndOfLife, verificationType)."""
    client = client or batch_client(account, credential)
    return [rest_json(image) for image in client.list_supported_images()]
