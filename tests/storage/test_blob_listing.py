"""core.spec.storage's BLOB listing against Azurite and against the local service's Blob endpoint (the same
assertions for both): the seed README's BLOB example, directories, credentials and errors."""
import re
import socket
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from azext_batchai_sweep.core.errors import SpecError, StorageError
from azext_batchai_sweep.core.spec.storage import list_file_paths, resolve_storage_credentials

pytestmark = [pytest.mark.azurite, pytest.mark.service]

README_BLOBS = ['other/a.txt', 'b.txt', 'data/c.txt', 'data/d.txt']


@pytest.fixture(scope='module')
def container(blob_store):
    """A container holding the blobs of the README's example."""
    from azure.storage.blob import BlobServiceClient
    name = 'readme-' + uuid.uuid4().hex[:12]
    client = BlobServiceClient.from_connection_string(blob_store.connection_string).create_container(name)
    for blob in README_BLOBS:
        client.upload_blob(blob, b'contents of ' + blob.encode())
    return name


def _sas(blob_store, container, key=None, permission='rl'):
    from azure.storage.blob import generate_container_sas
    return generate_container_sas(blob_store.account_name, container, account_key=key or blob_store.account_key,
                                  permission=permission, expiry=datetime.now(timezone.utc) + timedelta(hours=1))


def _assert_no_secret(exc_info, *secrets):
    message = str(exc_info.value)
    for secret in secrets:
        assert secret not in message
    # The SDK exception (whose text may hold the request URL with its SAS) is not chained either.
    assert exc_info.value.__cause__ is None and exc_info.value.__suppress_context__


def test_readme_blob_example_with_filter(blob_store, container):
    paths = list_file_paths('BLOB', blob_store.account_name, container=container,
                            connection_string=blob_store.connection_string)
    assert paths == ['/b.txt', '/data/c.txt', '/data/d.txt', '/other/a.txt']
    assert [p for p in paths if re.match('/data/.+', p)] == ['/data/c.txt', '/data/d.txt']


@pytest.mark.parametrize('directory', ['data', '/data/', 'data/'])
def test_directory_limits_the_listing(blob_store, container, directory):
    paths = list_file_paths('blob', blob_store.account_name, container=container, directory=directory,
                            connection_string=blob_store.connection_string)
    assert paths == ['/data/c.txt', '/data/d.txt']


def test_directory_is_a_whole_path_segment(blob_store, container):
    # 'dat' must not select 'data/...': the prefix is 'dat/'.
    assert list_file_paths('BLOB', blob_store.account_name, container=container, directory='dat',
                           connection_string=blob_store.connection_string) == []


def test_account_key_with_account_url(blob_store, container):
    paths = list_file_paths('BLOB', blob_store.account_name, container=container, account_key=blob_store.account_key,
                            account_url=blob_store.blob_endpoint)
    assert paths == ['/b.txt', '/data/c.txt', '/data/d.txt', '/other/a.txt']


@pytest.mark.parametrize('prefix', ['', '?'])
def test_sas_token(blob_store, container, prefix):
    paths = list_file_paths('BLOB', blob_store.account_name, container=container, directory='data',
                            sas_token=prefix + _sas(blob_store, container), account_url=blob_store.blob_endpoint)
    assert paths == ['/data/c.txt', '/data/d.txt']


def test_account_key_is_preferred_over_sas_token(blob_store, container):
    bad_sas = _sas(blob_store, container, key='d3Jvbmcga2V5')
    paths = list_file_paths('BLOB', blob_store.account_name, container=container, account_key=blob_store.account_key,
                            sas_token=bad_sas, account_url=blob_store.blob_endpoint)
    assert len(paths) == 4


def test_missing_container(blob_store):
    with pytest.raises(StorageError, match="container 'no-such-container' not found") as exc_info:
        list_file_paths('BLOB', blob_store.account_name, container='no-such-container',
                        connection_string=blob_store.connection_string)
    _assert_no_secret(exc_info, blob_store.account_key, blob_store.connection_string)


