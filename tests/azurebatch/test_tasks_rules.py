"""tasks.py's rules at their edges (what mutation testing of tasks.py found unchecked): each refusal's words name
the value, the limit and the fix; a job of exactly the cluster's maximum nodes, two nodes, no nodeCount; a task that
fits its pool's one slot; registry credentials with and without a server; the size check exact at the limit for the
longest names the service accepts; chunks filled to the last byte."""
import datetime
import json
import re

import pytest

from azext_batchai_sweep.localservice import resources
from azext_batchai_sweep.localservice.schedulers.azurebatch import names, node_wrapper, pools, tasks
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal
from azext_batchai_sweep.localservice.schedulers.azurebatch.images import ChosenImage
from tests.azurebatch.batch_shapes import validate
from tests.azurebatch.test_tasks import CLUSTER, NO_STORAGE_CLUSTER, PAYLOAD, job

TOOLKIT = 'customToolkitSettings'
SUB = '00000000-0000-0000-0000-000000000000'
NOW = datetime.datetime(2026, 11, 28, tzinfo=datetime.timezone.utc)


def refusal(props, cluster=CLUSTER, multi_node=True, containers=None):
    with pytest.raises(Refusal) as refused:
        tasks.check_job(props, TOOLKIT, cluster, multi_node=multi_node, containers=containers)
    return refused.value


def spec_of(body):
    return json.loads(next(e['value'] for e in body['environmentSettings'] if e['name'] == node_wrapper.TASK_VARIABLE))


# ---- check_job: what the pool cannot run, in words naming the value, the limit and the fix ------------------------

@pytest.mark.parametrize('nodes, maximum', [(1, 1), (4, 4), (3, 4)])
def test_a_job_of_up_to_the_clusters_maximum_nodes_is_accepted(nodes, maximum):
    cluster = dict(CLUSTER, scaleSettings={'autoScale': {'maximumNodeCount': maximum}})
    tasks.check_job({'nodeCount': nodes}, TOOLKIT, cluster, multi_node=True, containers=None)


@pytest.mark.parametrize('nodes, maximum', [(5, 4), (2, 1), (9, 0)])
def test_a_job_of_more_nodes_than_the_cluster_scales_to_is_refused_naming_both_counts_and_the_fix(nodes, maximum):
    cluster = dict(CLUSTER, scaleSettings={'autoScale': {'maximumNodeCount': maximum}})
    refused = refusal({'nodeCount': nodes}, cluster)
    assert refused.code == 'NodeCountTooLarge'
    assert refused.reason.startswith('nodeCount {}: the cluster scales to at most {} nodes, so the job would wait '
                                     'for ever; raise its maximum (az batchai cluster auto-scale --max) or give a '
                                     'smaller nodeCount.'.format(nodes, maximum))


@pytest.mark.parametrize('nodes', [2, 3])
def test_a_multi_node_job_on_a_pool_without_inter_node_communication_is_refused_naming_the_fix(nodes):
    refused = refusal({'nodeCount': nodes}, multi_node=False)
    assert refused.code == 'MultiNodeUnsupported'
    assert refused.reason == ("nodeCount {}: the cluster's pool was created without inter-node communication, which "
                              'Batch fixes at pool creation, so it runs jobs of one node only. Create a cluster that '
                              'can run multi-node jobs for this job.'.format(nodes))


def test_container_mismatches_are_refused_with_the_whole_fix():
    image = {'imageSourceRegistry': {'image': 'pytorch/pytorch'}}
    refused = refusal({'containerSettings': image}, containers=False)
    assert refused.reason == (
        "containerSettings: the cluster's pool runs no containers (Batch fixes that when the pool is made, and "
        'refuses container settings on such a pool): create a cluster that names a Docker-compatible image itself '
        '(virtualMachineConfiguration.imageReference, e.g. microsoft-dsvm ubuntu-hpc 2204), or run the job without '
        'a container.')
    refused = refusal({}, containers=True)
    assert refused.reason == (
        "containerSettings: the cluster's pool runs every task in a container (its image, named by the cluster, is "
        'Docker-compatible), and Batch fails a task without container settings there '
        '(ContainerTaskSettingsNotFound). Give the job containerSettings.imageSourceRegistry, or submit it to a '
        'cluster created with the default image.')


