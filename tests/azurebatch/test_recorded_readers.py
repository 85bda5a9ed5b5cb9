"""The real Batch service's recorded answers (tests/azurebatch/recorded/: azure-cli's and Azure PowerShell's
recordings) sent through the scheduler's own client (client.BatchApi over the SDK az ships, tests/azurebatch/
replay.py) and its readers (states.py), and the requests the scheduler builds compared with the recorded requests
of the same operations (path, query, field names). No double: the recordings are the oracle here.
"""
import datetime

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import (account, images, node_wrapper, pools, preflight,
                                                                 spelling, states, tasks, vm_sizes)
from azext_batchai_sweep.localservice.schedulers.azurebatch.client import POLL_SELECT, BatchCallError
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal
from azext_batchai_sweep.localservice.schedulers.azurebatch.images import ChosenImage
from azext_batchai_sweep.localservice.schedulers.azurebatch.mapping import AbMapMapping
from tests.azurebatch.recorded_batch import interaction, load, operation
from tests.azurebatch.replay import field_names, path_template, replaying_api, unknown_fields

API_VERSION = '2024-02-01.19.0'  # what every recording of 2024-2025 used, and the SDK az ships speaks
IMAGE = ChosenImage({'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy', 'sku': '22_04-lts',
                     'version': 'latest'}, 'batch.node.ubuntu 22.04', [], [])
ACCOUNT = {'poolAllocationMode': 'BatchService'}
CLUSTER = {'vmSize': 'Standard_D2s_v3', 'scaleSettings': {'manual': {'targetNodeCount': 2}}}
JOB = {'name': 'j1', 'properties': {'nodeCount': 1, 'stdOutErrPathPrefix': '/tmp/out',
                                    'jobOutputDirectoryPathSegment': 'sub/rg/ws/exp/j1/0a1b',
                                    'customToolkitSettings': {'commandLine': 'true'}}}


def _task_body(task_id):
    return tasks.task_body(task_id, JOB, 'customToolkitSettings', CLUSTER, {}, payload=node_wrapper.payload())


def _same_request(sent, recorded, ids):
    """The scheduler's request `sent` has the recorded request's path (ids aside) and api-version, only query
    parameters and body fields the operation defines (spelled exactly), and every field it shares with the
    recorded body spelled as the service's own client spelled it."""
    assert sent['method'] == recorded['method']
    assert path_template(sent['path'], ids) == path_template(recorded['path'], ids)
    assert sent['query'].get('api-version') == API_VERSION
    _, op = operation(sent['method'], sent['path'])
    parameters = {p['name'] for p in op.get('parameters', []) if p.get('in') == 'query'} | {'api-version'}
    assert set(sent['query']) <= parameters, set(sent['query']) - parameters
    body_parameter = next((p for p in op.get('parameters', []) if p.get('in') == 'body'), None)
    if recorded.get('request') is not None:
        assert body_parameter and sent['body'] is not None
        assert unknown_fields(sent['body'], body_parameter['schema']) == []
        ours, theirs = field_names(sent['body']), field_names(recorded['request'])
        assert {n.lower() for n in ours} & {n.lower() for n in theirs} == {n.lower() for n in ours & theirs}
        assert ours & theirs, 'no field in common with the recorded request'


def test_the_request_check_and_the_replay_can_fail():
    """The comparison finds a mis-cased field, an unknown query parameter and another path; the replay answers
    nothing it has no recording of."""
    recorded = interaction('powershell_2024', 'pool resize')
    sent = {'method': 'POST', 'path': '/pools/resizePool/resize', 'query': {'api-version': API_VERSION},
            'body': {'targetDedicatedNodes': 1}}
    _same_request(sent, recorded, {'resizePool'})
    for broken in (dict(sent, body={'TargetDedicatedNodes': 1}), dict(sent, query=dict(sent['query'], top='1')),
                   dict(sent, path='/pools/resizePool/stopresize'), dict(sent, query={'api-version': '2023-05-01'})):
        with pytest.raises(AssertionError):
            _same_request(broken, recorded, {'resizePool'})
    api, adapter = replaying_api(recorded)
    with pytest.raises(BatchCallError) as unrecorded:
        api.get_pool('resizePool')
    assert unrecorded.value.code == 'Unrecorded' and adapter.pending == [recorded]


