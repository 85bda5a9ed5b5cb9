"""The Batch AI recipe notebooks (microsoftarchive/BatchAI recipes/**/*.ipynb) run on the local service with only
their import lines and configuration.json changed (tests/utilities/notebooks.py says how, and why their code cells
are committed as test data). Each test runs every code cell of one notebook and checks which cells run, which fail
and why (the list docs/migrating-from-batchai-utilities.md gives), and what the cells did.
"""
import configparser
import math
import os
import time

import pytest

from tests.fixtures_service import start_service, stop_service
from tests.utilities import notebooks
from tests.utilities.migration import notebook_cells

pytestmark = [pytest.mark.service, pytest.mark.slow]

MNIST_FILES = ['t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz', 'train-images-idx3-ubyte.gz',
               'train-labels-idx1-ubyte.gz', 'Train-28x28_cntk_text.txt', 'Test-28x28_cntk_text.txt',
               'mnist_train_lmdb/data.mdb', 'mnist_test_lmdb/data.mdb', 'mnist_train_lmdb/lock.mdb',
               'mnist_test_lmdb/lock.mdb']
RNN_FILES = ['linux_input.txt', 'shakespeare_input.txt', 'war_and_peace_input.txt']

RECIPES = {
    'RandomSearch': notebooks.Recipe(
        'RandomSearch', 'Hyperparameters/Random-Search', 'recipes-random',
        {'../ConvMNIST.py': 'ConvMNIST_standin.py',
         **{'mnist_dataset_full/' + f: None for f in MNIST_FILES}}),
    'HyperBand': notebooks.Recipe(
        'HyperBand', 'Hyperparameters/HyperBand', 'recipes-hyperband',
        {'../ConvMNIST.py': 'ConvMNIST_standin.py',
         **{'mnist_dataset_full/' + f: None for f in MNIST_FILES}}),
    'Create-Job-Per-File': notebooks.Recipe(
        'Create-Job-Per-File', 'Job-Factory/Create-Job-Per-File', 'recipes-jobperfile',
        {'char_rnn.py': 'char_rnn_standin.py', **{'rnn_dataset/' + f: None for f in RNN_FILES}}),
    # convolutional.py is what cell 3 downloads from GitHub: here a copy the user fetched by hand.
    'TensorFlow-GPU': notebooks.Recipe(
        'TensorFlow-GPU', 'TensorFlow/TensorFlow-GPU', 'recipes-tensorflow',
        {'convolutional.py': 'convolutional_standin.py'}),
    'TensorFlow-GPU-Distributed': notebooks.Recipe(
        'TensorFlow-GPU-Distributed', 'TensorFlow/TensorFlow-GPU-Distributed', 'recipes-tfdistributed',
        {'mnist_replica.py': 'mnist_replica_standin.py', **{'mnist_dataset_full/' + f: None for f in MNIST_FILES}}),
    'PyTorch-GPU-Distributed-Gloo': notebooks.Recipe(
        'PyTorch-GPU-Distributed-Gloo', 'PyTorch/PyTorch-GPU-Distributed-Gloo', 'recipes-pytorch',
        {'mnist_trainer.py': 'mnist_trainer_standin.py'}),
}


@pytest.fixture(scope='module')
def recipes_service(tmp_path_factory):
    """The local service the notebooks run on: its Files and Blob endpoints serve configuration.json's storage
    account (name and key, as the recipes have it); no emulator is started."""
    info = start_service(str(tmp_path_factory.mktemp('recipes-service')))
    yield info
    stop_service(info)