def test_a_keyvault_registry_password_is_refused_as_an_unsupported_secret_reference():
    refused = refusal({'containerSettings': {'imageSourceRegistry': {
        'image': 'x', 'credentials': {'username': 'u', 'passwordSecretReference': {'secretUrl': 'k'}}}}},
        containers=True)
    assert refused.code == 'UnsupportedSecretReference'
    assert refused.reason == ('containerSettings.imageSourceRegistry.credentials.passwordSecretReference: a KeyVault '
                              'reference cannot be given to Azure Batch; give the password.')


def test_a_code_job_on_a_cluster_without_storage_is_refused_naming_the_fix():
    props = {'environmentVariables': [{'name': 'AZ_BATCHAI_SWEEP_CODE', 'value': 'ab' * 32}],
             'mountVolumes': {'azureFileShares': [{'accountName': 'o', 'relativeMountPath': 'sweep-code',
                                                   'azureFileUrl': 'https://o.file.core.windows.net/sweep-code'}]}}
    refused = refusal(props, NO_STORAGE_CLUSTER, multi_node=False, containers=False)
    assert refused.reason == (
        "--code: the code snapshot reaches a Batch task through the cluster's storage account (a resource file of "
        'its task-log container), and this cluster mounts no storage account; create the cluster with an Azure file '
        'share or blob container in nodeSetup.mountVolumes.')


# ---- task_body: what the node runs ---------------------------------------------------------------------------------

@pytest.mark.parametrize('nodes', [2, 3, 8])
def test_every_job_of_several_nodes_runs_the_multi_instance_command(nodes):
    body = tasks.task_body('t', job(nodeCount=nodes), TOOLKIT, CLUSTER, {}, payload=PAYLOAD)
    assert body['multiInstanceSettings']['numberOfInstances'] == nodes
    assert body['commandLine'] == node_wrapper.command_line('run')
    assert body['multiInstanceSettings']['coordinationCommandLine'] == node_wrapper.command_line('prepare')


def test_a_job_without_a_node_count_is_one_node_in_the_task_and_in_the_wrappers_settings():
    stored = job()
    del stored['properties']['nodeCount']
    body = tasks.task_body('t', stored, TOOLKIT, CLUSTER, {}, payload=PAYLOAD)
    assert body['commandLine'] == node_wrapper.command_line('task') and 'multiInstanceSettings' not in body
    spec = spec_of(body)
    assert spec['props']['nodeCount'] == 1


def test_the_wrappers_settings_name_the_job_and_carry_its_toolkit_settings():
    settings = {'pythonScriptFilePath': 'train.py', 'commandLineArgs': '--lr 0.1'}
    body = tasks.task_body('t', job('pyTorchSettings', settings), 'pyTorchSettings', CLUSTER, {}, payload=PAYLOAD)
    spec = spec_of(body)
    assert spec['name'] == 'j1' and spec['toolkit'] == 'pyTorchSettings'
    assert spec['props']['pyTorchSettings'] == settings


def test_a_task_fits_one_slot_of_its_pool():
    """Batch never schedules a task that needs more slots than a node of its pool has: the task would wait for
    ever."""
    image = ChosenImage({'publisher': 'canonical', 'offer': 'o', 'sku': 's', 'version': 'latest'}, 'agent', [], [])
    pool = pools.pool_body('p', NO_STORAGE_CLUSTER, {'poolAllocationMode': 'BatchService'}, image, multi_node=True,
                           today=datetime.date(2026, 11, 28))
    for nodes in (1, 2):
        body = tasks.task_body('t', job(nodeCount=nodes), TOOLKIT, CLUSTER, {}, payload=PAYLOAD)
        assert body['requiredSlots'] <= pool['taskSlotsPerNode']


def test_the_wrappers_settings_are_compact_and_independent_of_the_stored_key_order():
    """A restarted service rebuilds the body from the stored job, whose keys may come back in another order: the
    task (compared with Batch's copy to find it again) must not change, and its settings take the fewest bytes of
    the request's limit."""
    stored = job(inputDirectories=[{'id': 'DATA', 'path': '/d'}])
    reordered = {'name': 'j1', 'properties': dict(reversed(list(stored['properties'].items())))}
    one = tasks.task_body('t', stored, TOOLKIT, CLUSTER, {}, payload=PAYLOAD)
    two = tasks.task_body('t', reordered, TOOLKIT, CLUSTER, {}, payload=PAYLOAD)
    assert json.dumps(one) == json.dumps(two)
    value = next(e['value'] for e in one['environmentSettings'] if e['name'] == node_wrapper.TASK_VARIABLE)
    assert value == json.dumps(json.loads(value), sort_keys=True, separators=(',', ':'))


