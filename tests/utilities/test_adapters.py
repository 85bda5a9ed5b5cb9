"""The adapters' own rules: job names, storage keys of convert_job_to_jcp, MetricExtractor's old options, call forms."""
import azure.mgmt.batchai.models as models
import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.utilities import experiment, job, job_factory

KEY = 'c2VjcmV0LWtleS0x'


def template(command_line='python train.py', key=KEY, epochs='1'):
    return models.JobCreateParameters(
        cluster=models.ResourceId(id='/c'), node_count=1, std_out_err_path_prefix='$AZ_BATCHAI_MOUNT_ROOT/logs',
        mount_volumes=models.MountVolumes(azure_file_shares=[models.AzureFileShareReference(
            account_name='acct', azure_file_url='https://acct.file.core.windows.net/share', relative_mount_path='afs',
            credentials=models.AzureStorageCredentialsInfo(account_key=key))]),
        environment_variables=[models.EnvironmentVariable(name='PARAM_EPOCHS', value=epochs)],
        custom_toolkit_settings=models.CustomToolkitSettings(command_line=command_line))


def submit_one(local_service, batchai_client, experiment_name, prefix, command_line):
    """ExperimentUtils on the session's service and the one job (named from ``prefix``) it submitted."""
    utils = experiment.ExperimentUtils(batchai_client, local_service.resource_group, local_service.workspace,
                                       experiment_name, log_to_stdout=False)
    jcp = models.JobCreateParameters(
        cluster=models.ResourceId(id=local_service.cluster_id), node_count=1,
        std_out_err_path_prefix='$AZ_BATCHAI_MOUNT_ROOT/logs',
        custom_toolkit_settings=models.CustomToolkitSettings(command_line=command_line))
    (submitted,) = utils.submit_jobs([jcp], prefix).result()
    return utils, submitted


def test_job_names_hash_the_definition_without_its_credentials():
    name = experiment.job_name_for('mnist_hyperband', template())
    assert name.startswith('mnist_hyperband-') and len(name) == len('mnist_hyperband-') + 16
    assert experiment.job_name_for('mnist_hyperband', template(key='b3RoZXIta2V5')) == name  # a rotated key
    assert experiment.job_name_for('mnist_hyperband', template(epochs='4')) != name  # the next Hyperband round
    assert experiment.job_name_for('mnist_hyperband', template().serialize()) == name  # REST dict, same job


def test_submit_jobs_checks_its_arguments_before_sending_anything():
    utils = experiment.ExperimentUtils.__new__(experiment.ExperimentUtils)  # no service: nothing may be sent
    with pytest.raises(SpecError, match='prefix'):
        utils.submit_jobs([template()], 'bad/prefix!')
    with pytest.raises(SpecError, match='list of JobCreateParameters'):
        utils.submit_jobs(template(), 'prefix')
    with pytest.raises(TypeError, match='prefix is missing'):
        utils.submit_jobs(template(), job_factory.ParameterSweep([job_factory.DiscreteParameter('X', [1])]))


def service_job(rest_properties):
    return models.Job.deserialize({'name': 'j1', 'properties': rest_properties})


def test_convert_job_to_jcp_fills_the_key_from_the_environment(monkeypatch):
    rest = template().serialize()
    del rest['properties']['mountVolumes']['azureFileShares'][0]['credentials']['accountKey']  # as Batch AI answers
    rest['properties']['constraints'] = {'maxWallClockTime': 'P7D'}
    monkeypatch.setenv('AZURE_BATCHAI_STORAGE_KEY', KEY)
    jcp = job.convert_job_to_jcp(service_job(rest['properties']), client=None)
    assert isinstance(jcp, models.JobCreateParameters)
    assert jcp.mount_volumes.azure_file_shares[0].credentials.account_key == KEY
    assert jcp.constraints is None  # as the old function did
    assert [(v.name, v.value) for v in jcp.environment_variables] == [('PARAM_EPOCHS', '1')]


