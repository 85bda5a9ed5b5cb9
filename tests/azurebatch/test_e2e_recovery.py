"""A service killed (SIGKILL) after storing a task's id but before its add reached Batch: the next `local start`
adds it (once), and the job runs; a service killed while a cluster delete was under way: the next start deletes the
pool. The user's path: az's offline login, `local start --scheduler azure-batch --batch-account`, every Batch call
through Prism, against the lifecycle double (TEST CODE: tests/azurebatch/double/; e2e_fixtures.py)."""
import json
import os

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.names import batch_job_id, pool_id
from azext_batchai_sweep.localservice.data.store import Store
from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import

pytestmark = [pytest.mark.az, pytest.mark.service]


def _stored_task_ids(data_dir):
    """The Batch task ids the service stored for its queued jobs (read from its store, as it left them)."""
    store = Store(os.path.join(data_dir, 'service.db'))
    try:
        return [row['sched_id'] for row in store.in_states(('queued',)) if row['sched_id']]
    finally:
        store.close()


def test_a_task_stored_but_never_added_is_added_once_at_the_next_start(batch_service):  # pylint: disable=W0621
    svc = batch_service
    assert svc.az('batchai', 'cluster', 'create', '-n', 'c', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1', '-u',
                  'batchai', '-p', 'not-used-0A!').exit_code == 0
    adds = '^/jobs/{}/addtaskcollection$'.format(batch_job_id('batchai', 'local', 'c', *LOCAL))
    # Batch answers the add "server busy, come back in a minute" without applying it: the service has stored the
    # task id and waits to retry when it is killed.
    svc.double.faults.throttle(count=1, retry_after=60, status=503, method='POST', path=adds)
    write_sweep(svc.directory, 's.yaml', 'echo loss={{X}}', [1])
    target = [*svc.group(), '-e', 'rec', '-n', 's']
    assert svc.az('batchai', 'sweep', 'submit', *target, '--spec', 's.yaml', '-c', 'c').exit_code == 0
    wait_until(lambda: svc.double.count('POST', adds) == 1, what='the add is throttled')
    svc.kill()
    assert tasks(svc.double) == [] and len(_stored_task_ids(svc.data_dir)) == 1

    svc.start()
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '-o', 'json')
    assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 1, waited.stdout + waited.stderr
    assert len(tasks(svc.double)) == 1
    assert svc.double.count('POST', adds) == 2  # the throttled add, then one applied add


def test_more_than_100_tasks_missing_at_a_restart_are_added_in_requests_batch_takes(batch_service):  # noqa: W0621
    """150 task ids stored, none added (the first add throttled when the service was killed): the next start's
    re-add of what Batch lacks sends them in requests of at most 100 tasks (one of 150 is refused whole,
    TooManyTasks, and was sent again every poll for ever)."""
    svc = batch_service
    assert svc.az('batchai', 'cluster', 'create', '-n', 'c', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1', '-u',
                  'batchai', '-p', 'not-used-0A!').exit_code == 0
    adds = '^/jobs/{}/addtaskcollection$'.format(batch_job_id('batchai', 'local', 'c', *LOCAL))
    # Every add answered "server busy" while the 150 jobs are submitted: each pass stores the new jobs' task ids,
    # and its add fails after the client's retries.
    svc.double.faults.throttle(count=10 ** 6, retry_after=0, status=503, method='POST', path=adds)
    write_sweep(svc.directory, 'many.yaml', 'true', list(range(150)))
    assert svc.az('batchai', 'sweep', 'submit', *svc.group(), '-e', 'many', '-n', 's', '--spec', 'many.yaml', '-c',
                  'c').exit_code == 0
    wait_until(lambda: len(_stored_task_ids(svc.data_dir)) == 150, what='the 150 task ids are stored')
    svc.kill()
    svc.double.faults.clear()
    assert tasks(svc.double) == [] and len(_stored_task_ids(svc.data_dir)) == 150

    svc.start()
    wait_until(lambda: len(tasks(svc.double)) == 150, timeout=60, what='the 150 tasks are added after the restart')
    sizes = [len(r.body['value']) for r in svc.double.requests
             if r.method == 'POST' and r.path.endswith('/addtaskcollection') and r.status == 200]
    assert max(sizes) <= 100 and sum(sizes) == 150, sizes
    refused = [r.status for r in svc.double.requests if r.path.endswith('/addtaskcollection') and r.status == 400]
    assert refused == [], refused


def test_a_cluster_left_deleting_loses_its_pool_at_the_next_start(batch_service):  # pylint: disable=W0621
    svc = batch_service
    assert svc.az('batchai', 'cluster', 'create', '-n', 'gone', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1',
                  '-u', 'batchai', '-p', 'not-used-0A!').exit_code == 0
    pool = pool_id('batchai', 'local', 'gone', *LOCAL)
    assert pool in svc.double.account.pools
    svc.kill()
    # As a service killed right after accepting the delete left it: the cluster marked deleting, its pool there.
    store = Store(os.path.join(svc.data_dir, 'service.db'))
    ((_, body),) = store.page_by_prefix('cluster', '', 0, 10)
    parts = [p for p in json.loads(body)['id'].split('/') if p]
    key = '/'.join([parts[1], parts[3], parts[7], 'clusters', parts[9]]).lower()
    store.set_state_below(key, 'deleting')
    store.close()
    svc.start()
    shown = svc.az('batchai', 'cluster', 'show', '-n', 'gone', *svc.group())
    assert shown.exit_code == 3, shown.stdout + shown.stderr
    svc.double.account.wait(lambda: pool not in svc.double.account.pools or
                            svc.double.account.pools[pool].state == 'deleting', timeout=10)


def test_a_task_add_batch_refuses_whole_fails_its_jobs_and_is_not_sent_again(batch_service):  # noqa: W0621
    """Batch refuses the collection add as a request (400: nothing of it applied): sending it again would be refused
    again every poll for ever; its jobs fail with Batch's reason instead."""
    svc = batch_service
    assert svc.az('batchai', 'cluster', 'create', '-n', 'c', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1', '-u',
                  'batchai', '-p', 'not-used-0A!').exit_code == 0
    adds = '^/jobs/{}/addtaskcollection$'.format(batch_job_id('batchai', 'local', 'c', *LOCAL))
    svc.double.faults.refuse(400, 'InvalidRequestBody', 'The request body is invalid.', method='POST', path=adds)
    write_sweep(svc.directory, 'r.yaml', 'echo loss={{X}}', [1])
    target = [*svc.group(), '-e', 'ref', '-n', 's']
    assert svc.az('batchai', 'sweep', 'submit', *target, '--spec', 'r.yaml', '-c', 'c').exit_code == 0
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '--timeout', '60',
                    '-o', 'json')
    assert waited.exit_code == 4 and waited.json()['counts']['failed'] == 1, waited.stdout + waited.stderr
    (job,) = svc.az('batchai', 'job', 'list', *svc.group(), '-e', 'ref', '-o', 'json').json()
    error = job['executionInfo']['errors'][0]
    assert error['code'] == 'AzureBatchTaskAddFailed' and 'InvalidRequestBody' in error['message'], error
    import time
    time.sleep(2)  # ten polls: none sends the add again
    assert svc.double.count('POST', adds) == 1 and tasks(svc.double) == []
