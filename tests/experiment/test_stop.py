"""core/service/stop.py against the local service through the client whose every request and response is checked against
the Batch AI swagger (terminate is POST .../jobs/{name}/terminate, answered 202 with a Location, or 200)."""
from azext_batchai_sweep.core.service.listing import state_of
from azext_batchai_sweep.core.service.status import sweep_status
from azext_batchai_sweep.core.service.stop import stop_jobs, terminate_job, unknown_jobs
from azext_batchai_sweep.core.service.submit import submit_jobs

from .service_helpers import new_experiment, quick_retry, sweep_plan


def test_stop_terminates_queued_and_running_jobs_of_one_sweep_only(batchai_client, local_service):
    svc, client = local_service, batchai_client
    experiment = new_experiment(client, svc)
    args = (client, svc.resource_group, svc.workspace, experiment)
    submit_jobs(*args, sweep_plan(svc, 'mine', 2, 'sleep 60') + sweep_plan(svc, 'done', 1, 'true'),
                retry=quick_retry())
    mine = [name for name, _ in sweep_plan(svc, 'mine', 2, '')]
    assert unknown_jobs(*args, 'mine', mine + ['done-000', 'nope'], retry=quick_retry()) == ['done-000', 'nope']

    result = stop_jobs(*args, 'mine', interval=0.1, timeout=30, retry=quick_retry())
    assert result['stopped'] == mine and result['failed'] == [] and result['stillStopping'] == []
    status = sweep_status(*args, sweep_name='mine', retry=quick_retry())
    assert status['counts']['terminated'] == 2
    for name in mine:
        job = client.jobs.get(svc.resource_group, svc.workspace, experiment, name)
        assert state_of(job) == 'terminated' and job.execution_info.errors[0].code == 'JobTerminated'
        # Terminating a finished job changes nothing; a job that is not there is reported, never an error.
        assert terminate_job(*args, name, retry=quick_retry()) is True
        assert state_of(client.jobs.get(svc.resource_group, svc.workspace, experiment, name)) == 'terminated'
    assert terminate_job(*args, 'gone-000', retry=quick_retry()) is False

    again = stop_jobs(*args, 'mine', interval=0.1, timeout=30, retry=quick_retry())
    assert again['stopped'] == [] and again['notRunning'] == mine
    other = client.jobs.get(svc.resource_group, svc.workspace, experiment, 'done-000')
    assert state_of(other) in ('queued', 'running', 'succeeded')