def test_convert_job_to_jcp_without_a_key_source_says_what_to_set(monkeypatch):
    monkeypatch.delenv('AZURE_BATCHAI_STORAGE_KEY', raising=False)
    rest = template().serialize()
    del rest['properties']['mountVolumes']['azureFileShares'][0]['credentials']['accountKey']
    monkeypatch.setattr(job, '_key_from_azure', lambda account, client: (_ for _ in ()).throw(
        job.StorageError('cannot find storage account {!r}'.format(account))))  # no Azure here: the last resort
    with pytest.raises(job.StorageError, match="'acct'"):
        job.convert_job_to_jcp(service_job(rest['properties']), client=object())


def test_attribute_placeholders_and_from_json():
    parameters = job_factory.ParameterSweep.from_json({'params': [
        {'paramType': 'NumParam', 'parameterName': 'LR', 'start': 0.1, 'end': 0.3, 'step': 0.1, 'dataType': 'REAL',
         'scale': 'LINEAR'},
        {'paramType': 'DictParam', 'parameterName': 'D', 'values': [{'K': 1}, {'K': 2}]}]})
    assert parameters.LR.reference == 'LR' and parameters.D__K.reference == 'D.K'
    with pytest.raises(AttributeError):
        getattr(parameters, 'NOPE')
    assert parameters.param_specs[0].values == [0.1, 0.2, 0.3]
    with pytest.raises(ValueError, match='Invalid param spec type'):
        job_factory.ParameterSweep.from_json({'params': [{'paramType': 'Other', 'parameterName': 'X'}]})


def test_old_positional_order():
    numeric = job_factory.NumericParameter('BATCH', 'INTEGER', 10, 50, 'LINEAR', None, 10)
    assert (numeric.parameter_name, numeric.data_type, numeric.values) == ('BATCH', 'INTEGER', [10, 20, 30, 40, 50])
    files = job_factory.FileParameter('DATA', 'acct', KEY, 'FILE', 'afs', 'JOB', None, 'share', 'data', '/data/.+')
    assert (files.mount_method, files.fileshare, files.directory, files.filter_str) == ('JOB', 'share', 'data',
                                                                                       '/data/.+')
    assert KEY not in repr(files)


@pytest.mark.service
def test_metric_extractor_options(local_service, batchai_client):
    utils, submitted = submit_one(local_service, batchai_client, 'utilities-metrics', 'metrics',
                                  'printf "loss 3\\nloss 1\\nloss 2\\n"')

    def metric(regex, how='last', logfile='stdout.txt'):
        extractor = job.MetricExtractor('stdouterr', logfile, regex, calculate_method=how)
        return utils.get_metrics_for_jobs([submitted], extractor)[0]['metric_value']
    assert metric(r'loss (\d+)') == 2.0
    assert metric(r'(?<=loss )\d+', 'mean') == 2.0  # no group: the whole match, as re.findall gave it
    assert (metric(r'loss (\d+)', 'min'), metric(r'loss (\d+)', 'max')) == (1.0, 3.0)
    assert metric(r'accuracy (\d+)') == float('inf')
    assert metric(r'loss (\d+)', logfile='missing.txt') == float('inf')
    assert job.MetricExtractor('stdouterr', 'stdout.txt', r'loss (\d+)').get_metric(
        submitted.name, local_service.resource_group, local_service.workspace, 'utilities-metrics',
        batchai_client) == 2.0

    class OwnExtractor:  # a notebook's own extractor with the old interface only
        @staticmethod
        def get_metric(job_name, resource_group, workspace_name, experiment_name, client):
            return len(client.jobs.get(resource_group, workspace_name, experiment_name, job_name).name)
    assert utils.get_metrics_for_jobs([submitted], OwnExtractor())[0]['metric_value'] == len(submitted.name)
    utils.delete_jobs_in_experiment()


@pytest.mark.service
def test_wait_for_job_completion_and_print_job_status(local_service, batchai_client, capsys):
    utils, submitted = submit_one(local_service, batchai_client, 'utilities-wait', 'wait',
                                  'echo first; echo last; exit 4')
    finished = job.wait_for_job_completion(batchai_client, local_service.resource_group, local_service.workspace,
                                           'utilities-wait', submitted.name, local_service.cluster,
                                           output_directory_id='stdouterr', file_name='stdout.txt')
    out = capsys.readouterr().out
    assert finished.execution_state == 'failed'
    assert 'first\nlast\n' in out and 'Job state: failed ExitCode: 4' in out
    utils.delete_jobs_in_experiment()
