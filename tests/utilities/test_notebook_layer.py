"""utilities.config, .cluster, .dataset and the notebook-compatibility layer (.storage, .batchai), each against the
original's behaviour (microsoftarchive/BatchAI utilities/config.py, cluster.py, dataset.py at 2238607, and the legacy
azure-storage SDK's return values): what they return and what they print.
"""
import json
import os
import stat
import uuid

import azure.mgmt.batchai.models as models
import pytest
from azure.core.exceptions import ResourceExistsError

from azext_batchai_sweep.utilities import _endpoints, cluster, config, dataset, storage
from azext_batchai_sweep.utilities.batchai import NotebookBatchAI
from tests.loopback_http import ScriptedHandler, serving

VALUES = {
    'subscription_id': 'sub', 'aad_client_id': 'id', 'aad_secret': 'secret', 'aad_tenant': 'tenant',
    'location': 'eastus', 'base_url': 'https://management.azure.com', 'resource_group': 'rg', 'workspace': 'ws',
    'storage_account': {'name': 'acct', 'key': 'a2V5'}, 'admin_user': {'name': 'demoUser', 'password': 'pw'}}


def write_config(tmp_path, **changes):
    values = json.loads(json.dumps(VALUES))
    values.update(changes)
    path = tmp_path / 'configuration.json'
    path.write_text(json.dumps(values), encoding='utf-8')
    return str(path)


@pytest.fixture
def az_pointed_at(tmp_path, monkeypatch):
    """What `az batchai sweep local start` leaves: az config's batchai_sweep section naming a service."""
    monkeypatch.delenv('AZURE_BATCHAI_SWEEP_ENDPOINT', raising=False)
    monkeypatch.delenv('AZURE_BATCHAI_SWEEP_TOKEN_FILE', raising=False)
    config_dir = tmp_path / 'az'
    config_dir.mkdir()
    monkeypatch.setenv('AZURE_CONFIG_DIR', str(config_dir))

    def point(service):
        (config_dir / 'config').write_text('[batchai_sweep]\nendpoint = {}\ntoken_file = {}\n'.format(
            service.endpoint, service.token_file), encoding='utf-8')
    return point


# -- config ---------------------------------------------------------------------------------------------------------

def test_configuration_reads_the_recipes_file_as_the_old_class_did(tmp_path):
    cfg = config.Configuration(write_config(tmp_path, container_registry={'user': 'u', 'password': 'p'}))
    assert (cfg.subscription_id, cfg.aad_client_id, cfg.aad_secret_key, cfg.aad_tenant, cfg.location, cfg.url,
            cfg.resource_group, cfg.workspace, cfg.storage_account_name, cfg.storage_account_key, cfg.admin,
            cfg.admin_password, cfg.admin_ssh_key) == ('sub', 'id', 'secret', 'tenant', 'eastus',
                                                       'https://management.azure.com', 'rg', 'ws', 'acct', 'a2V5',
                                                       'demoUser', 'pw', None)
    assert (cfg.container_registry_user, cfg.container_registry_password, cfg.keyvault_id) == ('u', 'p', None)
    assert 'a2V5' not in repr(cfg) and 'secret' not in repr(cfg)
    with pytest.raises(ValueError, match='Cannot find configuration file "nope.json"'):
        config.Configuration('nope.json')
    broken = json.loads(json.dumps(VALUES))
    del broken['workspace']
    (tmp_path / 'broken.json').write_text(json.dumps(broken), encoding='utf-8')
    with pytest.raises(AttributeError, match='Please provide a value for "workspace" configuration key'):
        config.Configuration(str(tmp_path / 'broken.json'))
    with pytest.raises(AttributeError, match='Please provide admin user password or public ssh key'):
        config.Configuration(write_config(tmp_path, admin_user={'name': 'demoUser', 'password': ''}))


def test_a_windows_path_to_the_configuration_works_here(tmp_path, monkeypatch):
    """The PyTorch recipe reads '..\\..\\configuration.json' (it was written on Windows)."""
    write_config(tmp_path)
    (tmp_path / 'a' / 'b').mkdir(parents=True)
    monkeypatch.chdir(tmp_path / 'a' / 'b')
    assert config.Configuration('..\\..\\configuration.json').workspace == 'ws'


