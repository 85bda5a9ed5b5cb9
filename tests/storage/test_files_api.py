"""localservice.api.files_api through the real azure-storage-file-share SDK (and raw HTTP where the SDK cannot go)."""
import base64
import http.client
import os
import re
import uuid
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs, urlsplit

import pytest
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ResourceNotFoundError
from azure.storage.fileshare import (ShareClient, ShareServiceClient, generate_file_sas, generate_share_sas)

from azext_batchai_sweep.core.errors import StorageError
from azext_batchai_sweep.core.spec.params import FileParamSpec
from azext_batchai_sweep.core.spec.storage import list_file_paths
from azext_batchai_sweep.localservice.api.files_api import FilesApi

from .files_server import start_files_endpoint

README_FILES = ['other/a.txt', 'b.txt', 'data/c.txt', 'data/d.txt']


@pytest.fixture(scope='module')
def endpoint(tmp_path_factory):
    endpoint, server = start_files_endpoint(str(tmp_path_factory.mktemp('storage')))
    yield endpoint
    server.shutdown()
    server.server_close()


def _share_client(endpoint, share, key=None):
    service = ShareServiceClient(endpoint.account_url, credential={'account_name': endpoint.account_name,
                                                                   'account_key': key or endpoint.account_key})
    return service.get_share_client(share)


@pytest.fixture(scope='module')
def readme_share(endpoint):
    """A share holding the files of the README's FILE example, uploaded with the SDK."""
    name = 'example-share'
    share = _share_client(endpoint, name)
    share.create_share()
    for directory in ('other', 'data'):
        share.get_directory_client(directory).create_directory()
    for path in README_FILES:
        share.get_file_client(path).upload_file(b'contents of ' + path.encode())
    return name


def _sas(endpoint, share, permission='rl', expiry=None, key=None):
    return generate_share_sas(endpoint.account_name, share, key or endpoint.account_key, permission=permission,
                              expiry=expiry or datetime.now(timezone.utc) + timedelta(hours=1))


