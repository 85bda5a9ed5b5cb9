"""The az-driven tests run the code of the checkout they belong to: az loads the extension through a dev-sources
folder of the test process linking to this checkout, not through .venv/az-dev, whose link points at whichever
checkout made (or last ran `make dev` with) the venv, another worktree's when the venv is shared."""
import os
import subprocess
import sys

import pytest

from tests import fixtures_az
from tests.fixtures_az import REPO_ROOT, base_env


def test_az_loads_the_extension_from_this_checkout(az):
    listed = az('extension', 'list', '-o', 'json')
    assert listed.exit_code == 0, listed.stderr
    (extension,) = [e for e in listed.json() if e['name'] == 'batchai-sweep']
    assert extension['extensionType'] == 'dev'
    assert os.path.realpath(extension['path']) == os.path.realpath(REPO_ROOT)


def test_an_inherited_dev_sources_folder_is_not_used(tmp_path):
    """`make test` exports AZURE_EXTENSION_DEV_SOURCES (.venv/az-dev); an az run of the tests takes its own."""
    env = base_env(str(tmp_path), None)
    assert env['AZURE_EXTENSION_DEV_SOURCES'] != os.path.join(REPO_ROOT, '.venv', 'az-dev')
    folder = env['AZURE_EXTENSION_DEV_SOURCES']
    assert os.listdir(folder) == ['batchai-sweep']
    assert os.path.realpath(os.path.join(folder, 'batchai-sweep')) == os.path.realpath(REPO_ROOT)


def test_the_folder_goes_at_exit_and_the_checkout_stays(tmp_path):
    probe = ('from tests.fixtures_az import dev_sources; import os; '
             'print(os.path.join(dev_sources(), "batchai-sweep"))')
    proc = subprocess.run([sys.executable, '-c', probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    link = proc.stdout.strip()
    assert link.endswith('batchai-sweep') and not os.path.lexists(link)
    assert not os.path.exists(os.path.dirname(link))
    assert os.path.isfile(os.path.join(REPO_ROOT, 'setup.py'))


def test_a_checkout_az_cannot_load_is_a_loud_error(tmp_path, monkeypatch):
    monkeypatch.setattr(fixtures_az, 'REPO_ROOT', str(tmp_path))
    with pytest.raises(RuntimeError, match='egg-info') as refused:
        fixtures_az.dev_sources.__wrapped__()
    assert str(tmp_path) in str(refused.value) and 'make dev' in str(refused.value)
