# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The old `utilities.config`: Configuration (the recipes' configuration.json), create_batchai_client,
create_resource_group.

The same configuration.json works, with its values changed:
- ``base_url`` the local service's endpoint (what ``az batchai sweep local start`` prints, and writes to az config as
  ``batchai_sweep.endpoint``): the client is the local service's, authenticated with its token file, and the
  subscription is the service's. Any other ``base_url`` (``https://management.azure.com``) is Azure, authenticated
  with az's login (``az login``; the AAD fields are read, as before, but no longer used: no service principal
  secret has to sit in the file).
- ``storage_account``: ``name`` and ``key`` as before (locally the key of ``az batchai sweep local
  show-connection-string``), plus, new and optional, ``blob_endpoint`` / ``file_endpoint`` (an emulator's, or a
  sovereign cloud's): the legacy storage classes and FileParameter use them for that account. Against the local
  service the Files and Blob endpoints are the service's unless ``file_endpoint`` / ``blob_endpoint`` say otherwise.

The client is the notebook-compatibility client (utilities/batchai.py): azure-mgmt-batchai 2.0's ``create`` /
``delete`` call forms on the SDK az ships.
"""
import configparser
import json
import os
import subprocess
import time
import urllib.parse

from ..core.service.client import local_batchai_client
from ..core.service.loopback import is_loopback
from . import _endpoints
from .batchai import NotebookBatchAI

__all__ = ['Configuration', 'create_batchai_client', 'create_resource_group', 'local_service_of']

# az config's section of the local service (azext_batchai_sweep/_targeting.py), and its environment overrides.
_SECTION, _ENDPOINT, _TOKEN_FILE = 'batchai_sweep', 'endpoint', 'token_file'
_ENV_ENDPOINT, _ENV_TOKEN_FILE = 'AZURE_BATCHAI_SWEEP_ENDPOINT', 'AZURE_BATCHAI_SWEEP_TOKEN_FILE'
MANAGEMENT_SCOPE = 'https://management.azure.com/.default'
RESOURCE_GROUPS_API_VERSION = '2021-04-01'


class Configuration:  # pylint: disable=too-many-instance-attributes,too-few-public-methods
    """Configuration for recipes and notebooks: the old class, reading the same configuration.json (its attributes
    are the old ones; ``blob_endpoint`` and ``file_endpoint`` are new).

    Raises ValueError when the file does not exist and AttributeError naming a missing key, as the old one did. A
    Windows path (``'..\\..\\configuration.json'``) also works on Linux and macOS.
    """

    def __init__(self, file_name):
        if not os.path.exists(file_name) and os.sep == '/' and '\\' in file_name:
            # A notebook written on Windows ('..\\..\\configuration.json', the PyTorch recipe) on Linux or macOS.
            file_name = file_name.replace('\\', '/')
        if not os.path.exists(file_name):
            raise ValueError('Cannot find configuration file "{0}"'.format(file_name))
        with open(file_name, 'r', encoding='utf-8') as f:
            conf = json.load(f)
        try:
            self.subscription_id = conf['subscription_id']
            self.aad_client_id = conf['aad_client_id']
            self.aad_secret_key = conf['aad_secret']
            self.aad_tenant = conf['aad_tenant']
            self.location = conf['location']
            self.url = conf['base_url']
            self.resource_group = conf['resource_group']
            self.workspace = conf['workspace']
            storage = conf['storage_account']
            self.storage_account_name = storage['name']
            self.storage_account_key = storage['key']
            self.admin = conf['admin_user']['name']
        except KeyError as err:
            raise AttributeError('Please provide a value for "{0}" configuration key'.format(err.args[0])) from None
        self.admin_password = conf['admin_user'].get('password') or None
        self.admin_ssh_key = conf['admin_user'].get('ssh_public_key') or None
        registry = conf.get('container_registry') or {}
        self.container_registry_user = registry.get('user') or None
        self.container_registry_password = registry.get('password') or None
        self.container_registry_secret_url = registry.get('secret_url') or None
        self.keyvault_id = conf.get('keyvault_id') or None
        if not self.admin_password and not self.admin_ssh_key:
            raise AttributeError('Please provide admin user password or public ssh key')
        self.blob_endpoint = storage.get('blob_endpoint') or None
        self.file_endpoint = storage.get('file_endpoint') or None
        _endpoints.register(self.storage_account_name, blob=self.blob_endpoint, file=self.file_endpoint)

    def __repr__(self):  # the key and secrets stay out of a printed configuration
        return 'Configuration(base_url={!r}, resource_group={!r}, workspace={!r}, storage_account_name={!r})'.format(
            self.url, self.resource_group, self.workspace, self.storage_account_name)


def _az_config_dir():
    return os.environ.get('AZURE_CONFIG_DIR') or os.path.join(os.path.expanduser('~'), '.azure')


def _configured_local_service():
    """(endpoint, token file) of the local service az is pointed at (`az batchai sweep local start`), else None."""
    endpoint, token_file = os.environ.get(_ENV_ENDPOINT), os.environ.get(_ENV_TOKEN_FILE)
    if not endpoint:
        parser = configparser.ConfigParser()
        parser.read(os.path.join(_az_config_dir(), 'config'), encoding='utf-8')
        endpoint = parser.get(_SECTION, _ENDPOINT, fallback=None)
        token_file = token_file or parser.get(_SECTION, _TOKEN_FILE, fallback=None)
    return (endpoint, token_file) if endpoint else None


def _same_endpoint(first, second):
    return first.rstrip('/').lower() == second.rstrip('/').lower()


def local_service_of(url):
    """The local service's service.json (endpoint, filesEndpoint, tokenFile, subscriptionId...) when `url` is the
    endpoint of the local service az is pointed at; None for any other URL. A loopback URL that is not that
    service is an error: it cannot be Azure."""
    target = _configured_local_service()
    if target is not None and _same_endpoint(target[0], url):
        token_file = target[1]
        if not token_file or not os.path.isfile(token_file):
            raise ValueError('The local Batch AI service at {} has no token file ({}): start it with "az batchai '
                             'sweep local start"'.format(url, token_file))
        info = {}
        try:
            with open(os.path.join(os.path.dirname(os.path.abspath(token_file)), 'service.json'),
                      encoding='utf-8') as f:
                info = json.load(f)
        except (OSError, ValueError):
            pass  # a stopped service: the client's requests say so
        return {**info, 'endpoint': target[0], 'tokenFile': token_file}
    host = urllib.parse.urlsplit(url).hostname
    if host and is_loopback(host):
        raise ValueError('base_url {} is a local address, but az is not pointed at a local Batch AI service there: '
                         'run "az batchai sweep local start" and put the endpoint it prints into base_url'.format(url))
    return None


class AzLoginCredential:  # pylint: disable=too-few-public-methods
    """An azure-core token credential from az's login (`az account get-access-token`), so that no service
    principal secret has to be in configuration.json and no azure-identity is needed."""

    def __init__(self, tenant=None):
        self.tenant = tenant

    def get_token(self, *scopes, **kwargs):  # pylint: disable=unused-argument
        from azure.core.credentials import AccessToken
        from azure.core.exceptions import ClientAuthenticationError
        command = ['az', 'account', 'get-access-token', '--scope', scopes[0] if scopes else MANAGEMENT_SCOPE,
                   '-o', 'json']
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ClientAuthenticationError('az is needed for the Azure login: {}'.format(exc)) from None
        if done.returncode != 0:
            raise ClientAuthenticationError('az account get-access-token failed (run "az login"): {}'.format(
                done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode))
        answer = json.loads(done.stdout)
        expires = answer.get('expires_on') or time.time() + 300
        return AccessToken(answer['accessToken'], int(expires))


def create_batchai_client(configuration):
    """The Batch AI client of the configuration's ``base_url``: the local service's, or Azure's with az's login;
    with azure-mgmt-batchai 2.0's call forms (NotebookBatchAI)."""
    local = local_service_of(configuration.url)
    if local is not None:
        # The storage account's Files and Blob endpoints are the service's (path-style: the account in the path),
        # unless configuration.json names others: what the recipes upload is then what the local jobs mount.
        account = configuration.storage_account_name
        endpoints = {kind: '{}/{}'.format(local[field].rstrip('/'), account)
                     for kind, field, configured in (('file', 'filesEndpoint', configuration.file_endpoint),
                                                     ('blob', 'blobEndpoint', configuration.blob_endpoint))
                     if local.get(field) and not configured}
        _endpoints.register(account, **endpoints)
        return NotebookBatchAI(local_batchai_client(local['endpoint'], local['tokenFile'],
                                                    local.get('subscriptionId') or configuration.subscription_id))
    from azure.mgmt.batchai import BatchAI
    return NotebookBatchAI(BatchAI(credential=AzLoginCredential(), subscription_id=configuration.subscription_id,
                                   base_url=configuration.url))


def create_resource_group(configuration):
    """Create the configuration's resource group on Azure (as the old function did); the local service needs none:
    nothing is sent, and a line says so."""
    if local_service_of(configuration.url) is not None:
        print('Resource group {0}: the local Batch AI service at {1} needs none; nothing created.'.format(
            configuration.resource_group, configuration.url))
        return
    from azure.core.rest import HttpRequest
    client = create_batchai_client(configuration)
    request = HttpRequest('PUT', '{}/subscriptions/{}/resourcegroups/{}?api-version={}'.format(
        configuration.url.rstrip('/'), configuration.subscription_id,
        urllib.parse.quote(configuration.resource_group, safe=''), RESOURCE_GROUPS_API_VERSION),
        json={'location': configuration.location})
    response = client._send_request(request)  # pylint: disable=protected-access
    response.raise_for_status()
