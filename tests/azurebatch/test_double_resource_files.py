"""The Batch double's resourceFiles (TEST CODE, tests/azurebatch/double/runner.resource_file_failure): what it does
not download fails the task as Batch fails a task whose resource file cannot be downloaded, before its command; a
multi-instance task's commonResourceFiles are asked for on every node, in the task's root directory. A download
itself: tests/azurebatch/test_e2e_code.py (from Azurite, with a SAS; one node and a multi-instance task)."""
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


def _multi_instance(own, common):
    return SimpleNamespace(body={'resourceFiles': own, 'multiInstanceSettings': {
        'numberOfInstances': 2, 'coordinationCommandLine': 'true', 'commonResourceFiles': common}})


def test_common_resource_files_go_to_the_task_root_on_every_node_the_task_own_to_the_primary_only(tmp_path):
    """The spec (MultiInstanceSettings.commonResourceFiles): downloaded by every subtask, the primary too, into the
    task's root directory (one above the working directory); the task's resourceFiles by the primary alone."""
    own = [{'httpUrl': 'https://127.0.0.1:9/c/own?sig=x', 'filePath': 'own'}]
    common = [{'httpUrl': 'https://127.0.0.1:9/c/common?sig=x', 'filePath': 'code/common'}]
    task = _multi_instance(own, common)
    root = tmp_path / 'task'
    # (nothing listens on port 9: the failure names the file it tried, which says what was asked, and where)
    primary = resource_file_failure(task, str(root / 'wd'), None, common_dir=str(root))
    assert primary['message'].startswith('Resource file download failed: own ')
    subtask = resource_file_failure(task, None, None, common_dir=str(root))
    assert subtask['message'].startswith('Resource file download failed: code/common ')
    assert resource_file_failure(_multi_instance([], []), None, None, common_dir=str(root)) is None
    escaping = _multi_instance([], [{'httpUrl': 'https://127.0.0.1:9/c/b?sig=x', 'filePath': '../../outside'}])
    assert 'not honoured' in resource_file_failure(escaping, None, None, common_dir=str(root))['message']
