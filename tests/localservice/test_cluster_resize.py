"""Batch AI's cluster update (`az batchai cluster resize`, auto-scale) and usages (`az batchai list-usages`) on the
processes scheduler, through the real az: a cluster's scale settings are how many of this machine's slots it may hold
at once, `cluster show` answers its node counts and allocation state as Batch AI did, and list-usages answers the
machine's cores in Batch AI's shape (every answer checked against the 2018-05-01 swagger)."""
import os
import time
import uuid

import pytest
from azure.mgmt.batchai import models

from azext_batchai_sweep.core.service.client import local_batchai_client
from tests.fixtures_az import service_az
from tests.localservice.conftest import job_params, wait_state
from tests.spec_conformance import SpecCheckPolicy, validate

pytestmark = [pytest.mark.az, pytest.mark.service]


@pytest.fixture
def setup(service_factory, tmp_path):
    """A service of 2 slots, az pointed at it, a spec-checking client, and a fresh experiment."""
    service = service_factory(slots=2)
    client = local_batchai_client(service.endpoint, service.token_file, service.subscription,
                                  per_retry_policies=[SpecCheckPolicy()])
    experiment = 'resize-' + uuid.uuid4().hex[:6]
    client.experiments.begin_create(service.resource_group, service.workspace, experiment).result()
    return service, service_az(service, str(tmp_path)), client, experiment


def _group(service):
    return ['-g', service.resource_group, '-w', service.workspace]


def _cluster(az, service, *args):
    """`az batchai cluster ...` as JSON (the answer checked against the swagger's Cluster first)."""
    result = az('batchai', 'cluster', *args, *_group(service), '-o', 'json')
    assert result.exit_code == 0, result.stderr
    return result.json()


def _state(client, service, experiment, job):
    return client.jobs.get(service.resource_group, service.workspace, experiment, job).execution_state


def _submit(client, service, experiment, name, cluster_id, gate):
    """A job that runs until the file `gate` exists."""
    command = 'while [ ! -e {} ]; do sleep 0.05; done'.format(gate)
    client.jobs.begin_create(service.resource_group, service.workspace, experiment, name,
                             job_params(service, command, cluster_id=cluster_id)).result()


def _stays(client, service, experiment, job, state, seconds=1.5):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert _state(client, service, experiment, job) == state, job
        time.sleep(0.1)


def _update(client, service, cluster, target, option):
    """A manual resize with a nodeDeallocationOption, which `az batchai cluster resize` does not set (it sends the
    default, requeue): through the SDK, as Batch AI's own clients could."""
    scale = models.ScaleSettings(manual=models.ManualScaleSettings(target_node_count=target,
                                                                   node_deallocation_option=option))
    return client.clusters.update(service.resource_group, service.workspace, cluster,
                                  models.ClusterUpdateParameters(scale_settings=scale))


