"""pools.py: the Batch pool body of a Batch AI cluster, its autoscale formula read as Batch reads it, its start task
run for real, and the body checked against the Batch data-plane definitions."""
import datetime
import os
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from azext_batchai_sweep.localservice.schedulers.azurebatch import pools
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal
from azext_batchai_sweep.localservice.schedulers.azurebatch.images import ChosenImage
from azext_batchai_sweep.localservice.resources import parse_duration
from tests.azurebatch.autoscale_eval import Samples, evaluate
from tests.azurebatch.batch_shapes import validate

TODAY = datetime.date(2026, 11, 26)
IMAGE = ChosenImage({'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy', 'sku': '22_04-lts',
                     'version': 'latest'}, 'batch.node.ubuntu 22.04', [], ['DockerCompatible'])
BATCH_SERVICE = {'poolAllocationMode': 'BatchService'}
USER_SUBSCRIPTION = {'poolAllocationMode': 'UserSubscription'}
FILE_URL = 'https://acct.file.core.windows.net/share'


def cluster(**extra):
    props = {'vmSize': 'Standard_NC4as_T4_v3', 'userAccountSettings': {'adminUserName': 'me'},
             'scaleSettings': {'autoScale': {'minimumNodeCount': 0, 'maximumNodeCount': 4}}}
    props.update(extra)
    return props


counts = st.integers(min_value=0, max_value=50)


@st.composite
def scale(draw):
    low, high = sorted([draw(counts), draw(st.integers(min_value=1, max_value=50))])
    return low, high, draw(counts), draw(st.booleans())


def full_window(values):
    """$PendingTasks samples every 30 s over the last 5 minutes, the last value last."""
    return Samples([(300 - 30 * i, v) for i, v in enumerate(values)], percent=100.0)


@settings(max_examples=150, deadline=None)
@given(scale(), st.lists(st.integers(min_value=0, max_value=200), min_size=1, max_size=10))
def test_pending_work_gets_one_to_max_nodes_and_nodes_leave_at_task_completion(params, window):
    low, high, initial, low_priority = params
    formula = pools.autoscale_formula(low, high, initial, low_priority)
    result = evaluate(formula, full_window(window))
    target, other = ('$TargetLowPriorityNodes', '$TargetDedicatedNodes') if low_priority else \
        ('$TargetDedicatedNodes', '$TargetLowPriorityNodes')
    assert result['$NodeDeallocationOption'] == 'taskcompletion'
    assert result[other] == 0
    assert low <= result[target] <= high
    if window[-1] > 0:
        assert result[target] >= 1
        assert result[target] >= min(high, window[-1])  # each pending task (instance) gets a node, up to max


@settings(max_examples=100, deadline=None)
@given(scale())
def test_an_idle_pool_drains_to_its_minimum_zero_by_default(params):
    low, high, initial, low_priority = params
    target = '$TargetLowPriorityNodes' if low_priority else '$TargetDedicatedNodes'
    idle = full_window([0] * 10)
    assert evaluate(pools.autoscale_formula(0, high, initial, low_priority), idle)[target] == 0
    assert evaluate(pools.autoscale_formula(low, high, initial, low_priority), idle)[target] == low


@settings(max_examples=100, deadline=None)
@given(scale(), st.integers(min_value=0, max_value=5))
def test_a_new_pool_starts_at_its_initial_count(params, pending):
    low, high, initial, low_priority = params
    target = '$TargetLowPriorityNodes' if low_priority else '$TargetDedicatedNodes'
    new = Samples([(0, pending)], percent=10.0)  # too few samples yet: the last one counts
    expected = min(high, max(low, initial, pending))
    assert evaluate(pools.autoscale_formula(low, high, initial, low_priority), new)[target] == expected


