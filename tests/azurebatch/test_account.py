"""azurebatch/account.py: the Batch account, its region's VM sizes, quotas and supported images, found the way the
service finds them: az's real login (offline: tests/azurebatch/login_fixtures.py), azure-mgmt-batch and the Batch
SDK over TLS to the loopback ARM double (tests/azurebatch/arm_double/, test code standing in for ARM)."""
import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import account as account_mod
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal
from tests.azurebatch.login_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import (fixtures)

pytestmark = pytest.mark.az


def test_arm_target_is_az_active_cloud_and_subscription(batch_login):
    target = account_mod.az_arm_target()  # az cloud show / az account show, run for real
    assert target.endpoint == batch_login.arm_endpoint
    assert target.audience == batch_login.arm_audience
    assert target.scope == 'https://management.core.windows.net/.default'
    assert target.subscription_id == batch_login.subscription_id


def test_find_account_by_group(batch_login, arm_target):
    double = batch_login.double
    account_id = double.add_batch_account(
        'acct', resource_group='rg1', location='westeurope', dedicatedCoreQuota=24, lowPriorityCoreQuota=0,
        dedicatedCoreQuotaPerVMFamily=[{'name': 'standardDSv3Family', 'coreQuota': 8}],
        dedicatedCoreQuotaPerVMFamilyEnforced=True, poolQuota=20, activeJobAndJobScheduleQuota=100)
    double.assign('Reader', double.resource_group_id('rg1'))
    found = account_mod.find_account('acct', 'rg1', credential=batch_login.credential(), arm=arm_target)
    assert found['batchAccount'] == 'acct'
    assert found['batchResourceGroup'] == 'rg1'
    assert found['batchAccountId'] == account_id
    assert found['batchLocation'] == 'westeurope'
    assert found['batchEndpoint'] == double.batch_endpoint  # accountEndpoint has no scheme: https added
    assert found['subscriptionId'] == batch_login.subscription_id
    assert found['poolAllocationMode'] == 'BatchService'
    assert found['allowedAuthenticationModes'] == ['SharedKey', 'AAD', 'TaskAuthenticationToken']
    assert found['dedicatedCoreQuota'] == 24
    assert found['lowPriorityCoreQuota'] == 0
    assert found['dedicatedCoreQuotaPerVMFamily'] == [{'name': 'standardDSv3Family', 'coreQuota': 8}]
    assert found['dedicatedCoreQuotaPerVMFamilyEnforced'] is True
    assert (found['poolQuota'], found['activeJobAndJobScheduleQuota']) == (20, 100)


def test_find_account_without_group_searches_the_subscription(batch_login, arm_target):
    double = batch_login.double
    double.add_batch_account('other', resource_group='rg0')
    double.add_batch_account('Acct', resource_group='rg2', poolAllocationMode='UserSubscription',
                             dedicatedCoreQuota=None, lowPriorityCoreQuota=None, dedicatedCoreQuotaPerVMFamily=None)
    double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    found = account_mod.find_account('acct', credential=batch_login.credential(), arm=arm_target)
    assert (found['batchAccount'], found['batchResourceGroup']) == ('Acct', 'rg2')
    assert found['poolAllocationMode'] == 'UserSubscription'
    # a user-subscription account has no Batch core quotas: they are the subscription's (list_compute_usages)
    assert found.get('dedicatedCoreQuota') is None


def test_find_account_with_defaults_uses_az_login(batch_login):
    """No credential and no ARM target given: both come from az (auth.py's credential, az cloud/account show)."""
    pytest.importorskip('azext_batchai_sweep.localservice.schedulers.azurebatch.auth',
                        reason='auth.py (az login as a credential) comes with the scheduler branch')
    batch_login.double.add_batch_account('acct', resource_group='rg1')
    batch_login.double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    assert account_mod.find_account('acct', 'rg1')['batchResourceGroup'] == 'rg1'


