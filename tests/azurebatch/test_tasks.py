"""tasks.py: task bodies against the Batch definitions, what a pool cannot run refused, and chunked task adds
(property tests)."""
import json

import pytest
from hypothesis import example, given, settings, strategies as st

from azext_batchai_sweep.localservice.schedulers.azurebatch import node_wrapper, tasks
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal
from tests.azurebatch.batch_shapes import validate

FILE_URL = 'https://acct.file.core.windows.net/share'
CLUSTER = {'vmSize': 'Standard_NC24ads_A100_v4', 'scaleSettings': {'autoScale': {'maximumNodeCount': 4}},
           'nodeSetup': {'mountVolumes': {'azureFileShares': [{'accountName': 'acct', 'azureFileUrl': FILE_URL,
                                                               'relativeMountPath': 'afs'}]}}}
PAYLOAD = node_wrapper.payload()


def job(toolkit='customToolkitSettings', settings=None, **props):
    public = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/afs',
              'jobOutputDirectoryPathSegment': 'sub/rg/ws/exp/j1/0a1b', toolkit: settings or {'commandLine': 'true'},
              'outputDirectories': [{'id': 'MODEL', 'pathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/afs'}]}
    public.update(props)
    return {'name': 'j1', 'properties': public}


def test_a_single_node_job_is_one_task_running_the_wrapper_with_its_variables_and_secrets():
    props = {'environmentVariables': [{'name': 'LR', 'value': '0.1'}],
             'secrets': [{'name': 'TOKEN', 'value': 'S3CRET-v'}],
             'constraints': {'maxWallClockTime': 'PT2H'}}
    body = tasks.task_body('j1-abc', job(), 'customToolkitSettings', CLUSTER, props, payload=PAYLOAD, gpus=1)
    validate('TaskAddParameter', body)
    env = {e['name']: e['value'] for e in body['environmentSettings']}
    assert env['LR'] == '0.1' and env['TOKEN'] == 'S3CRET-v'
    spec = json.loads(env[node_wrapper.TASK_VARIABLE])
    assert spec['variables'] == ['LR', 'TOKEN'] and 'S3CRET' not in json.dumps(spec)  # names only, never a value
    assert spec['gpus'] == 1
    nc6 = dict(CLUSTER, vmSize='Standard_NC12')  # without the offered size's count: Batch AI's N-series table
    assert json.loads({e['name']: e['value'] for e in tasks.task_body(
        't', job(), 'customToolkitSettings', nc6, {}, payload=PAYLOAD)['environmentSettings']}[
            node_wrapper.TASK_VARIABLE])['gpus'] == 2
    assert body['commandLine'].endswith("wrapper.pyz task'")
    assert body['constraints'] == {'maxWallClockTime': 'PT2H', 'maxTaskRetryCount': 0}
    assert 'multiInstanceSettings' not in body and 'outputFiles' not in body
    assert body['userIdentity'] == {'autoUser': {'scope': 'pool', 'elevationLevel': 'admin'}}


def test_without_a_wall_clock_the_task_gets_batch_ai_default():
    body = tasks.task_body('t', job(), 'customToolkitSettings', CLUSTER, {}, payload=PAYLOAD)
    assert body['constraints']['maxWallClockTime'] == 'P150D'


def test_a_multi_node_job_is_a_multi_instance_task_with_preparation_on_every_node():
    body = tasks.task_body('t', job('horovodSettings', {'pythonScriptFilePath': 'train.py'}, nodeCount=3,
                                    jobPreparation={'commandLine': 'pip install x'}),
                           'horovodSettings', CLUSTER, {}, payload=PAYLOAD)
    validate('TaskAddParameter', body)
    assert body['multiInstanceSettings']['numberOfInstances'] == 3
    assert body['multiInstanceSettings']['coordinationCommandLine'].endswith("wrapper.pyz prepare'")
    assert body['commandLine'].endswith("wrapper.pyz run'")


