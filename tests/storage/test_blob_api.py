"""The local service's Blob endpoint (localservice/api/blob_api.py) through the real azure-storage-blob SDK over
real HTTP.

The behaviour tests run twice, against Azurite and against the local endpoint, with the same assertions: Azurite is
the oracle of what the service answers (codes, listings, ranges, conditions). The local-only tests check what only
the local endpoint has: the container is the folder jobs mount, hostile names and paths, symlinks, size limits and
concurrent uploads.
"""
import base64
import http.client
import os
import threading
import urllib.parse
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from tests.storage.blob_spec import BlobSpecHook, check_element, check_error, check_headers

pytestmark = [pytest.mark.azurite, pytest.mark.service]


# Every XML body the clients of these tests receive (listings, errors) is checked against the Blob REST spec's
# definitions (blob_spec.py), Azurite's as the local endpoint's.
SPEC = BlobSpecHook()


@pytest.fixture(autouse=True)
def conforms_to_the_spec():
    checked = SPEC.checked
    yield
    errors, SPEC.errors[:] = list(SPEC.errors), []
    assert errors == []
    assert SPEC.checked >= checked


def service(store, **options):
    from azure.storage.blob import BlobServiceClient
    return BlobServiceClient(store.blob_endpoint, credential={'account_name': store.account_name,
                                                              'account_key': store.account_key},
                             raw_response_hook=SPEC, **options)


@pytest.fixture
def container(blob_store):
    client = service(blob_store).get_container_client('c' + uuid.uuid4().hex[:16])
    client.create_container()
    yield client
    try:
        client.delete_container()
    except Exception:  # pylint: disable=broad-except  # a test deleted it
        pass


# Azure refuses an expired or forged SAS, or a SharedKey signed with the wrong key, with AuthenticationFailed
# ("Signature not valid in the specified time frame", "Signature did not match"), as the local endpoint does; Azurite
# says AuthorizationFailure.
REFUSED = [(403, 'AuthenticationFailed'), (403, 'AuthorizationFailure')]


def error_code(call):
    from azure.core.exceptions import HttpResponseError
    with pytest.raises(HttpResponseError) as exc_info:
        call()
    return exc_info.value.status_code, exc_info.value.error_code


# -- the same answers as Azurite ---------------------------------------------------------------------------------------

def test_container_lifecycle(blob_store):
    client = service(blob_store)
    prefix = 'life' + uuid.uuid4().hex[:8]
    names = ['{}-{}'.format(prefix, index) for index in range(3)]
    for name in names:
        client.create_container(name)
    assert error_code(lambda: client.create_container(names[0])) == (409, 'ContainerAlreadyExists')
    assert client.get_container_client(names[0]).exists()
    assert client.get_container_client(names[0]).get_container_properties().name == names[0]
    assert [c.name for c in client.list_containers(name_starts_with=prefix)] == names
    pages = list(client.list_containers(name_starts_with=prefix, results_per_page=2).by_page())
    assert [[c.name for c in page] for page in pages] == [names[:2], names[2:]]
    client.delete_container(names[1])
    assert not client.get_container_client(names[1]).exists()
    assert error_code(lambda: client.get_container_client(names[1]).get_container_properties()) == (
        404, 'ContainerNotFound')
    assert error_code(lambda: client.delete_container(names[1])) == (404, 'ContainerNotFound')
    assert error_code(lambda: client.get_blob_client(names[1], 'x').upload_blob(b'x')) == (404, 'ContainerNotFound')
    for name in (names[0], names[2]):
        client.delete_container(name)
    assert error_code(lambda: client.create_container('Bad_Name')) == (400, 'InvalidResourceName')


@pytest.mark.parametrize('name', ['plain.txt', 'deep/er/path/file.bin', 'with space+plus%percent#hash?.txt',
                                  'ünïcödé/日本語.txt', "quote'and\"double"])
def test_put_get_range_properties_delete(container, name):
    data = os.urandom(1000)
    container.upload_blob(name, data)
    blob = container.get_blob_client(name)
    assert blob.download_blob().readall() == data
    assert blob.download_blob(offset=10, length=20).readall() == data[10:30]
    assert blob.download_blob(offset=990).readall() == data[990:]
    properties = blob.get_blob_properties()
    assert (properties.size, properties.blob_type) == (1000, 'BlockBlob')
    assert [b.name for b in container.list_blobs()] == [name]
    blob.delete_blob()
    assert not blob.exists()
    assert error_code(blob.download_blob) == (404, 'BlobNotFound')
    assert error_code(blob.delete_blob) == (404, 'BlobNotFound')
    assert error_code(blob.get_blob_properties)[0] == 404


