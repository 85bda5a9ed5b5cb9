"""The Batch AI repository's Hyperparameters recipes (Random-Search, HyperBand) on the local service.

The notebooks' code cells are test data (data/*.cells.txt, verbatim). The cells of the sweep itself (parameter
specifications, ParameterSweep, the JobCreateParameters, generating, submitting, waiting, metrics and, for HyperBand,
the successive-halving loop) run with only their import lines changed. The Azure set-up cells are replaced by their
local equivalents, which are not part of `utilities`: the configuration file and client (the local service's client),
the storage uploads with the legacy azure-storage SDK (files copied into the service's data dir, its documented
local upload), the cluster (the service's own). One SDK line changes because the Batch AI SDK itself changed:
`client.experiments.create(...)` of azure-mgmt-batchai 2.0 is `begin_create` in the SDK az ships (7.0).

The training script is a stand-in for ConvMNIST.py (data/ConvMNIST_standin.py): same command line, same
progress.log, an error that falls with the epochs. numpy is not installed (the extension must not need it): the
HyperBand cells' `np.log` / `np.ceil` get math's.
"""
import math
import os
import shutil
import types

import azure.mgmt.batchai.models as models
import pytest

from tests.utilities.migration import DATA, migrate, notebook_cells, run

pytestmark = [pytest.mark.service, pytest.mark.slow]

SDK_CHANGES = (('client.experiments.create(', 'client.experiments.begin_create('),)


def sdk_migrated(code):
    for old, new in SDK_CHANGES:
        code = code.replace(old, new)
    return code


def import_lines(cell):
    """The lines of the notebook's first cell that import utilities (migrated) and the SDK models."""
    migrated, changed = migrate(cell)
    assert changed
    keep = [new for _, new in changed] + ['import azure.mgmt.batchai.models as models']
    return '\n'.join(keep) + '\n'


def local_setup(service, client, account):
    """What the notebooks' set-up cells 0-8 leave, on the local service: cfg, client, storage, cluster."""
    with open(os.path.join(service.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    storage = os.path.join(service.data_dir, 'storage', account)
    shutil.rmtree(storage, ignore_errors=True)
    scripts = os.path.join(storage, 'shares', 'batchaisample', 'hyperparam_samples')
    os.makedirs(scripts)
    shutil.copy(os.path.join(DATA, 'ConvMNIST_standin.py'), os.path.join(scripts, 'ConvMNIST.py'))
    os.makedirs(os.path.join(storage, 'containers', 'batchaisample', 'mnist_dataset'))
    cfg = types.SimpleNamespace(resource_group=service.resource_group, workspace=service.workspace,
                                location='local', storage_account_name=account, storage_account_key=key)
    return {'cfg': cfg, 'client': client, 'models': models, 'azure_blob_container_name': 'batchaisample',
            'mnist_dataset_directory': 'mnist_dataset', 'azure_file_share_name': 'batchaisample',
            'cntk_script_path': 'hyperparam_samples', 'cluster_name': service.cluster,
            'cluster': client.clusters.get(service.resource_group, service.workspace, service.cluster)}


def expected_error(feedforward_const, hidden_layers_dim, epochs):
    """The stand-in's last metric (data/ConvMNIST_standin.py), to check which jobs the recipe should keep."""
    base = abs(math.log10(feedforward_const) - math.log10(0.3)) + 100.0 / hidden_layers_dim
    return round(10.0 * base / (1.0 + epochs), 4)


def env_of(job):
    return {var.name: var.value for var in job.environment_variables or []}


def config_of(job):
    env = env_of(job)
    return float(env['PARAM_FEEDFORWARD_CONSTANT']), int(env['PARAM_HIDDEN_LAYERS_DIMENSION'])


def experiment_jobs(service, client, experiment):
    return list(client.jobs.list_by_experiment(service.resource_group, service.workspace, experiment))


def test_random_search_recipe(local_service, batchai_client, capsys):
    cells = notebook_cells('RandomSearch')
    namespace = local_setup(local_service, batchai_client, 'utilrandom')
    run(import_lines(cells[0]), namespace)
    for index in range(9, 16):  # experiment, specs, ParameterSweep, jcp, generate + submit, extractor, metrics
        run(sdk_migrated(cells[index]), namespace)

    combinations = namespace['param_combinations']
    assert len(combinations) == 16 and len({tuple(sorted(c.items())) for c in combinations}) == 16
    assert all(0.001 <= c['PARAM_FEEDFORWARD_CONSTANT'] <= 10 for c in combinations)
    assert {c['PARAM_HIDDEN_LAYERS_DIMENSION'] for c in combinations} <= {100, 200, 300}

    jobs = experiment_jobs(local_service, batchai_client, 'random_search_experiment')
    assert len(jobs) == 16 and all(job.execution_state == 'succeeded' for job in jobs)
    results = namespace['results']
    assert len(results) == 16
    assert [r['metric_value'] for r in results] == sorted(expected_error(*config_of(r['job']), 16) for r in results)
    output = capsys.readouterr().out
    assert 'Best job: {0} with parameters'.format(results[0]['job_name']) in output
    assert 'Parameters 16: ' in output
    # The seed of the random search is kept, so the same 16 configurations can be drawn again.
    again, _ = namespace['parameters'].generate_jobs_random_search(namespace['jcp'], 16,
                                                                   seed=namespace['parameters'].seed)
    assert [env_of(j)['PARAM_FEEDFORWARD_CONSTANT'] for j in again] == \
        [repr(c['PARAM_FEEDFORWARD_CONSTANT']) for c in combinations]


def test_hyperband_recipe(local_service, batchai_client, capsys):
    cells = notebook_cells('HyperBand')
    namespace = local_setup(local_service, batchai_client, 'utilhyperband')
    namespace['np'] = types.SimpleNamespace(log=math.log, ceil=math.ceil)  # stand-in: numpy is not installed
    run(import_lines(cells[0]), namespace)
    for index in range(9, 17):  # specs, ParameterSweep, jcp, experiment, extractor, generate, Hyperband, loop
        run(sdk_migrated(cells[index]), namespace)
    output = capsys.readouterr().out
    assert output.count('******** Round #') == 3

    jobs = experiment_jobs(local_service, batchai_client, 'hyperband_experiment')
    assert all(job.execution_state == 'succeeded' for job in jobs)
    rounds = {}
    for job in jobs:
        rounds.setdefault(int(env_of(job)['PARAM_EPOCHS']), []).append(job)
    # 16 configurations for 1 epoch, the best 4 for 4 epochs, the best one for 16: 21 jobs, the later rounds as new
    # jobs (their definitions differ in PARAM_EPOCHS), not found "already present" under the first round's names.
    assert {epochs: len(round_jobs) for epochs, round_jobs in rounds.items()} == {1: 16, 4: 4, 16: 1}
    assert len({job.name for job in jobs}) == 21

    def best(round_jobs, count, epochs):
        ranked = sorted(round_jobs, key=lambda job: (expected_error(*config_of(job), epochs), job.name))
        return sorted(config_of(job) for job in ranked[:count])
    assert sorted(config_of(job) for job in rounds[4]) == best(rounds[1], 4, 1)
    assert [config_of(rounds[16][0])] == best(rounds[4], 1, 4)
    # Each round's metric was read from its own jobs: the last round's single result is the 16-epoch job's.
    final = namespace['results']
    assert len(final) == 1 and final[0]['job_name'] == rounds[16][0].name
    assert final[0]['metric_value'] == expected_error(*config_of(rounds[16][0]), 16)