def test_a_variable_without_a_value_reaches_the_task_empty():
    props = {'environmentVariables': [{'name': 'EMPTY', 'value': ''}, {'name': 'NONE'}, {'name': 'SET', 'value': 'x'}],
             'secrets': [{'name': 'NOSECRET'}]}
    body = tasks.task_body('t', job(), TOOLKIT, CLUSTER, props, payload=PAYLOAD)
    env = {e['name']: e['value'] for e in body['environmentSettings']}
    assert (env['EMPTY'], env['NONE'], env['SET'], env['NOSECRET']) == ('', '', 'x', '')


@pytest.mark.parametrize('registry, expected', [
    ({'image': 'me/private:1', 'credentials': {'username': 'me', 'password': 'pw'}},  # Docker Hub: no server
     {'username': 'me', 'password': 'pw'}),
    ({'image': 'myreg.azurecr.io/x:1', 'serverUrl': 'myreg.azurecr.io'}, {'registryServer': 'myreg.azurecr.io'}),
    ({'image': 'myreg.azurecr.io/x:1', 'serverUrl': 'myreg.azurecr.io', 'credentials': {'username': 'u',
                                                                                        'password': 'p'}},
     {'registryServer': 'myreg.azurecr.io', 'username': 'u', 'password': 'p'}),
    ({'image': 'pytorch/pytorch'}, None),
])
def test_a_private_registry_reaches_batch_with_or_without_a_server(registry, expected):
    body = tasks.task_body('t', job(), TOOLKIT, CLUSTER, {'containerSettings': {'imageSourceRegistry': registry}},
                           payload=PAYLOAD)
    validate('TaskAddParameter', body)
    assert body['containerSettings'].get('registry') == expected


# ---- the size check at submit: exact for the longest names the service accepts ------------------------------------

def _variables(n):
    """A job's create properties with one variable of n bytes."""
    return {TOOLKIT: {'commandLine': 'python train.py'}, 'environmentVariables': [{'name': 'BIG', 'value': 'e' * n}]}


def _worst_case_add(props, cluster, code_url=None):
    """The task add body of a job with the longest names the service accepts (resource group 90, workspace,
    experiment and job 64: resources.check_name), made as the service makes it (resources.job_body, names.task_id),
    with a task-log URL as long as the check's stand-in when the cluster mounts storage."""
    rg, workspace, experiment, name = 'g' * 90, 'w' * 64, 'e' * 64, 'j' * 64
    stored = resources.job_body(SUB, rg, workspace, experiment, name, props, TOOLKIT, NOW)
    task_id = names.task_id('/'.join([SUB, rg, workspace, experiment, name]), 'uid')
    logs_url = tasks._LONGEST_LOGS_URL if cluster is CLUSTER else None  # pylint: disable=protected-access
    return tasks.task_body(task_id, stored, TOOLKIT, cluster, props, output_container_url=logs_url, payload=PAYLOAD,
                           code_url=code_url)


def _largest_accepted(make_props, cluster, max_bytes):
    """The largest variable size check_task_size lets through (bisection)."""
    low, high = 0, max_bytes
    while high - low > 1:
        middle = (low + high) // 2
        try:
            tasks.check_task_size(make_props(middle), TOOLKIT, cluster, PAYLOAD, max_bytes=max_bytes)
            low = middle
        except Refusal:
            high = middle
    return low


def _fits(body, max_bytes):
    try:
        return list(tasks.chunks([body], max_bytes=max_bytes)) == [[body]]
    except Refusal:
        return False


@pytest.mark.parametrize('cluster', [CLUSTER, NO_STORAGE_CLUSTER], ids=['storage', 'no-storage'])
@pytest.mark.parametrize('max_bytes', [40000, 100000])
def test_the_size_check_lets_through_exactly_what_fits_with_the_longest_names(cluster, max_bytes):
    """Fails on the old code: the check stood in a 36-character jobOutputDirectoryPathSegment for the real one
    (subscription/resource group/workspaces/.../jobs/name/uid, up to 387 characters), so a job within about 350
    bytes of the limit passed the check at submit and failed at every add."""
    largest = _largest_accepted(_variables, cluster, max_bytes)
    assert _fits(_worst_case_add(_variables(largest), cluster), max_bytes)
    assert not _fits(_worst_case_add(_variables(largest + 1), cluster), max_bytes)  # never refused for nothing