# ---- task adds: the defect of issue 40 ------------------------------------------------------------------------

@pytest.mark.parametrize('name', ['file_download', 'task_create'])
def test_a_recorded_task_collection_add_is_read_as_added(name):
    """The real service answers `"status": "Success"` (2023 and 2025, the SDK az ships): every task is added. The
    code compared with 'success' and read each as failed (issue 40): the job marked failed while its task ran."""
    recorded = interaction(name, 'task collection add')
    assert {r['status'] for r in recorded['response']['value']} == {'Success'}
    ids = [r['taskId'] for r in recorded['response']['value']]
    api, adapter = replaying_api(recorded)
    bodies = [_task_body(task_id) for task_id in ids]
    assert api.add_tasks('xplatJobForTaskTests', bodies) == {task_id: None for task_id in ids}
    _same_request(adapter.sent[0], recorded, {'xplatJobForTaskTests'})
    assert adapter.pending == []


@pytest.mark.parametrize('status, expected', [('ServerError', 'again'), ('ClientError', 'failed'),
                                              ('servererror', 'again'), ('clienterror', 'failed')])
def test_server_and_client_errors_of_an_add_in_either_casing(status, expected):
    """A task the add answers `ServerError` (the service's casing of the enum, as it writes `Success`) is added
    again alone; `ClientError` is the job's error with Batch's code."""
    first = dict(interaction('file_download', 'task collection add'))
    task_id = first['response']['value'][0]['taskId']
    error = {'code': 'TaskInvalid' if expected == 'failed' else 'ServerBusy', 'message': {'value': 'recorded'}}
    first['response'] = {'value': [{'status': status, 'taskId': task_id, 'error': error}]}
    second = dict(first, response={'value': [dict(interaction('file_download', 'task collection add')['response'][
        'value'][0], taskId=task_id)]})
    api, adapter = replaying_api(first, second)
    result = api.add_tasks('xplatJobForTaskTests', [_task_body(task_id)])
    if expected == 'again':
        assert result == {task_id: None} and len(adapter.sent) == 2
    else:
        assert result == {task_id: ('TaskInvalid', 'recorded')} and len(adapter.sent) == 1


# ---- tasks as Batch AI jobs ---------------------------------------------------------------------------------

def test_recorded_terminated_tasks_read_as_failed_jobs():
    """Azure PowerShell 2024: two tasks terminated (`failureInfo.category: "UserError"`, capitalised; end times
    `...08.8068407Z` and `...09.26185Z`, seven digits trimmed): failed, with the service's reason when the service
    terminated them itself, else Batch's code."""
    recorded = interaction('powershell_2024', 'task list, terminated')
    api, adapter = replaying_api(recorded)
    listed = api.list_tasks('testTerminateTaskJob', since='2024-03-21T23:08:00.000Z')
    assert [t['id'] for t in listed] == ['testTask1', 'testTask2']
    assert states.outcome(listed[1]) == ('failed', None, [{'code': 'TaskEnded',
                                                           'message': 'Task Was Ended by User Request'}])
    assert states.outcome(listed[0], reason='terminated')[2][0]['code'] == 'JobTerminated'
    sent = adapter.sent[0]
    _same_request(sent, recorded, {'testTerminateTaskJob'})
    assert sent['query']['$select'].split(',') == POLL_SELECT
    assert sent['query']['$filter'] == "stateTransitionTime ge datetime'2024-03-21T23:08:00.000Z'"


