"""A loopback stand-in for the Azure parts the Batch scheduler's account lookup and preflight talk to (TEST CODE
ONLY: there is no Azure here and no network).

Three real servers on 127.0.0.1, each a small subset of the real REST API with the real shapes:
- ``identity_endpoint`` (plain HTTP, as App Service's is): the managed-identity token endpoint msal calls when
  IDENTITY_ENDPOINT and IDENTITY_HEADER are set (`az login --identity`). It issues JWT-shaped tokens with the
  claims az reads (tid, oid, aud, exp); their signature is random: az decodes them without verifying, and these
  doubles accept exactly the tokens they issued (the stand-in for Entra ID's signature check).
- ``arm_endpoint`` (TLS): subscriptions and tenants (what `az login` lists), Microsoft.Batch batchAccounts GET/list,
  Batch's per-region VM SKU list and account quota, Microsoft.Compute usages (the subscription's vCPU quota, which
  applies in UserSubscription mode), and Microsoft.Authorization permissions (the caller's effective actions and
  dataActions at a scope, derived from its role assignments).
- ``batch_endpoint`` (TLS): a minimal Batch data plane, only what the preflight reads: `GET /supportedimages` and
  `GET /pools` (the cheap authenticated call), authorised like Batch does with Entra ID (token audience, the
  account's allowedAuthenticationModes, the caller's role on the account). The lifecycle double of the Batch data
  plane (pools, jobs, tasks) is tests/azurebatch/double/, not this.
"""
import base64
import contextlib
import http.server
import json
import re
import secrets
import threading
import time
import uuid
from urllib.parse import parse_qs, urlsplit

from tests.azurebatch.arm_double import roles
from tests.azurebatch.tls_ca import TestCA
from tests.loopback_http import ScriptedHandler

ARM_AUDIENCE = 'https://management.core.windows.net/'
BATCH_AUDIENCE = 'https://batch.core.windows.net/'
IDENTITY_HEADER = 'test-identity-header'


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b'=').decode()


def default_vm_skus():
    """Batch's answer for a region (shape of `virtualMachineSkus`): a few current sizes with their families."""
    def sku(name, family, vcpus, gpus=0, low_priority=True):
        return {'name': name, 'familyName': family,
                'capabilities': [{'name': 'vCPUs', 'value': str(vcpus)}, {'name': 'GPUs', 'value': str(gpus)},
                                 {'name': 'LowPriorityCapable', 'value': str(low_priority)},
                                 {'name': 'MemoryGB', 'value': str(vcpus * 4)}]}
    return [sku('Standard_D2s_v3', 'standardDSv3Family', 2), sku('Standard_D4s_v3', 'standardDSv3Family', 4),
            sku('Standard_NC4as_T4_v3', 'Standard NCASv3_T4 Family', 4, 1),
            sku('Standard_NC24ads_A100_v4', 'StandardNCADSA100v4Family', 24, 1, low_priority=False)]


def default_supported_images():
    """The data plane's `supportedimages` answer (shape of API 2024-02-01.19.0): a current Ubuntu, one near and
    one past end of life."""
    def image(agent, publisher, offer, sku, eol):
        entry = {'nodeAgentSKUId': agent, 'osType': 'linux', 'verificationType': 'verified',
                 'imageReference': {'publisher': publisher, 'offer': offer, 'sku': sku, 'version': 'latest'},
                 'capabilities': []}
        if eol:
            entry['batchSupportEndOfLife'] = eol
        return entry
    return [image('batch.node.ubuntu 22.04', 'canonical', '0001-com-ubuntu-server-jammy', '22_04-lts',
                  '2027-06-30T00:00:00Z'),
            image('batch.node.ubuntu 24.04', 'canonical', 'ubuntu-24_04-lts', 'server', None),
            image('batch.node.ubuntu 20.04', 'canonical', '0001-com-ubuntu-server-focal', '20_04-lts',
                  '2025-04-23T00:00:00Z')]