def test_empty_blob_and_out_of_range(container):
    container.upload_blob('empty', b'')
    assert container.download_blob('empty').readall() == b''
    container.upload_blob('five', b'12345')
    assert error_code(lambda: container.download_blob('five', offset=7).readall()) == (416, 'InvalidRange')


def test_blocks_staged_and_committed(blob_store, container):
    from azure.storage.blob import BlobBlock
    # The SDK cuts an upload over max_single_put_size into blocks of max_block_size.
    small = service(blob_store, max_single_put_size=1024, max_block_size=1024, max_chunk_get_size=1024,
                    max_single_get_size=1024)
    data = os.urandom(10 * 1024 + 7)
    blob = small.get_blob_client(container.container_name, 'big/blocks.bin')
    blob.upload_blob(data)
    assert blob.download_blob().readall() == data  # chunked: each range pinned to the first one's ETag
    assert blob.get_blob_properties().size == len(data)
    # By hand: the blob is the committed blocks in the list's order; staging shows nothing.
    manual = container.get_blob_client('manual')
    ids = [base64.b64encode('block-{:03d}'.format(i).encode()).decode() for i in range(3)]
    for block_id, text in zip(ids, (b'one,', b'two,', b'three')):
        manual.stage_block(block_id, text)
    assert not manual.exists()
    manual.commit_block_list([BlobBlock(ids[2]), BlobBlock(ids[0])])
    assert manual.download_blob().readall() == b'three' + b'one,'
    unknown = base64.b64encode(b'never-staged').decode()
    assert error_code(lambda: container.get_blob_client('other').commit_block_list([BlobBlock(unknown)])) == (
        400, 'InvalidBlockList')


def test_listing_prefix_delimiter_and_pages(container):
    names = ['a.txt', 'data/1.txt', 'data/2.txt', 'data/sub/3.txt', 'datax.txt', 'z/last.txt']
    for name in names:
        container.upload_blob(name, name.encode())
    assert [b.name for b in container.list_blobs()] == names
    assert [b.name for b in container.list_blobs(name_starts_with='data/')] == names[1:4]
    assert [b.name for b in container.list_blobs(name_starts_with='data')] == names[1:5]
    assert sorted(b.name for b in container.walk_blobs()) == ['a.txt', 'data/', 'datax.txt', 'z/']
    assert sorted(b.name for b in container.walk_blobs(name_starts_with='data/')) == [
        'data/1.txt', 'data/2.txt', 'data/sub/']
    pages = list(container.list_blobs(results_per_page=4).by_page())
    assert [[b.name for b in page] for page in pages] == [names[:4], names[4:]]
    sizes = {b.name: b.size for b in container.list_blobs()}
    assert sizes == {name: len(name) for name in names}


def test_conditions(container):
    from azure.core import MatchConditions
    blob = container.get_blob_client('cond')
    blob.upload_blob(b'first')
    assert error_code(lambda: blob.upload_blob(b'second')) == (409, 'BlobAlreadyExists')  # overwrite=False
    etag = blob.get_blob_properties().etag
    blob.upload_blob(b'second', overwrite=True)
    assert blob.download_blob().readall() == b'second'
    assert error_code(lambda: blob.upload_blob(b'third', overwrite=True, etag=etag,
                                               match_condition=MatchConditions.IfNotModified)) == (
        412, 'ConditionNotMet')
    assert blob.download_blob().readall() == b'second'


