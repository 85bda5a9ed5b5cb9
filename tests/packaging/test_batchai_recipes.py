"""The Batch AI recipes run unchanged on this machine: az's own `az batchai` commands, with the extension installed
from its wheel (`az extension add --source`), against the local service that `az batchai sweep local start` targets.

The command sequences are copied into tests/packaging/recipes/ (the CLI recipe "Chainer GPU Distributed" and a
workshop's commands, see the head of each file). Every line runs as written, through the real az executable, with
one export added before the storage commands (AZURE_STORAGE_CONNECTION_STRING from `local show-connection-string`).
What cannot run here is said per line: `cd /usr/$USER/clouddrive` is for Cloud Shell; `wget` (no network in tests)
gets the recipe's job.json and a stand-in train_mnist.py from the same folder; `az group create|delete` and
`az storage account create` are Azure Resource Manager commands, not Batch AI: they fail cleanly without a login.
"""
import configparser
import json
import os
import re
import shlex
import shutil
import subprocess

import pytest

from tests.fixtures_az import AZ, REPO_ROOT, base_env

pytestmark = [pytest.mark.az, pytest.mark.service, pytest.mark.slow]

RECIPES = os.path.join(REPO_ROOT, 'tests', 'packaging', 'recipes')
ACCOUNT = 'recipestore'  # the recipe's <storage account name>
ARM_ONLY = ('az group create', 'az group delete', 'az storage account create')  # need Azure Resource Manager
USING = re.compile(r'Using the Batch AI service at (http://127\.0\.0\.1:\d+)')


def recipe_lines(name):
    with open(os.path.join(RECIPES, name), encoding='utf-8') as f:
        return [line.rstrip('\n') for line in f if line.strip() and not line.startswith('#')]


class InstalledAz:
    """The real az with the extension installed from the wheel into its own extension dir (no dev sources)."""

    def __init__(self, root, extension_dir):
        self.root = root
        self.config_dir = os.path.join(root, 'config')
        self.home = os.path.join(root, 'home')  # --generate-ssh-keys writes ~/.ssh
        self.work = os.path.join(root, 'work')
        for path in (self.config_dir, self.home, self.work):
            os.makedirs(path, exist_ok=True)
        self.extension_dir = extension_dir
        self.exports = {}

    def env(self):
        env = base_env(self.config_dir, {'AZURE_EXTENSION_DIR': self.extension_dir, 'HOME': self.home,
                                         **self.exports})
        del env['AZURE_EXTENSION_DEV_SOURCES']
        return env

    def __call__(self, *args):
        return subprocess.run([AZ, *args], capture_output=True, text=True, env=self.env(), cwd=self.work,
                              timeout=300, check=False)

    def line(self, line):
        """A recipe line as a shell would split it (the placeholder is the account name)."""
        words = shlex.split(line.replace('<storage account name>', ACCOUNT))
        assert words[0] == 'az', line
        return self(*words[1:])


@pytest.fixture(scope='module')
def installed(wheel, tmp_path_factory):
    root = str(tmp_path_factory.mktemp('recipes'))
    extension_dir = os.path.join(root, 'extensions')
    az = InstalledAz(root, extension_dir)
    added = az('extension', 'add', '--source', wheel, '-y')
    assert added.returncode == 0, added.stderr
    return az


@pytest.fixture(scope='module')
def recipe(installed):
    """Run the recipe, then the workshop's commands; yield {line: CompletedProcess} and the local service's info."""
    az = installed
    started = az('batchai', 'sweep', 'local', 'start', '-o', 'json')
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    results = {}
    try:
        # The export `local start` prints (the one line added to the recipe).
        hint = re.search(r'export AZURE_STORAGE_CONNECTION_STRING="\$\(az (.*?)\)"', started.stderr)
        assert hint, started.stderr
        shown = az(*shlex.split(hint.group(1).replace('<storage account name>', ACCOUNT)))
        assert shown.returncode == 0, shown.stderr
        az.exports['AZURE_STORAGE_CONNECTION_STRING'] = shown.stdout.strip()
        for line in recipe_lines('chainer_gpu_distributed.txt') + recipe_lines('workshop.txt'):
            if line.startswith('cd '):
                continue  # Cloud Shell only
            if line.startswith('wget '):
                name = os.path.basename(line.split()[-1]) if '-O' not in line else line.split()[2]
                shutil.copy(os.path.join(RECIPES, name), os.path.join(az.work, name))
                continue
            results[line] = az.line(line)
        yield results, info
    finally:
        stopped = az('batchai', 'sweep', 'local', 'stop')
        assert stopped.returncode == 0, stopped.stderr


def result_of(results, prefix):
    (line,) = [line for line in results if line.startswith(prefix)]
    return results[line]


def test_no_step_ends_in_a_traceback_and_every_batchai_step_says_where_it_went(recipe):
    results, info = recipe
    for line, result in results.items():
        assert 'Traceback' not in result.stderr and 'unexpected error' not in result.stderr, (line, result.stderr)
        if line.startswith('az batchai'):
            assert result.returncode == 0, (line, result.stderr)
            # Every routed command names the local endpoint, and only that one.
            assert set(USING.findall(result.stderr)) == {info['endpoint']}, (line, result.stderr)


def test_resource_manager_steps_fail_cleanly_without_a_login(recipe):
    results, _ = recipe
    for prefix in ARM_ONLY:
        result = result_of(results, prefix)
        assert result.returncode == 1 and "Please run 'az login'" in result.stderr, (prefix, result.stderr)