def test_recorded_tasks_of_each_state():
    """azure-cli's recorded tasks: an active task (Batch's defaults, the unlimited wall clock) is queued; a
    multi-instance one too; the same answers with Batch's capitals (`Active`, `Completed`, `Success`) read alike."""
    for title in ('task get', "task get: Batch's defaults"):
        task = interaction('task_create', title)['response']
        assert states.outcome(task) == ('queued', None, [])
        shouted = dict(task, state=task['state'].capitalize())
        assert states.outcome(shouted) == ('queued', None, [])
    done = dict(interaction('task_create', 'task get')['response'], state='Completed',
                executionInfo={'result': 'Success', 'exitCode': 0, 'retryCount': 0, 'requeueCount': 0,
                               'startTime': '2024-03-01T10:00:09.26185Z', 'endTime': '2024-03-01T10:00:21.0096445Z'})
    assert states.outcome(done) == ('succeeded', 0, [])


def test_terminate_and_delete_requests_as_recorded():
    api, adapter = replaying_api(interaction('powershell_2024', 'task terminate'),
                                 interaction('powershell_2024', 'job delete'),
                                 interaction('powershell_2024', 'pool delete'))
    api.terminate_task('testTerminateTaskJob', 'testTask1')
    api.delete_job('testTerminateTaskJob')
    api.delete_pool('resizePool')
    assert adapter.pending == []
    for sent, title in zip(adapter.sent, ('task terminate', 'job delete', 'pool delete')):
        _same_request(sent, interaction('powershell_2024', title), {'testTerminateTaskJob', 'testTask1',
                                                                    'resizePool'})


def test_a_task_exists_answer_is_judged_by_the_recorded_task():
    """A TaskExists answer makes the client read the task there (a recorded task get) and judge it by the job it
    runs (tasks.task_identity), not by its command line: azure-cli's recorded task was not made by this service,
    whatever command line our add carries; the same recorded answer carrying our job's launch settings is our add."""
    import json
    from azext_batchai_sweep.localservice.schedulers.azurebatch.node_wrapper import TASK_VARIABLE
    recorded = interaction('task_create', 'task get')
    exists = {'name': 'add', 'method': 'POST', 'path': '/jobs/xplatJobForTaskTests/addtaskcollection', 'status': 200,
              'response': {'value': [{'status': 'ClientError', 'taskId': 'xplatTask',
                                      'error': {'code': 'TaskExists', 'message': {'value': 'exists'}}}]}}
    launch = {'name': TASK_VARIABLE, 'value': json.dumps({'props': {'jobOutputDirectoryPathSegment': 's/rg/ws/e/j/1'}})}
    ours = {'id': 'xplatTask', 'displayName': recorded['response']['displayName'],
            'commandLine': recorded['response']['commandLine'], 'environmentSettings': [launch]}
    api, adapter = replaying_api(exists, recorded)
    assert api.add_tasks('xplatJobForTaskTests', [ours])['xplatTask'][0] == 'TaskExists', 'same command, other job'
    assert set(adapter.sent[1]['query']['$select'].split(',')) == {'id', 'displayName', 'environmentSettings'}
    mine = dict(recorded, response=dict(recorded['response'], environmentSettings=[launch]))
    api, _ = replaying_api(exists, mine)
    assert api.add_tasks('xplatJobForTaskTests', [dict(ours, commandLine='other')]) == {'xplatTask': None}
    api, _ = replaying_api(exists, mine)
    other_incarnation = [dict(launch, value=json.dumps({'props': {'jobOutputDirectoryPathSegment': 's/rg/ws/e/j/2'}}))]
    assert api.add_tasks('xplatJobForTaskTests', [dict(ours, environmentSettings=other_incarnation)]
                         )['xplatTask'][0] == 'TaskExists'


# ---- pools as Batch AI clusters -----------------------------------------------------------------------------

@pytest.mark.parametrize('title, allocation', [('pool get, resizing', 'resizing'),
                                               ('pool get, steady and empty', 'steady'),
                                               ('pool get, stopping a resize', 'resizing')])