def test_wrong_account_key_does_not_leak_it(blob_store, container):
    wrong_key = 'V3JvbmdLZXlXcm9uZ0tleVdyb25nS2V5V3JvbmdLZXk='
    with pytest.raises(StorageError, match='refused') as exc_info:
        list_file_paths('BLOB', blob_store.account_name, container=container, account_key=wrong_key,
                        account_url=blob_store.blob_endpoint)
    _assert_no_secret(exc_info, wrong_key)


def test_bad_sas_signature_does_not_leak_it(blob_store, container):
    from urllib.parse import parse_qs
    sas = _sas(blob_store, container, key='V3JvbmdLZXlXcm9uZ0tleVdyb25nS2V5V3JvbmdLZXk=')
    signature = parse_qs(sas)['sig'][0]
    with pytest.raises(StorageError, match='refused') as exc_info:
        list_file_paths('BLOB', blob_store.account_name, container=container, sas_token=sas,
                        account_url=blob_store.blob_endpoint)
    _assert_no_secret(exc_info, sas, signature)


def test_unreachable_endpoint_does_not_leak_the_sas(blob_store, container):
    from urllib.parse import parse_qs, quote
    with socket.socket() as sock:  # a port nothing listens on once closed
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    sas = _sas(blob_store, container)
    signature = parse_qs(sas)['sig'][0]
    with pytest.raises(StorageError, match='cannot reach') as exc_info:
        list_file_paths('BLOB', blob_store.account_name, container=container, sas_token=sas,
                        account_url='http://127.0.0.1:{}/{}'.format(port, blob_store.account_name))
    _assert_no_secret(exc_info, sas, signature, quote(signature, safe=''))


def test_no_credentials():
    with pytest.raises(StorageError) as exc_info:
        list_file_paths('BLOB', 'acct', container='c')
    for variable in ('AZURE_STORAGE_KEY', 'AZURE_STORAGE_CONNECTION_STRING', 'AZURE_STORAGE_SAS_TOKEN'):
        assert variable in str(exc_info.value)


@pytest.mark.parametrize('kwargs', [
    {'storage_type': 'TABLE', 'container': 'c'},
    {'storage_type': 'BLOB'},
    {'storage_type': 'FILE', 'container': 'c'},
])
def test_invalid_arguments(kwargs):
    with pytest.raises(SpecError):
        list_file_paths(account_name='acct', account_key='a2V5', **kwargs)


def test_resolve_storage_credentials():
    env = {'AZURE_STORAGE_KEY': 'k', 'AZURE_STORAGE_SAS_TOKEN': 'sv=1&sig=x', 'AZURE_STORAGE_CONNECTION_STRING': '',
           'OTHER': 'x'}
    assert resolve_storage_credentials(env) == {'account_key': 'k', 'sas_token': 'sv=1&sig=x'}
    assert resolve_storage_credentials({}) == {}


def test_readme_blob_example_through_file_param_spec(blob_store, container):
    from azext_batchai_sweep.core.spec.params import FileParamSpec
    spec = FileParamSpec(parameterName='DATA_INPUT', storageAccountName=blob_store.account_name,
                         storageAccountKey=blob_store.account_key, storageType='BLOB', mountPath='bfs',
                         container=container, filterStr='/data/.+', accountUrl=blob_store.blob_endpoint)
    assert spec.values() == ['$AZ_BATCHAI_MOUNT_ROOT/bfs/data/c.txt', '$AZ_BATCHAI_MOUNT_ROOT/bfs/data/d.txt']


def test_file_param_spec_reads_the_connection_string_from_the_environment(blob_store, container, monkeypatch):
    from azext_batchai_sweep.core.spec.params import FileParamSpec
    monkeypatch.setenv('AZURE_STORAGE_CONNECTION_STRING', blob_store.connection_string)
    spec = FileParamSpec(parameterName='DATA_INPUT', storageAccountName=blob_store.account_name, storageType='BLOB',
                         mountMethod='JOB', mountPath='bfs', container=container, directory='data')
    assert spec.values() == ['$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/data/c.txt', '$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/data/d.txt']
