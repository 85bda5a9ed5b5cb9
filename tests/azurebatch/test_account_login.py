"""The offline az login the Azure Batch tests stand on: the real az, `az login --identity` against the loopback
managed-identity endpoint and a custom cloud whose ARM is the test double (tests/azurebatch/login_fixtures.py)."""
import base64
import json

import pytest

from tests.azurebatch.login_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import (fixtures)

pytestmark = pytest.mark.az


def _claims(token):
    payload = token.split('.')[1]
    return json.loads(base64.urlsafe_b64decode(payload + '=' * (-len(payload) % 4)))


def test_az_account_show_is_the_identity_in_the_test_cloud(az_offline_login):
    shown = az_offline_login.az('account', 'show')
    assert shown.exit_code == 0, shown.stderr
    account = shown.json()
    assert account['id'] == az_offline_login.subscription_id
    assert account['tenantId'] == az_offline_login.tenant_id
    assert account['environmentName'] == 'BatchTestCloud'
    assert account['user']['type'] == 'servicePrincipal'
    # az login listed the subscriptions from the double's ARM with a token from the double's identity endpoint
    assert az_offline_login.login_requests == [('identity', 'GET', '/msi/token'), ('arm', 'GET', '/subscriptions')]


@pytest.mark.parametrize('resource', ['https://batch.core.windows.net/', 'https://storage.azure.com/'])
def test_get_access_token_for_a_data_plane_resource(az_offline_login, resource):
    got = az_offline_login.az('account', 'get-access-token', '--resource', resource)
    assert got.exit_code == 0, got.stderr
    token = got.json()
    claims = _claims(token['accessToken'])
    assert claims['aud'] == resource
    assert claims['oid'] == az_offline_login.principal_id
    assert token['subscription'] == az_offline_login.subscription_id
    assert az_offline_login.double.token_claims('Bearer ' + token['accessToken'], resource)


def test_a_new_config_dir_is_not_logged_in(az_offline_login, tmp_path):
    """The login lives in its config dir only: another dir (a user's own ~/.azure) is untouched."""
    from tests.fixtures_az import AzRunner
    other = tmp_path / 'other-config'
    other.mkdir()
    shown = AzRunner(str(other), env=az_offline_login.env)('account', 'show')
    assert shown.exit_code != 0
    assert 'az login' in shown.stderr


def test_mgmt_sdk_through_az_credential(az_offline_login, monkeypatch):
    """azure-mgmt-batch with tokens from the real az (`az account get-access-token`), trusting the test CA the way a
    user's process does: REQUESTS_CA_BUNDLE in its environment, nothing passed to the client."""
    from azure.mgmt.batch import BatchManagementClient
    double = az_offline_login.double
    account_id = double.add_batch_account('acct', resource_group='rg1', location='westeurope')
    double.assign('Reader', double.resource_group_id('rg1'))
    az_offline_login.use_in_this_process(monkeypatch)
    credential = AzCliTokenCredential(az_offline_login.az)  # its own token cache: the one az run is counted
    client = BatchManagementClient(credential, az_offline_login.subscription_id,
                                   base_url=az_offline_login.arm_endpoint,
                                   credential_scopes=[az_offline_login.arm_audience + '.default'])
    account = client.batch_account.get('rg1', 'acct')
    assert account.id == account_id
    assert account.location == 'westeurope'
    assert credential.calls == 1


_PROFILE_SCRIPT = """
import json
from azure.cli.core import get_default_cli
from azure.cli.core._profile import Profile
from azure.mgmt.batch import BatchManagementClient
cli = get_default_cli()
credential, subscription, tenant = Profile(cli_ctx=cli).get_login_credentials()
endpoints = cli.cloud.endpoints
client = BatchManagementClient(credential, subscription, base_url=endpoints.resource_manager,
                               credential_scopes=[endpoints.active_directory_resource_id + '.default'])
print(json.dumps({'subscription': subscription, 'tenant': tenant, 'arm': endpoints.resource_manager,
                  'endpoint': client.batch_account.get('rg1', 'acct').account_endpoint,
                  'batch_token': credential.get_token('https://batch.core.windows.net//.default').token}))
"""


def test_az_profile_credential_in_a_process_started_with_the_login(az_offline_login):
    """az's own Profile in a Python process started with the login's environment (what a service can use instead of
    running `az`; azure.cli.core reads its config dir at import, hence a fresh process): its credential and its
    cloud's ARM endpoint reach the double."""
    import subprocess
    import sys
    double = az_offline_login.double
    double.add_batch_account('acct', resource_group='rg1')
    double.assign('Reader', '/subscriptions/' + az_offline_login.subscription_id)
    proc = subprocess.run([sys.executable, '-c', _PROFILE_SCRIPT], env=az_offline_login.process_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert (answer['subscription'], answer['tenant']) == (az_offline_login.subscription_id, az_offline_login.tenant_id)
    assert answer['arm'].rstrip('/') == az_offline_login.arm_endpoint
    assert answer['endpoint'] == double.batch_endpoint.split('://')[1]
    assert _claims(answer['batch_token'])['aud'] == 'https://batch.core.windows.net/'


def test_the_double_refuses_tokens_it_did_not_issue(az_offline_login, monkeypatch):
    """The double checks tokens (its stand-in for Entra ID's signature): after revoke_tokens the same client fails
    with 401 until az fetches a new token."""
    from azure.core.exceptions import ClientAuthenticationError
    from azure.mgmt.batch import BatchManagementClient
    double = az_offline_login.double
    double.add_batch_account('acct', resource_group='rg1')
    double.assign('Reader', '/subscriptions/' + az_offline_login.subscription_id)
    az_offline_login.use_in_this_process(monkeypatch)
    client = BatchManagementClient(az_offline_login.credential(), az_offline_login.subscription_id,
                                   base_url=az_offline_login.arm_endpoint,
                                   credential_scopes=[az_offline_login.arm_audience + '.default'])
    client.batch_account.get('rg1', 'acct')
    double.revoke_tokens()
    with pytest.raises(ClientAuthenticationError) as raised:
        client.batch_account.get('rg1', 'acct')
    assert 'InvalidAuthenticationToken' in str(raised.value)


def test_login_works_when_the_tests_run_in_cloud_shell(arm_double, tmp_path, monkeypatch):
    """Cloud Shell sets ACC_CLOUD and AZUREPS_HOST_ENVIRONMENT; az would then take Cloud Shell's own login path
    (msal's authority discovery over the network): the login's environment empties them."""
    monkeypatch.setenv('ACC_CLOUD', 'PROD')
    monkeypatch.setenv('AZUREPS_HOST_ENVIRONMENT', 'cloud-shell/1.0')
    (tmp_path / 'cfg').mkdir()
    login = OfflineLogin(arm_double, str(tmp_path / 'cfg')).login()
    shown = login.az('account', 'show')
    assert shown.exit_code == 0, shown.stderr
    assert shown.json()['user']['assignedIdentityInfo'] == 'MSI'