def test_legacy_file_permissions():
    permissions = storage.FilePermissions
    assert str(permissions.READ + permissions.WRITE) == 'rw' and str(permissions(read=True, delete=True)) == 'rd'
    assert permissions(_str='rcwd').create


def test_storage_endpoints_of_the_configuration_are_used_for_its_account(tmp_path, monkeypatch):
    monkeypatch.delenv('AZURE_STORAGE_CONNECTION_STRING', raising=False)
    account = 'cfg' + uuid.uuid4().hex[:8]
    assert _endpoints.endpoint(account, 'BLOB') == 'https://{}.blob.core.windows.net'.format(account)
    config.Configuration(write_config(tmp_path, storage_account={
        'name': account, 'key': 'a2V5', 'blob_endpoint': 'http://127.0.0.1:1/x/', 'file_endpoint': 'http://f'}))
    assert _endpoints.endpoint(account, 'BLOB') == 'http://127.0.0.1:1/x'
    assert _endpoints.endpoint(account, 'FILE') == 'http://f'
    assert storage.BlockBlobService(account, 'a2V5')._service.url.startswith('http://127.0.0.1:1/x')
    _endpoints.forget(account)


@pytest.mark.service
def test_local_base_url_gives_the_local_services_client(tmp_path, local_service, az_pointed_at, capsys):
    az_pointed_at(local_service)
    cfg = config.Configuration(write_config(tmp_path, base_url=local_service.endpoint + '/',
                                            resource_group=local_service.resource_group, workspace='cfg-local'))
    client = config.create_batchai_client(cfg)
    assert isinstance(client, NotebookBatchAI)
    workspace = client.workspaces.create(cfg.resource_group, cfg.workspace, cfg.location).result()
    assert workspace.name == 'cfg-local' and workspace.location == 'eastus'
    assert config.create_resource_group(cfg) is None
    assert capsys.readouterr().out == ('Resource group {}: the local Batch AI service at {}/ needs none; nothing '
                                       'created.\n'.format(cfg.resource_group, local_service.endpoint))
    # The configured account's File endpoint is now the service's: the legacy FileService reaches its shares.
    with open(os.path.join(local_service.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    assert storage.FileService('acct', key).create_share('cfg-local-share') is True
    assert os.path.isdir(os.path.join(local_service.data_dir, 'storage', 'acct', 'shares', 'cfg-local-share'))
    # So is its Blob endpoint: the legacy BlockBlobService, from the name and key alone, uploads into the container
    # folder that a job's azureBlobFileSystems mount is.
    blobs = storage.BlockBlobService('acct', key)
    assert blobs.create_container('cfg-local-container') is True
    blobs.create_blob_from_text('cfg-local-container', 'data/a.txt', 'alpha')
    with open(os.path.join(local_service.data_dir, 'storage', 'acct', 'containers', 'cfg-local-container', 'data',
                           'a.txt'), encoding='utf-8') as f:
        assert f.read() == 'alpha'
    assert blobs.delete_container('cfg-local-container') is True
    client.workspaces.delete(cfg.resource_group, cfg.workspace).result()
    _endpoints.forget('acct')


@pytest.mark.service
def test_environment_overrides_point_at_the_local_service_too(tmp_path, local_service, monkeypatch):
    monkeypatch.setenv('AZURE_CONFIG_DIR', str(tmp_path))  # no az config at all
    monkeypatch.setenv('AZURE_BATCHAI_SWEEP_ENDPOINT', local_service.endpoint)
    monkeypatch.setenv('AZURE_BATCHAI_SWEEP_TOKEN_FILE', local_service.token_file)
    cfg = config.Configuration(write_config(tmp_path, base_url=local_service.endpoint))
    client = config.create_batchai_client(cfg)
    assert [w.name for w in client.workspaces.list_by_resource_group(local_service.resource_group)]
    _endpoints.forget('acct')


def test_a_loopback_base_url_that_is_not_the_local_service_says_how_to_start_it(tmp_path, az_pointed_at):
    cfg = config.Configuration(write_config(tmp_path, base_url='http://127.0.0.1:9'))
    with pytest.raises(ValueError, match='az batchai sweep local start'):
        config.create_batchai_client(cfg)


def test_azure_base_url_uses_az_login(tmp_path, az_pointed_at, monkeypatch):
    """No Azure here: a stand-in `az` on PATH answers `az account get-access-token` as az does."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    fake_az = bin_dir / 'az'
    fake_az.write_text('#!/bin/sh\necho "$@" > "{}"\necho \'{{"accessToken": "tok", "expires_on": 4102444800}}\'\n'
                       .format(tmp_path / 'args'), encoding='utf-8')
    fake_az.chmod(fake_az.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv('PATH', '{}{}{}'.format(bin_dir, os.pathsep, os.environ['PATH']))
    client = config.create_batchai_client(config.Configuration(write_config(tmp_path)))
    assert client._client._base_url == 'https://management.azure.com'  # pylint: disable=protected-access
    credential = client._config.credential  # pylint: disable=protected-access
    assert isinstance(credential, config.AzLoginCredential)
    token = credential.get_token('https://management.azure.com/.default')
    assert (token.token, token.expires_on) == ('tok', 4102444800)
    assert (tmp_path / 'args').read_text().split() == ['account', 'get-access-token', '--scope',
                                                       'https://management.azure.com/.default', '-o', 'json']


# -- cluster --------------------------------------------------------------------------------------------------------

def cluster_model(scale, errors=None):
    return models.Cluster.deserialize({'name': 'nc6', 'properties': {
        'allocationState': 'resizing', 'scaleSettings': scale, 'currentNodeCount': 2, 'errors': errors,
        'nodeStateCounts': {'idleNodeCount': 1, 'runningNodeCount': 1, 'preparingNodeCount': 0,
                            'unusableNodeCount': 0, 'leavingNodeCount': 0}}})


def test_print_cluster_status_prints_the_old_lines(capsys):
    cluster.print_cluster_status(cluster_model({'manual': {'targetNodeCount': 4}}))
    cluster.print_cluster_status(cluster_model(
        {'autoScale': {'minimumNodeCount': 0, 'maximumNodeCount': 8, 'initialNodeCount': 2}},
        errors=[{'code': 'DiskFull', 'message': 'no space', 'details': [{'name': 'node', 'value': 'n1'}]}]))
    assert capsys.readouterr().out == (
        'Cluster state: resizing Target: 4; Allocated: 2; Idle: 1; Unusable: 0; Running: 1; Preparing: 0; Leaving: 0\n'
        'Cluster state: resizing Min: 0; Max: 8; Initial: 2; Allocated: 2; Idle: 1; Unusable: 0; Running: 1; '
        'Preparing: 0; Leaving: 0\n'
        'Cluster error: DiskFull: no space\nDetails:\nnode: n1\n')


# -- dataset --------------------------------------------------------------------------------------------------------

class _Files(ScriptedHandler):
    def do_GET(self):  # pylint: disable=invalid-name
        if self.path.startswith('/data.bin'):
            self.reply(200, b'\x00data' * 1000)
        else:
            self.reply(404, b'missing')


def test_download_file_writes_the_file_and_keeps_the_sas_out_of_the_output(tmp_path, capsys):
    with serving(_Files) as url:
        dataset.download_file(url + '/data.bin?sig=SECRET', str(tmp_path / 'sub' / 'data.bin'))
        assert (tmp_path / 'sub' / 'data.bin').read_bytes() == b'\x00data' * 1000
        assert capsys.readouterr().out == 'Downloading {}/data.bin ...Done\n'.format(url)
        with pytest.raises(Exception, match='404'):
            dataset.download_file(url + '/nope', str(tmp_path / 'nope'))
        assert not (tmp_path / 'nope').exists()


@pytest.mark.azurite
def test_dataset_uploads_an_extracted_dataset_without_downloading(tmp_path, azurite, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name in dataset.MNIST_FILES:
        os.makedirs(os.path.dirname(os.path.join(dataset.MNIST_LOCAL_DIR, name)) or '.', exist_ok=True)
        with open(os.path.join(dataset.MNIST_LOCAL_DIR, name), 'w', encoding='utf-8') as f:
            f.write(name)
    blobs = storage.BlockBlobService(connection_string=azurite.connection_string)
    blobs.create_container('dataset-test')
    dataset.download_and_upload_mnist_dataset_to_blob(blobs, 'dataset-test', 'mnist_dataset')
    assert capsys.readouterr().out == 'Uploading MNIST dataset...\nDone\n'
    names = sorted(blob.name for blob in blobs.list_blobs('dataset-test'))
    assert names == sorted('mnist_dataset/' + name for name in dataset.MNIST_FILES)
    assert 'mnist_dataset/mnist_train_lmdb/data.mdb' in names


# -- storage: the legacy classes ------------------------------------------------------------------------------------

@pytest.mark.azurite
@pytest.mark.service
def test_block_blob_service_has_the_legacy_methods_and_results(blob_store, tmp_path):
    _endpoints.register(blob_store.account_name, blob=blob_store.blob_endpoint)
    service = storage.BlockBlobService(blob_store.account_name, blob_store.account_key)
    assert service.create_container('legacy', fail_on_exist=False) is True
    assert service.create_container('legacy') is False
    with pytest.raises(ResourceExistsError):
        service.create_container('legacy', fail_on_exist=True)
    source = tmp_path / 'a.txt'
    source.write_text('alpha', encoding='utf-8')
    properties = service.create_blob_from_path('legacy', 'dir/a.txt', str(source))
    assert properties.etag and properties.last_modified
    service.create_blob_from_text('legacy', 'other/b.txt', 'beta')
    assert service.exists('legacy') and service.exists('legacy', 'dir/a.txt')
    assert not service.exists('legacy', 'dir/none.txt') and not service.exists('no-such-container')
    assert [blob.name for blob in service.list_blobs('legacy')] == ['dir/a.txt', 'other/b.txt']
    assert [blob.name for blob in service.list_blobs('legacy', prefix='dir/')] == ['dir/a.txt']
    service.get_blob_to_path('legacy', 'other/b.txt', str(tmp_path / 'b.txt'))
    assert (tmp_path / 'b.txt').read_text(encoding='utf-8') == 'beta'
    assert service.delete_container('legacy') is True and service.delete_container('legacy') is False
    _endpoints.forget(blob_store.account_name)


@pytest.mark.service
def test_file_service_has_the_legacy_methods_and_results(local_service, tmp_path):
    with open(os.path.join(local_service.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    _endpoints.register('legacyacct', file='{}/legacyacct'.format(local_service.files_endpoint.rstrip('/')))
    service = storage.FileService('legacyacct', key)
    assert service.create_share('legacy-share', fail_on_exist=False) is True
    assert service.create_share('legacy-share') is False
    assert service.create_directory('legacy-share', 'scripts', fail_on_exist=False) is True
    assert service.create_directory('legacy-share', 'scripts') is False
    source = tmp_path / 'train.py'
    source.write_text('print(1)\n', encoding='utf-8')
    assert service.create_file_from_path('legacy-share', 'scripts', 'train.py', str(source)) is None
    assert service.exists('legacy-share', 'scripts', 'train.py') and service.exists('legacy-share', 'scripts')
    assert not service.exists('legacy-share', 'scripts', 'none.py') and not service.exists('no-share')
    listing = service.list_directories_and_files('legacy-share')
    assert listing == [storage.Directory('scripts')]
    (entry,) = service.list_directories_and_files('legacy-share', 'scripts')
    assert isinstance(entry, storage.File) and entry.name == 'train.py'
    service.get_file_to_path('legacy-share', 'scripts', 'train.py', str(tmp_path / 'copy.py'))
    assert (tmp_path / 'copy.py').read_text(encoding='utf-8') == 'print(1)\n'
    assert service.delete_share('legacy-share') is True and service.delete_share('legacy-share') is False
    _endpoints.forget('legacyacct')


# -- batchai: the 2.0 call forms ------------------------------------------------------------------------------------

@pytest.mark.service
def test_the_2_0_call_forms_create_and_delete(local_service, batchai_client):
    client = NotebookBatchAI(batchai_client)
    rg = local_service.resource_group
    workspace = client.workspaces.create(rg, 'compat-ws', 'westus', tags={'a': 'b'}, raw=False).result()
    assert (workspace.location, workspace.tags) == ('westus', {'a': 'b'})
    experiment = client.experiments.create(rg, 'compat-ws', 'compat-exp', custom_headers={'x-test': '1'}).result()
    assert experiment.name == 'compat-exp'
    assert client.experiments.get(rg, 'compat-ws', 'compat-exp').name == 'compat-exp'  # the 7.0 client's own
    assert client._config is batchai_client._config  # pylint: disable=protected-access
    client.experiments.delete(rg, 'compat-ws', 'compat-exp', polling=object()).result()  # an old polling object
    assert [e.name for e in client.experiments.list_by_workspace(rg, 'compat-ws')] == []
    client.workspaces.delete(rg, 'compat-ws').result()
