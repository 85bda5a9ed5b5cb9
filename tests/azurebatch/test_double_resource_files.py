"""The Batch double's resourceFiles (TEST CODE, tests/azurebatch/double/runner.resource_file_failure): what it does
not download fails the task as Batch fails a task whose resource file cannot be downloaded, before its command. A
download itself: tests/azurebatch/test_e2e_code.py (from Azurite, with a SAS)."""
from types import SimpleNamespace

import pytest

from tests.azurebatch.double.runner import resource_file_failure


def _task(*files):
    return SimpleNamespace(body={'resourceFiles': list(files)} if files else {})


@pytest.mark.parametrize('spec', [
    {'httpUrl': 'https://127.0.0.1:1/c/b?sig=x', 'filePath': '../outside'},  # may not leave the working dir
    {'httpUrl': 'https://127.0.0.1:1/c/b?sig=x', 'filePath': '/abs/path'},
    {'httpUrl': 'https://acct.blob.core.windows.net/c/b?sig=x', 'filePath': 'b'},  # not reachable offline
    {'storageContainerUrl': 'https://127.0.0.1:1/c?sig=x'},  # not honoured by the double
])
def test_what_the_double_does_not_download_fails_the_task(tmp_path, spec):
    failure = resource_file_failure(_task(spec), str(tmp_path / 'wd'), None)
    assert failure['code'] == 'ResourceFileDownloadFailed' and failure['category'] == 'usererror'
    assert 'sig=' not in failure['message']


def test_an_unreachable_blob_fails_the_task_without_its_sas(tmp_path):
    failure = resource_file_failure(_task({'httpUrl': 'https://127.0.0.1:9/c/b?sig=secret', 'filePath': 'b'}),
                                    str(tmp_path / 'wd'), None)
    assert failure['code'] == 'ResourceFileDownloadFailed' and 'secret' not in failure['message']
    assert not (tmp_path / 'wd' / 'b').exists()


def test_a_task_without_resource_files_has_nothing_to_download(tmp_path):
    assert resource_file_failure(_task(), str(tmp_path), None) is None
