"""A real, offline `az login` for tests of the Azure Batch scheduler (test code only).

There is no Azure and no network here, yet tests must use the real `az` and its real login. What makes it work:
- `az login --identity` asks msal's ManagedIdentityClient for a token. With IDENTITY_ENDPOINT and IDENTITY_HEADER
  set (App Service's managed identity protocol) msal GETs that endpoint, plain HTTP, wherever it is: here, the
  ARM double's identity endpoint on 127.0.0.1. (Cloud Shell's own path cannot be used: msal posts to the fixed
  http://localhost:50342 there, so parallel tests would collide on one port.) az reads only the token's claims
  (tid) without verifying its signature, then lists subscriptions from the active cloud's ARM endpoint.
- `az cloud register` with the ARM endpoint on the double (TLS, a throw-away test CA) in a temporary
  AZURE_CONFIG_DIR, `--skip-endpoint-discovery` so registering reads nothing, and Azure's Batch resource id (as in
  AzureCloud, for az's own `az batch` commands). REQUESTS_CA_BUNDLE makes az, msal's
  requests session and every azure-core SDK client trust the test CA.
- Afterwards `az account show`, `az account get-access-token --resource https://batch.core.windows.net/` and any
  SDK client built on az's credential (azure-mgmt-batch, azure-batch) work as they do with Azure: every token comes
  from the identity endpoint, every ARM call goes to the double.

Use:
    from tests.azurebatch.login_fixtures import *  # noqa: F401,F403 (the fixtures arm_double, az_offline_login)

    def test_x(az_offline_login):
        login = az_offline_login
        login.double.add_batch_account('acct')            # ARM state (see arm_double/server.py)
        login.az('account', 'show')                       # the real az, logged in
        subprocess.run(..., env={**os.environ, **login.env})   # a service process that uses az's login
        credential = login.credential()                   # an azure-core TokenCredential: `az account get-access-token`
        login.use_in_this_process(monkeypatch)            # os.environ as a process started by that user has it

    With the lifecycle double of the Batch data plane (tests/azurebatch/conftest.py's batch_double/batch_prism) as
    the accounts' data plane, az's own Batch tokens accepted there:
        login.double.serve_batch_with(batch_prism); login.trust(batch_prism.ca_file)
        login.double.add_batch_account('acct')          # accountEndpoint: the double's (Prism's) endpoint
    Fixtures `batch_login` (the login in this process's environment) and `arm_target` (account.ArmTarget) too.
"""
import json
import os
import time

import pytest

from tests.azurebatch.arm_double.server import ARM_AUDIENCE, IDENTITY_HEADER, running
from tests.fixtures_az import AzRunner

CLOUD_NAME = 'BatchTestCloud'
BATCH_RESOURCE = 'https://batch.core.windows.net/'


class AzCliTokenCredential:
    """An azure-core TokenCredential that asks the real `az` (``runner``) for each token, as a process that only
    has az's login can: `az account get-access-token --scope`. Test helper; the scheduler's own credential is
    azurebatch/auth.py."""

    def __init__(self, runner, tokens=None):
        self._runner = runner
        self._tokens = {} if tokens is None else tokens  # scopes -> AccessToken, kept until 5 minutes before expiry
        self.calls = 0

    def get_token(self, *scopes, **kwargs):  # pylint: disable=unused-argument
        from azure.core.credentials import AccessToken
        from azure.core.exceptions import ClientAuthenticationError
        cached = self._tokens.get(scopes)
        if cached and cached.expires_on - 300 > time.time():
            return cached
        self.calls += 1
        result = self._runner('account', 'get-access-token', '--scope', *scopes, timeout=120)
        if result.exit_code != 0:
            raise ClientAuthenticationError(message='az account get-access-token failed: ' + result.stderr[-500:])
        answer = json.loads(result.stdout)
        self._tokens[scopes] = AccessToken(answer['accessToken'], int(answer['expires_on']))
        return self._tokens[scopes]