def _code_variables(n):
    props = _variables(n)
    props['environmentVariables'].append({'name': 'AZ_BATCHAI_SWEEP_CODE', 'value': 'ab' * 32})
    props['mountVolumes'] = {'azureFileShares': [{'accountName': 'o', 'relativeMountPath': 'sweep-code',
                                                  'azureFileUrl': 'https://o.file.core.windows.net/sweep-code'}]}
    return props


def test_the_size_check_of_a_code_job_counts_its_snapshots_resource_file():
    """Fails on the old code: a --code job's task carries a resource file (the snapshot's SAS URL, hundreds of
    bytes) the check did not count, so such a job near the limit passed at submit and failed at every add."""
    max_bytes = 60000
    largest = _largest_accepted(_code_variables, CLUSTER, max_bytes)
    code_url = tasks._LONGEST_CODE_URL  # pylint: disable=protected-access
    assert re.fullmatch(r'https://a{24}\.blob\.core\.usgovcloudapi\.net/c{63}/code/0{64}\.tar\.gz\?q{512}', code_url)
    assert _fits(_worst_case_add(_code_variables(largest), CLUSTER, code_url), max_bytes)
    assert not _fits(_worst_case_add(_code_variables(largest + 1), CLUSTER, code_url), max_bytes)


def test_the_size_refusal_gives_the_tasks_bytes_the_limit_and_what_the_variables_take():
    props = {TOOLKIT: {'commandLine': 'true'}, 'environmentVariables': [{'name': 'A', 'value': 'e' * 600000}],
             'secrets': [{'name': 'K', 'value': 's' * 500000}]}
    with pytest.raises(Refusal) as refused:
        tasks.check_task_size(props, TOOLKIT, CLUSTER, PAYLOAD)
    assert refused.value.code == 'RequestTooLarge'
    found = re.fullmatch(r"The job's Batch task would be (\d+) bytes, over the (\d+) bytes a Batch request may carry "
                         r'\(its environmentVariables and secrets take (\d+) bytes of it\): pass large values as '
                         r'files \(an input directory or a mounted share\) instead\.', refused.value.reason)
    assert found, refused.value.reason
    own, limit, variables = (int(n) for n in found.groups())
    assert tasks.MAX_ADD_BYTES - 100 < limit < tasks.MAX_ADD_BYTES
    assert own > 1100000 and own > limit
    assert 1100000 < variables < 1100000 + 100  # both kinds, each entry as sent (name, value, JSON's quotes)
    assert own - variables > len(PAYLOAD)  # the rest is the wrapper and its settings


# ---- chunks: filled to the last byte --------------------------------------------------------------------------------

def _body(i, pad):
    return {'id': 't{}'.format(i), 'commandLine': 'x' * pad}


def _size(bodies):
    return tasks.request_bytes({'value': bodies})


@pytest.mark.parametrize('count', [1, 2, 3])
def test_a_chunk_takes_tasks_up_to_the_last_byte_of_the_request(count):
    bodies = [_body(i, 100) for i in range(count + 1)]
    exact = _size(bodies[:count])
    assert list(tasks.chunks(bodies, max_bytes=exact)) == [bodies[:count], bodies[count:]]
    assert list(tasks.chunks(bodies, max_bytes=_size(bodies))) == [bodies]
    assert list(tasks.chunks(bodies, max_bytes=_size(bodies) - 1)) == [bodies[:count], bodies[count:]]


def test_a_single_task_of_exactly_the_request_limit_is_sent_and_one_byte_more_is_refused_by_name():
    body = _body(0, 500)
    assert list(tasks.chunks([body], max_bytes=_size([body]))) == [[body]]
    with pytest.raises(Refusal) as refused:
        list(tasks.chunks([body], max_bytes=_size([body]) - 1))
    assert refused.value.code == 'RequestTooLarge'
    own = tasks.request_bytes(body)
    assert refused.value.reason == ('Job task t0 is {} bytes, more than a Batch request may carry ({}): its '
                                    'environment variables or secrets are too large.'.format(own, _size([body]) - 1))
    named = dict(body, displayName='my-job')
    with pytest.raises(Refusal, match='^Job task my-job is '):
        list(tasks.chunks([named], max_bytes=100))
