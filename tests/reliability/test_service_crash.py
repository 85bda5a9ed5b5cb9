"""The local service killed with SIGKILL in the middle of a sweep, then restarted on its data dir.

Nothing recorded is lost (every submitted job is still there, finished ones keep their state and exit code), the jobs
that were running are reported failed with an error saying why, and `resubmit` brings the sweep to completion.
"""
import pytest

from azext_batchai_sweep.core.service.listing import state_of
from azext_batchai_sweep.core.service.resubmit import resubmit_jobs
from azext_batchai_sweep.core.service.status import wait_for_jobs
from azext_batchai_sweep.core.service.submit import submit_jobs

from .helpers import assert_exactly_planned, client_for, make_plan, plan_bodies, quick_retry, service_jobs, wait_until

pytestmark = [pytest.mark.service, pytest.mark.slow]

# Even X finishes at once; odd X runs until the marker file exists (so it is running when the service is killed,
# and quick once the test creates the marker after the restart).
COMMAND = 'test $((PARAM_X % 2)) -eq 0 || test -e {marker} || sleep 60; echo "done x=$PARAM_X"'


def test_sigkill_of_the_service_mid_sweep_then_restart_and_resubmit(service_factory, tmp_path):
    svc = service_factory(name='crashing', slots=4)
    client = client_for(svc)
    rg, ws = svc.resource_group, svc.workspace
    client.experiments.begin_create(rg, ws, 'crash', polling=False).result()
    marker = tmp_path / 'marker'
    plan = make_plan(tmp_path, svc, 'crash', 12, command=COMMAND.format(marker=marker))
    # One at a time, so the jobs queue in plan order (X = 0..11) and the cluster's 4 slots settle on 4 odd jobs running
    # after 4 even ones finished; submitted in parallel, the odd ones could take all 4 slots first.
    submitted = submit_jobs(client, rg, ws, 'crash', plan_bodies(plan), parallel=1, retry=quick_retry())
    assert submitted['submitted'] == 12

    def settled():
        jobs = {job.name: job for job in service_jobs(client, svc, 'crash')}
        running = [name for name, job in jobs.items() if state_of(job) == 'running']
        succeeded = [name for name, job in jobs.items() if state_of(job) == 'succeeded']
        return (jobs, running) if len(running) == 4 and len(succeeded) >= 4 else None
    before, running = wait_until(settled, 60, what='4 jobs running and some finished')

    restarted = service_factory.restart(svc)  # SIGKILL: no cleanup, no final records
    client = client_for(restarted)
    after = {job.name: job for job in service_jobs(client, restarted, 'crash')}

    assert sorted(after) == sorted(before)  # every job recorded before the crash is still there
    for name, job in before.items():
        if state_of(job) in ('succeeded', 'failed'):
            assert state_of(after[name]) == state_of(job), name
            assert after[name].execution_info.exit_code == job.execution_info.exit_code, name
    for name in running:
        job = after[name]
        assert state_of(job) == 'failed', name
        errors = job.execution_info.errors or []
        assert [e.code for e in errors] == ['ServiceInterrupted'], [(e.code, e.message) for e in errors]
        assert 'service died while the job was running' in errors[0].message

    # The jobs queued at the crash run after the restart; then resubmit re-runs the crashed ones.
    marker.write_text('')
    done = wait_for_jobs(client, rg, ws, 'crash', sweep_name='rel', interval=0.5, timeout=120, retry=quick_retry())
    assert done['finished']
    result = resubmit_jobs(client, rg, ws, 'crash', sweep_name='rel', retry=quick_retry(), poll_interval=0.2)
    assert result['failed'] == [] and set(running) <= set(result['resubmitted'])
    done = wait_for_jobs(client, rg, ws, 'crash', sweep_name='rel', interval=0.5, timeout=120, retry=quick_retry())
    assert done['finished'] and done['counts']['succeeded'] == 12, done['counts']
    assert_exactly_planned(client, restarted, 'crash', plan)