def test_recorded_pools_read_as_clusters(title, allocation):
    """Azure PowerShell 2024: `vmSize` answered lower-cased (`standard_d2s_v3` for `STANDARD_D2S_V3`),
    `nodeFillType: "Spread"`, `policy: "Zonal"`, and times with 4 to 7 fractional digits."""
    recorded = interaction('powershell_2024', title)
    api, adapter = replaying_api(recorded)
    pool = api.get_pool(recorded['response']['id'])
    assert spelling.same(pool['vmSize'], CLUSTER['vmSize'])
    state = states.cluster_state(pool, [])
    assert state['allocationState'] == allocation and state['currentNodeCount'] == 0 and state['errors'] == []
    assert states.cannot_grow(pool, []) is None
    _same_request(adapter.sent[0], recorded, {recorded['response']['id']})


def test_recorded_node_list_reads_as_node_counts():
    recorded = interaction('file_download', 'node list')
    api, adapter = replaying_api(recorded)
    nodes = api.list_nodes('xplatTestPool')
    state = states.cluster_state({'allocationState': 'steady', 'currentDedicatedNodes': len(nodes)}, nodes)
    assert sum(state['nodeStateCounts'].values()) == len(nodes) == 1
    assert state['nodeStateCounts'][states.NODE_COUNTS[recorded['response']['value'][0]['state']]] == 1
    assert state['errors'] == []
    shouted = [dict(n, state=n['state'].capitalize()) for n in nodes]
    assert states.cluster_state({}, shouted)['nodeStateCounts'] == state['nodeStateCounts']
    _same_request(adapter.sent[0], recorded, {'xplatTestPool'})


@pytest.mark.parametrize('title, counted', [('node list, creating', 'preparingNodeCount'),
                                            ('node list with $select, leaving', 'leavingNodeCount')])
def test_recorded_node_states_read_as_node_counts(title, counted):
    """Azure PowerShell 2024: a steady pool's nodes still `creating`, then `leavingpool`: counted as Batch AI's
    preparing and leaving nodes, not as errors."""
    recorded = interaction('powershell_2024', title)
    api, adapter = replaying_api(recorded)
    nodes = api.list_nodes('removenodepool')
    state = states.cluster_state({'allocationState': 'steady', 'currentDedicatedNodes': 2}, nodes)
    assert state['nodeStateCounts'][counted] == 2 and sum(state['nodeStateCounts'].values()) == 2
    assert state['errors'] == [] and states.cannot_grow({}, nodes) is None
    _same_request(adapter.sent[0], recorded, {'removenodepool'})


def test_pool_add_resize_and_autoscale_requests_as_recorded():
    """The scheduler's pool add, resize and enable-autoscale bodies against the recorded requests of the same
    operations (azure-cli and Azure PowerShell)."""
    body = pools.pool_body('p-1', CLUSTER, ACCOUNT, IMAGE, multi_node=False)
    for recorded in (interaction('jobs_and_tasks', 'pool add'), interaction('powershell_2024', 'pool add')):
        api, adapter = replaying_api(recorded)
        assert api.create_pool(body) is True
        _same_request(adapter.sent[0], recorded, set())
    autoscale, resize = AbMapMapping.scale_request(CLUSTER, ACCOUNT)
    assert not autoscale
    for recorded in (interaction('powershell_2024', 'pool resize'), interaction('pools_and_nodes', 'pool resize')):
        pool_id = recorded['path'].split('/')[2]
        api, adapter = replaying_api(recorded)
        api.resize_pool(pool_id, resize)
        _same_request(adapter.sent[0], recorded, {pool_id})
    autoscale, formula = AbMapMapping.scale_request(
        dict(CLUSTER, scaleSettings={'autoScale': {'minimumNodeCount': 0, 'maximumNodeCount': 3}}), ACCOUNT)
    assert autoscale
    recorded = interaction('pools_and_nodes', 'enable autoscale')
    api, adapter = replaying_api(recorded)
    api.enable_autoscale('azure-cli-test-iaas', formula)
    _same_request(adapter.sent[0], recorded, {'azure-cli-test-iaas'})