@pytest.mark.parametrize('name, group, expected', [
    ('missing', 'rg1', "Batch account 'missing' in resource group 'rg1' in subscription {sub}: not found. Check "
                       'the name and group (az batch account list -o table)'),
    ('missing', None, "Batch account 'missing' in subscription {sub}: not found. Create it (az batch account create "
                      '-n missing -g GROUP -l LOCATION), or choose the subscription that has it (az account set'),
    ('acct', 'rg-other', "Batch account 'acct' in resource group 'rg-other' in subscription {sub}: not found."),
])
def test_account_not_found(batch_login, arm_target, name, group, expected):
    batch_login.double.add_batch_account('acct', resource_group='rg1')
    batch_login.double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    with pytest.raises(Refusal) as refused:
        account_mod.find_account(name, group, credential=batch_login.credential(), arm=arm_target)
    assert expected.format(sub=batch_login.subscription_id) in refused.value.reason
    assert refused.value.code == 'BatchAccountNotFound'


def test_same_name_in_two_groups_needs_the_group(batch_login, arm_target):
    batch_login.double.add_batch_account('acct', resource_group='rg1', location='eastus')
    batch_login.double.add_batch_account('acct', resource_group='rg2', location='westus')
    batch_login.double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    with pytest.raises(Refusal) as refused:
        account_mod.find_account('acct', credential=batch_login.credential(), arm=arm_target)
    assert 'several accounts have this name (resource groups rg1, rg2): give the resource group with -g' \
        in refused.value.reason


@pytest.mark.parametrize('role, scope', [(None, None), ('Storage Blob Data Reader', 'sub')])
def test_no_read_access_names_the_role(batch_login, arm_target, role, scope):
    batch_login.double.add_batch_account('acct', resource_group='rg1')
    if role:
        batch_login.double.assign(role, '/subscriptions/' + batch_login.subscription_id)
    with pytest.raises(Refusal) as refused:
        account_mod.find_account('acct', 'rg1', credential=batch_login.credential(), arm=arm_target)
    assert refused.value.code == 'AuthorizationFailed'
    assert "az's login may not read it (AuthorizationFailed" in refused.value.reason
    assert 'Assign the Reader role (or Azure Batch Account Reader) on the Batch account' in refused.value.reason


def test_expired_login_says_log_in_again(batch_login, arm_target):
    batch_login.double.add_batch_account('acct', resource_group='rg1')
    batch_login.double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)

    class Stale:
        def get_token(self, *scopes, **kwargs):  # a token the double never issued (a stand-in for an expired one)
            from azure.core.credentials import AccessToken
            return AccessToken('not-a-token', 2 ** 31)
    with pytest.raises(Refusal) as refused:
        account_mod.find_account('acct', 'rg1', credential=Stale(), arm=arm_target)
    assert refused.value.code == 'AzLoginRefused'
    assert "ARM refused az's login (InvalidAuthenticationToken). Log in again with 'az login'." in refused.value.reason


def test_vm_skus_of_the_account_region(batch_login, arm_target):
    double = batch_login.double
    double.vm_skus['westeurope'] = [
        {'name': 'Standard_NC4as_T4_v3', 'familyName': 'Standard NCASv3_T4 Family',
         'capabilities': [{'name': 'vCPUs', 'value': '4'}, {'name': 'GPUs', 'value': '1'}]},
        {'name': 'Standard_A1_v2', 'familyName': 'standardAv2Family', 'batchSupportEndOfLife': '2026-01-01T00:00:00Z',
         'capabilities': [{'name': 'vCPUs', 'value': '1'}]}]
    double.add_batch_account('acct', resource_group='rg1', location='westeurope')
    double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    found = account_mod.find_account('acct', 'rg1', credential=batch_login.credential(), arm=arm_target)
    skus = account_mod.list_vm_skus(found, credential=batch_login.credential(), arm=arm_target)
    assert [s['name'] for s in skus] == ['Standard_NC4as_T4_v3', 'Standard_A1_v2']
    assert skus[0]['familyName'] == 'Standard NCASv3_T4 Family'
    assert {'name': 'GPUs', 'value': '1'} in skus[0]['capabilities']
    assert skus[1]['batchSupportEndOfLife'].startswith('2026-01-01T00:00:00')
    assert ('arm', 'GET', '/subscriptions/{}/providers/Microsoft.Batch/locations/westeurope/virtualMachineSkus'
            .format(batch_login.subscription_id)) in double.requests
    # another region's list is another answer
    other = dict(found, batchLocation='eastus')
    other_skus = account_mod.list_vm_skus(other, batch_login.credential(), arm_target)
    assert 'Standard_D2s_v3' in [s['name'] for s in other_skus]


