"""Two services on one Batch account with the same --pool-prefix and cluster names (two CI pipelines, or a data
dir lost with its clusters): each pool and Batch job records its owner (the service of a data dir) in its
`metadata`, and a service never adopts nor deletes a pool another made. The user's path: az's offline login,
`local start --scheduler azure-batch`, every Batch call through Prism, against the lifecycle double (TEST CODE:
tests/azurebatch/double/; e2e_fixtures.py)."""
import os

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import ownership
from azext_batchai_sweep.localservice.schedulers.azurebatch.names import batch_job_id, pool_id
from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import

pytestmark = [pytest.mark.az, pytest.mark.service]


def _owner(data_dir):
    with open(os.path.join(data_dir, ownership.OWNER_FILE), encoding='ascii') as f:
        return f.read().strip()


def _create(svc, name):
    return svc.az('batchai', 'cluster', 'create', '-n', name, *svc.group(), '-s', 'Standard_D2s_v3', '-t', '0',
                  '-u', 'batchai', '-p', 'not-used-0A!')


def test_a_service_never_adopts_nor_deletes_a_pool_another_service_made(batch_user):  # pylint: disable=W0621
    svc = batch_user
    first_dir = svc.data_dir
    svc.start()
    assert _create(svc, 'shared').exit_code == 0
    pool, job = pool_id('batchai', 'local', 'shared', *LOCAL), batch_job_id('batchai', 'local', 'shared', *LOCAL)
    owner = _owner(first_dir)
    with svc.double.account.lock:
        made = svc.double.account.pools[pool].body
        job_body = svc.double.account.jobs[job].body
    for body in (made, job_body):
        metadata = {m['name']: m['value'] for m in body['metadata']}
        assert metadata[ownership.OWNER_KEY] == owner
        assert metadata[ownership.CLUSTER_KEY].endswith('/workspaces/local/clusters/shared')
    assert svc.az('batchai', 'sweep', 'local', 'stop', '--data-dir', first_dir).exit_code == 0

    # A second service (its own data dir, the defaults): the same cluster name is the same pool id, refused.
    svc.data_dir = first_dir + '-second'
    svc.start()
    assert _owner(svc.data_dir) != owner
    refused = _create(svc, 'shared')
    assert refused.exit_code != 0
    assert 'Azure Batch already has a pool {}'.format(pool) in refused.stderr
    assert 'made by another azext-batchai-sweep service (owner {}'.format(owner) in refused.stderr
    assert '--pool-prefix' in refused.stderr and 'az batch pool delete --pool-id {}'.format(pool) in refused.stderr
    with svc.double.account.lock:  # untouched: not resized, not deleted
        assert svc.double.account.pools[pool].state == 'active' and job in svc.double.account.jobs
    assert svc.az('batchai', 'sweep', 'local', 'stop', '--data-dir', svc.data_dir).exit_code == 0

    # The first data dir served by another owner (as a data dir copied elsewhere, or rebuilt): its cluster delete
    # leaves the pool and job alone, and says so.
    svc.data_dir = first_dir
    with open(os.path.join(first_dir, ownership.OWNER_FILE), 'w', encoding='ascii') as f:
        f.write('someone-else\n')
    svc.start()
    assert svc.az('batchai', 'cluster', 'delete', '-n', 'shared', *svc.group(), '-y').exit_code == 0
    wait_until(lambda: 'Batch job {} is left alone'.format(job) in svc.log(), what='the delete is logged')
    assert 'pool {} is left alone: made by another'.format(pool) in svc.log()
    with svc.double.account.lock:
        assert svc.double.account.pools[pool].state == 'active' and job in svc.double.account.jobs