def test_container_settings_and_output_files_map_to_batch():
    settings_ = {'imageSourceRegistry': {'image': 'myreg.azurecr.io/train:1', 'serverUrl': 'myreg.azurecr.io',
                                         'credentials': {'username': 'u', 'password': 'p'}}, 'shmSize': '2g'}
    url = 'https://acct.blob.core.windows.net/logs?sv=x&sig=y'
    body = tasks.task_body('t1', job(), 'customToolkitSettings', CLUSTER, {'containerSettings': settings_},
                           output_container_url=url, payload=PAYLOAD)
    validate('TaskAddParameter', body)
    assert body['containerSettings'] == {
        'imageName': 'myreg.azurecr.io/train:1', 'workingDirectory': 'taskWorkingDirectory',
        'registry': {'registryServer': 'myreg.azurecr.io', 'username': 'u', 'password': 'p'},
        'containerRunOptions': '--shm-size 2g'}
    assert [f['filePattern'] for f in body['outputFiles']] == ['../stdout.txt', '../stderr.txt']
    assert body['outputFiles'][0]['destination']['container']['path'] == 't1/stdout.txt'
    assert body['outputFiles'][0]['uploadOptions']['uploadCondition'] == 'taskcompletion'


def test_the_batch_job_of_a_cluster():
    body = tasks.batch_job_body('job-1', 'pool-1')
    validate('JobAddParameter', body)
    assert body['poolInfo'] == {'poolId': 'pool-1'}


def test_the_same_job_gives_a_byte_identical_body_after_a_restart():
    one = tasks.task_body('t', job(), 'customToolkitSettings', CLUSTER, {'secrets': [{'name': 'S', 'value': 'v'}]})
    two = tasks.task_body('t', job(), 'customToolkitSettings', CLUSTER, {'secrets': [{'name': 'S', 'value': 'v'}]})
    assert json.dumps(one) == json.dumps(two)


def test_what_the_pool_cannot_run_is_refused_at_submit():
    with pytest.raises(Refusal, match='inter-node communication') as refused:
        tasks.check_job({'nodeCount': 2}, 'customMpiSettings', CLUSTER, multi_node=False, containers=True)
    assert refused.value.code == 'MultiNodeUnsupported'
    tasks.check_job({'nodeCount': 2}, 'customMpiSettings', CLUSTER, multi_node=True, containers=False)
    with pytest.raises(Refusal, match='at most 4 nodes') as refused:
        tasks.check_job({'nodeCount': 5}, 'customMpiSettings', CLUSTER, multi_node=True, containers=False)
    assert refused.value.code == 'NodeCountTooLarge'
    # a manual cluster may be resized later, as on Batch AI: its job waits
    manual = dict(CLUSTER, scaleSettings={'manual': {'targetNodeCount': 0}})
    tasks.check_job({'nodeCount': 2}, 'customMpiSettings', manual, multi_node=True, containers=False)
    with pytest.raises(Refusal, match='KeyVault'):
        tasks.check_job({'containerSettings': {'imageSourceRegistry': {
            'image': 'x', 'credentials': {'username': 'u', 'passwordSecretReference': {'secretUrl': 'k'}}}}},
            'customToolkitSettings', CLUSTER, multi_node=True, containers=True)


@pytest.mark.parametrize('containers, settings, code', [
    (False, {'imageSourceRegistry': {'image': 'pytorch/pytorch'}}, 'ContainersUnsupported'),
    (True, None, 'ContainerSettingsRequired'),
    (False, None, None), (True, {'imageSourceRegistry': {'image': 'pytorch/pytorch'}}, None),
    (None, None, None), (None, {'imageSourceRegistry': {'image': 'pytorch/pytorch'}}, None),
])
def test_a_job_must_match_its_pools_container_support_at_submit(containers, settings, code):
    """Issue 48 item 1 (fails on the old code: the check was always called with containers=True, and a plain job
    on a container pool passed): Batch requires containerSettings on every task of a pool with a container
    configuration (ContainerTaskSettingsNotFound on the node otherwise) and refuses them on a pool without one;
    both are refused at submit, naming the fix. None: the pool's support is not known (not checked)."""
    props = {'containerSettings': settings} if settings else {}
    if code is None:
        tasks.check_job(props, 'customToolkitSettings', CLUSTER, multi_node=True, containers=containers)
        return
    with pytest.raises(Refusal) as refused:
        tasks.check_job(props, 'customToolkitSettings', CLUSTER, multi_node=True, containers=containers)
    assert refused.value.code == code
    assert ('ContainerTaskSettingsNotFound' in refused.value.reason) == containers
    assert 'Docker-compatible' in refused.value.reason