class ArmDouble:  # pylint: disable=too-many-instance-attributes
    """The state the three servers answer from; tests change it between calls (a role, a quota, an account).

    ``principal_id``/``tenant_id``: who `az login --identity` becomes. ``assignments``: (scope, role name) pairs
    of that principal. ``accounts``: Batch account ARM JSON by id. ``requests``: (server, method, path) seen.
    """

    def __init__(self, directory):
        self.ca = TestCA(directory)
        self.tenant_id = str(uuid.uuid4())
        self.principal_id = str(uuid.uuid4())
        self.subscription_id = str(uuid.uuid4())
        self.subscriptions = [{'id': '/subscriptions/' + self.subscription_id,
                               'subscriptionId': self.subscription_id, 'tenantId': self.tenant_id,
                               'displayName': 'Test subscription', 'state': 'Enabled',
                               'subscriptionPolicies': {'locationPlacementId': 'Public_2014-09-01',
                                                        'quotaId': 'PayAsYouGo_2014-09-01',
                                                        'spendingLimit': 'Off'},
                               'authorizationSource': 'RoleBased'}]
        self._tokens = {}            # token -> claims: exactly the tokens issued here are valid
        self._lock = threading.Lock()
        self.reset()
        self._servers = []
        self.identity_endpoint = self.arm_endpoint = self.batch_endpoint = None

    def reset(self):
        """Back to no account, no role, the default answers (the identity, subscription and tokens stay)."""
        self.accounts = {}
        self.vm_skus = {}            # location -> list of SKU JSON (default_vm_skus() when absent)
        self.supported_images = default_supported_images()
        self.compute_usages = {}     # location -> list of Microsoft.Compute usage JSON
        self.assignments = []
        self.token_lifetime_s = 3600
        self.requests = []
        self.storage_accounts = []   # Microsoft.Storage storageAccounts JSON (add_storage_account)
        self.batch_double = None     # serve_batch_with(): the Batch data plane of the accounts, instead of ours

    # ----- state helpers for tests -----
    def resource_group_id(self, resource_group):
        return '/subscriptions/{}/resourceGroups/{}'.format(self.subscription_id, resource_group)

    def add_batch_account(self, name, resource_group='batch-rg', location='eastus', **properties):
        """A Batch account (BatchService mode, Entra ID allowed, a new account's quotas); ``properties`` override."""
        account_id = '{}/providers/Microsoft.Batch/batchAccounts/{}'.format(self.resource_group_id(resource_group),
                                                                          name)
        data_plane = self.batch_double.endpoint if self.batch_double is not None else self.batch_endpoint
        props = {'accountEndpoint': data_plane.split('://', 1)[1], 'provisioningState': 'Succeeded',
                 'poolAllocationMode': 'BatchService', 'publicNetworkAccess': 'Enabled',
                 'allowedAuthenticationModes': ['SharedKey', 'AAD', 'TaskAuthenticationToken'],
                 'dedicatedCoreQuota': 0, 'lowPriorityCoreQuota': 0,
                 'dedicatedCoreQuotaPerVMFamily': [{'name': 'standardDSv3Family', 'coreQuota': 0},
                                                   {'name': 'Standard NCASv3_T4 Family', 'coreQuota': 0}],
                 'dedicatedCoreQuotaPerVMFamilyEnforced': True, 'poolQuota': 100,
                 'activeJobAndJobScheduleQuota': 300}
        props.update(properties)
        self.accounts[account_id] = {'id': account_id, 'name': name, 'type': 'Microsoft.Batch/batchAccounts',
                                     'location': location, 'properties': props, 'tags': {}}
        return account_id

    def add_storage_account(self, name, resource_group='data-rg', location='eastus', **properties):
        """A storage account (StorageV2) listed in the subscription, with more ARM ``properties`` (e.g.
        allowSharedKeyAccess=False, as a policy sets it); returns its id."""
        storage_id = '{}/providers/Microsoft.Storage/storageAccounts/{}'.format(
            self.resource_group_id(resource_group), name)
        self.storage_accounts.append({'id': storage_id, 'name': name, 'type': 'Microsoft.Storage/storageAccounts',
                                      'location': location, 'kind': 'StorageV2', 'sku': {'name': 'Standard_LRS'},
                                      'properties': {'provisioningState': 'Succeeded', **properties}})
        return storage_id

    def assign(self, role, scope):
        """Give the logged-in principal ``role`` (a name in roles.ROLES) at ``scope`` (an ARM id)."""
        assert role in roles.ROLES, role
        self.assignments.append((scope, role))

    def serve_batch_with(self, batch_double):
        """Make ``batch_double`` (tests/azurebatch/double: the lifecycle double, or batch_prism in front of it) the
        Batch data plane of the accounts added from now on: their accountEndpoint is its public endpoint, and every
        token the identity endpoint issues for the Batch audience is one it accepts (what Entra ID's signature
        gives the real service), those issued before included. Trust its CA too: OfflineLogin.trust(its ca_file)."""
        self.batch_double = batch_double
        with self._lock:
            issued = [(token, claims['exp']) for token, claims in self._tokens.items()
                      if claims['aud'].rstrip('/') == BATCH_AUDIENCE.rstrip('/')]
        with batch_double.lock:
            batch_double.tokens.update(issued)

    def revoke_tokens(self):
        """Every token issued so far is refused from now on (a 401 at the next call, like an expired token)."""
        with self._lock:
            self._tokens.clear()

    def allowed(self, action, scope, data=False):
        """Whether the principal's role assignments grant ``action`` (a dataAction when ``data``) at ``scope``."""
        key = 'dataActions' if data else 'actions'
        return any(roles.in_scope(s, scope) and roles.grants(roles.ROLES[r][key], action)
                   for s, r in self.assignments)

    # ----- tokens -----
    def issue_token(self, resource):
        now = int(time.time())
        claims = {'aud': resource, 'tid': self.tenant_id, 'oid': self.principal_id, 'sub': self.principal_id,
                  'iss': 'https://sts.test.invalid/{}/'.format(self.tenant_id), 'iat': now, 'nbf': now,
                  'exp': now + self.token_lifetime_s, 'appid': self.principal_id, 'idtyp': 'MI'}
        token = '.'.join([_b64(json.dumps({'alg': 'RS256', 'typ': 'JWT'}).encode()),
                          _b64(json.dumps(claims).encode()), _b64(secrets.token_bytes(64))])
        with self._lock:
            self._tokens[token] = claims
        linked = self.batch_double
        if linked is not None and resource.rstrip('/') == BATCH_AUDIENCE.rstrip('/'):
            with linked.lock:
                linked.tokens[token] = claims['exp']
        return token, claims

    def token_claims(self, authorization, audience):
        """The claims of a valid bearer token for ``audience``, or None (missing, unknown, expired, other audience)."""
        if not authorization or not authorization.startswith('Bearer '):
            return None
        with self._lock:
            claims = self._tokens.get(authorization[len('Bearer '):])
        if not claims or claims['exp'] < time.time() or claims['aud'].rstrip('/') != audience.rstrip('/'):
            return None
        return claims

    # ----- servers -----
    def start(self):
        self.identity_endpoint = self._serve(_IdentityHandler, tls=False) + '/msi/token'
        self.arm_endpoint = self._serve(_ArmHandler, tls=True)
        self.batch_endpoint = self._serve(_BatchHandler, tls=True)
        return self

    def _serve(self, handler_class, tls):
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler_class)
        server.daemon_threads = True
        server.double = self
        if tls:
            server.socket = self.ca.server_context().wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._servers.append(server)
        return '{}://127.0.0.1:{}'.format('https' if tls else 'http', server.server_address[1])

    def stop(self):
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers = []


class _Handler(ScriptedHandler):
    server_name_for_log = ''

    @property
    def double(self):
        return self.server.double

    def send_json(self, status, body, headers=None):
        self.reply(status, json.dumps(body).encode(),
                   dict({'Content-Type': 'application/json; charset=utf-8'}, **(headers or {})))

    def do_GET(self):  # pylint: disable=invalid-name
        url = urlsplit(self.path)
        self.double.requests.append((self.server_name_for_log, 'GET', url.path))
        self.route(url.path, {k: v[-1] for k, v in parse_qs(url.query).items()})

    def route(self, path, query):
        raise NotImplementedError


class _IdentityHandler(_Handler):
    """App Service's managed identity protocol (api-version 2019-08-01), as msal's _obtain_token_on_app_service
    speaks it: GET with resource and X-IDENTITY-HEADER; answer with access_token and expires_on."""
    server_name_for_log = 'identity'

    def route(self, path, query):
        if self.headers.get('X-IDENTITY-HEADER') != IDENTITY_HEADER:
            self.send_json(401, {'statusCode': 401, 'message': 'X-IDENTITY-HEADER missing or wrong'})
            return
        if not query.get('resource'):
            self.send_json(400, {'statusCode': 400, 'message': 'resource is required'})
            return
        token, claims = self.double.issue_token(query['resource'])
        self.send_json(200, {'access_token': token, 'expires_on': str(claims['exp']), 'resource': query['resource'],
                             'token_type': 'Bearer', 'client_id': self.double.principal_id})