@pytest.fixture
def run_recipe(recipes_service, tmp_path, monkeypatch):
    """Run one recipe notebook the user's way: `az batchai sweep local start` has pointed az at the service (az
    config's batchai_sweep section, written here as that command writes it), configuration.json has its values.
    No internet: an unreachable proxy makes every download fail at once (loopback stays direct)."""
    config_dir = tmp_path / 'azure-config'
    config_dir.mkdir()
    parser = configparser.ConfigParser()
    parser['batchai_sweep'] = {'endpoint': recipes_service.endpoint, 'token_file': recipes_service.token_file}
    with open(config_dir / 'config', 'w', encoding='utf-8') as f:
        parser.write(f)
    monkeypatch.setenv('AZURE_CONFIG_DIR', str(config_dir))
    for name in ('AZURE_BATCHAI_SWEEP_ENDPOINT', 'AZURE_BATCHAI_SWEEP_TOKEN_FILE', 'AZURE_STORAGE_CONNECTION_STRING'):
        monkeypatch.delenv(name, raising=False)
    for name in ('HTTPS_PROXY', 'HTTP_PROXY', 'https_proxy', 'http_proxy'):
        monkeypatch.setenv(name, 'http://127.0.0.1:9')
    monkeypatch.setenv('NO_PROXY', '127.0.0.1,localhost')
    monkeypatch.setenv('no_proxy', '127.0.0.1,localhost')

    def run(name, after=None):
        recipe = RECIPES[name]
        folder = notebooks.lay_out(str(tmp_path), recipe,
                                   notebooks.configuration(recipes_service, recipe.workspace))
        monkeypatch.chdir(folder)
        return notebooks.run_cells(recipe, after)
    return run


# The cells that cannot run here, and why: docs/migrating-from-batchai-utilities.md lists the same (checked below).
# Every other non-empty code cell of each notebook must run.
CANNOT_RUN = {
    'RandomSearch': {},
    'HyperBand': {},
    'Create-Job-Per-File': {},
    'PyTorch-GPU-Distributed-Gloo': {},
    # The notebook's last commit moved its script from the file share to Blob and dropped the cell that named the
    # share: cells 8 and 14 use azure_file_share_name, never defined, with the original utilities too; cell 9 then
    # submits the cluster's parameters as a job, and cells 10-11 look for a job that was never created.
    'TensorFlow-GPU-Distributed': {8: "NameError: name 'azure_file_share_name' is not defined",
                                   9: 'Unknown job properties: scaleSettings, userAccountSettings, vmSize',
                                   10: 'JobNotFound', 11: 'JobNotFound',
                                   14: "NameError: name 'azure_file_share_name' is not defined"},
    'TensorFlow-GPU': {3: 'ProxyError',  # utils.dataset.download_file from GitHub: an internet download
                       14: "NameError: name 'BlobService' is not defined"},  # the original's own bug
}
DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'docs',
                   'migrating-from-batchai-utilities.md')


def check_cells(name, runs):
    """Exactly the expected cells fail, each for its documented reason."""
    failed = {run.index: run.error for run in runs if not run.ok}
    assert sorted(failed) == sorted(CANNOT_RUN[name]), '\n'.join(
        'cell {}: {}\n{}'.format(run.index, run.error, run.output[-2000:]) for run in runs if not run.ok)
    for index, reason in CANNOT_RUN[name].items():
        assert reason in failed[index]
    return {run.index: run for run in runs}


def expected_error(feedforward_const, hidden_layers_dim, epochs):
    """The stand-in's last metric (data/ConvMNIST_standin.py), to check which jobs the recipe keeps."""
    base = abs(math.log10(feedforward_const) - math.log10(0.3)) + 100.0 / hidden_layers_dim
    return round(10.0 * base / (1.0 + epochs), 4)


def env_of(job):
    return {var.name: var.value for var in job.environment_variables or []}


def config_of(job):
    env = env_of(job)
    return float(env['PARAM_FEEDFORWARD_CONSTANT']), int(env['PARAM_HIDDEN_LAYERS_DIMENSION'])


CLUSTER_LINE = 'Cluster state: steady Target: {0}; Allocated: {0}; Idle: {0}; Unusable: 0; Running: 0; Preparing: 0; ' \
               'Leaving: 0\n'


def test_random_search_notebook(run_recipe, recipes_service):
    """recipes/Hyperparameters/Random-Search/RandomSearch.ipynb: 16 random configurations of the stand-in ConvMNIST,
    ranked by the metric of their progress.log."""
    runs, namespace = run_recipe('RandomSearch')
    cells = check_cells('RandomSearch', runs)
    assert cells[1].output.startswith('Resource group batchai.recipes: the local Batch AI service')
    assert cells[8].output == CLUSTER_LINE.format(4)
    combinations = namespace['param_combinations']
    assert len(combinations) == 16 and len({tuple(sorted(c.items())) for c in combinations}) == 16
    assert all(0.001 <= c['PARAM_FEEDFORWARD_CONSTANT'] <= 10 for c in combinations)
    results = namespace['results']
    assert [r['metric_value'] for r in results] == sorted(expected_error(*config_of(r['job']), 16) for r in results)
    output = cells[15].output
    assert output.count('All jobs completed.') == 2  # wait_all_jobs(), then get_metrics_for_jobs' own wait
    assert 'Best job: {0} with parameters'.format(results[0]['job_name']) in output
    # The last cells deleted the experiment, the cluster and the share.
    client = namespace['client']
    assert [e.name for e in client.experiments.list_by_workspace('batchai.recipes', 'recipes-random')] == []
    assert not os.path.exists(os.path.join(recipes_service.data_dir, 'storage', notebooks.STORAGE_ACCOUNT, 'shares',
                                           'batchaisample'))


