"""Where the snapshot is uploaded: the local service's Files endpoint with its own key on every scheduler (processes
and Slurm read its data dir; Azure Batch's scheduler hands the snapshot to each task as a resource file:
tests/azurebatch/test_e2e_code.py); Azure's Files endpoint with the AZURE_STORAGE_* credentials without a local
target; a clear error without credentials. Only the client is built here: nothing is sent."""
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


@pytest.mark.parametrize('scheduler', ['processes', 'slurm', 'azure-batch'])
def test_local_schedulers_get_the_local_share(clean_env, tmp_path, scheduler):
    clean_env.setenv('AZURE_STORAGE_KEY', 'YXp1cmU=')  # (not used: the local service's own key is)
    clean_env.setattr(_local_storage, 'local_data_dir', lambda _ctx: _data_dir(tmp_path, scheduler))
    share = _code._share_client(None, 'acct', 'sweep-code')  # pylint: disable=protected-access
    assert share.url.startswith('http://127.0.0.1:9/files/acct/sweep-code')


def test_azure_gets_azure_files_with_the_environment_key(clean_env):
    clean_env.setattr(_local_storage, 'local_data_dir', lambda _ctx: None)
    clean_env.setenv('AZURE_STORAGE_KEY', 'YXp1cmU=')
    share = _code._share_client(None, 'acct', 'sweep-code')  # pylint: disable=protected-access
    assert share.url.startswith('https://acct.file.core.windows.net/sweep-code')
    clean_env.delenv('AZURE_STORAGE_KEY')
    from azure.cli.core.azclierror import RequiredArgumentMissingError
    with pytest.raises(RequiredArgumentMissingError, match='No credentials to upload the code snapshot'):
        _code._share_client(None, 'acct', 'sweep-code')  # pylint: disable=protected-access
