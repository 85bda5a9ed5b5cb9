"""A service that dies after storing a task's id but before its add reached Batch: the next start adds it (once),
and the job runs; one that dies after the add: the next start re-attaches without adding again. Through the real az
against the lifecycle double (TEST CODE: tests/azurebatch/double/)."""
import time

import pytest

from azext_batchai_sweep.localservice.azurebatch.names import batch_job_id
from azext_batchai_sweep.localservice.azurebatch.scheduler import AzureBatchScheduler
from tests.azurebatch.e2e_fixtures import batch_service, tasks, write_sweep  # pylint: disable=unused-import

pytestmark = [pytest.mark.az, pytest.mark.service]


def test_a_task_stored_but_never_added_is_added_once_at_the_next_start(batch_service):
    svc = batch_service  # pylint: disable=redefined-outer-name
    assert svc.az('batchai', 'cluster', 'create', '-n', 'c', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1', '-u',
                  'batchai', '-p', 'not-used-0A!').exit_code == 0
    write_sweep(svc.directory, 's.yaml', 'echo loss={{X}}', [1])
    target = [*svc.group(), '-e', 'rec', '-n', 's']
    with pytest.MonkeyPatch.context() as patch:
        # The service "dies" between storing the task id and the add: the add never happens.
        patch.setattr(AzureBatchScheduler, '_add', lambda self, batch_job, ready: None)
        assert svc.az('batchai', 'sweep', 'submit', *target, '--spec', 's.yaml', '-c', 'c').exit_code == 0
        deadline = time.monotonic() + 20
        while not svc.service.store.in_states(('queued',))[0]['sched_id']:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert tasks(svc.double) == []
    svc.restart()
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '-o', 'json')
    assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 1, waited.stdout + waited.stderr
    assert len(tasks(svc.double)) == 1
    assert svc.double.count('POST', '^/jobs/{}/addtaskcollection$'.format(batch_job_id('batchai', 'local', 'c'))) == 1


def test_a_cluster_left_deleting_loses_its_pool_at_the_next_start(batch_service):  # pylint: disable=W0621
    import json
    import os
    from azext_batchai_sweep.localservice.azurebatch.names import pool_id
    from azext_batchai_sweep.localservice.store import Store
    from tests.azurebatch.e2e_fixtures import start
    svc = batch_service  # pylint: disable=redefined-outer-name
    assert svc.az('batchai', 'cluster', 'create', '-n', 'gone', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1',
                  '-u', 'batchai', '-p', 'not-used-0A!').exit_code == 0
    pool = pool_id('batchai', 'local', 'gone')
    assert pool in svc.double.account.pools
    svc.service.shutdown()
    # As a service killed right after accepting the delete left it: the cluster marked deleting, its pool there.
    store = Store(os.path.join(svc.service.data_dir, 'service.db'))
    ((_, body),) = store.page_by_prefix('cluster', '', 0, 10)
    parts = [p for p in json.loads(body)['id'].split('/') if p]
    key = '/'.join([parts[1], parts[3], parts[7], 'clusters', parts[9]]).lower()
    store.set_state_below(key, 'deleting')
    store.close()
    svc.service = start(svc.double, svc.service.data_dir)
    assert svc.service.store.get(key) is None
    svc.double.account.wait(lambda: pool not in svc.double.account.pools or
                            svc.double.account.pools[pool].state == 'deleting', timeout=10)
