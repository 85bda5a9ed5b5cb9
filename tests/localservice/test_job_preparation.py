"""jobPreparation on the processes scheduler, as Batch AI ran it: its command line runs first, with the job's
environment, its output in stdout-job_prep.txt / stderr-job_prep.txt; when it fails the job fails with
JobPreparationFailed and its exit code, and the job's own command never runs."""
from azure.mgmt.batchai import models

from tests.localservice.conftest import job_outputs, job_params, wait_state


def _run(client, service, name, preparation, command):
    rg, ws = service.resource_group, service.workspace
    client.experiments.begin_create(rg, ws, 'prep').result()
    params = job_params(service, command, job_preparation=models.JobPreparation(command_line=preparation))
    client.jobs.begin_create(rg, ws, 'prep', name, params).result()
    return wait_state(client, service, 'prep', name)


def test_job_preparation_runs_first_with_the_jobs_environment(client, local_service, tmp_path):
    marker = tmp_path / 'prepared'
    job = _run(client, local_service, 'ok', 'echo prepared $AZ_BATCHAI_JOB_NAME; echo note >&2; echo yes > {}'.format(
        marker), 'echo main saw $(cat {})'.format(marker))
    assert job.execution_state == 'succeeded', job.execution_info.errors
    assert job.execution_info.exit_code == 0 and not job.execution_info.errors
    texts = job_outputs(client, local_service, 'prep', 'ok')
    assert texts['stdout-job_prep.txt'] == 'prepared ok\n'
    assert texts['stderr-job_prep.txt'] == 'note\n'
    assert texts['stdout.txt'] == 'main saw yes\n'


def test_a_failing_job_preparation_fails_the_job_and_the_command_never_runs(client, local_service, tmp_path):
    ran = tmp_path / 'ran'
    job = _run(client, local_service, 'bad', 'echo preparing; exit 3', 'touch {}'.format(ran))
    assert job.execution_state == 'failed'
    assert job.execution_info.exit_code == 3
    assert [(e.code, e.message) for e in job.execution_info.errors] == [
        ('JobPreparationFailed', 'jobPreparation.commandLine exited with 3.')]
    assert not ran.exists(), "the job's command ran after its preparation failed"
    assert job_outputs(client, local_service, 'prep', 'bad')['stdout-job_prep.txt'] == 'preparing\n'


def test_a_failing_command_after_a_good_preparation_is_no_preparation_failure(client, local_service):
    job = _run(client, local_service, 'main-fails', 'true', 'exit 4')
    assert job.execution_state == 'failed' and job.execution_info.exit_code == 4
    assert 'JobPreparationFailed' not in [e.code for e in job.execution_info.errors or []]
