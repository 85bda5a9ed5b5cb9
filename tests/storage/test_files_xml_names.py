"""The Files API's XML keeps every name exactly (rule 6 of issue 13): a character an XML parser would change (a raw
CR, CR LF) is escaped, so what a FILE parameter plans is the path that exists."""
import os

import pytest
from azure.storage.fileshare import ShareServiceClient

from azext_batchai_sweep.core.spec.storage import list_file_paths

from .files_server import start_files_endpoint

NAMES = ['cr\rinside', 'crlf\r\nend', 'trailing-cr\r', 'lf\ninside', 'tab\tname', 'amp&lt;not-an-entity',
         '<angle>', 'quote"s', "apos'", '&#13;literal', ' lead-space', 'bell\x07x', 'ünïcode']


@pytest.fixture(scope='module')
def share(tmp_path_factory):
    endpoint, server = start_files_endpoint(str(tmp_path_factory.mktemp('storage')))
    folder = endpoint.share_dir('names')
    os.makedirs(os.path.join(folder, 'dir\rcr'))
    for name in NAMES:  # written as a job would, straight to the disk
        with open(os.path.join(folder, name), 'w', encoding='utf-8') as f:
            f.write(name)
    with open(os.path.join(folder, 'dir\rcr', 'in\r\n'), 'w', encoding='utf-8') as f:
        f.write('nested')
    yield endpoint
    server.shutdown()
    server.server_close()


def _client(endpoint):
    service = ShareServiceClient(endpoint.account_url, credential={'account_name': endpoint.account_name,
                                                                   'account_key': endpoint.account_key})
    return service.get_share_client('names')


def test_the_sdk_lists_every_name_exactly(share):
    listed = {item['name'] for item in _client(share).list_directories_and_files()}
    assert listed == set(NAMES) | {'dir\rcr'}
    nested = {item['name'] for item in _client(share).get_directory_client('dir\rcr').list_directories_and_files()}
    assert nested == {'in\r\n'}


def test_a_file_parameter_plans_paths_that_exist(share):
    paths = list_file_paths('FILE', share.account_name, share='names', account_key=share.account_key,
                            account_url=share.account_url)
    assert sorted(paths) == sorted(['/' + name for name in NAMES] + ['/dir\rcr/in\r\n'])
    client = _client(share)
    for path in paths:  # each planned path is the file: read back through the API and on disk
        data = client.get_file_client(path.lstrip('/')).download_file().readall().decode('utf-8')
        assert data == (path.lstrip('/') if path.count('/') == 1 else 'nested')
        assert os.path.isfile(os.path.join(share.share_dir('names'), *path.lstrip('/').split('/')))


def test_prefix_and_marker_echo_exactly(share):
    client = _client(share)
    pages = client.list_directories_and_files(name_starts_with='cr', results_per_page=1).by_page()
    seen = [item['name'] for page in pages for item in page]
    assert seen == ['cr\rinside', 'crlf\r\nend']