def _raw(endpoint, method, path, headers=None):
    """A raw HTTP request to the endpoint (path after the host): (status, headers, body)."""
    url = urlsplit(endpoint.account_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def _error_code(body):
    return ET.fromstring(body).findtext('Code')


# -- the README's FILE example ---------------------------------------------------------------------------------------

def test_readme_file_example_through_core_storage(endpoint, readme_share):
    kwargs = {'share': readme_share, 'account_key': endpoint.account_key, 'account_url': endpoint.account_url}
    assert list_file_paths('FILE', endpoint.account_name, directory='data', **kwargs) == ['/data/c.txt', '/data/d.txt']
    assert list_file_paths('FILE', endpoint.account_name, **kwargs) == ['/b.txt', '/data/c.txt', '/data/d.txt',
                                                                       '/other/a.txt']


def test_readme_file_example_through_file_param_spec(endpoint, readme_share):
    spec = FileParamSpec(parameterName='DATA_INPUT', storageAccountName=endpoint.account_name,
                         storageAccountKey=endpoint.account_key, storageType='FILE', mountPath='afs',
                         fileshare=readme_share, directory='data', accountUrl=endpoint.account_url)
    assert spec.values() == ['$AZ_BATCHAI_MOUNT_ROOT/afs/data/c.txt', '$AZ_BATCHAI_MOUNT_ROOT/afs/data/d.txt']


def test_share_sas_lists_through_core_storage(endpoint, readme_share):
    assert list_file_paths('FILE', endpoint.account_name, share=readme_share, directory='data',
                           sas_token=_sas(endpoint, readme_share), account_url=endpoint.account_url) == [
                               '/data/c.txt', '/data/d.txt']


def test_missing_share_and_directory_are_storage_errors(endpoint, readme_share):
    kwargs = {'account_key': endpoint.account_key, 'account_url': endpoint.account_url}
    with pytest.raises(StorageError, match=r"file share 'no-such-share' not found .*ShareNotFound") as exc_info:
        list_file_paths('FILE', endpoint.account_name, share='no-such-share', **kwargs)
    assert endpoint.account_key not in str(exc_info.value)
    with pytest.raises(StorageError, match=r"directory 'nowhere' not found .*ResourceNotFound"):
        list_file_paths('FILE', endpoint.account_name, share=readme_share, directory='nowhere', **kwargs)


def test_wrong_key_is_refused_without_leaking_it(endpoint, readme_share):
    wrong_key = 'V3JvbmdLZXlXcm9uZ0tleVdyb25nS2V5V3JvbmdLZXk='
    with pytest.raises(StorageError, match='refused') as exc_info:
        list_file_paths('FILE', endpoint.account_name, share=readme_share, account_key=wrong_key,
                        account_url=endpoint.account_url)
    assert wrong_key not in str(exc_info.value) and exc_info.value.__cause__ is None


# -- files put on disk (docs/local-storage.md) -----------------------------------------------------------------------

def test_files_copied_into_the_share_directory_are_served(endpoint):
    share_dir = endpoint.share_dir('copied')
    os.makedirs(os.path.join(share_dir, 'in', 'deep'))
    with open(os.path.join(share_dir, 'in', 'deep', 'x.csv'), 'wb') as f:
        f.write(b'1,2,3\n')
    assert list_file_paths('FILE', endpoint.account_name, share='copied', account_key=endpoint.account_key,
                           account_url=endpoint.account_url) == ['/in/deep/x.csv']
    assert _share_client(endpoint, 'copied').get_file_client('in/deep/x.csv').download_file().readall() == b'1,2,3\n'


# -- the SDK's calls -------------------------------------------------------------------------------------------------

def test_properties(endpoint, readme_share):
    share = _share_client(endpoint, readme_share)
    file_properties = share.get_file_client('data/c.txt').get_file_properties()
    assert file_properties.size == len(b'contents of data/c.txt') and not file_properties.is_directory
    assert share.get_directory_client('data').get_directory_properties().is_directory
    with pytest.raises(ResourceNotFoundError) as exc_info:
        share.get_file_client('data/zzz.txt').get_file_properties()
    assert exc_info.value.response.headers['x-ms-error-code'] == 'ResourceNotFound'
    with pytest.raises(ResourceNotFoundError):
        share.get_directory_client('data/c.txt').get_directory_properties()


def test_range_downloads_with_the_sdk(endpoint, readme_share):
    file_client = _share_client(endpoint, readme_share).get_file_client('data/c.txt')
    assert file_client.download_file(offset=2, length=3).readall() == b'nte'
    assert file_client.download_file(offset=12).readall() == b'data/c.txt'


def test_large_upload_and_parallel_download_roundtrip(endpoint, readme_share):
    # More than one 4 MiB Put Range and more than one download chunk.
    data = os.urandom(9 * 1024 * 1024 + 123)
    file_client = _share_client(endpoint, readme_share).get_file_client('big.bin')
    file_client.upload_file(data)
    assert file_client.download_file(max_concurrency=3).readall() == data
    assert file_client.download_file(offset=5 * 1024 * 1024, length=10).readall() == data[5242880:5242890]
    file_client.upload_file(b'short')  # replacing a file truncates it
    assert file_client.download_file().readall() == b'short'


def test_empty_file_downloads(endpoint, readme_share):
    file_client = _share_client(endpoint, readme_share).get_file_client('empty.txt')
    file_client.upload_file(b'')
    assert file_client.download_file().readall() == b''


def test_range_header_and_invalid_range(endpoint, readme_share):
    sas = _sas(endpoint, readme_share, permission='r')
    path = '/{}/{}/data/c.txt?{}'.format(endpoint.account_name, readme_share, sas)
    status, headers, body = _raw(endpoint, 'GET', path, {'Range': 'bytes=0-7'})
    assert (status, body, headers['Content-Range']) == (206, b'contents', 'bytes 0-7/22')
    status, headers, body = _raw(endpoint, 'GET', path, {'x-ms-range': 'bytes=100-200'})
    assert (status, headers['x-ms-error-code']) == (416, 'InvalidRange')


def test_paging(endpoint):
    share = _share_client(endpoint, 'paged')
    share.create_share()
    names = ['f{:02d}'.format(i) for i in range(7)]
    for name in names:
        share.get_file_client(name).upload_file(b'x')
    share.get_directory_client('g-dir').create_directory()
    pages = [[item['name'] for item in page]
             for page in share.get_directory_client('').list_directories_and_files(results_per_page=3).by_page()]
    # Within a page the SDK yields directories before files; the pages themselves follow the service's name order.
    assert [sorted(page) for page in pages] == [['f00', 'f01', 'f02'], ['f03', 'f04', 'f05'], ['f06', 'g-dir']]
    prefixed = share.get_directory_client('').list_directories_and_files(name_starts_with='f0', results_per_page=4)
    assert [item['name'] for item in prefixed] == names


def test_listing_xml_for_the_raw_protocol(endpoint, readme_share):
    sas = _sas(endpoint, readme_share)
    status, _, body = _raw(endpoint, 'GET', '/{}/{}/data?restype=directory&comp=list&maxresults=1&{}'.format(
        endpoint.account_name, readme_share, sas))
    root = ET.fromstring(body)
    assert status == 200 and root.tag == 'EnumerationResults' and root.get('DirectoryPath') == 'data'
    assert [e.findtext('Name') for e in root.find('Entries')] == ['c.txt']
    assert root.findtext('NextMarker') == 'd.txt'


def test_directory_and_file_creation_errors(endpoint, readme_share):
    share = _share_client(endpoint, readme_share)
    with pytest.raises(HttpResponseError) as exc_info:
        share.get_directory_client('data').create_directory()
    assert exc_info.value.error_code == 'ResourceAlreadyExists'
    with pytest.raises(ResourceNotFoundError) as exc_info:
        share.get_file_client('missing-dir/f.txt').upload_file(b'x')
    assert exc_info.value.error_code == 'ParentNotFound'
    with pytest.raises(ResourceNotFoundError) as exc_info:
        _share_client(endpoint, 'no-such-share').get_directory_client('').get_directory_properties()
    assert exc_info.value.error_code == 'ShareNotFound'


# -- authentication --------------------------------------------------------------------------------------------------

def test_bad_signature_is_403_authentication_failed(endpoint, readme_share):
    share = _share_client(endpoint, readme_share, key='V3JvbmdLZXlXcm9uZ0tleVdyb25nS2V5V3JvbmdLZXk=')
    with pytest.raises(ClientAuthenticationError) as exc_info:
        share.get_file_client('data/c.txt').download_file().readall()
    response = exc_info.value.response
    assert response.status_code == 403 and response.headers['x-ms-error-code'] == 'AuthenticationFailed'
    assert _error_code(response.body()) == 'AuthenticationFailed'


def test_anonymous_and_unknown_schemes_are_refused(endpoint, readme_share):
    path = '/{}/{}/data/c.txt'.format(endpoint.account_name, readme_share)
    for headers in ({}, {'Authorization': 'Bearer abc'}, {'Authorization': 'SharedKeyLite {}:abc'.format(
            endpoint.account_name)}):
        status, response_headers, body = _raw(endpoint, 'GET', path, headers)
        assert (status, response_headers['x-ms-error-code'], _error_code(body)) == (
            403, 'AuthenticationFailed', 'AuthenticationFailed')


def test_share_sas_permissions(endpoint, readme_share):
    read_only = ShareClient(endpoint.account_url, readme_share, credential=_sas(endpoint, readme_share, 'r'))
    assert read_only.get_file_client('b.txt').download_file().readall() == b'contents of b.txt'
    with pytest.raises(HttpResponseError) as exc_info:
        list(read_only.get_directory_client('').list_directories_and_files())
    assert exc_info.value.error_code == 'AuthorizationPermissionMismatch'
    with pytest.raises(HttpResponseError) as exc_info:
        read_only.get_file_client('new.txt').upload_file(b'x')
    assert exc_info.value.error_code == 'AuthorizationPermissionMismatch'
    writer = ShareClient(endpoint.account_url, readme_share, credential=_sas(endpoint, readme_share, 'rcw'))
    writer.get_file_client('via-sas.txt').upload_file(b'sas')
    assert writer.get_file_client('via-sas.txt').download_file().readall() == b'sas'


@pytest.mark.parametrize('sas_kwargs', [
    {'expiry': datetime.now(timezone.utc) - timedelta(minutes=1)},
    {'key': 'V3JvbmdLZXlXcm9uZ0tleVdyb25nS2V5V3JvbmdLZXk='},
], ids=['expired', 'wrong-key'])
def test_invalid_share_sas_is_refused(endpoint, readme_share, sas_kwargs):
    client = ShareClient(endpoint.account_url, readme_share, credential=_sas(endpoint, readme_share, **sas_kwargs))
    with pytest.raises(ClientAuthenticationError) as exc_info:
        client.get_file_client('b.txt').get_file_properties()
    assert exc_info.value.response.headers['x-ms-error-code'] == 'AuthenticationFailed'


def test_tampered_sas_is_refused(endpoint, readme_share):
    sas = _sas(endpoint, readme_share, 'r').replace('sp=r', 'sp=rwdl')
    status, headers, _ = _raw(endpoint, 'GET', '/{}/{}/b.txt?{}'.format(endpoint.account_name, readme_share, sas))
    assert (status, headers['x-ms-error-code']) == (403, 'AuthenticationFailed')


def test_file_sas_grants_its_file_only(endpoint, readme_share):
    sas = generate_file_sas(endpoint.account_name, readme_share, ['data', 'c.txt'], endpoint.account_key,
                            permission='r', expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    share = ShareClient(endpoint.account_url, readme_share, credential=sas)
    assert share.get_file_client('data/c.txt').download_file().readall() == b'contents of data/c.txt'
    with pytest.raises(ClientAuthenticationError):
        share.get_file_client('data/d.txt').download_file().readall()


# -- paths that leave the share --------------------------------------------------------------------------------------

@pytest.mark.parametrize('escape', ['../../../etc/passwd', '%2e%2e/%2e%2e/x', 'data/..%2F..%2Fx', 'a%5C..%5Cb'])
def test_paths_escaping_the_share_are_refused(endpoint, readme_share, escape):
    sas = _sas(endpoint, readme_share, 'rl')
    status, headers, _ = _raw(endpoint, 'GET', '/{}/{}/{}?{}'.format(endpoint.account_name, readme_share, escape,
                                                                      sas))
    assert status == 400 and headers['x-ms-error-code'] == 'InvalidResourceName'


def test_symlinks_out_of_the_share_are_neither_listed_nor_served(endpoint, tmp_path):
    outside = tmp_path / 'secret.txt'
    outside.write_bytes(b'not yours')
    share_dir = endpoint.share_dir('linked')
    os.makedirs(share_dir)
    os.symlink(str(outside), os.path.join(share_dir, 'leak.txt'))
    with open(os.path.join(share_dir, 'ok.txt'), 'wb') as f:
        f.write(b'ok')
    share = _share_client(endpoint, 'linked')
    assert [item['name'] for item in share.get_directory_client('').list_directories_and_files()] == ['ok.txt']
    with pytest.raises(ResourceNotFoundError):
        share.get_file_client('leak.txt').download_file().readall()


def test_error_messages_carry_no_request_secret(endpoint, readme_share):
    sas = _sas(endpoint, readme_share, 'r')
    signature = re.search(r'sig=([^&]+)', sas).group(1)
    _, _, body = _raw(endpoint, 'GET', '/{}/{}/none.txt?{}'.format(endpoint.account_name, readme_share, sas))
    assert signature not in body.decode() and endpoint.account_key not in body.decode()
    assert uuid.UUID(ET.fromstring(body).findtext('Message').split('RequestId:')[1].split()[0])


def test_names_that_need_url_encoding(endpoint):
    # Spaces, '+', '%', '?', '#', '&', quotes and non-ASCII must survive the URL, the signature and the listing.
    share = _share_client(endpoint, 'odd-names')
    share.create_share()
    share.get_directory_client('d ir+x').create_directory()
    names = ['a b+c.txt', 'q?x#y&z=%20.txt', "it's.txt", 'ünï cödé.txt', 'd ir+x/f g']
    for name in names:
        share.get_file_client(name).upload_file(name.encode())
        assert share.get_file_client(name).download_file().readall() == name.encode()
    listed = share.get_directory_client('').list_directories_and_files(name_starts_with='q?x#y&z=%')
    assert [item['name'] for item in listed] == ['q?x#y&z=%20.txt']
    assert list_file_paths('FILE', endpoint.account_name, share='odd-names', account_key=endpoint.account_key,
                           account_url=endpoint.account_url) == sorted('/' + name for name in names)


def test_handle_takes_a_parsed_query_and_answers_head_without_body(tmp_path):
    # The contract with the local service's own HTTP server, which may hand over a parse_qs-style mapping.
    api = FilesApi(str(tmp_path), base64.b64encode(b'k' * 64).decode())
    os.makedirs(tmp_path / 'acct' / 'shares' / 'share1')
    sas = generate_share_sas('acct', 'share1', base64.b64encode(b'k' * 64).decode(), permission='rl',
                             expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    query = parse_qs(sas)
    status, headers, body = api.handle('GET', '/acct/share1', dict(query, restype='directory', comp='list'), {},
                                       None)
    assert status == 200 and b'<Entries></Entries>' in body
    status, headers, body = api.handle('HEAD', '/acct/share1/missing.txt', query, {}, None)
    assert (status, headers['x-ms-error-code'], body) == (404, 'ResourceNotFound', b'')


def test_non_ascii_signatures_are_refused_not_crashed(tmp_path):
    # hmac.compare_digest refuses non-ASCII str: a SharedKey or SAS signature with such a character must be a 403,
    # not an exception out of the handler (a 500 and a logged traceback).
    api = FilesApi(str(tmp_path), base64.b64encode(b'k' * 64).decode())
    os.makedirs(tmp_path / 'acct' / 'shares' / 'share1')
    now = datetime.now(timezone.utc).strftime('%a, %d %b %Y %H:%M:%S GMT')
    status, headers, _ = api.handle('GET', '/acct/share1', 'restype=directory&comp=list',
                                    {'Authorization': 'SharedKey acct:\u00e9t\u00e9', 'x-ms-date': now}, None)
    assert (status, headers['x-ms-error-code']) == (403, 'AuthenticationFailed')
    sas = generate_share_sas('acct', 'share1', base64.b64encode(b'k' * 64).decode(), permission='rl',
                             expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    tampered = re.sub(r'sig=[^&]*', 'sig=%C3%A9', sas)
    status, headers, _ = api.handle('GET', '/acct/share1', 'restype=directory&comp=list&' + tampered, {}, None)
    assert (status, headers['x-ms-error-code']) == (403, 'AuthenticationFailed')


def test_delete_share_with_the_account_key_removes_it_and_only_it(endpoint, tmp_path):
    """Delete Share (the recipes' last cell, FileService.delete_share): the share and its files go; a file a symlink
    in it points at stays; a missing share is ShareNotFound; a share SAS cannot delete, as on Azure."""
    outside = tmp_path / 'kept.txt'
    outside.write_bytes(b'not the share\'s')
    share = _share_client(endpoint, 'to-delete')
    share.create_share()
    share.get_directory_client('dir').create_directory()
    share.get_file_client('dir/f.txt').upload_file(b'x')
    os.symlink(str(outside), os.path.join(endpoint.share_dir('to-delete'), 'link.txt'))
    sas_client = ShareClient(endpoint.account_url, 'to-delete', credential=_sas(endpoint, 'to-delete', 'rwdlc'))
    with pytest.raises(HttpResponseError) as refused:
        sas_client.delete_share()
    assert refused.value.status_code == 403 and os.path.isdir(endpoint.share_dir('to-delete'))
    share.delete_share()
    assert not os.path.exists(endpoint.share_dir('to-delete'))
    assert outside.read_bytes() == b'not the share\'s'
    with pytest.raises(ResourceNotFoundError):
        share.delete_share()
