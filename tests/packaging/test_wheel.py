"""The wheel installs with `az extension add` (no dependencies to fetch) and its command runs through az."""
import ast
import json
import os
import shutil
import subprocess

import pytest

from tests.fixtures_az import AZ, REPO_ROOT, base_env

pytestmark = [pytest.mark.az, pytest.mark.slow]


def test_setup_declares_no_install_requires():
    # Everything the extension imports ships with azure-cli; a requirement would make `az extension add` go online.
    with open(os.path.join(REPO_ROOT, 'setup.py'), encoding='utf-8') as f:
        tree = ast.parse(f.read())
    setup_call = next(node for node in ast.walk(tree)
                      if isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'setup')
    keywords = {keyword.arg: keyword.value for keyword in setup_call.keywords}
    assert 'install_requires' in keywords
    assert ast.literal_eval(keywords['install_requires']) == []


def test_installed_wheel_runs_sweep_create(wheel, tmp_path):
    config_dir, extension_dir = tmp_path / 'config', tmp_path / 'extensions'
    config_dir.mkdir()
    extension_dir.mkdir()
    env = base_env(str(config_dir), {'AZURE_EXTENSION_DIR': str(extension_dir)})
    del env['AZURE_EXTENSION_DEV_SOURCES']  # the installed wheel, not the source tree

    def az(*args):
        return subprocess.run([AZ, *args], capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600,
                              check=False)

    added = az('extension', 'add', '--source', wheel, '-y')
    assert added.returncode == 0, added.stderr
    listed = json.loads(az('extension', 'list', '-o', 'json').stdout)
    assert [(e['name'], e['extensionType']) for e in listed] == [('batchai-sweep', 'whl')]

    for name in ('sweep.yaml', 'job.json'):
        shutil.copy(os.path.join(REPO_ROOT, 'examples', name), str(tmp_path / name))
    result = az('batchai', 'sweep', 'create', '--plan-only', '-g', 'rg', '-w', 'ws', '-e', 'exp', '-n', 'w',
                '--spec', 'sweep.yaml', '--storage-account-name', 'acct', '-o', 'json')
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)['jobCount'] == 9
    # The schemas are package data: validation works from the installed copy, not from the source tree.
    assert str(extension_dir) in az('extension', 'show', '-n', 'batchai-sweep', '--query', 'path', '-o', 'tsv').stdout

    # The local service is a child process: it must find the package in the extension dir, not in the source tree.
    data_dir = tmp_path / 'local'
    started = az('batchai', 'sweep', 'local', 'start', '--data-dir', str(data_dir), '--slots', '1', '-o', 'json')
    try:
        assert started.returncode == 0, started.stderr + (data_dir / 'service.log').read_text()
        endpoint = json.loads(started.stdout)['endpoint']
        status = az('batchai', 'sweep', 'local', 'status', '--data-dir', str(data_dir), '-o', 'json')
        assert json.loads(status.stdout)['running'] is True
        assert json.loads(status.stdout)['endpoint'] == endpoint
    finally:
        stopped = az('batchai', 'sweep', 'local', 'stop', '--data-dir', str(data_dir), '-o', 'json')
    assert stopped.returncode == 0, stopped.stderr
