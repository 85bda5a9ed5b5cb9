"""The old job_factory / job / experiment names and behaviours the recipe notebooks rely on, against the original
(microsoftarchive/BatchAI utilities/job_factory.py, job.py, experiment.py at 2238607): Parameter, Substitution,
get_random, FileParameter's filter_str, OutputStreamer, wait_all_jobs' lines, get_metrics_for_jobs' rows and the
environment a notebook appends to generated jobs.
"""
import math
import random
import time

import azure.mgmt.batchai.models as models
import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.utilities import experiment, job, job_factory
from azext_batchai_sweep.utilities.storage import BlockBlobService


def test_parameter_is_the_base_of_the_old_classes_and_draws_with_get_random():
    log = job_factory.NumericParameter('LR', 'REAL', 0.001, 10, 'LOG')
    linear = job_factory.NumericParameter('X', 'REAL', 2, 3, 'LINEAR')
    discrete = job_factory.DiscreteParameter('D', [100, 200, 300])
    mapping = job_factory.DictParameter('M', [{'a': 1}, {'a': 2}])
    for spec in (log, linear, discrete, mapping):
        assert isinstance(spec, job_factory.Parameter)
    random.seed(7)
    first = [spec.get_random() for spec in (log, linear, discrete, mapping)]
    random.seed(7)
    assert [spec.get_random() for spec in (log, linear, discrete, mapping)] == first  # random.seed replays it
    draws = [log.get_random() for _ in range(400)]
    assert all(0.001 <= value <= 10 for value in draws)
    # LOG: uniform in the logarithm, as np.exp(np.random.uniform(log(start), log(end))): about half below 0.1
    assert 120 < sum(value < 0.1 for value in draws) < 280
    assert all(2 <= linear.get_random() <= 3 for _ in range(50))
    assert {discrete.get_random() for _ in range(100)} == {100, 200, 300}
    assert mapping.get_random() in ({'a': 1}, {'a': 2})


def test_substitution_is_what_parameters_gives():
    parameters = job_factory.ParameterSweep([job_factory.DiscreteParameter('X', [1]),
                                             job_factory.DictParameter('D', [{'K': 1, 'L': 2}])])
    x, key = parameters['X'], parameters['D']['K']
    assert isinstance(x, job_factory.Substitution) and isinstance(key, job_factory.Substitution)
    assert (x.parameter_name, key.parameter_name) == ('X', 'D__K')
    assert job_factory.Substitution.convert_name('X') == 'PARAM_X' == job_factory.Substitution.ENV_VAR_PREFIX + 'X'
    assert sorted(parameters['D'].dictParams) == ['K', 'L']
    jcp = models.JobCreateParameters(cluster=models.ResourceId(id='/c'), node_count=1, std_out_err_path_prefix='p',
                                     custom_toolkit_settings=models.CustomToolkitSettings(
                                         command_line='run {0} {1}'.format(x, key)))
    (generated,), (combination,) = parameters.generate_jobs(jcp)
    assert generated.custom_toolkit_settings.command_line == 'run 1 1'
    assert combination == {'PARAM_X': 1, 'PARAM_D__K': 1, 'PARAM_D__L': 2}


@pytest.fixture(scope='module')
def blob_files(blob_store):
    """Azurite, then the local service's Blob endpoint, with the same blobs."""
    service = BlockBlobService(connection_string=blob_store.connection_string)
    service.create_container('filter-test')
    for name in ('rnn_dataset/linux_input.txt', 'rnn_dataset/shakespeare_input.txt', 'other/rnn_dataset.txt'):
        service.create_blob_from_text('filter-test', name, name)
    return blob_store


@pytest.mark.parametrize('filter_str, expected', [
    ('rnn_dataset/.+', ['rnn_dataset/linux_input.txt', 'rnn_dataset/shakespeare_input.txt']),  # the recipe's
    ('rnn_dataset/s', ['rnn_dataset/shakespeare_input.txt']),  # re.match: a prefix is enough, as in the old code
    ('/rnn_dataset/.+', ['rnn_dataset/linux_input.txt', 'rnn_dataset/shakespeare_input.txt']),  # the README's form
    ('.*rnn_dataset\\.txt', ['other/rnn_dataset.txt']),
])
@pytest.mark.azurite
@pytest.mark.service
def test_file_parameter_filter_str_matches_as_the_old_code(blob_files, filter_str, expected):
    spec = job_factory.FileParameter('DATA_PATH', blob_files.account_name, blob_files.account_key, 'BLOB', 'bfs',
                                      'JOB', container='filter-test', filter_str=filter_str,
                                      account_url=blob_files.blob_endpoint)
    assert spec.values == ['$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/' + name for name in expected]


@pytest.mark.azurite
@pytest.mark.service
def test_file_parameter_filter_that_matches_nothing_says_so(blob_files):
    spec = job_factory.FileParameter('DATA_PATH', blob_files.account_name, blob_files.account_key, 'BLOB', 'bfs',
                                     'JOB', container='filter-test', filter_str='linux_input',
                                     account_url=blob_files.blob_endpoint)
    with pytest.raises(SpecError, match='no file'):
        spec.values()


