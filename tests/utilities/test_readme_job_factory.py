"""Every code example of the old README's "Job Factory" section, both versions, with only import lines changed.

The README text is test data (data/utilities_readme_v1.md: the seed's NumParamSpec version; v2: the last commit's
NumericParameter version). The specification examples are expressions followed by "# will generate [...]": each is
evaluated and its values compared with what the comment promises. The examples that need a job template, a service
or storage run against the local service (Files) and Azurite (Blob) with the README's placeholder values
("example_name", "example_key", "example_container", ...) replaced by those of the emulators, and the endpoints given
as `az storage` takes them, in AZURE_STORAGE_CONNECTION_STRING.
"""
import os
import shutil

import azure.mgmt.batchai.models as models
import pytest

from tests.utilities.migration import evaluate, migrate, readme_blocks, run

VERSIONS = (1, 2)
FIRST_IMPORTS = 'from utilities.job_factory import *\n'  # the classes the README's later examples use


def spec_namespace():
    return run(FIRST_IMPORTS, {})


@pytest.mark.parametrize('version', VERSIONS)
def test_only_import_lines_change(version):
    blocks = readme_blocks(version)
    assert len(blocks) == 18
    changed = [line for block in blocks for line in migrate(block)[1]]
    assert changed and all(old.lstrip().startswith(('from utilities', 'import utilities')) for old, _ in changed)


@pytest.mark.parametrize('version', VERSIONS)
def test_numerical_parameter_examples(version):
    blocks, namespace = readme_blocks(version), spec_namespace()
    batch = evaluate(blocks[6], namespace)
    assert batch.values() == [10, 20, 30, 40, 50]
    assert batch.values == [10, 20, 30, 40, 50]  # the old classes' list attribute works too
    learning_rate = evaluate(blocks[7], namespace)
    assert learning_rate.values() == [1e-4, 1e-3, 1e-2, 1e-1]
    assert learning_rate.parameter_name == 'LEARNING_RATE'


@pytest.mark.parametrize('version', VERSIONS)
def test_discrete_and_dict_parameter_examples(version):
    blocks, namespace = readme_blocks(version), spec_namespace()
    assert evaluate(blocks[8], namespace).values() == ['Device_1', 'Device_2', 'Device_3']
    hyper = evaluate(blocks[9], namespace)
    parameters = namespace['ParameterSweep']([hyper])
    template = models.JobCreateParameters(
        cluster=models.ResourceId(id='/c'), node_count=1, std_out_err_path_prefix='/logs',
        custom_toolkit_settings=models.CustomToolkitSettings(command_line='train --lr {0} --hidden {1}'.format(
            parameters['HYPERPARAMS']['LEARNING_RATE'], parameters['HYPERPARAMS']['HIDDEN_LAYER_SIZE'])))
    jcps, combinations = parameters.generate_jobs(template)
    # "will generate 3 jobs", the values substituted with parameters['HYPERPARAMS']['LEARNING_RATE'] ...
    assert [jcp.custom_toolkit_settings.command_line for jcp in jcps] == [
        'train --lr 0.0001 --hidden 100', 'train --lr 0.001 --hidden 200', 'train --lr 0.01 --hidden 300']
    # The old code's combinations and PARAM_D__K variables, next to the core's PARAM_D_K.
    assert combinations[1] == {'PARAM_HYPERPARAMS__LEARNING_RATE': 1e-3, 'PARAM_HYPERPARAMS__HIDDEN_LAYER_SIZE': 200}
    env = {var.name: var.value for var in jcps[1].environment_variables}
    assert env['PARAM_HYPERPARAMS__LEARNING_RATE'] == env['PARAM_HYPERPARAMS_LEARNING_RATE'] == '0.001'
    assert parameters.HYPERPARAMS__HIDDEN_LAYER_SIZE.reference == 'HYPERPARAMS.HIDDEN_LAYER_SIZE'


