"""The old README's "Experiment Utilities" examples on the local service, with only import lines changed.

Both README versions hold the same six blocks (the test checks it): the constructor, then five method signatures
(``submit_jobs(jcp_list, job_name_prefix, max_retries=NUM_RETRIES, num_threads=NUM_THREADS)`` ...). Each signature
is run as written, as a method call on the `experiment_utils` of the first block, with its arguments bound to
values of this test; NUM_RETRIES and NUM_THREADS are the module's, imported as a reader would.
"""
import azure.mgmt.batchai.models as models
import pytest

from tests.utilities.migration import evaluate, readme_blocks, run

pytestmark = pytest.mark.service

IMPORTS = ('from utilities.experiment import NUM_RETRIES, NUM_THREADS\n'
           'from utilities.job import MetricExtractor\n')


def test_both_versions_hold_the_same_experiment_examples():
    assert readme_blocks(1)[12:] == readme_blocks(2)[12:]


def job(cluster_id, command_line):
    return models.JobCreateParameters(
        cluster=models.ResourceId(id=cluster_id), node_count=1, std_out_err_path_prefix='$AZ_BATCHAI_MOUNT_ROOT/logs',
        custom_toolkit_settings=models.CustomToolkitSettings(command_line=command_line))


def test_experiment_utilities_examples(local_service, batchai_client, tmp_path):
    blocks = readme_blocks(1)
    flag = tmp_path / 'second-attempt'
    # The third job fails on its first run and succeeds once resubmitted (its flag file exists by then).
    flaky = 'if [ -e {0} ]; then echo metric=3.5; else touch {0}; echo metric=99; exit 1; fi'.format(flag)
    jcp_list = [job(local_service.cluster_id, 'echo metric=1.5'), job(local_service.cluster_id, 'echo metric=2.5'),
                job(local_service.cluster_id, flaky)]
    namespace = run(IMPORTS, {'client': batchai_client, 'resource_group_name': local_service.resource_group,
                              'workspace_name': local_service.workspace, 'experiment_name': 'readme-utilities',
                              'jcp_list': jcp_list, 'job_name_prefix': 'readme'})
    run(blocks[12], namespace)
    experiment_utils = namespace['experiment_utils']

    future = evaluate('experiment_utils.' + blocks[13], namespace)
    submitted = future.result()
    assert [type(j) for j in submitted] == [models.Job] * 3
    assert [j.custom_toolkit_settings.command_line for j in submitted] == [j.custom_toolkit_settings.command_line
                                                                           for j in jcp_list]
    assert all(j.name.startswith('readme-') for j in submitted) and len({j.name for j in submitted}) == 3

    progress = []
    namespace['on_progress'] = progress.append
    completed = evaluate('experiment_utils.' + blocks[14], namespace)
    assert sorted(j.execution_state for j in completed) == ['failed', 'succeeded', 'succeeded']
    failed_name = next(j.name for j in completed if j.execution_state == 'failed')
    assert failed_name == submitted[2].name

    resubmitted = evaluate('experiment_utils.' + blocks[15], namespace)
    assert [j.name for j in resubmitted] == [failed_name]  # the same name: a resubmission, not a new job
    assert experiment_utils.wait_all_jobs(job_names=[failed_name])[0].execution_state == 'succeeded'

    namespace['jobs'] = submitted
    namespace['metric_extractor'] = evaluate("MetricExtractor('stdouterr', 'stdout.txt', r'metric=([\\d.]+)')",
                                             namespace)
    rows = evaluate('experiment_utils.' + blocks[16], namespace)
    assert [(row['job_name'], row['metric_value']) for row in rows] == [
        (submitted[0].name, 1.5), (submitted[1].name, 2.5), (submitted[2].name, 3.5)]
    assert [row['job'] for row in rows] == submitted

    assert evaluate('experiment_utils.' + blocks[17], namespace) is None
    assert list(batchai_client.jobs.list_by_experiment(local_service.resource_group, local_service.workspace,
                                                       'readme-utilities')) == []


def test_on_progress_gets_the_jobs_and_delete_filters(local_service, batchai_client):
    namespace = run('from utilities.experiment import ExperimentUtils\n', {})
    utils = namespace['ExperimentUtils'](batchai_client, local_service.resource_group, local_service.workspace,
                                         'readme-delete', log_to_stdout=False)
    jobs = utils.submit_jobs([job(local_service.cluster_id, 'true'), job(local_service.cluster_id, 'exit 3')],
                             'keep').result()
    other = utils.submit_jobs([job(local_service.cluster_id, 'true')], 'drop').result()
    seen = []
    utils.wait_all_jobs(on_progress=seen.append)
    assert seen and {j.name for j in seen[-1]} == {j.name for j in jobs + other}
    utils.delete_jobs_in_experiment(job_name_regex='drop-')
    utils.delete_jobs_in_experiment(execution_state=models.ExecutionState.FAILED)
    left = [j.name for j in utils.wait_all_jobs()]
    assert left == [jobs[0].name]
    utils.delete_jobs_in_experiment()