def test_hyperband_notebook(run_recipe):
    """recipes/Hyperparameters/HyperBand/HyperBand.ipynb: three rounds of successive halving; the notebook appends
    PARAM_EPOCHS to each generated job and sets it again every round."""
    seen = {}

    def keep_jobs(index, namespace):
        if index == 16:  # before cell 17 deletes the experiment
            seen['jobs'] = list(namespace['client'].jobs.list_by_experiment(
                'batchai.recipes', 'recipes-hyperband', 'hyperband_experiment'))
    runs, namespace = run_recipe('HyperBand', after=keep_jobs)
    cells = check_cells('HyperBand', runs)
    output = cells[16].output
    assert output.count('******** Round #') == 3 and output.count('All jobs completed.') == 6
    assert not any(line.startswith(('16/16 ', '4/4 ', '1/1 ')) for line in output.splitlines())
    jobs = seen['jobs']
    assert all(job.execution_state == 'succeeded' for job in jobs)
    rounds = {}
    for job in jobs:
        rounds.setdefault(int(env_of(job)['PARAM_EPOCHS']), []).append(job)
    assert {epochs: len(round_jobs) for epochs, round_jobs in rounds.items()} == {1: 16, 4: 4, 16: 1}

    def best(round_jobs, count, epochs):
        ranked = sorted(round_jobs, key=lambda job: (expected_error(*config_of(job), epochs), job.name))
        return sorted(config_of(job) for job in ranked[:count])
    assert sorted(config_of(job) for job in rounds[4]) == best(rounds[1], 4, 1)
    assert [config_of(rounds[16][0])] == best(rounds[4], 1, 4)
    final = namespace['results']
    assert len(final) == 1 and final[0]['job_name'] == rounds[16][0].name
    assert final[0]['metric_value'] == expected_error(*config_of(rounds[16][0]), 16)


def test_create_job_per_file_notebook(run_recipe):
    """recipes/Job-Factory/Create-Job-Per-File/Create-Job-Per-File.ipynb: one job per file of the uploaded RNN
    dataset, found by FileParameter(filter_str='rnn_dataset/.+') in the Blob container of the local service; each
    job reads its file from the mounted container."""
    ended = {}

    def wait_for_jobs(index, namespace):
        if index != 13:  # before cell 14 deletes the experiment
            return
        client, cfg = namespace['client'], namespace['cfg']
        deadline = time.monotonic() + 120
        for job in namespace['jobs']:
            while True:
                state = client.jobs.get(cfg.resource_group, cfg.workspace, namespace['experiment_name'],
                                        job.name).execution_state
                if state in ('succeeded', 'failed') or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            ended[job.name] = state
    runs, namespace = run_recipe('Create-Job-Per-File', after=wait_for_jobs)
    assert sorted(ended.values()) == ['succeeded'] * len(RNN_FILES), ended
    cells = check_cells('Create-Job-Per-File', runs)
    assert cells[3].output == 'Uploading RNN dataset\nDone\n'
    paths = ['$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/rnn_dataset/' + f for f in RNN_FILES]
    assert [c['PARAM_DATA_PATH'] for c in namespace['param_combinations']] == paths
    for index, path in enumerate(paths):
        assert "Parameters {0}: {{'PARAM_DATA_PATH': '{1}'}}".format(index + 1, path) in cells[13].output
    jobs = namespace['jobs']
    assert sorted(env_of(job)['PARAM_DATA_PATH'] for job in jobs) == paths
    assert all(job.tensor_flow_settings.master_command_line_args.startswith('--data_path ' + env_of(job)[
        'PARAM_DATA_PATH']) for job in jobs)