def _arm_error(code, message):
    return {'error': {'code': code, 'message': message}}


_SUB = r'/subscriptions/(?P<sub>[^/]+)'
_ACCOUNTS = _SUB + r'(?:/resourcegroups/(?P<rg>[^/]+))?/providers/microsoft\.batch/batchaccounts'


class _ArmHandler(_Handler):
    """Azure Resource Manager subset (paths compared case-insensitively, as ARM does)."""
    server_name_for_log = 'arm'

    def route(self, path, query):  # pylint: disable=too-many-return-statements
        double = self.double
        if not double.token_claims(self.headers.get('Authorization'), ARM_AUDIENCE):
            self.send_json(401, _arm_error('InvalidAuthenticationToken', 'The access token is invalid.'),
                           {'WWW-Authenticate': 'Bearer authorization_uri="https://login.test.invalid"'})
            return
        lower = path.rstrip('/').lower()
        if lower == '/subscriptions':
            self.send_json(200, {'value': double.subscriptions})
            return
        if lower == '/tenants':
            self.send_json(200, {'value': [{'id': '/tenants/' + double.tenant_id, 'tenantId': double.tenant_id}]})
            return
        match = re.fullmatch(_SUB, lower)
        if match:
            subs = [s for s in double.subscriptions if s['subscriptionId'].lower() == match['sub']]
            self.send_json(200, subs[0]) if subs else self.send_json(
                404, _arm_error('SubscriptionNotFound', 'The subscription could not be found.'))
            return
        match = re.fullmatch(r'(?P<scope>/subscriptions/.+)/providers/microsoft\.authorization/permissions', lower)
        if match:
            self.permissions(match['scope'])
            return
        match = re.fullmatch(_ACCOUNTS + r'(?:/(?P<name>[^/]+))?', lower)
        if match:
            self.batch_accounts(match)
            return
        match = re.fullmatch(_SUB + r'/providers/microsoft\.batch/locations/(?P<loc>[^/]+)/virtualmachineskus', lower)
        if match:
            skus = double.vm_skus.get(match['loc'], default_vm_skus())
            self.send_json(200, {'value': skus})
            return
        match = re.fullmatch(_SUB + r'/providers/microsoft\.storage/storageaccounts', lower)
        if match:  # only what the principal may read (ARM filters lists by the caller's read access)
            self.send_json(200, {'value': [a for a in double.storage_accounts
                                           if double.allowed('Microsoft.Storage/storageAccounts/read', a['id'])]})
            return
        match = re.fullmatch(_SUB + r'/providers/microsoft\.compute/locations/(?P<loc>[^/]+)/usages', lower)
        if match:
            self.send_json(200, {'value': double.compute_usages.get(match['loc'], [])})
            return
        self.send_json(404, _arm_error('InvalidResourceType', 'Not served by the test ARM double: ' + path))

    def permissions(self, scope):
        """Permissions - List For Resource: the role definitions' permissions that apply at ``scope``."""
        double = self.double
        value = [{'actions': roles.ROLES[role]['actions'], 'notActions': [],
                  'dataActions': roles.ROLES[role]['dataActions'], 'notDataActions': []}
                 for assigned, role in double.assignments if roles.in_scope(assigned, scope)]
        self.send_json(200, {'value': value})

    def batch_accounts(self, match):
        double = self.double
        prefix = '/subscriptions/{}'.format(match['sub']) + (
            '/resourcegroups/{}/'.format(match['rg']) if match['rg'] else '/')
        found = [a for i, a in double.accounts.items() if i.lower().startswith(prefix)
                 and (not match['name'] or a['name'].lower() == match['name'])]
        scope = prefix.rstrip('/') + ('/providers/microsoft.batch/batchaccounts/' + match['name']
                                      if match['name'] else '')
        if found and not double.allowed('Microsoft.Batch/batchAccounts/read', found[0]['id']):
            self.send_json(403, _arm_error('AuthorizationFailed', (
                "The client '{}' with object id '{}' does not have authorization to perform action "
                "'Microsoft.Batch/batchAccounts/read' over scope '{}' or the scope is invalid.").format(
                    double.principal_id, double.principal_id, scope)))
            return
        if match['name']:
            if found:
                self.send_json(200, found[0])
            else:
                self.send_json(404, _arm_error('ResourceNotFound', (
                    "The Resource 'Microsoft.Batch/batchAccounts/{}' under resource group '{}' was not found.")
                    .format(match['name'], match['rg'])))
            return
        self.send_json(200, {'value': found})


