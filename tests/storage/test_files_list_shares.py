"""List Shares (`GET /<account>?comp=list`, what `az storage share list` sends) on the local Files endpoint, through
the real azure-storage-file-share SDK; the az command itself runs in tests/cli/test_builtin_routing.py."""
import http.client
import os
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

import pytest
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
from azure.storage.fileshare import ShareServiceClient, generate_share_sas

from .files_server import start_files_endpoint

SHARES = ['alpha', 'beta-1', 'beta-2', 'gamma']


@pytest.fixture(scope='module')
def endpoint(tmp_path_factory):
    endpoint, server = start_files_endpoint(str(tmp_path_factory.mktemp('storage')))
    service = _service(endpoint)
    for name in SHARES:
        service.create_share(name)
    yield endpoint
    server.shutdown()
    server.server_close()


def _service(endpoint, credential=None):
    return ShareServiceClient(endpoint.account_url, credential=credential or {
        'account_name': endpoint.account_name, 'account_key': endpoint.account_key})


def test_lists_the_shares_in_name_order_with_their_properties(endpoint):
    shares = list(_service(endpoint).list_shares())
    assert [share.name for share in shares] == SHARES
    for share in shares:
        assert share.etag and share.last_modified.tzinfo is not None and share.quota == 5120


def test_prefix_and_paging(endpoint):
    service = _service(endpoint)
    assert [share.name for share in service.list_shares(name_starts_with='beta')] == ['beta-1', 'beta-2']
    pages = service.list_shares(results_per_page=3).by_page()
    assert [[share.name for share in page] for page in pages] == [SHARES[:3], SHARES[3:]]


def test_an_account_without_shares_lists_none(endpoint):
    other = endpoint.account_url.rsplit('/', 1)[0] + '/emptyaccount'
    service = ShareServiceClient(other, credential={'account_name': 'emptyaccount',
                                                    'account_key': endpoint.account_key})
    assert list(service.list_shares()) == []


def test_only_real_share_directories_are_listed(endpoint, tmp_path):
    shares_dir = os.path.dirname(endpoint.share_dir('x'))
    os.makedirs(str(tmp_path / 'elsewhere'))
    os.symlink(str(tmp_path / 'elsewhere'), os.path.join(shares_dir, 'linked'))
    os.makedirs(os.path.join(shares_dir, 'Not_A_Share'))
    open(os.path.join(shares_dir, 'afile'), 'wb').close()
    try:
        assert [share.name for share in _service(endpoint).list_shares()] == SHARES
    finally:
        os.unlink(os.path.join(shares_dir, 'linked'))
        os.rmdir(os.path.join(shares_dir, 'Not_A_Share'))
        os.unlink(os.path.join(shares_dir, 'afile'))


def test_a_share_sas_cannot_list_the_account(endpoint):
    sas = generate_share_sas(endpoint.account_name, 'alpha', endpoint.account_key, permission='rl',
                             expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    with pytest.raises(ClientAuthenticationError):
        list(_service(endpoint, credential=sas).list_shares())


def test_a_wrong_key_is_refused(endpoint):
    wrong = {'account_name': endpoint.account_name, 'account_key': 'd3Jvbmc=' * 8}
    with pytest.raises(ClientAuthenticationError):
        list(_service(endpoint, credential=wrong).list_shares())


def test_other_account_level_requests_are_unsupported_operations(endpoint):
    url = urlsplit(endpoint.account_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        connection.request('GET', url.path + '?restype=service&comp=properties')
        response = connection.getresponse()
        status, body = response.status, response.read()
    finally:
        connection.close()
    assert status == 400 and ET.fromstring(body).findtext('Code') == 'UnsupportedOperation'
    with pytest.raises(HttpResponseError):
        _service(endpoint).get_service_properties()
