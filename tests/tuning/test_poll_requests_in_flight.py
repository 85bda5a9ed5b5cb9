"""`sweep run`'s poll sends its creates (and its terminates) together, on the run's threads (issue 44: one after
another, ~10 ms each against a local service, they held the next poll back by a third of a second at 32 slots and
let the slots go idle). Not timed: each call waits at a barrier for another call of the same poll, which the calls
one by one never reach (the barrier breaks after its timeout and the test fails). On the session's local service,
with the controller in this process; a create that fails still lets the others be counted, then the poll raises.
"""
import os
import threading
import uuid

import pytest

from azext_batchai_sweep.core.service import listing
from azext_batchai_sweep.core.service.retry import RetrySettings
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file
from azext_batchai_sweep.core.tuning import loop

pytestmark = [pytest.mark.service]

JOBS = 4


def _run(service, client, directory, name):
    experiment = '{}-{}'.format(name, uuid.uuid4().hex[:8])
    client.experiments.begin_create(service.resource_group, service.workspace, experiment).result()
    path = os.path.join(directory, name + '.yaml')
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join([
            'jobNamePrefix: fl', 'sampling: {type: grid}', 'limits: {{maxConcurrentJobs: {}}}'.format(JOBS),
            'parameters:', '  - {{name: Q, type: discrete, values: {}}}'.format(list(range(JOBS))),
            'job:', '  nodeCount: 1', '  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs',
            '  customToolkitSettings: {commandLine: "exec 3<> <(:); read -t 30 -u 3 || true"}', '']))
    definition = load_sweep_file(path, cluster_id=service.cluster_id, adaptive=True)
    return loop.SweepRun(client, service.resource_group, service.workspace, experiment, 'fl', definition,
                         journal_path=os.path.join(directory, name + '.run.json'), retry=RetrySettings(),
                         parallel=JOBS), experiment


def _meeting(monkeypatch, name, parties, fail=None):
    """loop.<name> wrapped: each call waits until `parties` calls are in flight together; then a call for which
    fail(calls so far, job) is true raises."""
    barrier, real, calls = threading.Barrier(parties, timeout=20), getattr(loop, name), []

    def call(client, group, workspace, experiment, job, *args, **kwargs):
        calls.append(job)
        barrier.wait()
        if fail is not None and fail(calls, job):
            raise RuntimeError('refused ' + job)
        return real(client, group, workspace, experiment, job, *args, **kwargs)
    monkeypatch.setattr(loop, name, call)
    return calls


def test_a_polls_creates_and_terminates_are_in_flight_together(local_service, batchai_client, tmp_path, monkeypatch):
    run, experiment = _run(local_service, batchai_client, str(tmp_path), 'together')
    created = _meeting(monkeypatch, 'create_job', JOBS)
    assert run.poll() is None
    assert len(created) == JOBS and run.submitted == JOBS and run.submitted_names == set(created)
    terminated = _meeting(monkeypatch, 'terminate_job', JOBS)
    run._terminate_all(created)  # pylint: disable=protected-access
    assert sorted(terminated) == sorted(created)
    jobs = listing.list_jobs(batchai_client, local_service.resource_group, local_service.workspace, experiment)
    assert {job.name for job in jobs} == set(created)
    assert all(listing.state_of(job) in ('terminating', 'terminated') for job in jobs)


def test_a_failed_create_lets_the_others_be_counted_then_the_poll_raises(local_service, batchai_client, tmp_path,
                                                                        monkeypatch):
    run, experiment = _run(local_service, batchai_client, str(tmp_path), 'onefails')
    calls = _meeting(monkeypatch, 'create_job', JOBS, fail=lambda calls, job: job == calls[0])
    with pytest.raises(RuntimeError, match='refused ' + 'fl-'):
        run.poll()
    assert len(calls) == JOBS and run.submitted == JOBS - 1 and run.submitted_names == set(calls[1:])
    jobs = listing.list_jobs(batchai_client, local_service.resource_group, local_service.workspace, experiment)
    assert {job.name for job in jobs} == run.submitted_names