class _BatchHandler(_Handler):
    """The Batch data plane, only `supportedimages` and `pools` (the preflight's reads), authorised with Entra ID."""
    server_name_for_log = 'batch'

    def batch_error(self, status, code, message):
        self.send_json(status, {'odata.metadata': self.double.batch_endpoint + '/$metadata#Microsoft.Azure.Batch'
                                                  '.Protocol.Entities.Container.errors/@Element',
                                'code': code, 'message': {'lang': 'en-US', 'value': message}})

    def route(self, path, query):
        double = self.double
        account = next(iter(double.accounts.values()), None)
        if account is None:
            self.batch_error(404, 'AccountNotFound', 'No Batch account is served here.')
            return
        if 'AAD' not in account['properties'].get('allowedAuthenticationModes', []):
            self.batch_error(401, 'AuthenticationFailed',
                             'Microsoft Entra ID authentication is not allowed for this account.')
            return
        if not double.token_claims(self.headers.get('Authorization'), BATCH_AUDIENCE):
            self.batch_error(401, 'AuthenticationFailed', 'Server failed to authenticate the request.')
            return
        resource = path.strip('/').lower()
        if resource not in ('supportedimages', 'pools'):
            self.batch_error(404, 'InvalidUri', 'Not served by the test double: ' + path)
            return
        action = ('Microsoft.Batch/batchAccounts/read' if resource == 'supportedimages'
                  else 'Microsoft.Batch/batchAccounts/pools/read')
        if not double.allowed(action, account['id']):
            self.batch_error(403, 'AuthorizationFailure',
                             'This request is not authorized to perform this operation.')
            return
        items = double.supported_images if resource == 'supportedimages' else []
        top = int(query.get('maxresults', 1000))
        self.send_json(200, {'odata.metadata': '{}/$metadata#{}'.format(double.batch_endpoint, resource),
                             'value': items[:top]})


@contextlib.contextmanager
def running(directory):
    """An ArmDouble serving on loopback for the duration of the block."""
    double = ArmDouble(directory).start()
    try:
        yield double
    finally:
        double.stop()
