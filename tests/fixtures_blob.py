"""Blob stores for the Blob tests: `local_blob` (the Blob endpoint of the session's local service, an account of its
own) and `blob_store`, each Blob test run once against Azurite and once against the local endpoint (Azurite is the
oracle: the same assertions hold for both)."""
import os
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class LocalBlob:
    """The same fields as fixtures_azurite.Azurite, plus where the account's containers live on disk."""
    account_name: str
    account_key: str
    blob_endpoint: str
    data_dir: str

    @property
    def connection_string(self):
        return ('DefaultEndpointsProtocol=http;AccountName={};AccountKey={};BlobEndpoint={};'
                .format(self.account_name, self.account_key, self.blob_endpoint))

    def container_dir(self, container):
        return os.path.join(self.data_dir, 'storage', self.account_name, 'containers', container)


@pytest.fixture(scope='session')
def local_blob(local_service):
    with open(os.path.join(local_service.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    return LocalBlob('localblob', key, '{}/localblob'.format(local_service.blob_endpoint), local_service.data_dir)


@pytest.fixture(scope='module', params=['azurite', 'local'])
def blob_store(request):
    """Azurite's Blob service or the local service's Blob endpoint (account name, key, endpoint, connection string).
    Tests that use it carry the azurite and service marks."""
    return request.getfixturevalue('azurite' if request.param == 'azurite' else 'local_blob')