def test_service_sas(blob_store, container):
    from azure.storage.blob import (BlobClient, BlobSasPermissions, ContainerClient, ContainerSasPermissions,
                                    generate_blob_sas, generate_container_sas)
    container.upload_blob('data/x.txt', b'x')
    name, key = blob_store.account_name, blob_store.account_key
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    url = blob_store.blob_endpoint
    read_list = generate_container_sas(name, container.container_name, account_key=key, expiry=later,
                                       permission=ContainerSasPermissions(read=True, list=True))
    by_sas = ContainerClient(url, container.container_name, credential=read_list)
    assert [b.name for b in by_sas.list_blobs()] == ['data/x.txt']
    assert by_sas.download_blob('data/x.txt').readall() == b'x'
    assert error_code(lambda: by_sas.upload_blob('no.txt', b'no')) == (403, 'AuthorizationPermissionMismatch')
    writer = ContainerClient(url, container.container_name, credential=generate_container_sas(
        name, container.container_name, account_key=key, expiry=later,
        permission=ContainerSasPermissions(create=True, write=True)))
    writer.upload_blob('by-sas.txt', b'written')
    assert container.download_blob('by-sas.txt').readall() == b'written'
    blob_sas = generate_blob_sas(name, container.container_name, 'data/x.txt', account_key=key, expiry=later,
                                 permission=BlobSasPermissions(read=True))
    assert BlobClient(url, container.container_name, 'data/x.txt', credential=blob_sas).download_blob().readall() == \
        b'x'
    assert error_code(lambda: BlobClient(url, container.container_name, 'by-sas.txt',
                                         credential=blob_sas).download_blob())[0] == 403
    expired = generate_container_sas(name, container.container_name, account_key=key,
                                     expiry=datetime.now(timezone.utc) - timedelta(minutes=1),
                                     permission=ContainerSasPermissions(read=True, list=True))
    assert error_code(lambda: list(ContainerClient(url, container.container_name, credential=expired)
                                   .list_blobs())) in REFUSED
    wrong_key = base64.b64encode(b'not the key').decode()
    forged = generate_container_sas(name, container.container_name, account_key=wrong_key, expiry=later,
                                    permission=ContainerSasPermissions(read=True, list=True))
    assert error_code(lambda: list(ContainerClient(url, container.container_name, credential=forged)
                                   .list_blobs())) in REFUSED
    from azure.storage.blob import BlobServiceClient
    by_wrong_key = BlobServiceClient(url, credential={'account_name': name, 'account_key': wrong_key})
    assert error_code(lambda: by_wrong_key.get_container_client(container.container_name)
                      .get_container_properties()) in REFUSED


# -- the local endpoint: the folder jobs mount, hostile input ----------------------------------------------------------

@pytest.fixture
def local_container(local_blob):
    client = service(local_blob).get_container_client('l' + uuid.uuid4().hex[:16])
    client.create_container()
    yield client, local_blob.container_dir(client.container_name)
    try:
        client.delete_container()
    except Exception:  # pylint: disable=broad-except
        pass


def test_the_container_is_the_folder_jobs_mount(local_container):
    client, root = local_container
    client.upload_blob('x/y.txt', b'uploaded')
    with open(os.path.join(root, 'x', 'y.txt'), 'rb') as f:
        assert f.read() == b'uploaded'
    os.makedirs(os.path.join(root, 'outputs', 'run1'))
    with open(os.path.join(root, 'outputs', 'run1', 'model.txt'), 'wb') as f:
        f.write(b'written by a job')
    assert [b.name for b in client.list_blobs()] == ['outputs/run1/model.txt', 'x/y.txt']
    assert client.download_blob('outputs/run1/model.txt').readall() == b'written by a job'
    client.delete_blob('x/y.txt')
    assert os.listdir(root) == ['outputs']  # the folder the name made goes with its last blob
    assert error_code(lambda: client.upload_blob('outputs', b'a blob where a folder is')) == (409, 'PathConflict')
    assert error_code(lambda: client.upload_blob('outputs/run1/model.txt/inner', b'below a blob')) == (
        409, 'PathConflict')
    client.delete_container()
    assert not os.path.exists(root)


