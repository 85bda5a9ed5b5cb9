"""The wheel installs with `az extension add` (no dependencies to fetch) and its command runs through az."""
import ast
import json
import os
import shutil
import subprocess
import zipfile

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


def test_wheel_holds_every_module_of_the_package(wheel):
    # setup.py's find_packages takes only folders with an __init__.py: a sub-package without one (the schedulers'
    # processes/, slurm/, azurebatch/ sit three levels down) would install, then fail at its first import.
    package_dir = os.path.join(REPO_ROOT, 'azext_batchai_sweep')
    modules = {os.path.relpath(os.path.join(folder, name), REPO_ROOT).replace(os.sep, '/')
               for folder, _, names in os.walk(package_dir) if '__pycache__' not in folder
               for name in names if name.endswith('.py')}
    assert 'azext_batchai_sweep/localservice/schedulers/processes/runner.py' in modules
    assert 'azext_batchai_sweep/localservice/schedulers/azurebatch/node_wrapper.py' in modules
    with zipfile.ZipFile(wheel) as archive:
        held = set(archive.namelist())
    assert sorted(modules - held) == []
    assert 'azext_batchai_sweep/azext_metadata.json' in held


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


def test_the_users_way_installed_wheel_default_home_no_test_settings(wheel, tmp_path):
    """As a user runs it: `az extension add` into the default ~/.azure (HOME is a fresh folder; no AZURE_CONFIG_DIR,
    no AZURE_EXTENSION_DIR, none of the test runner's az settings such as no-colour or warnings off), `local start`
    with no options, then a sweep submitted, waited for and ranked. Results on stdout parse as JSON."""
    home = tmp_path / 'home'
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(('AZURE_', 'AZ_BATCHAI', 'PYTHONWARNINGS', 'PYTHONPATH'))}
    env.update({'HOME': str(home)})

    def az(*args):
        return subprocess.run([AZ, *args], capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600,
                              check=False, stdin=subprocess.DEVNULL)

    added = az('extension', 'add', '--source', wheel, '-y')
    assert added.returncode == 0, added.stderr
    assert (home / '.azure' / 'cliextensions' / 'batchai-sweep').is_dir()
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
           'customToolkitSettings': {'commandLine': 'echo epoch=1 loss={{X}}'}}
    (tmp_path / 'sweep.yaml').write_text('parameters:\n  - {name: X, type: discrete, values: [3, 1, 2]}\njob: '
                                         + json.dumps(job) + '\n')
    started = az('batchai', 'sweep', 'local', 'start', '-o', 'json')
    try:
        assert started.returncode == 0, started.stderr
        info = json.loads(started.stdout)
        assert info['dataDir'].startswith(str(home / '.azure'))
        target = ['-g', info['resourceGroup'], '-w', info['workspace'], '-e', 'users-way', '-n', 'x']
        submitted = az('batchai', 'sweep', 'submit', *target, '--spec', 'sweep.yaml', '-c', info['cluster'],
                       '-o', 'json')
        assert submitted.returncode == 0 and json.loads(submitted.stdout)['submitted'] == 3, submitted.stderr
        waited = az('batchai', 'sweep', 'status', *target, '--wait', '-o', 'json')
        assert waited.returncode == 0, waited.stderr
        assert json.loads(waited.stdout)['counts']['succeeded'] == 3
        ranked = az('batchai', 'sweep', 'metrics', *target, '--metric', 'loss', '--goal', 'min', '-o', 'json')
        assert ranked.returncode == 0, ranked.stderr
        rows = json.loads(ranked.stdout)
        rows = rows.get('jobs', rows) if isinstance(rows, dict) else rows
        assert [row['metric'] for row in rows] == [1, 2, 3]
    finally:
        stopped = az('batchai', 'sweep', 'local', 'stop')
    assert stopped.returncode == 0, stopped.stderr
