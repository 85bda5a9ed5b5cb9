"""Where the snapshot is uploaded: the local service's Files endpoint with its own key for the schedulers that read
its data dir (processes, Slurm); Azure's Files endpoint with the AZURE_STORAGE_* credentials for the Azure Batch
scheduler (its pools mount Azure's shares) and without a local target; a clear error without credentials. Only the
client is built here: nothing is sent."""
import json

import pytest

from azext_batchai_sweep import _code, _local_storage


def _data_dir(tmp_path, scheduler):
    (tmp_path / 'service.json').write_text(json.dumps({'scheduler': scheduler,
                                                       'filesEndpoint': 'http://127.0.0.1:9/files'}))
    (tmp_path / 'storage.key').write_text('bG9jYWw=')
    return str(tmp_path)


@pytest.fixture(name='clean_env')
def _clean_env(monkeypatch):
    for name in ('AZURE_STORAGE_KEY', 'AZURE_STORAGE_SAS_TOKEN', 'AZURE_STORAGE_CONNECTION_STRING'):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize('scheduler', ['processes', 'slurm'])
def test_local_schedulers_get_the_local_share(clean_env, tmp_path, scheduler):
    clean_env.setattr(_local_storage, 'local_data_dir', lambda _ctx: _data_dir(tmp_path, scheduler))
    share = _code._share_client(None, 'acct', 'sweep-code')  # pylint: disable=protected-access
    assert share.url.startswith('http://127.0.0.1:9/files/acct/sweep-code')


@pytest.mark.parametrize('local', [True, False])
def test_azure_batch_and_azure_get_azure_files_with_the_environment_key(clean_env, tmp_path, local):
    clean_env.setattr(_local_storage, 'local_data_dir',
                      lambda _ctx: _data_dir(tmp_path, 'azure-batch') if local else None)
    clean_env.setenv('AZURE_STORAGE_KEY', 'YXp1cmU=')
    share = _code._share_client(None, 'acct', 'sweep-code')  # pylint: disable=protected-access
    assert share.url.startswith('https://acct.file.core.windows.net/sweep-code')
    clean_env.delenv('AZURE_STORAGE_KEY')
    from azure.cli.core.azclierror import RequiredArgumentMissingError
    with pytest.raises(RequiredArgumentMissingError, match='No credentials to upload the code snapshot'):
        _code._share_client(None, 'acct', 'sweep-code')  # pylint: disable=protected-access