def template(command_line):
    return models.JobCreateParameters(cluster=models.ResourceId(id='/c'), node_count=1, std_out_err_path_prefix='p',
                                      custom_toolkit_settings=models.CustomToolkitSettings(command_line=command_line))


def test_what_a_notebook_appends_to_generated_jobs_stays_between_passes():
    parameters = job_factory.ParameterSweep([job_factory.NumericParameter('C', 'REAL', 0.001, 10, 'LOG')])
    jobs, _ = parameters.generate_jobs_random_search(template('run {0}'.format(parameters['C'])), 3)
    for generated in jobs:  # HyperBand cell 14
        generated.environment_variables.append(models.EnvironmentVariable(name='PARAM_EPOCHS', value=None))
    for epochs in ('1', '4'):  # cell 16, one pass per round
        for generated in jobs:
            for variable in generated.environment_variables:
                if variable.name == 'PARAM_EPOCHS':
                    variable.value = epochs
        assert [[v.value for v in g.environment_variables if v.name == 'PARAM_EPOCHS'] for g in jobs] == [[epochs]] * 3


def submit(utils, command_lines, prefix):
    jcps = [models.JobCreateParameters(
        cluster=models.ResourceId(id=utils.cluster_id), node_count=1,
        std_out_err_path_prefix='$AZ_BATCHAI_MOUNT_ROOT/logs',
        custom_toolkit_settings=models.CustomToolkitSettings(command_line=line)) for line in command_lines]
    return utils.submit_jobs(jcps, prefix).result()


@pytest.fixture
def utils(local_service, batchai_client, request):
    name = 'old-' + request.node.name[5:30].replace('_', '-').strip('-')
    made = experiment.ExperimentUtils(batchai_client, local_service.resource_group, local_service.workspace, name,
                                      log_to_stdout=False)
    made.cluster_id = local_service.cluster_id
    yield made
    made.delete_jobs_in_experiment()


@pytest.mark.service
def test_wait_all_jobs_prints_all_jobs_completed_once(utils, capsys):
    jobs = submit(utils, ['echo one', 'echo two'], 'once')
    utils.wait_all_jobs()
    first = capsys.readouterr().out.splitlines()
    assert first[-1] == 'All jobs completed.' and first.count('All jobs completed.') == 1
    assert not any(line.startswith('2/2 jobs completed') for line in first)
    utils.wait_all_jobs(job_names=[j.name for j in jobs])  # everything finished: the old loop printed only this
    assert capsys.readouterr().out == 'All jobs completed.\n'


@pytest.mark.service
def test_get_metrics_for_jobs_keeps_failed_jobs_as_the_old_method(utils):
    """The old method read every job it was given (its rows in the order of `jobs`), failed ones included."""
    jobs = submit(utils, ['echo "metric = 1.5%"', 'echo "metric = 0.5%"; exit 3', 'exit 4'], 'failed')
    extractor = job.MetricExtractor('stdouterr', 'stdout.txt', 'metric =(.*?)\\%')
    rows = utils.get_metrics_for_jobs(jobs, extractor)
    assert [row['job_name'] for row in rows] == [j.name for j in jobs]
    assert [row['metric_value'] for row in rows] == [1.5, 0.5, math.inf]


@pytest.mark.service
def test_output_streamer_prints_what_the_file_gained(utils, local_service, batchai_client, capsys):
    (submitted,) = submit(utils, ['echo first; sleep 2; echo last'], 'stream')
    streamer = job.OutputStreamer(batchai_client, local_service.resource_group, local_service.workspace,
                                  utils.experiment_name, submitted.name, 'stdouterr', 'stdout.txt')
    deadline, out = time.monotonic() + 20, ''
    while not out:
        assert time.monotonic() < deadline
        time.sleep(0.1)
        streamer.tail()
        out = capsys.readouterr().out
    assert out == 'first\n'  # streamed while the job still runs: 'last' is two seconds away
    assert batchai_client.jobs.get(local_service.resource_group, local_service.workspace, utils.experiment_name,
                                   submitted.name).execution_state == 'running'
    utils.wait_all_jobs(job_names=[submitted.name])
    capsys.readouterr()
    streamer.tail()
    assert capsys.readouterr().out == 'last\n'  # only what came since
    streamer.tail()
    assert capsys.readouterr().out == ''
    silent = job.OutputStreamer(batchai_client, local_service.resource_group, local_service.workspace,
                                utils.experiment_name, submitted.name, None, None)
    silent.tail()
    assert capsys.readouterr().out == ''


@pytest.mark.service
def test_wait_for_job_completion_prints_as_the_old_function(utils, local_service, batchai_client, capsys):
    (submitted,) = submit(utils, ['echo first; sleep 1; echo last'], 'waiting')
    finished = job.wait_for_job_completion(batchai_client, local_service.resource_group, local_service.workspace,
                                           utils.experiment_name, submitted.name, local_service.cluster,
                                           'stdouterr', 'stdout.txt')
    lines = capsys.readouterr().out.splitlines()
    assert finished.execution_state == 'succeeded'
    assert lines[0].startswith('Cluster state: steady Target: ') and lines[0].endswith('; Leaving: 0')
    assert lines[1].startswith('Job state: ')
    waiting = lines.index('Waiting for job output to become available...')
    assert lines[waiting + 1:] == ['first', 'last', 'Job state: succeeded ExitCode: 0']