@settings(max_examples=100, deadline=None)
@given(scale())
def test_the_formula_has_one_shape_that_reads_back(params):
    low, high, initial, low_priority = params
    formula = pools.autoscale_formula(low, high, initial, low_priority)
    assert pools.autoscale_parameters(formula) == {
        'min': low, 'max': high, 'initial': min(initial, high),
        'target': '$TargetLowPriorityNodes' if low_priority else '$TargetDedicatedNodes',
        'other': '$TargetDedicatedNodes' if low_priority else '$TargetLowPriorityNodes'}
    assert len(formula) < 8000 and formula.count(';') <= 100  # Batch's limits on a formula
    assert pools.autoscale_parameters(formula.replace('taskcompletion', 'requeue')) is None


def test_min_above_max_is_refused():
    with pytest.raises(Refusal, match='minimumNodeCount'):
        pools.autoscale_formula(5, 2, 0, False)


def test_an_autoscale_cluster_is_an_autoscale_pool_evaluated_every_five_minutes_or_more():
    body = pools.pool_body('p1', cluster(), BATCH_SERVICE, IMAGE, multi_node=False, today=TODAY)
    assert body['enableAutoScale'] is True
    assert parse_duration(body['autoScaleEvaluationInterval']) >= datetime.timedelta(minutes=5)
    assert pools.autoscale_parameters(body['autoScaleFormula'])['max'] == 4
    assert 'targetDedicatedNodes' not in body  # Batch refuses a target with autoscale
    validate('PoolAddParameter', body)


def test_a_manual_cluster_is_a_fixed_size_pool_of_its_priority():
    props = cluster(scaleSettings={'manual': {'targetNodeCount': 3}}, vmPriority='lowpriority')
    body = pools.pool_body('p1', props, USER_SUBSCRIPTION, IMAGE, multi_node=False, today=TODAY)
    assert body['enableAutoScale'] is False and body['targetLowPriorityNodes'] == 3
    assert 'targetDedicatedNodes' not in body
    validate('PoolAddParameter', body)
    dedicated = pools.pool_body('p1', cluster(scaleSettings={'manual': {'targetNodeCount': 2}}), BATCH_SERVICE,
                                IMAGE, multi_node=False, today=TODAY)
    assert dedicated['targetDedicatedNodes'] == 2


def test_spot_targets_in_the_formula_for_a_user_subscription_account():
    body = pools.pool_body('p1', cluster(vmPriority='lowpriority'), USER_SUBSCRIPTION, IMAGE, False, TODAY)
    assert pools.autoscale_parameters(body['autoScaleFormula'])['target'] == '$TargetLowPriorityNodes'


def test_low_priority_on_a_batch_service_account_is_spot_through_the_same_fields_never_dedicated():
    """After low-priority's retirement (2025-09-30) a Batch-service account gets Spot nodes in the same fields
    (batch-spot-vms.md as updated in 2026)."""
    auto = pools.pool_body('p1', cluster(vmPriority='lowpriority'), BATCH_SERVICE, IMAGE, False, TODAY)
    assert pools.autoscale_parameters(auto['autoScaleFormula'])['target'] == '$TargetLowPriorityNodes'
    assert pools.autoscale_parameters(auto['autoScaleFormula'])['other'] == '$TargetDedicatedNodes'
    manual = pools.pool_body('p1', cluster(vmPriority='lowpriority', scaleSettings={'manual': {'targetNodeCount': 2}}),
                             BATCH_SERVICE, IMAGE, False, TODAY)
    assert manual['targetLowPriorityNodes'] == 2 and 'targetDedicatedNodes' not in manual


def test_multi_node_clusters_get_inter_node_communication_one_slot_per_node_and_whole_jobs_of_nodes():
    single = pools.pool_body('p1', cluster(), BATCH_SERVICE, IMAGE, multi_node=False, today=TODAY)
    multi = pools.pool_body('p1', cluster(), BATCH_SERVICE, IMAGE, multi_node=True, today=TODAY)
    assert single['enableInterNodeCommunication'] is False and multi['enableInterNodeCommunication'] is True
    assert single['taskSlotsPerNode'] == multi['taskSlotsPerNode'] == 1
    # One pending 3-node task counts its 3 instances in $PendingTasks (Batch's rule): it gets 3 nodes, not 1 or 4.
    assert evaluate(multi['autoScaleFormula'], full_window([3] * 10))['$TargetDedicatedNodes'] == 3
    assert evaluate(single['autoScaleFormula'], full_window([1] * 10))['$TargetDedicatedNodes'] == 1


