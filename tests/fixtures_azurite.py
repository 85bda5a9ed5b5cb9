"""Azurite (the Azure Storage emulator, Blob service) from ./node_modules: `azurite`, plain HTTP with the
development account's key, started once per test session; `azurite_oauth(ca)`, HTTPS with OAuth (bearer tokens,
Get User Delegation Key, user delegation SAS), started by the tests that use it.

Only tests that ask for them start Azurite; the rest of the suite runs without node.
"""
import base64
import contextlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AZURITE_BLOB = os.path.join(REPO_ROOT, 'node_modules', '.bin', 'azurite-blob')
START_TIMEOUT = 60

# Azurite's well-known development account (public, documented; not a secret).
DEV_ACCOUNT_NAME = 'devstoreaccount1'
DEV_ACCOUNT_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='


@dataclass(frozen=True)
class Azurite:
    account_name: str
    account_key: str
    blob_endpoint: str

    @property
    def connection_string(self):
        return ('DefaultEndpointsProtocol=http;AccountName={};AccountKey={};BlobEndpoint={};'
                .format(self.account_name, self.account_key, self.blob_endpoint))


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _wait_until_answering(proc, endpoint, log_path, context=None):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            with open(log_path, encoding='utf-8', errors='replace') as log:
                pytest.fail('Azurite exited with code {}:\n{}'.format(proc.returncode, log.read()[-4000:]))
        try:
            urllib.request.urlopen(endpoint + '?comp=list', timeout=2,  # pylint: disable=consider-using-with
                                   context=context)
            return
        except urllib.error.HTTPError:
            return  # any HTTP answer (403 without credentials) means it is serving
        except OSError:
            time.sleep(0.2)
    pytest.fail('Azurite did not answer on {} within {}s'.format(endpoint, START_TIMEOUT))


@contextlib.contextmanager
def _running_azurite(extra_args=(), scheme='http', context=None):
    """Azurite's Blob service on a free loopback port with a throw-away workspace: yields its endpoint."""
    if not os.path.exists(AZURITE_BLOB):
        pytest.fail('Azurite is not installed in {}: run `make test-tools`'.format(AZURITE_BLOB))
    workspace = tempfile.mkdtemp(prefix='azurite-')
    port = _free_port()
    endpoint = '{}://127.0.0.1:{}/{}'.format(scheme, port, DEV_ACCOUNT_NAME)
    log_path = os.path.join(workspace, 'azurite.log')
    # --skipApiVersionCheck: the azure-storage-blob that azure-cli pins may be newer than the pinned Azurite.
    cmd = [AZURITE_BLOB, '--blobHost', '127.0.0.1', '--blobPort', str(port), '--location', workspace,
           '--skipApiVersionCheck', '--silent', '--disableTelemetry', *extra_args]
    with open(log_path, 'wb') as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,  # pylint: disable=consider-using-with
                                start_new_session=True)
    try:
        _wait_until_answering(proc, endpoint, log_path, context)
        yield endpoint
    finally:
        # node may fork: stop the whole process group this fixture created.
        try:
            os.killpg(proc.pid, 15)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        shutil.rmtree(workspace, ignore_errors=True)


@pytest.fixture(scope='session')
def azurite():
    """A running Azurite Blob service on a free loopback port with a throw-away workspace."""
    with _running_azurite() as endpoint:
        yield Azurite(DEV_ACCOUNT_NAME, DEV_ACCOUNT_KEY, endpoint)


@dataclass(frozen=True)
class AzuriteOAuth:
    """Azurite's Blob service over HTTPS with OAuth: `blob_endpoint` (path-style: .../devstoreaccount1), `ca_file`
    (the bundle that trusts its certificate), `token(lifetime)` (a bearer token it accepts)."""
    account_name: str
    blob_endpoint: str
    ca_file: str

    @staticmethod
    def token(lifetime=3600):
        """A token as Entra ID issues one for https://storage.azure.com/: a JWT with Entra ID's issuer and the
        storage audience (TEST CODE: unsigned; `--oauth basic` checks the claims, not the signature)."""
        def b64(data):
            return base64.urlsafe_b64encode(data).rstrip(b'=').decode('ascii')
        now = int(time.time())
        claims = {'aud': 'https://storage.azure.com', 'iss': 'https://sts.windows.net/{}/'.format(TEST_TENANT),
                  'iat': now - 60, 'nbf': now - 60, 'exp': now + lifetime, 'oid': TEST_PRINCIPAL,
                  'tid': TEST_TENANT, 'sub': TEST_PRINCIPAL}
        return '.'.join([b64(json.dumps({'alg': 'RS256', 'typ': 'JWT'}).encode()), b64(json.dumps(claims).encode()),
                         b64(os.urandom(32))])


TEST_TENANT = '00000000-0000-0000-0000-0000000000aa'
TEST_PRINCIPAL = '00000000-0000-0000-0000-0000000000bb'


@contextlib.contextmanager
def azurite_oauth(ca):
    """Azurite's Blob service over HTTPS with the loopback certificate of ``ca`` (tests/azurebatch/tls_ca.TestCA)
    and OAuth (`--oauth basic`: bearer tokens, Get User Delegation Key, user delegation SAS), as the service reaches
    Azure Storage with az's token (azure-core sends a bearer token over HTTPS only)."""
    context = ssl.create_default_context(cafile=ca.ca_file)
    with _running_azurite(['--oauth', 'basic', '--cert', ca.cert_file, '--key', ca.key_file], 'https',
                          context) as endpoint:
        yield AzuriteOAuth(DEV_ACCOUNT_NAME, endpoint, ca.ca_file)