def test_compute_usages_for_a_user_subscription_account(batch_login, arm_target):
    double = batch_login.double
    double.compute_usages['eastus'] = [
        {'name': {'value': 'cores', 'localizedValue': 'Total Regional vCPUs'}, 'currentValue': 4, 'limit': 10,
         'unit': 'Count'},
        {'name': {'value': 'standardDSv3Family', 'localizedValue': 'Standard DSv3 Family vCPUs'}, 'currentValue': 0,
         'limit': 0, 'unit': 'Count'}]
    double.add_batch_account('acct', resource_group='rg1', poolAllocationMode='UserSubscription')
    double.assign('Reader', '/subscriptions/' + batch_login.subscription_id)
    found = account_mod.find_account('acct', 'rg1', credential=batch_login.credential(), arm=arm_target)
    usages = account_mod.list_compute_usages(found, credential=batch_login.credential(), arm=arm_target)
    assert [(u['name']['value'], u['currentValue'], u['limit']) for u in usages] == [
        ('cores', 4, 10), ('standardDSv3Family', 0, 0)]


def test_supported_images_from_the_data_plane(batch_login, arm_target):
    """The Batch SDK's BatchClient, az's token for the Batch audience, TLS trusted through REQUESTS_CA_BUNDLE."""
    double = batch_login.double
    double.add_batch_account('acct', resource_group='rg1')
    double.assign('Azure Batch Data Contributor', '/subscriptions/' + batch_login.subscription_id)
    found = account_mod.find_account('acct', 'rg1', credential=batch_login.credential(), arm=arm_target)
    images = account_mod.list_supported_images(found, batch_login.credential())
    assert [i['nodeAgentSKUId'] for i in images] == [
        'batch.node.ubuntu 22.04', 'batch.node.ubuntu 24.04', 'batch.node.ubuntu 20.04']
    assert images[0]['imageReference']['offer'] == '0001-com-ubuntu-server-jammy'
    assert images[2]['batchSupportEndOfLife'].startswith('2025-04-23')
    assert ('batch', 'GET', '/supportedimages') in double.requests


def test_rest_json_of_both_sdk_model_kinds():
    """Models of the msrest generator (azure-mgmt-batch) and of the typespec one (azure-batch) both come back as the
    REST JSON they were read from."""
    from azure.batch import models as batch_models
    from azure.mgmt.batch import models as mgmt_models
    sku = mgmt_models.SupportedSku.deserialize({'name': 'Standard_D2s_v3', 'familyName': 'standardDSv3Family',
                                                'capabilities': [{'name': 'vCPUs', 'value': '2'}]})
    assert account_mod.rest_json(sku) == {'name': 'Standard_D2s_v3', 'familyName': 'standardDSv3Family',
                                          'capabilities': [{'name': 'vCPUs', 'value': '2'}]}
    image = batch_models.BatchSupportedImage({'nodeAgentSKUId': 'batch.node.ubuntu 22.04', 'osType': 'linux',
                                              'imageReference': {'publisher': 'canonical'},
                                              'verificationType': 'verified'})
    assert account_mod.rest_json(image)['imageReference'] == {'publisher': 'canonical'}