def readme_template(version, cluster_id, script_dir):
    """Blocks 0-2: the specification, the ParameterSweep and the README's JobCreateParameters, with the variables
    the README leaves to the reader (cluster, input_directories, std_output_path_prefix)."""
    blocks = readme_blocks(version)
    namespace = {'models': models, 'cluster': models.ResourceId(id=cluster_id),
                 'input_directories': [models.InputDirectory(id='SCRIPT', path=script_dir)],
                 'std_output_path_prefix': '$AZ_BATCHAI_MOUNT_ROOT/logs'}
    for index in (0, 1, 2):
        run(blocks[index], namespace)
    return blocks, namespace


def generated(version, namespace):
    """What the example left: the old code's (jcps, combinations) in both versions (the first README showed a
    list alone, the second unpacks the pair)."""
    if version == 1:
        return namespace['jobs_to_submit']
    return namespace['jobs_to_submit'], namespace['param_combinations']


@pytest.mark.parametrize('version', VERSIONS)
def test_generate_jobs_examples(version, tmp_path):
    blocks, namespace = readme_template(version, '/c', str(tmp_path))
    run(blocks[3], namespace)
    jcps, combinations = generated(version, namespace)
    assert [float(jcp.tensor_flow_settings.master_command_line_args.split('=')[1]) for jcp in jcps] == \
        [1e-4, 1e-3, 1e-2, 1e-1]
    assert [c['PARAM_LEARNING_RATE'] for c in combinations] == [1e-4, 1e-3, 1e-2, 1e-1]
    for jcp, combination in zip(jcps, combinations):
        assert isinstance(jcp, models.JobCreateParameters)
        env = {var.name: var.value for var in jcp.environment_variables}
        assert env['PARAM_LEARNING_RATE'] == repr(combination['PARAM_LEARNING_RATE'])
    # The template is left as it was: its placeholder is still there.
    assert '{{LEARNING_RATE}}' in namespace['jcp'].tensor_flow_settings.master_command_line_args

    run(blocks[4], namespace)
    jcps, combinations = generated(version, namespace)
    values = [c['PARAM_LEARNING_RATE'] for c in combinations]
    assert len(jcps) == 16 and len(set(values)) == 16 and all(1e-4 <= v <= 1e-1 for v in values)
    assert [jcp.tensor_flow_settings.master_command_line_args for jcp in jcps] == \
        ['--learning-rate={!r}'.format(v) for v in values]


TRAIN = '''import os, sys
print('args', ' '.join(sys.argv[1:]), 'env', os.environ['PARAM_LEARNING_RATE'])
'''


@pytest.mark.service
@pytest.mark.parametrize('version', VERSIONS)
def test_submit_example_runs_the_four_jobs(version, local_service, batchai_client, tmp_path):
    script_dir = tmp_path / 'script'
    script_dir.mkdir()
    (script_dir / 'train.py').write_text(TRAIN)
    blocks, namespace = readme_template(version, local_service.cluster_id, str(script_dir))
    run(blocks[3], namespace)
    namespace.update(client=batchai_client, resource_group_name=local_service.resource_group,
                     workspace_name=local_service.workspace, experiment_name='readme-v{}'.format(version))
    run(blocks[5], namespace)
    jobs = namespace['jobs']
    assert len(jobs) == 4 and all(isinstance(job, models.Job) for job in jobs)
    assert all(job.name.startswith('job_name_prefix-') for job in jobs)
    args = sorted(float(job.tensor_flow_settings.master_command_line_args.split('=')[1]) for job in jobs)
    assert args == [1e-4, 1e-3, 1e-2, 1e-1]

    experiment_utils = namespace['experiment_utils']
    finished = experiment_utils.wait_all_jobs(job_names=[job.name for job in jobs])
    assert [job.execution_state for job in finished] == ['succeeded'] * 4
    # The jobs really ran with the value in their command line and in $PARAM_LEARNING_RATE.
    extractor = namespace_extractor()
    rows = experiment_utils.get_metrics_for_jobs(jobs, extractor)
    for row in rows:
        arg = float(row['job'].tensor_flow_settings.master_command_line_args.split('=')[1])
        assert row['metric_value'] == arg
    # Submitting the same cell again creates nothing new: the same four jobs come back.
    again = experiment_utils.submit_jobs(*submit_arguments(version, namespace)).result()
    assert sorted(job.name for job in again) == sorted(job.name for job in jobs)
    experiment_utils.delete_jobs_in_experiment()