def test_job_mount_volumes_are_the_cluster_mounts_of_the_same_storage_or_refused():
    same = {'mountVolumes': {'azureFileShares': [{'accountName': 'ACCT', 'azureFileUrl': FILE_URL + '/',
                                                  'relativeMountPath': 'data'}]}}
    assert tasks.job_mounts(same, CLUSTER) == {'data': 'afs'}
    other = {'mountVolumes': {'azureBlobFileSystems': [{'accountName': 'acct', 'containerName': 'c',
                                                        'relativeMountPath': 'bfs'}]}}
    with pytest.raises(Refusal, match="cluster's nodeSetup.mountVolumes"):
        tasks.check_job(other, 'customToolkitSettings', CLUSTER, multi_node=False, containers=False)


def size(body):
    """A request body's bytes as the SDK sends it (json.dumps's defaults: test_client checks it on the wire)."""
    return len(json.dumps(body).encode('ascii'))


bodies = st.lists(st.builds(lambda i, pad: {'id': 't{}'.format(i), 'commandLine': 'x' * pad},
                            st.integers(min_value=0, max_value=10 ** 6), st.integers(min_value=0, max_value=3000)),
                  max_size=400)


@settings(max_examples=200, deadline=None)
@given(bodies, st.integers(min_value=1, max_value=120), st.integers(min_value=3100, max_value=60000))
def test_chunks_keep_order_count_and_request_size_limits(items, max_count, max_bytes):
    chunks = list(tasks.chunks(items, max_count=max_count, max_bytes=max_bytes))
    assert [b for chunk in chunks for b in chunk] == items  # every task once, in order
    for chunk in chunks:
        assert 1 <= len(chunk) <= max_count
        assert size({'value': chunk}) <= max_bytes
    for first, second in zip(chunks, chunks[1:]):  # a chunk ends only when the next task would not fit
        assert len(first) == max_count or size({'value': first + second[:1]}) > max_bytes


def test_chunks_of_real_task_bodies_stay_under_batch_limits():
    items = [tasks.task_body('t{}'.format(i), job(), 'customToolkitSettings', CLUSTER,
                             {'environmentVariables': [{'name': 'I', 'value': str(i)}]}, payload=PAYLOAD)
             for i in range(150)]
    chunks = list(tasks.chunks(items))
    assert all(len(c) <= 100 and size({'value': c}) <= tasks.MAX_ADD_BYTES for c in chunks)
    validate('TaskAddCollectionParameter', {'value': chunks[0]})


def test_a_task_too_large_for_any_request_is_refused():
    with pytest.raises(Refusal, match='too large'):
        list(tasks.chunks([{'id': 'big', 'commandLine': 'x' * 2000}], max_bytes=1000))


def _props(env_bytes, secret_bytes=0):
    """A job's create properties with an environment variable and a secret of the given sizes."""
    props = dict(job()['properties'])
    props['environmentVariables'] = [{'name': 'BIG', 'value': 'e' * env_bytes}]
    props['secrets'] = [{'name': 'KEY', 'value': 's' * secret_bytes}]
    return props


