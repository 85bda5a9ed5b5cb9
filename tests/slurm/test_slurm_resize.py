"""Batch AI's cluster update and usages on the Slurm scheduler, through the real az against a real Slurm (4 nodes of 4
CPUs on loopback): a cluster's size is how many nodes its jobs may hold in Slurm at once, `cluster show` answers it
as Batch AI did (resizing -> steady), and `list-usages` answers the partition's CPUs."""
import time
import uuid

import pytest
from azure.mgmt.batchai import models

from tests.fixtures_az import service_az
from tests.localservice.conftest import job_params, wait_state

pytestmark = [pytest.mark.az, pytest.mark.service]


def _states(client, service, experiment, names):
    return {name: client.jobs.get(service.resource_group, service.workspace, experiment, name).execution_state
            for name in names}


def _until(check, timeout=60):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.2)


def test_resize_bounds_the_nodes_a_cluster_holds_in_slurm(slurm_service, slurm_client, idle_cluster, tmp_path):
    service, client = slurm_service, slurm_client
    az = service_az(service, str(tmp_path))
    group = ['-g', service.resource_group, '-w', service.workspace]
    name = 'r' + uuid.uuid4().hex[:6]
    created = az('batchai', 'cluster', 'create', '-n', name, *group, '-s', 'Standard_D1', '-t', '1', '-u', 'batchai',
                 '-p', 'not-used-0A!', '-o', 'json')
    assert created.exit_code == 0, created.stderr
    cluster_id = created.json()['id']
    experiment = 'slurm-resize-' + uuid.uuid4().hex[:6]
    client.experiments.begin_create(service.resource_group, service.workspace, experiment).result()
    gate = tmp_path / 'gate'
    command = 'while [ ! -e {} ]; do sleep 0.1; done'.format(gate)
    jobs = ['a', 'b', 'c']
    for job in jobs:
        client.jobs.begin_create(service.resource_group, service.workspace, experiment, job,
                                 job_params(service, command, cluster_id=cluster_id)).result()
    wait_state(client, service, experiment, 'a', ('running',), timeout=60)
    time.sleep(1.5)  # several scheduler passes: a 1-node cluster hands Slurm one job
    assert _states(client, service, experiment, jobs) == {'a': 'running', 'b': 'queued', 'c': 'queued'}
    usages = az('batchai', 'list-usages', '-l', 'local', '-o', 'json')
    assert usages.exit_code == 0, usages.stderr
    dedicated = {u['name']['value']: (u['currentValue'], u['limit']) for u in usages.json()}[
        'Total Cluster Dedicated Regional vCPUs']
    assert dedicated == (4, 16), dedicated  # one node of 4 CPUs held, of the partition's 16

    grown = az('batchai', 'cluster', 'resize', '-n', name, *group, '-t', '2', '-o', 'json')
    assert grown.exit_code == 0, grown.stderr
    assert (grown.json()['currentNodeCount'], grown.json()['allocationState']) == (2, 'steady')
    wait_state(client, service, experiment, 'b', ('running',), timeout=60)
    assert _states(client, service, experiment, ['c']) == {'c': 'queued'}

    # az's resize sends Batch AI's default nodeDeallocationOption, requeue: the job started last is cancelled in
    # Slurm and waits in the service's queue again.
    shrunk = az('batchai', 'cluster', 'resize', '-n', name, *group, '-t', '1', '-o', 'json')
    assert shrunk.exit_code == 0, shrunk.stderr
    wait_state(client, service, experiment, 'b', ('queued',), timeout=60)
    assert _states(client, service, experiment, ['a']) == {'a': 'running'}

    def shown():
        return az('batchai', 'cluster', 'show', '-n', name, *group, '-o', 'json').json()
    _until(lambda: shown()['allocationState'] == 'steady' and shown()['currentNodeCount'] == 1)

    # waitforjobcompletion (through the SDK: az's resize does not set it): resizing until the running job ends.
    scale = models.ScaleSettings(manual=models.ManualScaleSettings(target_node_count=0,
                                                                   node_deallocation_option='waitforjobcompletion'))
    client.clusters.update(service.resource_group, service.workspace, name,
                           models.ClusterUpdateParameters(scale_settings=scale))
    assert (shown()['allocationState'], shown()['currentNodeCount']) == ('resizing', 1)
    gate.write_text('')
    assert wait_state(client, service, experiment, 'a', timeout=60).execution_state == 'succeeded'
    _until(lambda: shown()['allocationState'] == 'steady' and shown()['currentNodeCount'] == 0)
    time.sleep(1.5)
    assert _states(client, service, experiment, ['b', 'c']) == {'b': 'queued', 'c': 'queued'}  # 0 nodes: they wait

    big = az('batchai', 'cluster', 'resize', '-n', name, *group, '-t', '9', '-o', 'json')
    assert big.exit_code == 0, big.stderr
    assert big.json()['currentNodeCount'] == 4 and big.json()['errors'][0]['code'] == 'NodeLimitReached'
    assert "the nodes of Slurm partition 'debug'" in big.json()['errors'][0]['message']
    for job in ('b', 'c'):
        assert wait_state(client, service, experiment, job, timeout=60).execution_state == 'succeeded'
    deleted = az('batchai', 'cluster', 'delete', '-n', name, *group, '-y')
    assert deleted.exit_code == 0, deleted.stderr
