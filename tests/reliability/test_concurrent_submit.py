"""Two submits of the same sweep at once (rule 8 of issue 13): the service ends with each job once, and the two
results say honestly who created which: every job is `submitted` by exactly one of them and `alreadyPresent` for
the other (an identical PUT of an existing job answers 200, a create 202)."""
import json
import threading
import uuid

import pytest

from azext_batchai_sweep.core.service.submit import ALREADY_PRESENT, SUBMITTED, create_job, submit_jobs

from .helpers import assert_exactly_planned, client_for, make_plan, plan_bodies, quick_retry
from .test_kill_submit import start_az, submit_args

pytestmark = pytest.mark.service


@pytest.mark.parametrize('jobs, parallel', [(80, 8), (40, 1), (2, 4)])
def test_two_library_submits_at_once_count_each_job_once(local_service, tmp_path, jobs, parallel):
    experiment = 'twice-' + uuid.uuid4().hex[:6]
    plan = make_plan(tmp_path, local_service, experiment, jobs)
    bodies = plan_bodies(plan)
    client_for(local_service).experiments.begin_create(local_service.resource_group, local_service.workspace,
                                                       experiment).result()
    start = threading.Barrier(2)
    results = [None, None]

    def submit(index):
        client = client_for(local_service)  # one client each, as two processes have
        start.wait()
        results[index] = submit_jobs(client, local_service.resource_group, local_service.workspace, experiment,
                                     bodies, parallel=parallel, retry=quick_retry())
    threads = [threading.Thread(target=submit, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert_exactly_planned(client_for(local_service), local_service, experiment, plan)
    assert all(r['failed'] == [] and r['notSubmitted'] == [] for r in results), results
    assert sum(r[SUBMITTED] for r in results) == jobs  # each job created by one of them...
    assert sum(r[ALREADY_PRESENT] for r in results) == jobs  # ...and found by the other
    assert all(r[SUBMITTED] + r[ALREADY_PRESENT] == jobs for r in results)


def test_a_put_of_a_job_already_there_is_reported_already_present(local_service, tmp_path):
    experiment = 'again-' + uuid.uuid4().hex[:6]
    plan = make_plan(tmp_path, local_service, experiment, 10)
    client = client_for(local_service)
    client.experiments.begin_create(local_service.resource_group, local_service.workspace, experiment).result()
    first = submit_jobs(client, local_service.resource_group, local_service.workspace, experiment, plan_bodies(plan),
                        retry=quick_retry())
    assert (first[SUBMITTED], first[ALREADY_PRESENT]) == (10, 0)
    # The same PUTs again without the listing that would skip them: the service's 200 says they were there.
    outcomes = {create_job(client, local_service.resource_group, local_service.workspace, experiment, name, body,
                           retry=quick_retry()) for name, body in plan_bodies(plan)}
    assert outcomes == {ALREADY_PRESENT}


@pytest.mark.az
def test_two_az_submits_at_once_say_who_created_which(local_service, az_config_dir, tmp_path):
    experiment = 'aztwice-' + uuid.uuid4().hex[:6]
    plan = make_plan(tmp_path, local_service, experiment, 40)
    procs = [start_az(submit_args(local_service, experiment, plan), az_config_dir, local_service, str(tmp_path))
             for _ in range(2)]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    results = [json.loads(out) for out, _ in outputs]
    assert_exactly_planned(client_for(local_service), local_service, experiment, plan)
    assert sum(r['submitted'] for r in results) == 40, results
    assert all(r['submitted'] + r['alreadyPresent'] == 40 and r['notSubmitted'] == [] for r in results), results
