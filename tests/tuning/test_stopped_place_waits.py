"""A job a rule stops keeps its place under maxConcurrentJobs until it has ended (a terminating job still runs on
its node): `sweep run` creates the job that takes its place at the poll that stops it, but only once the service
shows it ended; a job that takes longer to end than the poll waits (SIGTERM ignored: killed after the local
scheduler's 2 s grace) gets its replacement at a later poll. The new job was once created as soon as the terminate
was sent, and a run under maxConcurrentJobs 3 had 4 jobs active at once (tests/tuning/test_run_e2e.py's watcher).

On the session's local service (processes scheduler), the controller in this process so that each poll is one call;
bandit stops Q=1 at its first report (1 < 9 / 1.2). The order of events is read from the service's own times.
Q=9 runs until the test has read its answers (a file the test writes at its end), not for a fixed time: under load
a job that ended on a timer before Q=1 was stopped freed a place of its own, and Q=8 was created for it at once (the
test then read Q=1 'terminating' beside Q=8, with no replacement involved).
"""
import os
import time
import uuid

import pytest

from azext_batchai_sweep.core.service import listing
from azext_batchai_sweep.core.service.retry import RetrySettings
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file
from azext_batchai_sweep.core.tuning import loop
from azext_batchai_sweep.core.tuning.controller import Limits

pytestmark = [pytest.mark.service]

# Q=1 ends 0.6 s after its SIGTERM (a trap that cleans up), or ignores it (SIGKILL after the grace period).
CLEANS_UP = "trap 'sleep 0.6; exit 143' TERM"
IGNORES = "trap '' TERM"


def _run(service, client, directory, on_term):
    experiment = 'sw-' + uuid.uuid4().hex[:8]
    client.experiments.begin_create(service.resource_group, service.workspace, experiment).result()
    # every job runs until the test ends (_release), at most 120 s
    command = ('if [ {{{{Q}}}} = 1 ]; then {}; fi; echo epoch=1 acc={{{{Q}}}}; '
               'for i in $(seq 1200); do [ -e {} ] && break; sleep 0.1; done').format(
                   on_term, os.path.join(directory, 'released'))
    path = os.path.join(directory, experiment + '.yaml')
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join([
            'jobNamePrefix: sw', 'objective: {metric: acc, goal: max, step: epoch}', 'sampling: {type: grid}',
            'earlyTermination: {policy: bandit, slackFactor: 0.2}',
            'parameters:', '  - {name: Q, type: discrete, values: [9, 1, 8]}',
            'job:', '  nodeCount: 1', '  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs',
            '  customToolkitSettings: {{commandLine: "{}"}}'.format(command.replace('"', '\\"')), '']))
    definition = load_sweep_file(path, cluster_id=service.cluster_id, adaptive=True)
    run = loop.SweepRun(client, service.resource_group, service.workspace, experiment, 'sw', definition,
                        limits=Limits(max_concurrent_jobs=2), retry=RetrySettings(), parallel=4,
                        journal_path=os.path.join(directory, experiment + '.run.json'))
    return run, experiment


@pytest.fixture
def _release(tmp_path):
    """Ends the jobs of the test once it has read them."""
    yield
    with open(os.path.join(str(tmp_path), 'released'), 'w', encoding='utf-8'):
        pass


def _jobs(service, client, experiment):
    """{Q: the job} as the service lists them now."""
    jobs = listing.list_jobs(client, service.resource_group, service.workspace, experiment)
    return {listing.env_of(job)['PARAM_Q']: job for job in jobs}


def _poll_until_stopped(run):
    """Create the first two jobs, read them until both have reported (no rule judges meanwhile), then the poll that
    stops Q=1; returns the stopped job's name."""
    assert run.poll() is None
    deadline = time.monotonic() + 60
    while not (len(run.trials) == 2 and all(t.reports for t in run.trials)):
        assert time.monotonic() < deadline, [(t.name, t.state, t.reports) for t in run.trials]
        time.sleep(0.1)
        run.observe()
    assert run.poll() is None
    stopped = sorted(run.controller.decisions)
    assert len(stopped) == 1 and [t.params['Q'] for t in run.trials if t.name == stopped[0]] == [1], stopped
    return stopped[0]


def test_the_replacement_is_created_once_the_stopped_job_has_ended(local_service, batchai_client, tmp_path,
                                                                   _release):
    run, experiment = _run(local_service, batchai_client, str(tmp_path), CLEANS_UP)
    _poll_until_stopped(run)
    jobs = _jobs(local_service, batchai_client, experiment)
    assert set(jobs) == {'9', '1', '8'}, 'the place is filled at the poll that stops the job'
    assert listing.state_of(jobs['9']) == 'running', 'Q=8 takes the place of Q=1, not of Q=9'
    assert listing.state_of(jobs['1']) == 'terminated'
    ended, created = jobs['1'].execution_info.end_time, jobs['8'].creation_time
    assert ended <= created, (ended, created)


def test_a_job_that_ends_later_than_the_poll_waits_keeps_its_place_until_then(local_service, batchai_client,
                                                                              tmp_path, _release):
    run, experiment = _run(local_service, batchai_client, str(tmp_path), IGNORES)
    _poll_until_stopped(run)
    jobs = _jobs(local_service, batchai_client, experiment)
    assert set(jobs) == {'9', '1'} and listing.state_of(jobs['1']) == 'terminating'
    assert listing.state_of(jobs['9']) == 'running'
    deadline = time.monotonic() + 30
    while '8' not in jobs:
        assert time.monotonic() < deadline
        time.sleep(0.2)
        assert run.poll() is None
        jobs = _jobs(local_service, batchai_client, experiment)
    assert listing.state_of(jobs['1']) == 'terminated'
    ended, created = jobs['1'].execution_info.end_time, jobs['8'].creation_time
    assert ended <= created, (ended, created)