def test_the_image_and_node_agent_come_from_the_choice_and_containers_only_where_the_cluster_names_them():
    """Issue 48 item 1 (fails on the old code, which gave every Docker-compatible image containerConfiguration):
    the default GPU image of the recorded list (microsoft-dsvm ubuntu-hpc 2204, DockerCompatible) makes a plain
    pool, whose plain jobs run; a cluster that names a Docker-compatible image itself gets containerConfiguration;
    one that names a plain image does not."""
    from azext_batchai_sweep.localservice.schedulers.azurebatch import images
    from tests.azurebatch.gpu_recorded import supported_images
    hpc = images.choose_image(None, supported_images(), TODAY, gpu=True)
    assert hpc.image_reference['offer'] == 'ubuntu-hpc' and 'DockerCompatible' in hpc.capabilities
    default = pools.pool_body('p1', cluster(), BATCH_SERVICE, hpc, False, TODAY,
                              containers=pools.container_pool(cluster(), hpc))
    vm = default['virtualMachineConfiguration']
    assert vm['imageReference'] == hpc.image_reference and vm['nodeAgentSKUId'] == 'batch.node.ubuntu 22.04'
    assert 'containerConfiguration' not in vm
    amlcompute = {'publisher': 'microsoft-dsvm', 'offer': 'amlcompute', 'sku': 'runtime-gen1-ubuntu18'}
    assert not pools.container_pool(cluster(virtualMachineConfiguration={'imageReference': amlcompute}), hpc)
    named = cluster(virtualMachineConfiguration={'imageReference': dict(hpc.image_reference)})
    assert pools.container_pool(named, hpc)
    body = pools.pool_body('p1', named, BATCH_SERVICE, hpc, False, TODAY, containers=True)
    assert body['virtualMachineConfiguration']['containerConfiguration'] == {'type': 'dockerCompatible'}
    jammy = images.choose_image({'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy',
                                 'sku': '22_04-lts-gen2'}, supported_images(), TODAY)
    plain = cluster(virtualMachineConfiguration={'imageReference': dict(jammy.image_reference)})
    assert not pools.container_pool(plain, jammy)
    validate('PoolAddParameter', body)


def mount_volumes():
    return {'azureFileShares': [{'accountName': 'acct', 'azureFileUrl': FILE_URL, 'relativeMountPath': 'afs',
                                 'credentials': {'accountKey': 'S3CRET=='}, 'directoryMode': '0755'}],
            'azureBlobFileSystems': [{'accountName': 'acct', 'containerName': 'data', 'relativeMountPath': 'bfs',
                                      'credentials': {'accountKey': 'S3CRET=='}, 'mountOptions': '-o ro'}]}


def test_mounts_setup_task_users_and_subnet_map_to_the_pool():
    setup = {'commandLine': 'echo hi', 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/afs',
             'environmentVariables': [{'name': 'A', 'value': '1'}], 'secrets': [{'name': 'S', 'value': 'x'}]}
    subnet = '/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/default'
    props = cluster(nodeSetup={'mountVolumes': mount_volumes(), 'setupTask': setup}, subnet={'id': subnet},
                    userAccountSettings={'adminUserName': 'me', 'adminUserPassword': 'pw',
                                         'adminUserSshPublicKey': 'ssh-rsa AAA'})
    body = pools.pool_body('p1', props, BATCH_SERVICE, IMAGE, False, TODAY)
    validate('PoolAddParameter', body)
    files, blobs = body['mountConfiguration']
    assert files['azureFileShareConfiguration']['accountKey'] == 'S3CRET=='
    assert 'dir_mode=0755' in files['azureFileShareConfiguration']['mountOptions']
    assert blobs['azureBlobFileSystemConfiguration']['blobfuseOptions'] == '-o ro'
    assert body['startTask']['waitForSuccess'] is True
    assert body['startTask']['userIdentity'] == {'autoUser': {'scope': 'pool', 'elevationLevel': 'admin'}}
    assert body['startTask']['environmentSettings'] == [{'name': 'A', 'value': '1'}, {'name': 'S', 'value': 'x'}]
    assert body['userAccounts'] == [{'name': 'me', 'password': 'pw', 'elevationLevel': 'admin'}]
    assert body['networkConfiguration'] == {'subnetId': subnet}
    assert any('ssh' in note.lower() for note in pools.pool_notes(props))