def raw_request(store, method, path, sas, body=b'', headers=None):
    """A request as sent, path untouched (the SDK would quote it): signed with a container SAS in the query."""
    endpoint = urllib.parse.urlsplit(store.blob_endpoint)
    connection = http.client.HTTPConnection(endpoint.hostname, endpoint.port, timeout=30)
    try:
        connection.request(method, '{}{}?{}'.format(endpoint.path, path, sas), body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.getheader('x-ms-error-code'), response.read()
    finally:
        connection.close()


def write_sas(store, container):
    from azure.storage.blob import ContainerSasPermissions, generate_container_sas
    return generate_container_sas(store.account_name, container, account_key=store.account_key,
                                  permission=ContainerSasPermissions(read=True, write=True, create=True, list=True,
                                                                     delete=True),
                                  expiry=datetime.now(timezone.utc) + timedelta(hours=1))


@pytest.mark.parametrize('blob_path', ['../escape.txt', '..%2Fescape.txt', 'a/../../escape.txt',
                                       'a%2F..%2F..%2F..%2Fescape.txt', '%2E%2E/escape.txt', 'a//b.txt', 'dir/',
                                       'back%5Cslash.txt', 'nul%00.txt', 'x' * 256, './dot.txt'])
def test_hostile_blob_names_are_refused(local_blob, local_container, blob_path):
    client, root = local_container
    headers = {'x-ms-blob-type': 'BlockBlob', 'x-ms-version': '2021-08-06', 'Content-Length': '4'}
    status, code, _ = raw_request(local_blob, 'PUT', '/{}/{}'.format(client.container_name, blob_path),
                                  write_sas(local_blob, client.container_name), b'evil', headers)
    assert (status, code) == (400, 'InvalidResourceName')
    assert os.listdir(root) == []
    assert not os.path.exists(os.path.join(os.path.dirname(root), 'escape.txt'))
    assert not os.path.exists(os.path.join(local_blob.data_dir, 'storage', 'escape.txt'))


@pytest.mark.parametrize('container_path', ['..', '%2E%2E', 'UPPER', 'a', 'double--hyphen', '-lead', 'x' * 64])
def test_hostile_container_names_are_refused(local_blob, container_path):
    client = service(local_blob)
    status, code, _ = raw_request(local_blob, 'PUT', '/{}?restype=container'.format(container_path),
                                  '', headers={'x-ms-version': '2021-08-06'})
    assert status in (400, 403)  # refused before or at authentication, never created
    assert code in ('InvalidResourceName', 'AuthenticationFailed')
    # Through the SDK ('..' is then a dot segment the HTTP client resolves: no container named at all).
    assert error_code(lambda: client.create_container(urllib.parse.unquote(container_path)))[1] in (
        'InvalidResourceName', 'InvalidUri')


def test_symlinks_are_no_blobs_and_never_written_through(local_blob, local_container, tmp_path):
    client, root = local_container
    outside = tmp_path / 'outside.txt'
    outside.write_bytes(b'secret outside')
    os.symlink(str(outside), os.path.join(root, 'link.txt'))
    os.symlink(str(tmp_path), os.path.join(root, 'linkdir'))
    os.symlink(os.path.join(local_blob.data_dir, 'token'), os.path.join(root, 'token'))
    assert list(client.list_blobs()) == []
    for name in ('link.txt', 'linkdir/outside.txt', 'token'):
        assert error_code(lambda name=name: client.download_blob(name).readall()) == (404, 'BlobNotFound')
    assert error_code(lambda: client.upload_blob('linkdir/new.txt', b'through a link')) == (409, 'PathConflict')
    assert not (tmp_path / 'new.txt').exists()
    client.upload_blob('link.txt', b'replaces the link', overwrite=True)
    assert outside.read_bytes() == b'secret outside'
    assert not os.path.islink(os.path.join(root, 'link.txt'))
    assert client.download_blob('link.txt').readall() == b'replaces the link'


def test_a_symlinked_container_folder_is_refused(local_blob, tmp_path):
    name = 's' + uuid.uuid4().hex[:12]
    folder = local_blob.container_dir(name)
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    os.symlink(str(tmp_path), folder)
    try:
        client = service(local_blob).get_container_client(name)
        assert error_code(lambda: list(client.list_blobs())) == (403, 'AuthorizationFailure')
        assert error_code(lambda: client.upload_blob('x', b'x')) == (403, 'AuthorizationFailure')
        assert os.listdir(str(tmp_path)) == []
    finally:
        os.unlink(folder)


@pytest.mark.parametrize('query,limit', [('', 5000 * 1024 * 1024), ('&comp=block&blockid=YQ%3D%3D',
                                                                     4000 * 1024 * 1024)])
def test_size_limits(local_blob, local_container, query, limit):
    client, root = local_container
    sas = write_sas(local_blob, client.container_name) + query
    headers = {'x-ms-blob-type': 'BlockBlob', 'x-ms-version': '2021-08-06', 'Content-Length': str(limit + 1)}
    endpoint = urllib.parse.urlsplit(local_blob.blob_endpoint)
    connection = http.client.HTTPConnection(endpoint.hostname, endpoint.port, timeout=30)
    try:  # the head only: the answer comes before any of the body
        connection.putrequest('PUT', '{}/{}/huge.bin?{}'.format(endpoint.path, client.container_name, sas))
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        assert (response.status, response.getheader('x-ms-error-code')) == (413, 'RequestBodyTooLarge')
        assert b'upload larger data in blocks' in response.read()
    finally:
        connection.close()
    assert os.listdir(root) == []


def test_concurrent_uploads_of_one_blob_never_tear_it(local_container):
    client, root = local_container
    contents = [bytes([index]) * (3 * 1024 * 1024) for index in range(6)]
    client.upload_blob('shared.bin', contents[0], overwrite=True)
    seen, errors = [], []
    done = threading.Event()

    def upload(data):
        try:
            for _ in range(3):
                client.upload_blob('shared.bin', data, overwrite=True)
        except Exception as error:  # pylint: disable=broad-except
            errors.append(error)

    def read():
        while not done.is_set():
            with open(os.path.join(root, 'shared.bin'), 'rb') as f:  # what a job reads, any moment
                seen.append(f.read())
    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=upload, args=(data,)) for data in contents]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    reader.join()
    assert errors == []
    assert seen and all(data in contents for data in seen)
    assert client.download_blob('shared.bin').readall() in contents
    assert os.listdir(root) == ['shared.bin']  # no temporary file left in the container