def test_a_job_whose_environment_cannot_fit_a_batch_request_is_refused_at_submit():
    tasks.check_task_size(_props(1000), 'customToolkitSettings', CLUSTER, PAYLOAD)  # a usual job passes
    with pytest.raises(Refusal, match=r'over the \d+ bytes a Batch request may carry') as refused:
        tasks.check_task_size(_props(600 * 1000, 500 * 1000), 'customToolkitSettings', CLUSTER, PAYLOAD)
    assert refused.value.code == 'RequestTooLarge' and 'environmentVariables and secrets' in refused.value.reason


# A cluster mounting storage (CLUSTER) has its tasks carry outputFiles with the task-log container's SAS URL
# (task_logs.py), as long as a real user delegation SAS of a 24-character account is; one without, none.
NO_STORAGE_CLUSTER = {k: v for k, v in CLUSTER.items() if k != 'nodeSetup'}
REAL_LOGS_URL = 'https://{}.blob.core.windows.net/batchai-sweep-task-logs?{}'.format('a' * 24, 'q' * 330)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=4000), st.integers(min_value=0, max_value=4000),
       st.integers(min_value=1, max_value=64), st.integers(min_value=1, max_value=64), st.booleans())
@example(0, 1698, 1, 1, True)  # the largest a cluster with storage lets through (refused from 1699)
@example(0, 3447, 64, 64, False)  # the largest without storage
def test_what_passes_the_submit_check_fits_at_the_add(env_bytes, secret_bytes, name_length, id_length, storage):
    """The size check at submit uses the longest name and task id (and, on a cluster with storage, the longest
    task-log SAS URL): a job it lets through never fails its add for size, and only jobs within a few hundred bytes
    of the limit are refused that the add might have taken."""
    props = _props(env_bytes, secret_bytes)
    cluster, url = (CLUSTER, REAL_LOGS_URL) if storage else (NO_STORAGE_CLUSTER, None)
    base = size({'value': [tasks.task_body('t', job(), 'customToolkitSettings', NO_STORAGE_CLUSTER, _props(0),
                                           payload=PAYLOAD)]})
    max_bytes = base + 4000  # the limit falls inside the range of sizes drawn
    real = tasks.task_body('t' * id_length, dict(job(), name='n' * name_length), 'customToolkitSettings', cluster,
                           props, output_container_url=url, payload=PAYLOAD)
    try:
        tasks.check_task_size(props, 'customToolkitSettings', cluster, PAYLOAD, max_bytes=max_bytes)
    except Refusal:
        # refused only near or over the limit: the stand-ins of the longest output path segment (387 characters) and
        # job name take about 550 bytes of it; with storage, the two outputFiles with the longest SAS URL and task id
        # about 1750 more
        assert env_bytes + secret_bytes > 4000 - (2400 if storage else 650)
        return
    assert list(tasks.chunks([real], max_bytes=max_bytes)) == [[real]]


def test_a_task_identity_is_its_job_incarnation_not_its_command_line():
    body = tasks.task_body('t1', job(), 'customToolkitSettings', CLUSTER, {}, payload=PAYLOAD)
    other = tasks.task_body('t1', dict(job(), name='j2'), 'customToolkitSettings', CLUSTER, {}, payload=PAYLOAD)
    assert body['commandLine'] == other['commandLine']  # the same wrapper for every task
    assert tasks.task_identity(body) == ('j1', 'sub/rg/ws/exp/j1/0a1b') != tasks.task_identity(other)
    # as Batch answers the task (environmentSettings as sent), and a task the service did not make
    assert tasks.task_identity(json.loads(json.dumps(body))) == tasks.task_identity(body)
    assert tasks.task_identity({'id': 't1', 'commandLine': body['commandLine']}) is None


def _code_props(nodes=1, digest='ab' * 32, share='sweep-code', path='sweep-code'):
    """A job's properties as core/code/job.attach_code makes them (the code share mounted, its hash named)."""
    return {'nodeCount': nodes, 'environmentVariables': [{'name': 'AZ_BATCHAI_SWEEP_CODE', 'value': digest}],
            'mountVolumes': {'azureFileShares': [{'accountName': 'other', 'relativeMountPath': path,
                                                  'azureFileUrl': 'https://other.file.core.windows.net/' + share}]}}