class OfflineLogin:
    """az logged in (managed identity) to a custom cloud whose ARM is ``double``, in ``config_dir``.

    ``env``: what every az run or service process needs to use this login (besides AZURE_CONFIG_DIR, which
    ``az`` and ``process_env()`` add). ``az``: an AzRunner with that environment.
    """

    def __init__(self, double, config_dir, cwd=None):
        self.double = double
        self.config_dir = config_dir
        # One CA bundle file for every double the login's processes talk to (trust() adds to it).
        self.ca_bundle = os.path.join(config_dir, 'test-ca-bundle.pem')
        self._trusted = []
        self._tokens = {}
        self.trust(double.ca.ca_file)
        # Empty ACC_CLOUD/AZUREPS_HOST_ENVIRONMENT: run inside Cloud Shell, az and msal would otherwise take
        # Cloud Shell's own login path (msal's authority discovery, then a fixed localhost:50342) instead.
        self.env = {'IDENTITY_ENDPOINT': double.identity_endpoint, 'IDENTITY_HEADER': IDENTITY_HEADER,
                    'REQUESTS_CA_BUNDLE': self.ca_bundle, 'ACC_CLOUD': '', 'AZUREPS_HOST_ENVIRONMENT': ''}
        self.az = AzRunner(config_dir, env=self.env, cwd=cwd)
        self.cloud_name = CLOUD_NAME
        self.arm_endpoint = double.arm_endpoint
        self.arm_audience = ARM_AUDIENCE
        self.subscription_id = double.subscription_id
        self.tenant_id = double.tenant_id
        self.principal_id = double.principal_id

    def login(self):
        steps = [('cloud', 'register', '-n', CLOUD_NAME, '--endpoint-resource-manager', self.arm_endpoint + '/',
                  '--endpoint-active-directory', 'https://login.test.invalid',
                  '--endpoint-active-directory-resource-id', ARM_AUDIENCE, '--skip-endpoint-discovery',
                  # Azure's storage suffix, as in AzureCloud: `cluster create --storage-account-name` builds the
                  # share's URL with it (https://NAME.file.core.windows.net/SHARE).
                  '--suffix-storage-endpoint', 'core.windows.net'),
                 # Azure's Batch resource, as in AzureCloud: az's own `az batch` commands (the smoke script's check
                 # that no pool is left) ask az's login for a token of it (register has no option for it).
                 ('cloud', 'update', '-n', CLOUD_NAME, '--cloud-config',
                  json.dumps({'endpoints': {'batchResourceId': BATCH_RESOURCE}})),
                 ('cloud', 'set', '-n', CLOUD_NAME),
                 ('login', '--identity')]
        for args in steps:
            result = self.az(*args, timeout=120)
            if result.exit_code != 0:
                raise RuntimeError('az {} failed ({}): {}'.format(' '.join(args[:2]), result.exit_code,
                                                                  result.stderr[-2000:]))
        self.login_requests = list(self.double.requests)  # what `az login --identity` asked of the doubles
        return self

    def trust(self, ca_file):
        """Add ``ca_file`` (another double's test CA, e.g. batch_double.ca_file) to the bundle REQUESTS_CA_BUNDLE
        names, for every az run and process started from now on."""
        if ca_file not in self._trusted:
            self._trusted.append(ca_file)
        pems = []
        for path in self._trusted:
            with open(path, encoding='ascii') as f:
                pems.append(f.read().strip() + '\n')
        with open(self.ca_bundle, 'w', encoding='ascii') as f:
            f.write(''.join(pems))

    def process_env(self, base=None):
        """A full environment for a child process (e.g. the local service) that uses this login."""
        env = dict(os.environ if base is None else base)
        env.update(self.env)
        env['AZURE_CONFIG_DIR'] = self.config_dir
        return env

    def use_in_this_process(self, monkeypatch):
        """Put this login's environment into the test process (as a service started from that shell has it), so
        in-process code reaches it: az's Profile (azure.cli.core), REQUESTS_CA_BUNDLE for SDK clients."""
        for name, value in self.process_env({}).items():
            monkeypatch.setenv(name, value)

    def credential(self):
        """An AzCliTokenCredential sharing this login's token cache (one az run per scope while tokens last)."""
        return AzCliTokenCredential(self.az, self._tokens)

    def forget_refused_tokens(self):
        """Drop cached tokens the double no longer accepts (revoke_tokens), so the next test asks az again."""
        for scopes, token in list(self._tokens.items()):
            audience = scopes[0][:-len('.default')] if scopes and scopes[0].endswith('.default') else ''
            if not self.double.token_claims('Bearer ' + token.token, audience):
                del self._tokens[scopes]


@pytest.fixture(scope='module')
def _module_arm_double(tmp_path_factory):
    with running(str(tmp_path_factory.mktemp('arm-double-tls'))) as double:
        yield double


@pytest.fixture(scope='module')
def _module_offline_login(_module_arm_double, tmp_path_factory):
    started = time.monotonic()
    login = OfflineLogin(_module_arm_double, str(tmp_path_factory.mktemp('azure-config-login'))).login()
    login.seconds = time.monotonic() - started
    return login


@pytest.fixture
def arm_double(_module_arm_double):
    """The loopback ARM + managed identity + minimal Batch data plane (tests/azurebatch/arm_double/server.py),
    one per test module (its servers and test CA), reset for each test: no account, no role assignment."""
    _module_arm_double.reset()
    return _module_arm_double


@pytest.fixture
def az_offline_login(arm_double, _module_offline_login):
    """The real az, logged in with `az login --identity` to a custom cloud served by ``arm_double``: an
    OfflineLogin (``.az``, ``.env``, ``.process_env()``, ``.use_in_this_process()``, ``.credential()``,
    ``.trust()``, ``.double``, ids). One login per test module (its config dir), the double reset for each test
    (and the CA bundle back to the ARM double's CA)."""
    _module_offline_login._trusted = []
    _module_offline_login.trust(arm_double.ca.ca_file)
    _module_offline_login.forget_refused_tokens()
    return _module_offline_login


@pytest.fixture
def batch_login(az_offline_login, monkeypatch):
    """``az_offline_login`` with its environment in this test's process (use_in_this_process), as in a service
    that user started: in-process SDK clients trust the test CA, `az` run from here is logged in."""
    az_offline_login.use_in_this_process(monkeypatch)
    return az_offline_login


@pytest.fixture
def arm_target(az_offline_login):
    """account.ArmTarget of the login (what account.az_arm_target() finds: tests/azurebatch/test_account.py)."""
    from azext_batchai_sweep.localservice.schedulers.azurebatch.account import ArmTarget
    return ArmTarget(az_offline_login.arm_endpoint, az_offline_login.arm_audience, az_offline_login.subscription_id)


__all__ = ['arm_double', 'az_offline_login', 'batch_login', 'arm_target', '_module_arm_double',
           '_module_offline_login', 'OfflineLogin', 'AzCliTokenCredential']