def check_wait_for_job(cells, wait_cell, nodes, batchai_file, streamed):
    """wait_for_job_completion's cell (and the listing cell after it): the cluster line with its node counts, the
    job's states, and the worker's output streamed from the file Batch AI named it (stdout-wk-0.txt for a
    tensorFlowSettings worker, stdout-0.txt for a pyTorchSettings node: the job launcher's names). Returns the
    lines of the wait cell."""
    waited = cells[wait_cell].output.splitlines()
    assert waited[0].startswith('Cluster state: steady Target: {0}; Allocated: {0};'.format(nodes))
    assert 'Waiting for job output to become available...' in waited and waited[-1].startswith('Job state: ')
    listed = [line.split(' ')[0] for line in cells[wait_cell + 1].output.splitlines()]
    assert batchai_file in listed, listed
    assert streamed in cells[wait_cell].output and waited[-1] == 'Job state: succeeded ExitCode: 0'
    return waited


def test_tensorflow_gpu_notebook(run_recipe):
    """recipes/TensorFlow/TensorFlow-GPU/TensorFlow-GPU.ipynb: one job of the stand-in convolutional.py, waited for
    with its output streamed."""
    runs, _ = run_recipe('TensorFlow-GPU')
    cells = check_cells('TensorFlow-GPU', runs)
    assert cells[7].output == CLUSTER_LINE.format(1)
    waited = check_wait_for_job(cells, 10, 1, 'stdout-wk-0.txt', 'Test error: 2.9%')
    assert waited[-1] == 'Job state: succeeded ExitCode: 0'


def test_pytorch_gpu_distributed_gloo_notebook(run_recipe):
    """recipes/PyTorch/PyTorch-GPU-Distributed-Gloo/PyTorch-GPU-Distributed-Gloo.ipynb: a two-node pyTorchSettings
    job of the stand-in mnist_trainer.py. Its cell 0 reads '..\\..\\configuration.json' (written on Windows) and
    imports the legacy FilePermissions."""
    runs, _ = run_recipe('PyTorch-GPU-Distributed-Gloo')
    cells = check_cells('PyTorch-GPU-Distributed-Gloo', runs)
    assert cells[6].output == CLUSTER_LINE.format(2)
    check_wait_for_job(cells, 9, 2, 'stdout-0.txt', 'Epoch: [9][469/469]')


def test_tensorflow_gpu_distributed_notebook(run_recipe, recipes_service):
    """recipes/TensorFlow/TensorFlow-GPU-Distributed/TensorFlow-GPU-Distributed.ipynb: the training script and the
    dataset uploaded to Blob; the notebook's own NameError stops it at its job (cell 8)."""
    runs, namespace = run_recipe('TensorFlow-GPU-Distributed')
    cells = check_cells('TensorFlow-GPU-Distributed', runs)
    assert cells[3].output == 'Uploading MNIST dataset...\nDone\n'
    assert cells[7].output == CLUSTER_LINE.format(2)
    blobs = namespace['blob_service'].list_blobs('batchaisample', prefix='tensorflow_samples/')
    assert [blob.name for blob in blobs] == ['tensorflow_samples/mnist_replica.py']
    # Uploaded into the folder the job's azureBlobFileSystems mount is.
    container = os.path.join(recipes_service.data_dir, 'storage', notebooks.STORAGE_ACCOUNT, 'containers',
                             'batchaisample')
    assert os.path.isfile(os.path.join(container, 'tensorflow_samples', 'mnist_replica.py'))
    assert os.path.isfile(os.path.join(container, 'mnist_dataset', 'Train-28x28_cntk_text.txt'))


def test_the_migration_guide_counts_what_these_tests_run():
    """docs/migrating-from-batchai-utilities.md's table: per notebook, its code cells and how many run here."""
    with open(DOC, encoding='utf-8') as f:
        rows = [line for line in f if line.startswith('| `')]
    for name, recipe in RECIPES.items():
        (row,) = [line for line in rows if '/{}.ipynb`'.format(name) in line]
        columns = [column.strip() for column in row.strip().strip('|').split('|')]
        total = len([code for code in notebook_cells(name).values() if code.strip()])
        assert columns[1:3] == [str(total), str(total - len(CANNOT_RUN[name]))], row
        assert recipe.folder in columns[0]