@pytest.mark.parametrize('volumes, match', [
    ({'fileServers': [{'fileServer': {'id': 'x'}, 'relativeMountPath': 'nfs'}]}, 'file servers'),
    ({'unmanagedFileSystems': [{'mountCommand': 'mount -t nfs x:/y', 'relativeMountPath': 'u'}]}, 'mount command'),
    ({'azureFileShares': [{'accountName': 'a', 'azureFileUrl': FILE_URL, 'relativeMountPath': 'afs',
                           'credentials': {'accountKeySecretReference': {'secretUrl': 'https://kv/s'}}}]},
     'KeyVault'),
    ({'azureBlobFileSystems': [{'accountName': 'a', 'containerName': 'c', 'relativeMountPath': 'b',
                                'credentials': {}}]}, 'accountKey'),
])
def test_what_batch_cannot_mount_is_refused_with_the_reason(volumes, match):
    with pytest.raises(Refusal, match=match):
        pools.pool_body('p1', cluster(nodeSetup={'mountVolumes': volumes}), BATCH_SERVICE, IMAGE, False, TODAY)


def test_the_start_task_runs_the_setup_command_with_batch_ai_paths_and_keeps_its_output(tmp_path):
    """The start task's command line run as on a node (Batch's variables; only the node agent is stood in for)."""
    mounts = tmp_path / 'fsmounts'
    (mounts / 'afs').mkdir(parents=True)
    setup = {'commandLine': 'echo "root=$AZ_BATCHAI_MOUNT_ROOT var=$A"; echo oops >&2',
             'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/afs/setup logs', 'stdOutErrPathSuffix': 'sub/rg/c1',
             'environmentVariables': [{'name': 'A', 'value': "it's"}]}
    task = pools.start_task(setup)
    env = {'PATH': os.environ['PATH'], 'AZ_BATCH_NODE_MOUNTS_DIR': str(mounts), 'AZ_BATCH_NODE_ID': 'tvm-1'}
    env.update({e['name']: e['value'] for e in task['environmentSettings']})
    # bash reads the command line as Batch's node agent does (words, quotes), then runs it
    subprocess.run(['bash', '-c', task['commandLine']], env=env, check=True, cwd=tmp_path)
    out = mounts / 'afs' / 'setup logs' / 'sub' / 'rg' / 'c1' / 'tvm-1'
    assert (out / 'stdout.txt').read_text() == "root={} var=it's\n".format(mounts)
    assert (out / 'stderr.txt').read_text() == 'oops\n'


def test_the_body_check_itself_rejects_misspelt_and_mistyped_fields():
    good = pools.pool_body('p1', cluster(), BATCH_SERVICE, IMAGE, False, TODAY)
    validate('PoolAddParameter', good)
    for bad, where in ((dict(good, enableAutoscale=True), 'enableAutoscale'),
                       (dict(good, taskSlotsPerNode='1'), 'taskSlotsPerNode'),
                       (dict(good, virtualMachineConfiguration=dict(good['virtualMachineConfiguration'],
                                                                    containerConfiguration={'type': 'docker'})),
                        'containerConfiguration/type')):
        with pytest.raises(AssertionError, match=where):
            validate('PoolAddParameter', bad)