def test_a_one_node_code_job_gets_its_snapshot_as_a_resource_file_not_a_mount():
    props = _code_props()
    tasks.check_job(props, 'customToolkitSettings', CLUSTER, multi_node=False, containers=False)  # no refusal
    assert tasks.job_mounts(props, CLUSTER) == {}
    body = tasks.task_body('t', job(), 'customToolkitSettings', CLUSTER, props, payload=PAYLOAD,
                           code_url='https://acct.blob.core.windows.net/c/code/x?sig=s')
    validate('TaskAddParameter', body)
    assert body['resourceFiles'] == [{'httpUrl': 'https://acct.blob.core.windows.net/c/code/x?sig=s',
                                      'filePath': 'mounts/sweep-code/{}.tar.gz'.format('ab' * 32)}]
    assert 'sig=s' not in json.dumps(body['environmentSettings'])
    assert 'resourceFiles' not in tasks.task_body('t', job(), 'customToolkitSettings', CLUSTER, {}, payload=PAYLOAD)


def test_a_multi_node_code_job_gets_its_snapshot_on_every_node_as_a_common_resource_file():
    """Issue 50 (fails on the old code: a job of several nodes kept the `sweep-code` mount, which the cluster must
    have had, and was refused without it). Batch downloads a task's resourceFiles on its primary node only, its
    multiInstanceSettings.commonResourceFiles on every node, into the task's root directory (the Batch spec): the
    snapshot goes there, and the launch settings tell the wrapper to link that folder where the job reads it."""
    props = _code_props(nodes=2)
    tasks.check_job(props, 'customToolkitSettings', CLUSTER, multi_node=True, containers=False)  # no refusal
    assert tasks.job_mounts(props, CLUSTER) == {}
    body = tasks.task_body('t', job(nodeCount=2), 'customToolkitSettings', CLUSTER, props, payload=PAYLOAD,
                           code_url='https://acct.blob.core.windows.net/c/code/x?sig=s')
    validate('TaskAddParameter', body)
    assert 'resourceFiles' not in body
    assert body['multiInstanceSettings']['commonResourceFiles'] == [{
        'httpUrl': 'https://acct.blob.core.windows.net/c/code/x?sig=s',
        'filePath': 'sweep-code/{}.tar.gz'.format('ab' * 32)}]
    spec = json.loads(next(e['value'] for e in body['environmentSettings']
                           if e['name'] == node_wrapper.TASK_VARIABLE))
    assert spec['rootMounts'] == {'sweep-code': 'sweep-code'} and spec['mounts'] == {}
    assert 'sig=s' not in json.dumps(body['environmentSettings'])
    one = tasks.task_body('t', job(), 'customToolkitSettings', CLUSTER, _code_props(), payload=PAYLOAD,
                          code_url='https://acct.blob.core.windows.net/c/code/x?sig=s')
    assert 'rootMounts' not in one['environmentSettings'][1]['value'] and 'multiInstanceSettings' not in one


@pytest.mark.parametrize('props', [_code_props(digest='not-a-hash'),
                                   _code_props(share='other-share'), _code_props(path='elsewhere')])
def test_other_code_like_mounts_stay_mounts_the_cluster_must_have(props):
    with pytest.raises(Refusal, match="cluster's nodeSetup.mountVolumes"):
        tasks.check_job(props, 'customToolkitSettings', CLUSTER, multi_node=True, containers=False)


def test_a_code_job_on_a_cluster_without_storage_is_refused_at_submit():
    bare = {k: v for k, v in CLUSTER.items() if k != 'nodeSetup'}
    with pytest.raises(Refusal, match='mounts no storage account') as refused:
        tasks.check_job(_code_props(), 'customToolkitSettings', bare, multi_node=False, containers=False)
    assert refused.value.code == 'CodeStorageMissing'