def test_recorded_autoscale_actions():
    """Azure PowerShell 2024: the scheduler's enable-autoscale, pool list and disable-autoscale requests against the
    recorded ones; the listed pool (autoscale on, `PT8M`) read as a cluster, and the evaluation's `AutoScaleRun`
    (`timestamp` `2024-03-21T23:32:21.0096445Z`: seven digits) giving the next evaluation."""
    enable = interaction('powershell_2024', 'enable autoscale with an interval')
    listed = interaction('powershell_2024', 'pool list with $filter, autoscale on')
    disable = interaction('powershell_2024', 'disable autoscale')
    api, adapter = replaying_api(enable, listed, disable)
    _, body = AbMapMapping.scale_request(
        dict(CLUSTER, scaleSettings={'autoScale': {'minimumNodeCount': 0, 'maximumNodeCount': 3}}), ACCOUNT)
    api.enable_autoscale('autoscalePool', body)
    pools_listed = api.list_pools(prefix='autoscale')
    api.disable_autoscale('autoscalePool')
    assert adapter.pending == []
    for sent, recorded in zip(adapter.sent, (enable, listed, disable)):
        _same_request(sent, recorded, {'autoscalePool'})
    assert set(adapter.sent[0]['body']) == set(enable['request'])
    assert adapter.sent[1]['query']['$filter'] == "startswith(id,'autoscale')"
    (pool,) = pools_listed
    assert states.cluster_state(pool, [])['allocationState'] == 'steady' and states.cannot_grow(pool) is None
    run = interaction('powershell_2024', 'evaluate autoscale')['response']
    assert states.next_evaluation(dict(pool, autoScaleRun=run)) == datetime.datetime(
        2024, 3, 21, 23, 40, 21, 9644, tzinfo=datetime.timezone.utc)


def test_recorded_autoscale_run_gives_the_next_evaluation():
    """The recorded evaluation's `AutoScaleRun` (its timestamp as Batch writes it) and the pool's interval give
    when Batch evaluates the formula next."""
    run = interaction('pools_and_nodes', 'evaluate autoscale')['response']
    pool = {'enableAutoScale': True, 'autoScaleEvaluationInterval': pools.EVALUATION_INTERVAL, 'autoScaleRun': run}
    assert states.next_evaluation(pool) == spelling.parse_time(run['timestamp']) + datetime.timedelta(minutes=5)


def test_job_add_request_as_recorded():
    body = AbMapMapping.job_body('j-1', 'p-1')
    for recorded in (interaction('jobs_and_tasks', 'job add'), interaction('powershell_2024', 'job add')):
        api, adapter = replaying_api(recorded)
        assert api.create_job(body) is True
        _same_request(adapter.sent[0], recorded, set())


def test_recorded_task_file_range_is_read():
    """A ranged read of a task's stdout (`ocp-range` inclusive, answered 200 with `content-type: text/plain` and
    `ocp-batch-file-isdirectory: False`): the bytes asked for."""
    recorded = interaction('file_download', 'task file, a range')
    api, adapter = replaying_api(recorded)
    assert api.read_task_file('xplatJobForTaskTests', 'xplatTask1', 'stdout.txt', 1, 3) == \
        recorded['responseText'].encode()
    _same_request(adapter.sent[0], recorded, {'xplatJobForTaskTests', 'xplatTask1', 'stdout.txt'})


def test_every_excerpt_is_scrubbed():
    for name in ('powershell_2024', 'arm_account'):
        text = str(load(name)).lower()
        assert 'sig=' not in text and 'bearer' not in text and 'subscriptionid' not in text
        assert 'accountkey' not in text.replace('"', '') and 'primary' not in text


# ---- the account, its images, sizes and quotas (preflight) ----------------------------------------------------

RECORDED_DAY = datetime.date(2024, 3, 22)  # the supported-images list as it stood that day


def _images():
    return interaction('powershell_2024', 'supported images (13 of the recorded list, in its order)')