def namespace_extractor():
    from azext_batchai_sweep.utilities.job import MetricExtractor
    # "args --learning-rate=0.001 env 0.001": the variable's value, which must equal the argument's. The README's jobs
    # are tensorFlowSettings jobs: Batch AI wrote their (master) worker's output to stdout-wk-0.txt.
    return MetricExtractor('stdouterr', 'stdout-wk-0.txt', r'env (\S+)$')


def submit_arguments(version, namespace):
    first = namespace['jcp'] if version == 1 else namespace['jobs_to_submit']
    return first, namespace['parameters'], 'job_name_prefix'


BLOB_FILES = ('other/a.txt', 'b.txt', 'data/c.txt', 'data/d.txt')


def storage_values(version, block, account, key, container=None, share=None):
    """The example with the README's placeholder values replaced (Azure names cannot hold '_')."""
    text = block.replace('"example_name"', repr(account)).replace('"example_key"', repr(key))
    if container:
        text = text.replace('"example_container"', repr(container))
    if share:
        text = text.replace('"example_share"', repr(share))
    return text


@pytest.mark.azurite
@pytest.mark.service
@pytest.mark.parametrize('version', VERSIONS)
def test_blob_file_parameter_example(version, blob_store, monkeypatch):
    from azure.storage.blob import BlobServiceClient
    container = 'example-container-v{}'.format(version)
    service = BlobServiceClient.from_connection_string(blob_store.connection_string)
    client = service.get_container_client(container)
    if not client.exists():
        client.create_container()
        for name in BLOB_FILES:
            client.upload_blob(name, b'x')
    monkeypatch.setenv('AZURE_STORAGE_CONNECTION_STRING', blob_store.connection_string)
    block = storage_values(version, readme_blocks(version)[10], blob_store.account_name, blob_store.account_key,
                           container)
    spec = evaluate(block, spec_namespace())
    if version == 1:  # the README's promise
        assert spec.values() == ['$AZ_BATCHAI_MOUNT_ROOT/bfs/data/c.txt', '$AZ_BATCHAI_MOUNT_ROOT/bfs/data/d.txt']
    else:
        # Version 2 adds mount_method="JOB" but kept the comment of version 1; the old code (and ours) gives the
        # job mount root for JOB, as the parameter's own documentation says.
        assert spec.values() == ['$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/data/c.txt',
                                 '$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/data/d.txt']


@pytest.mark.service
@pytest.mark.parametrize('version', VERSIONS)
def test_file_share_file_parameter_example(version, local_service, monkeypatch):
    account, share = 'utilreadme', 'example-share'
    root = os.path.join(local_service.data_dir, 'storage', account, 'shares', share)
    shutil.rmtree(root, ignore_errors=True)
    for name in BLOB_FILES:
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        with open(os.path.join(root, name), 'w', encoding='utf-8') as f:
            f.write('x\n')
    with open(os.path.join(local_service.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    monkeypatch.setenv('AZURE_STORAGE_CONNECTION_STRING', 'DefaultEndpointsProtocol=http;AccountName={};'
                       'FileEndpoint={}/{};'.format(account, local_service.files_endpoint, account))
    block = storage_values(version, readme_blocks(version)[11], account, key, share=share)
    spec = evaluate(block, spec_namespace())
    assert spec.values() == ['$AZ_BATCHAI_MOUNT_ROOT/afs/data/c.txt', '$AZ_BATCHAI_MOUNT_ROOT/afs/data/d.txt']
    assert key not in repr(spec)