def _show_until(az, service, cluster, check, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        shown = _cluster(az, service, 'show', '-n', cluster)
        if check(shown) or time.monotonic() > deadline:
            return shown
        time.sleep(0.1)


def test_resize_sets_how_many_jobs_run_and_show_says_resizing_then_steady(setup, tmp_path):
    service, az, client, experiment = setup
    created = az('batchai', 'cluster', 'create', '-n', 'grow', *_group(service), '-s', 'Standard_D1', '-t', '1',
                 '-u', 'batchai', '-p', 'not-used-0A!', '-o', 'json')
    assert created.exit_code == 0, created.stderr
    cluster_id = created.json()['id']
    gate = str(tmp_path / 'gate')
    for name in ('a', 'b'):
        _submit(client, service, experiment, name, cluster_id, gate)
    wait_state(client, service, experiment, 'a', ('running',))
    _stays(client, service, experiment, 'b', 'queued', 1.0)  # 1 node: one job at a time

    grown = _cluster(az, service, 'resize', '-n', 'grow', '-t', '2')
    assert (grown['scaleSettings']['manual']['targetNodeCount'], grown['currentNodeCount'],
            grown['allocationState']) == (2, 2, 'steady')
    wait_state(client, service, experiment, 'b', ('running',))  # the second node lets the queued job run

    # az's resize sends Batch AI's default nodeDeallocationOption, requeue: the job started last stops and waits in
    # the queue again, the other runs on.
    shrunk = _cluster(az, service, 'resize', '-n', 'grow', '-t', '1')
    assert shrunk['scaleSettings']['manual'] == {'targetNodeCount': 1, 'nodeDeallocationOption': 'requeue'}
    wait_state(client, service, experiment, 'b', ('queued',))
    requeued = client.jobs.get(service.resource_group, service.workspace, experiment, 'b')
    assert requeued.execution_info is None  # it runs again from the start
    assert _state(client, service, experiment, 'a') == 'running'
    shown = _show_until(az, service, 'grow', lambda c: c['allocationState'] == 'steady')
    assert (shown['allocationState'], shown['currentNodeCount']) == ('steady', 1)

    # waitforjobcompletion: the running job holds its node until it ends; the cluster is resizing meanwhile, as
    # Batch AI's was while it took nodes away, and no job starts.
    _update(client, service, 'grow', 0, 'waitforjobcompletion')
    shown = _cluster(az, service, 'show', '-n', 'grow')
    assert (shown['allocationState'], shown['currentNodeCount'], shown['nodeStateCounts']['runningNodeCount']) == (
        'resizing', 1, 1)
    resized_at = shown['allocationStateTransitionTime']
    _submit(client, service, experiment, 'c', cluster_id, gate)
    with open(gate, 'w', encoding='utf-8'):
        pass
    assert wait_state(client, service, experiment, 'a').execution_state == 'succeeded'
    shown = _show_until(az, service, 'grow', lambda c: c['allocationState'] == 'steady')
    assert (shown['allocationState'], shown['currentNodeCount'], shown['nodeStateCounts']['idleNodeCount']) == (
        'steady', 0, 0)
    assert shown['allocationStateTransitionTime'] > resized_at
    for name in ('b', 'c'):
        _stays(client, service, experiment, name, 'queued', 1.0)  # 0 nodes: queued jobs wait

    _cluster(az, service, 'resize', '-n', 'grow', '-t', '1')
    for name in ('b', 'c'):
        assert wait_state(client, service, experiment, name).execution_state == 'succeeded'


def test_a_resize_with_terminate_fails_the_jobs_it_stops(setup, tmp_path):
    service, az, client, experiment = setup
    gate = str(tmp_path / 'never')
    for name in ('first', 'second'):
        _submit(client, service, experiment, name, service.cluster_id, gate)
        wait_state(client, service, experiment, name, ('running',))
    _update(client, service, service.cluster, 1, 'terminate')
    stopped = wait_state(client, service, experiment, 'second')
    assert stopped.execution_state == 'failed'
    assert [e.code for e in stopped.execution_info.errors] == ['ClusterResized']
    assert _state(client, service, experiment, 'first') == 'running'
    assert _cluster(az, service, 'show', '-n', service.cluster)['currentNodeCount'] == 1
    client.jobs.begin_terminate(service.resource_group, service.workspace, experiment, 'first').result()


def test_a_size_past_the_machine_is_said_in_the_answer_and_auto_scale_idles_at_its_minimum(setup):
    service, az, client, _ = setup
    limit = max(os.cpu_count() or 1, 2)  # this machine's CPUs, or the service's --slots 2 if more
    wanted = limit + 3
    big = _cluster(az, service, 'resize', '-n', service.cluster, '-t', str(wanted))
    assert (big['scaleSettings']['manual']['targetNodeCount'], big['currentNodeCount'], big['allocationState']) == (
        wanted, limit, 'steady')
    (error,) = big['errors']
    assert error['code'] == 'NodeLimitReached'
    assert 'asks for {} nodes'.format(wanted) in error['message']
    assert 'at most {} at once'.format(limit) in error['message']
    # Back within the limit: no error left.
    assert not _cluster(az, service, 'resize', '-n', service.cluster, '-t', '1').get('errors')

    # `az batchai cluster auto-scale` itself fails in azure-cli 2.91 before sending anything (its custom.py calls the
    # SDK's update without `parameters`), so the same update goes through the SDK; `cluster show` is az's.
    scale = models.ScaleSettings(auto_scale=models.AutoScaleSettings(minimum_node_count=1, maximum_node_count=2))
    updated = client.clusters.update(service.resource_group, service.workspace, service.cluster,
                                     models.ClusterUpdateParameters(scale_settings=scale))
    validate('Cluster', updated.serialize(keep_readonly=True))
    shown = _cluster(az, service, 'show', '-n', service.cluster)
    assert shown['scaleSettings']['autoScale'] == {'minimumNodeCount': 1, 'maximumNodeCount': 2,
                                                   'initialNodeCount': 0}
    assert (shown['currentNodeCount'], shown['allocationState']) == (1, 'steady')  # idle: its minimum


def test_a_cluster_at_zero_nodes_takes_jobs_that_wait_and_a_job_past_the_machine_is_refused(setup, tmp_path):
    service, az, client, experiment = setup
    assert _cluster(az, service, 'resize', '-n', service.cluster, '-t', '0')['currentNodeCount'] == 0
    gate = str(tmp_path / 'open')
    with open(gate, 'w', encoding='utf-8'):
        pass
    _submit(client, service, experiment, 'waits', service.cluster_id, gate)
    _stays(client, service, experiment, 'waits', 'queued')
    too_big = max(os.cpu_count() or 1, 2) + 1
    with pytest.raises(Exception) as refused:
        client.jobs.begin_create(service.resource_group, service.workspace, experiment, 'huge',
                                 job_params(service, 'true', node_count=too_big)).result()
    assert 'InvalidNodeCount' in str(refused.value)
    _cluster(az, service, 'resize', '-n', service.cluster, '-t', '2')
    assert wait_state(client, service, experiment, 'waits').execution_state == 'succeeded'


def test_list_usages_answers_the_machines_cores_and_what_running_jobs_hold(setup, tmp_path):
    service, az, client, experiment = setup
    cores = os.cpu_count() or 1

    def usages(location):
        result = az('batchai', 'list-usages', '-l', location, '-o', 'json')
        assert result.exit_code == 0, result.stderr
        return {u['name']['value']: (u['currentValue'], u['limit'], u['unit']) for u in result.json()}

    idle = usages('local')  # the default workspace's location
    assert idle == {'Total Cluster Dedicated Regional vCPUs': (0, cores, 'Count'),
                    'Total Cluster LowPriority Regional vCPUs': (0, cores, 'Count')}
    gate = str(tmp_path / 'gate')
    _submit(client, service, experiment, 'holds', service.cluster_id, gate)
    wait_state(client, service, experiment, 'holds', ('running',))
    busy = usages('local')
    assert busy['Total Cluster Dedicated Regional vCPUs'] == (1, cores, 'Count')
    assert busy['Total Cluster LowPriority Regional vCPUs'] == (0, cores, 'Count')
    # Another location holds none of this workspace's clusters: nothing in use there.
    assert usages('westeurope')['Total Cluster Dedicated Regional vCPUs'] == (0, cores, 'Count')
    with open(gate, 'w', encoding='utf-8'):
        pass
    wait_state(client, service, experiment, 'holds')
    raw_answer = client.usages.list('local')
    for usage in raw_answer:
        validate('Usage', usage.serialize(keep_readonly=True))