def test_the_spec_check_sees_every_listing_and_refuses_what_the_definition_lacks(blob_store, container):
    from xml.etree import ElementTree
    from azure.storage.blob._generated import models as generated
    before = SPEC.checked
    container.upload_blob('a.txt', b'a')
    list(container.list_blobs())
    list(container.walk_blobs())
    list(service(blob_store).list_containers())
    error_code(lambda: container.download_blob('missing'))
    assert SPEC.checked - before == 4
    invented = ElementTree.fromstring(
        '<EnumerationResults ServiceEndpoint="http://h/a/" ContainerName="c"><Blobs><Blob><Name>a</Name>'
        '<Properties><Last-Modified>yesterday</Last-Modified><Content-Length>ten</Content-Length>'
        '<Colour>blue</Colour></Properties></Blob></Blobs><NextMarker /></EnumerationResults>')
    assert sorted(check_element(invented, generated.ListBlobsFlatSegmentResponse)) == [
        'EnumerationResults/Blobs/Blob/Properties/Content-Length: \'ten\' is not an integer',
        'EnumerationResults/Blobs/Blob/Properties/Last-Modified: \'yesterday\' is not an RFC 1123 date',
        'EnumerationResults/Blobs/Blob/Properties: element Colour is not in the definition',
        'EnumerationResults/Blobs/Blob/Properties: required element Etag missing']
    assert check_error(ElementTree.fromstring('<Error><Code>A</Code></Error>'), 'B') == [
        "error code 'A' is not the x-ms-error-code header 'B'", 'error without a Message']
    # Headers: those of the operation only (Get Blob has no access tier), each of its type.
    assert check_headers('GET', 'http://h/acct/c/blob.txt', {
        'Content-Length': 'ten', 'Last-Modified': 'today', 'x-ms-access-tier': 'Hot', 'x-ms-blob-type': 'BlockBlob',
        'Content-MD5': '#', 'x-ms-server-encrypted': 'yes'}) == [
        "Content-Length: 'ten' is not an integer", "Last-Modified: 'today' is not an RFC 1123 date",
        'BlobOperations.download: header x-ms-access-tier is not in the spec', "Content-MD5: '#' is not base64",
        "x-ms-server-encrypted: 'yes' is not a boolean"]
    assert check_headers('HEAD', 'http://h/acct/c/blob.txt', {'x-ms-access-tier': 'Hot'}) == []


def test_a_restart_removes_interrupted_uploads_and_keeps_staged_blocks(tmp_path):
    from azext_batchai_sweep.localservice.api.blob_api import BlobApi
    uploads = tmp_path / 'acct' / 'blob-uploads' / 'data'
    (uploads / 'blocks' / 'abc').mkdir(parents=True)
    (uploads / 'blocks' / 'abc' / 'block').write_bytes(b'staged')
    for name in ('upload-x1', 'commit-x2'):
        (uploads / name).write_bytes(b'half a body')
    BlobApi(str(tmp_path), base64.b64encode(b'k' * 64).decode())
    assert sorted(os.listdir(uploads)) == ['blocks']
    assert (uploads / 'blocks' / 'abc' / 'block').read_bytes() == b'staged'


def test_if_none_match_on_a_read_answers_not_modified_without_a_body(blob_store, container):
    from azure.core import MatchConditions
    blob = container.get_blob_client('cached')
    blob.upload_blob(b'cached')
    etag = blob.get_blob_properties().etag
    assert error_code(lambda: blob.download_blob(etag=etag, match_condition=MatchConditions.IfModified)) == (
        304, 'ConditionNotMet')
    assert blob.download_blob(etag='"0xother"', match_condition=MatchConditions.IfModified).readall() == b'cached'