def test_workspace_cluster_and_experiment_are_created_and_what_has_no_local_meaning_is_said(recipe):
    results, _ = recipe
    workspace = json.loads(result_of(results, 'az batchai workspace create').stdout)
    assert (workspace['name'], workspace['location'], workspace['resourceGroup']) == (
        'recipe_workspace', 'eastus', 'batchai.recipes')
    created = result_of(results, 'az batchai cluster create')
    cluster = json.loads(created.stdout)
    assert (cluster['vmSize'], cluster['currentNodeCount'], cluster['allocationState']) == ('Standard_NC6', 2, 'steady')
    assert cluster['userAccountSettings']['adminUserSshPublicKey'].startswith('ssh-rsa ')
    assert 'recorded but not used: VM size Standard_NC6' in created.stderr
    assert 'SSH key' in created.stderr
    experiment = json.loads(result_of(results, 'az batchai experiment create').stdout)
    assert (experiment['name'], experiment['provisioningState']) == ('chainer_experiment', 'succeeded')


def test_storage_steps_put_the_script_where_the_job_mounts_it(recipe):
    results, info = recipe
    for prefix in ('az storage share create -n scripts', 'az storage share create -n logs',
                   'az storage directory create'):
        assert json.loads(result_of(results, prefix).stdout) == {'created': True}, prefix
    uploaded = os.path.join(info['dataDir'], 'storage', ACCOUNT, 'shares', 'scripts', 'chainer', 'train_mnist.py')
    with open(uploaded, 'rb') as got, open(os.path.join(RECIPES, 'train_mnist.py'), 'rb') as sent:
        assert got.read() == sent.read()


def test_the_job_runs_and_the_recipe_reads_its_output(recipe):
    results, info = recipe
    created = result_of(results, 'az batchai job create')
    assert 'container image batchaitraining/chainermn:openMPI ignored' in created.stderr
    assert json.loads(created.stdout)['toolType'] == 'chainer'

    streamed = result_of(results, 'az batchai job file stream -j distributed_chainer -g')
    assert re.search(r'^epoch\s+main/loss\s+validation/main/loss', streamed.stdout, re.M), streamed.stdout
    assert len(re.findall(r'^\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$', streamed.stdout, re.M)) == 3
    assert 'sig=' not in streamed.stderr  # the link it logs keeps its signature out of the log

    listed = json.loads(result_of(results, 'az batchai job file list').stdout)
    assert sorted(f['name'] for f in listed) == ['cg.dot', 'log']
    assert all(f['fileType'] == 'file' and f['downloadUrl'].startswith(info['endpoint'] + '/') for f in listed)

    segment = json.loads(result_of(results, 'az batchai job show -n distributed_chainer -g batchai.recipes -w '
                                            'recipe_workspace -e chainer_experiment --query').stdout)
    assert re.fullmatch(r'00000000-0000-0000-0000-000000000000/batchai\.recipes/workspaces/recipe_workspace/'
                        r'experiments/chainer_experiment/jobs/distributed_chainer/[-0-9a-f]{36}', segment), segment


def test_the_workshop_commands_that_apply(recipe):
    results, _ = recipe
    cluster = result_of(results, 'az batchai cluster show').stdout.splitlines()
    assert cluster[0].split()[:4] == ['Name', 'Resource', 'Group', 'Workspace']
    assert cluster[2].split()[:4] == ['nc6', 'batchai.recipes', 'recipe_workspace', 'Standard_NC6']
    job = result_of(results, 'az batchai job show -n distributed_chainer -g batchai.recipes -w recipe_workspace -e '
                             'chainer_experiment -o table').stdout.splitlines()
    assert job[2].split() == ['distributed_chainer', 'nc6', 'batchai.recipes', 'recipe_workspace', 'chainer', '2',
                              'succeeded', '0']
    streamed = result_of(results, 'az batchai job file stream -j distributed_chainer -f stdout.txt -d stdouterr')
    assert 'Num unit: 1000' in streamed.stdout


def test_the_recipe_ends_by_resizing_its_cluster_to_zero_nodes(recipe):
    """The last Batch AI step (`cluster resize -t 0`, so as not to pay for idle nodes) runs as written: the cluster
    keeps its settings with no node, steady (its job has ended)."""
    results, _ = recipe
    resized = json.loads(result_of(results, 'az batchai cluster resize').stdout)
    assert (resized['name'], resized['scaleSettings']['manual']['targetNodeCount'], resized['currentNodeCount'],
            resized['allocationState']) == ('nc6', 0, 0, 'steady')


def test_with_the_target_cleared_the_builtin_commands_are_azs_own(recipe, installed, tmp_path):
    """After `local stop`, the same commands give exactly what az gives without the extension installed at all."""
    del recipe
    stopped = installed('batchai', 'sweep', 'local', 'stop')
    assert stopped.returncode == 0 and 'Cleared az config batchai_sweep' in stopped.stderr, stopped.stderr
    config = configparser.ConfigParser()
    config.read(os.path.join(installed.config_dir, 'config'))
    assert not config.has_option('batchai_sweep', 'endpoint')
    bare = InstalledAz(str(tmp_path / 'bare'), str(tmp_path / 'no-extensions'))
    commands = [['batchai', 'workspace', 'list', '-g', 'batchai.recipes'],
                ['batchai', 'job', 'show', '-n', 'distributed_chainer', '-g', 'batchai.recipes', '-w',
                 'recipe_workspace', '-e', 'chainer_experiment', '-o', 'table'],
                ['batchai', 'workspace', 'create', '-g', 'batchai.recipes', '-n', 'ws']]
    for command in commands:
        with_extension, without = installed(*command), bare(*command)
        assert (with_extension.returncode, with_extension.stdout, with_extension.stderr) == (
            without.returncode, without.stdout, without.stderr), command
        assert with_extension.returncode == 1 and "Please run 'az login'" in with_extension.stderr
    assert json.loads(bare('extension', 'list', '-o', 'json').stdout) == []