def _account():
    arm = interaction('arm_account', 'account get (a new account: 7 of its 55 VM families kept)')['response']
    return account.account_view(arm, '00000000-0000-0000-0000-000000000000')


def _skus():
    return interaction('arm_account', 'virtual machine SKUs (5 of the recorded list)')['response']['value']


def test_recorded_supported_images_give_the_default_images():
    """The recorded list (2024): a CPU cluster gets Canonical's Ubuntu 22.04, a GPU cluster the verified HPC image;
    an image past its end of life on that day is refused, a Windows one is not offered."""
    recorded = _images()
    api, adapter = replaying_api(recorded)
    listed = api.list_supported_images()
    assert len(listed) == 13
    _same_request(adapter.sent[0], recorded, set())
    cpu = images.choose_image(None, listed, RECORDED_DAY)
    assert (cpu.image_reference['offer'], cpu.node_agent_sku_id) == ('0001-com-ubuntu-server-jammy',
                                                                     'batch.node.ubuntu 22.04')
    gpu = images.choose_image(None, listed, RECORDED_DAY, gpu=True)
    assert (gpu.image_reference['offer'], gpu.image_reference['sku']) == ('ubuntu-hpc', '2204')
    with pytest.raises(Refusal):
        images.choose_image({'publisher': 'batch', 'offer': 'rendering-centos73', 'sku': 'rendering'}, listed,
                            RECORDED_DAY)
    shouted = [dict(i, osType=i['osType'].capitalize(), verificationType=i['verificationType'].capitalize())
               for i in listed]
    assert images.choose_image(None, shouted, RECORDED_DAY, gpu=True) == gpu


def test_recorded_account_and_skus_through_preflight():
    """A new Batch-service account as ARM answered it (Entra ID allowed, every quota 0) and the location's SKUs:
    the size is found whatever its case (Batch answers `standard_d2s_v3` for what it was asked as
    `STANDARD_D2S_V3`), its vCPUs and GPUs read from the SKU, and the zero family quota refuses the cluster with
    the family's name as the account spells it."""
    view = _account()
    assert view['batchEndpoint'] == 'https://clibatchtestacct000003.eastus.batch.azure.com'
    assert view['batchResourceGroup'] == 'clitest.rg000001' and view['batchLocation'] == 'eastus'
    preflight.check_entra_id(view)
    for size in ('Standard_NC4as_T4_v3', 'standard_nc4as_t4_v3', 'STANDARD_NC4AS_T4_V3'):
        sku = vm_sizes.check_vm_size(size, _skus(), RECORDED_DAY)
        assert (sku['name'], vm_sizes.vcpus(sku), vm_sizes.gpus(sku)) == ('Standard_NC4as_T4_v3', 4, 1)
    with pytest.raises(Refusal) as refused:
        preflight.check_cluster(view, {'vmSize': 'standard_nc4as_t4_v3',
                                       'scaleSettings': {'manual': {'targetNodeCount': 1}}},
                                _skus(), _images()['response']['value'], today=RECORDED_DAY)
    assert refused.value.code == 'QuotaExceeded' and 'Standard NCASv3_T4 Family' in refused.value.reason


def test_recorded_pools_count_their_cores_whatever_the_size_case():
    """A recorded pool answer (its vmSize lower-cased by Batch) counts its target cores against the quota."""
    pool = dict(interaction('powershell_2024', 'pool get, resizing')['response'], vmSize='standard_nc4as_t4_v3')
    used = preflight.cores_in_use([pool], _skus(), 'Standard NCASv3_T4 Family')
    assert used == {'family': 8, 'dedicated': 8, 'lowPriority': 0}


def test_recorded_job_list_counts_active_jobs():
    recorded = interaction('powershell_2024', 'job list')
    api, adapter = replaying_api(recorded)
    assert api.count_active_jobs() == 1
    _same_request(adapter.sent[0], recorded, set())
    assert adapter.sent[0]['query']['$filter'] == "state eq 'active'"