def test_the_doubles_supported_images_conform_to_the_batch_spec():
    """The stand-in's `supportedimages` entries are ImageInformation of the Batch spec in the repository (strict:
    no invented or misspelt field), so what account.py and images.py are tested on has the real shape."""
    import json
    import os
    from jsonschema import Draft4Validator
    from tests.azurebatch.arm_double.server import default_supported_images
    from tests.fixtures_az import SPECS_DIR
    from tests.spec_conformance import _strict
    with open(os.path.join(SPECS_DIR, 'batch-2024-02-01.19.0', 'BatchService.json'), encoding='utf-8') as f:
        spec = json.load(f)
    definitions = spec['definitions']
    spec['definitions'] = {name: _strict(schema, definitions) for name, schema in definitions.items()}
    validator = Draft4Validator(dict(spec, **{'$ref': '#/definitions/AccountListSupportedImagesResult'}))
    assert not [e.message for e in validator.iter_errors({'value': default_supported_images()})]
    broken = dict(default_supported_images()[0], nodeAgentSkuId='batch.node.ubuntu 22.04')  # misspelt field
    assert [e.message for e in validator.iter_errors({'value': [broken]})]


def _unknown_fields(model_class, body, models):
    """Fields of ``body`` that the SDK's model (generated from the ARM spec az's SDK speaks) does not have,
    recursively through nested models and lists of them."""
    fields = {}
    for attribute in model_class._attribute_map.values():  # pylint: disable=protected-access
        fields[attribute['key'].replace('\\.', '.')] = attribute['type']
    unknown = []
    flat = {}
    for key, value in body.items():
        if key == 'properties' and isinstance(value, dict):
            flat.update({'properties.' + k: v for k, v in value.items()})
        else:
            flat[key] = value
    for key, value in flat.items():
        kind = fields.get(key)
        if kind is None:
            unknown.append(key)
            continue
        nested = getattr(models, kind.strip('[]'), None)
        for item in (value if isinstance(value, list) else [value]):
            if nested is not None and isinstance(item, dict) and hasattr(nested, '_attribute_map'):
                unknown += ['{}.{}'.format(key, k) for k in _unknown_fields(nested, item, models)]
    return unknown


def test_the_arm_doubles_answers_have_the_sdks_fields(arm_double):
    """The ARM double's accounts, SKUs and usages use only fields of the models azure-mgmt-batch and
    azure-mgmt-compute were generated with (from the ARM specs of the API versions they speak)."""
    from azure.mgmt.batch import models as batch_models
    from azure.mgmt.compute import models as compute_models
    from tests.azurebatch.arm_double.server import default_vm_skus
    arm_double.add_batch_account('acct')
    for account in arm_double.accounts.values():
        assert _unknown_fields(batch_models.BatchAccount, account, batch_models) == []
    for sku in default_vm_skus():
        assert _unknown_fields(batch_models.SupportedSku, sku, batch_models) == []
    usage = {'name': {'value': 'cores', 'localizedValue': 'Total Regional vCPUs'}, 'currentValue': 0, 'limit': 10,
             'unit': 'Count'}
    assert _unknown_fields(compute_models.Usage, usage, compute_models) == []
    assert _unknown_fields(batch_models.SupportedSku, {'name': 'x', 'familyname': 'y'}, batch_models) == ['familyname']


def test_importing_account_and_preflight_loads_no_sdk():
    """`--scheduler processes` never pays for the SDKs: they are imported by the functions that call Azure."""
    import subprocess
    import sys
    code = ('import sys; import azext_batchai_sweep.localservice.schedulers.scheduler; before = set(sys.modules); '
            'from azext_batchai_sweep.localservice.schedulers.azurebatch import account, preflight; '
            'print("\\n".join(m for m in set(sys.modules) - before if m.split(".")[0] in '
            '("azure", "msrest", "knack", "requests", "msal")))')
    loaded = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []
