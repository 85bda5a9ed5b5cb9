"""Code snapshots: named by their content, the same for the same kept files, another for any change of them;
refused over the size limit naming the largest entries; key-like files named; the archive holds the kept files."""
import io
import os
import tarfile

import pytest

from azext_batchai_sweep.core.code.job import CODE_HASH_VAR, attach_code, code_hash_of, storage_account_of
from azext_batchai_sweep.core.code.snapshot import CodeError, take_snapshot
from azext_batchai_sweep.core.errors import SpecError


def _write(root, relative, content):
    path = os.path.join(str(root), relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb' if isinstance(content, bytes) else 'w') as f:
        f.write(content)
    return path


@pytest.fixture(name='folder')
def _folder(tmp_path):
    root = tmp_path / 'src'
    _write(root, 'train.py', 'print("train")\n')
    _write(root, 'lib/util.py', 'X = 1\n')
    _write(root, '.gitignore', 'data/\n*.log\n')
    _write(root, 'data/big.bin', b'\0' * 5000)
    _write(root, 'run.log', 'log')
    return root


def test_same_content_same_hash_anywhere(folder, tmp_path):
    first = take_snapshot(str(folder))
    copy = tmp_path / 'elsewhere'
    for relative, path, _ in first.files:
        with open(path, 'rb') as f:
            _write(copy, relative, f.read())
    assert take_snapshot(str(copy)).digest == first.digest
    assert [entry[0] for entry in first.files] == ['.gitignore', 'lib/util.py', 'train.py']
    assert first.archive_name == first.digest + '.tar.gz'


def test_ignored_files_do_not_change_the_hash(folder):
    before = take_snapshot(str(folder)).digest
    _write(folder, 'data/big.bin', b'\1' * 7000)
    _write(folder, 'other.log', 'more')
    _write(folder, '.git/HEAD', 'ref')
    assert take_snapshot(str(folder)).digest == before


@pytest.mark.parametrize('change', ['content', 'rename', 'new file', 'mode'])
def test_any_change_of_a_kept_file_changes_the_hash(folder, change):
    before = take_snapshot(str(folder)).digest
    if change == 'content':
        _write(folder, 'train.py', 'print("train!")\n')
    elif change == 'rename':
        os.rename(os.path.join(str(folder), 'lib', 'util.py'), os.path.join(str(folder), 'lib', 'utils.py'))
    elif change == 'new file':
        _write(folder, 'lib/new.py', '')
    else:
        os.chmod(os.path.join(str(folder), 'train.py'), 0o755)
    assert take_snapshot(str(folder)).digest != before


def test_archive_holds_the_kept_files_and_is_reproducible(folder):
    os.chmod(os.path.join(str(folder), 'train.py'), 0o755)
    snapshot = take_snapshot(str(folder))
    data = snapshot.archive_bytes()
    assert data == take_snapshot(str(folder)).archive_bytes()
    with tarfile.open(fileobj=io.BytesIO(data), mode='r:gz') as tar:
        members = {member.name: member for member in tar.getmembers()}
        assert sorted(members) == ['.gitignore', 'lib/util.py', 'train.py']
        assert tar.extractfile('train.py').read() == b'print("train")\n'
        assert members['train.py'].mode == 0o755 and members['lib/util.py'].mode == 0o644


def test_over_the_limit_refused_naming_the_largest(tmp_path):
    root = tmp_path / 'src'
    _write(root, 'weights/a.bin', b'\0' * 700 * 1024)
    _write(root, 'weights/b.bin', b'\0' * 500 * 1024)
    _write(root, 'dataset.npz', b'\0' * 300 * 1024)
    _write(root, 'train.py', 'x')
    with pytest.raises(CodeError) as caught:
        take_snapshot(str(root), limit_mb=1)
    message = str(caught.value)
    assert 'more than the limit of 1.0 MiB' in message
    assert message.index('weights/ (1.2 MiB)') < message.index('dataset.npz (300.0 KiB)')
    assert take_snapshot(str(root), limit_mb=2).size == 1500 * 1024 + 1


def test_missing_or_empty_folder_refused(tmp_path):
    with pytest.raises(CodeError, match='is not a folder'):
        take_snapshot(str(tmp_path / 'nope'))
    _write(tmp_path / 'only', '.gitignore', '*\n')
    with pytest.raises(CodeError, match='no files to send'):
        take_snapshot(str(tmp_path / 'only'))


def test_key_like_files_named(folder):
    for name in ('deploy.pem', '.env', 'conf/.env.local', 'ssh/id_rsa', 'keys.txt'):
        _write(folder, name, 'secret')
    assert take_snapshot(str(folder)).key_like == ['.env', 'conf/.env.local', 'deploy.pem', 'ssh/id_rsa']


TEMPLATE = {
    'customToolkitSettings': {'commandLine': 'python train.py --lr {{LR}}'},
    'mountVolumes': {'azureFileShares': [{'azureFileUrl': 'https://acct.file.core.windows.net/logs',
                                          'relativeMountPath': 'logs'}]},
    'environmentVariables': [{'name': 'A', 'value': 'b'}],
}


def test_attach_code_uses_only_batch_ai_fields(folder):
    snapshot = take_snapshot(str(folder))
    job = attach_code(TEMPLATE, snapshot, storage_account_of(TEMPLATE))
    assert TEMPLATE['customToolkitSettings']['commandLine'] == 'python train.py --lr {{LR}}'  # a copy
    assert set(job) == set(TEMPLATE) | {'jobPreparation'}
    shares = job['mountVolumes']['azureFileShares']
    assert shares[1] == {'accountName': 'acct', 'azureFileUrl': 'https://acct.file.core.windows.net/sweep-code',
                         'relativeMountPath': 'sweep-code'}
    assert snapshot.archive_name in job['jobPreparation']['commandLine']
    assert job['customToolkitSettings']['commandLine'].endswith('; python train.py --lr {{LR}}')
    assert code_hash_of(job) == snapshot.digest
    assert {'name': 'A', 'value': 'b'} in job['environmentVariables']


def test_attach_code_keeps_the_jobs_own_preparation_last(folder):
    snapshot = take_snapshot(str(folder))
    job = attach_code(dict(TEMPLATE, jobPreparation={'commandLine': 'pip install -r requirements.txt'}), snapshot,
                      'acct')
    assert job['jobPreparation']['commandLine'].endswith('cd "$AZ_BATCHAI_SWEEP_CODE_DIR" || exit 1; '
                                                         'pip install -r requirements.txt')


@pytest.mark.parametrize('template,message', [
    ({'tensorFlowSettings': {'pythonScriptFilePath': 'x.py'}}, 'customToolkitSettings or customMpiSettings'),
    ({'customToolkitSettings': {'commandLine': 'x'}}, 'expected a storage account'),
    (dict(TEMPLATE, mountVolumes={'azureFileShares': [{'azureFileUrl': 'https://a.file.core.windows.net/s',
                                                       'relativeMountPath': 'sweep-code'}]}), 'relativeMountPath'),
])
def test_attach_code_refusals(folder, template, message):
    with pytest.raises(SpecError, match=message):
        attach_code(template, take_snapshot(str(folder)), storage_account_of(template))


def test_code_hash_var_absent_without_code():
    assert code_hash_of(TEMPLATE) is None
    assert CODE_HASH_VAR == 'AZ_BATCHAI_SWEEP_CODE'
