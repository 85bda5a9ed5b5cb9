"""`local start` does not change what it does not own (rule 5 of issue 13): an existing data dir keeps its mode, a
folder other users can write to (or another user's) is refused before anything is written in it, a new one is
created private, and stop leaves the folder's mode and everything the service did not write as it found them."""
import os
import stat

import pytest

from azext_batchai_sweep.localservice import control
from azext_batchai_sweep.localservice.data import datadir

pytestmark = pytest.mark.service


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize('mode', [0o700, 0o750, 0o755, 0o500 | 0o200 | 0o055])
def test_an_existing_data_dir_keeps_its_mode_through_start_and_stop(tmp_path, mode):
    data_dir = tmp_path / 'mine'
    data_dir.mkdir()
    (data_dir / 'notes.txt').write_text('mine')
    os.chmod(str(data_dir / 'notes.txt'), 0o644)
    os.chmod(str(data_dir), mode)
    info = control.start_background(str(data_dir), slots=1)
    try:
        assert _mode(str(data_dir)) == mode
        for name in ('token', 'storage.key', 'link.key', 'service.db', 'service.json', 'service.log'):
            assert _mode(os.path.join(str(data_dir), name)) == 0o600, name
    finally:
        assert control.stop(str(data_dir))
    assert _mode(str(data_dir)) == mode
    assert (data_dir / 'notes.txt').read_text() == 'mine' and _mode(str(data_dir / 'notes.txt')) == 0o644
    assert not (data_dir / 'service.json').exists() and info['pid']


@pytest.mark.parametrize('mode', [0o777, 0o770, 0o1777, 0o702, 0o720])
def test_a_data_dir_others_can_write_to_is_refused_untouched(tmp_path, mode):
    data_dir = tmp_path / 'shared'
    data_dir.mkdir()
    os.chmod(str(data_dir), mode)
    with pytest.raises(datadir.DataDirError) as refused:
        control.start_background(str(data_dir), slots=1)
    assert 'other users can write to it (mode {:04o})'.format(mode) in str(refused.value)
    assert os.listdir(str(data_dir)) == [] and _mode(str(data_dir)) == mode


def test_the_foreground_service_refuses_it_too(tmp_path):
    import subprocess
    import sys
    from tests.fixtures_service import REPO_ROOT
    data_dir = tmp_path / 'shared'
    data_dir.mkdir()
    os.chmod(str(data_dir), 0o777)
    proc = subprocess.run([sys.executable, '-m', 'azext_batchai_sweep.localservice', '--data-dir', str(data_dir)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and 'other users can write to it (mode 0777)' in proc.stderr
    assert os.listdir(str(data_dir)) == []


def test_another_users_folder_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip('needs root to give the folder to another user')
    data_dir = tmp_path / 'theirs'
    data_dir.mkdir(mode=0o700)
    os.chown(str(data_dir), 12345, 12345)
    with pytest.raises(datadir.DataDirError, match='belongs to another user'):
        control.start_background(str(data_dir), slots=1)
    assert os.listdir(str(data_dir)) == []


@pytest.mark.parametrize('relative', ['new', 'a/b/new'])
def test_a_new_data_dir_is_created_private(tmp_path, relative):
    data_dir = tmp_path / relative
    datadir.prepare(str(data_dir))
    assert _mode(str(data_dir)) == 0o700
    datadir.prepare(str(data_dir))  # and accepted as it is the second time
    assert _mode(str(data_dir)) == 0o700


def test_a_file_is_not_a_data_dir(tmp_path):
    path = tmp_path / 'file'
    path.write_text('x')
    with pytest.raises(datadir.DataDirError, match='not a directory'):
        datadir.prepare(str(path))


@pytest.mark.az
def test_az_local_start_says_why_it_refuses(az, tmp_path):
    data_dir = tmp_path / 'shared'
    data_dir.mkdir()
    os.chmod(str(data_dir), 0o777)
    result = az('batchai', 'sweep', 'local', 'start', '--data-dir', str(data_dir), '--slots', '1')
    errors = [line for line in result.stderr.splitlines() if line.startswith('ERROR:')]
    assert result.exit_code == 6 and len(errors) == 1, result.stderr  # bad input: the folder
    assert 'other users can write to it (mode 0777)' in errors[0] and 'Traceback' not in result.stderr
    assert os.listdir(str(data_dir)) == [] and _mode(str(data_dir)) == 0o777
