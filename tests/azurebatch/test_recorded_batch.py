"""The real Azure Batch service's recorded answers (azure-cli's recordings, tests/azurebatch/recorded/) against the
spec, against the SDK az ships, and replayed into the Batch double through Prism (TEST CODE: these tests keep the
double as close to the real service as the recordings show it).
"""
import json
import os
import shlex

import pytest
from azure.batch import models
from azure.core.exceptions import HttpResponseError
from azure.batch._model_base import _deserialize  # the SDK's own JSON -> model step (what its operations call)

from tests.azurebatch import recorded_batch
from tests.azurebatch.recorded_batch import interaction, load, spec_violations

EXCERPTS = ('jobs_and_tasks', 'task_create', 'file_download', 'pools_and_nodes', 'powershell_2024')
ARM_EXCERPTS = ('arm_account',)  # ARM answers (Microsoft.Batch), not the data plane: read by test_recorded_readers
# Where the real service's answers break the spec, as recorded. The spec's enums are lowercase; the service
# answered some values capitalised (the SDK az ships keeps them as they came: see the SDK test below). The spec
# makes a user account's password required, and the service never answers it back.
KNOWN_DIVERGENCES = {
    ('task_create', 'task collection add'): [
        "response/value/{}/status: 'Success' is not one of ['success', 'clienterror', 'servererror']".format(i)
        for i in range(3)],
    ('file_download', 'task collection add'): [
        "response/value/{}/status: 'Success' is not one of ['success', 'clienterror', 'servererror']".format(i)
        for i in range(3)],
    ('pools_and_nodes', 'pool get (an older API: maxTasksPerNode, cloudServiceConfiguration)'): [
        "response/taskSchedulingPolicy/nodeFillType: 'Spread' is not one of ['spread', 'pack']",
        "response/userAccounts/0: 'password' is a required property"],
    **{('powershell_2024', title): [
        "response/taskSchedulingPolicy/nodeFillType: 'Spread' is not one of ['spread', 'pack']",
        "response/virtualMachineConfiguration/nodePlacementConfiguration/policy: 'Zonal' is not one of "
        "['regional', 'zonal']"]
       for title in ('pool get, resizing', 'pool get, steady and empty', 'pool get, stopping a resize')},
    ('powershell_2024', 'pool list with $filter, autoscale on'): [
        "response/value/0/taskSchedulingPolicy/nodeFillType: 'Spread' is not one of ['spread', 'pack']",
        "response/value/0/virtualMachineConfiguration/nodePlacementConfiguration/policy: 'Zonal' is not one of "
        "['regional', 'zonal']"],
    ('powershell_2024', 'task list, terminated'): [
        "response/value/{}/executionInfo/failureInfo/category: 'UserError' is not one of ['usererror', "
        "'servererror']".format(i) for i in range(2)],
}


def test_the_excerpts_are_what_the_readme_says():
    names = sorted(f[:-len('.json')] for f in os.listdir(recorded_batch.RECORDED_DIR) if f.endswith('.json'))
    assert names == sorted(EXCERPTS + ARM_EXCERPTS)
    with open(os.path.join(recorded_batch.RECORDED_DIR, 'README.md'), encoding='utf-8') as f:
        readme = f.read()
    for name in EXCERPTS + ARM_EXCERPTS:
        data = load(name)
        assert data['source'] in readme and '`{}.json`'.format(name) in readme
        text = json.dumps(data).lower()
        assert 'fakebatchaccountkey' not in text and 'sig=' not in text and 'bearer' not in text


@pytest.mark.parametrize('name', EXCERPTS)
def test_recorded_requests_and_answers_conform_to_the_spec(name):
    found = {(name, item['name']): spec_violations(item) for item in load(name)['interactions']}
    found = {key: value for key, value in found.items() if value}
    assert found == {key: value for key, value in KNOWN_DIVERGENCES.items() if key[0] == name}


def test_the_spec_check_finds_a_broken_body():
    """The check above can fail: a recorded answer with a wrong type and a request without a required property."""
    item = dict(interaction('jobs_and_tasks', 'job get'))
    item['response'] = dict(item['response'], priority='high')
    assert spec_violations(item) == ["response/priority: 'high' is not of type 'integer'"]
    item = dict(interaction('task_create', 'task add without constraints'))
    item['request'] = {'id': 'x'}
    assert spec_violations(item) == ["request: 'commandLine' is a required property"]


def test_the_sdk_az_ships_parses_the_recorded_answers_as_they_came():
    """What a client of the real service must expect (azure-batch 15.0.0b1's models on the recorded JSON): enum
    values arrive with the service's capitals and are NOT normalised, so `status == BatchTaskAddStatus.SUCCESS`
    is False for the real 'Success' (compare case-insensitively); the unlimited wall clock parses."""
    added = _deserialize(models.BatchTaskAddCollectionResult,
                         interaction('file_download', 'task collection add')['response'])
    assert [r.status for r in added.value] == ['Success'] * 3
    assert added.value[0].status != models.BatchTaskAddStatus.SUCCESS
    assert added.value[0].status.lower() == models.BatchTaskAddStatus.SUCCESS.value
    job = _deserialize(models.BatchJob, interaction('jobs_and_tasks', 'job get')['response'])
    assert job.constraints.max_wall_clock_time.days == 10675199
    task = _deserialize(models.BatchTask, interaction('task_create', 'task get')['response'])
    assert task.multi_instance_settings.number_of_instances == 3 and task.execution_info.requeue_count == 0
    nodes = _deserialize(models.BatchNodeListResult, interaction('file_download', 'node list')['response'])
    assert nodes.value[0].start_task_info.exit_code == 0


def _pool_body(item):
    body = dict(item['request'])
    body['virtualMachineConfiguration'] = dict(body['virtualMachineConfiguration'])
    return body


def test_recorded_requests_replayed_into_the_double(batch_prism):
    """The recorded requests, sent through Prism to the double: the answers have the recorded status and carry
    every property the real answers carried, with Batch's defaults where the request left them out."""
    client = batch_prism.client()
    pool_add = interaction('jobs_and_tasks', 'pool add')
    client.create_pool(_pool_body(pool_add))  # no nodes: the tasks stay active, as recorded
    client.create_job({'id': 'xplatJobForTaskTests', 'poolInfo': {'poolId': pool_add['request']['id']},
                       'constraints': {'maxTaskRetryCount': 5}})
    job_add = interaction('jobs_and_tasks', 'job add')
    client.create_job(job_add['request'])
    recorded_job = interaction('jobs_and_tasks', 'job get')['response']
    job = client.get_job('cli-test-job-1').as_dict()
    assert set(recorded_job) - {'odata.metadata'} <= set(job)
    assert job['constraints'] == {'maxWallClockTime': 'P10675199DT2H48M5.4775807S', 'maxTaskRetryCount': 5}
    assert (job['priority'], job['maxParallelTasks'], job['onAllTasksComplete']) == (0, -1, 'noaction')

    for title in ('multi-instance task add', 'task add without constraints'):
        client.create_task('xplatJobForTaskTests', interaction('task_create', title)['request'])
    for title, task_id in (('task get', 'xplatTask'), ('task get: Batch\'s defaults', 'aaa')):
        recorded = interaction('task_create', title)['response']
        got = client.get_task('xplatJobForTaskTests', task_id).as_dict()
        assert set(recorded) - {'odata.metadata'} <= set(got)
        for key in ('constraints', 'requiredSlots', 'userIdentity', 'executionInfo', 'state'):
            assert got[key] == recorded[key], key

    recorded = interaction('task_create', 'task collection add')
    result = client.create_task_collection('xplatJobForTaskTests', recorded['request']['value'])
    assert sorted(r.task_id for r in result.value) == sorted(r['taskId'] for r in recorded['response']['value'])
    assert {r.status.lower() for r in result.value} == {r['status'].lower() for r in recorded['response']['value']}
    assert all(set(r.as_dict()) == set(recorded['response']['value'][0]) for r in result.value)
    counts = client.get_job_task_counts('xplatJobForTaskTests').as_dict()
    assert counts['taskCounts'] == dict(interaction('task_create', 'task counts')['response']['taskCounts'],
                                        active=5)


def test_recorded_autoscale_evaluation_replayed(batch_prism):
    client = batch_prism.client()
    client.create_pool({'id': 'azure-cli-test-iaas', 'vmSize': 'standard_a1', 'virtualMachineConfiguration': {
        'imageReference': {'publisher': 'Canonical', 'offer': 'UbuntuServer', 'sku': '16.04.0-LTS'},
        'nodeAgentSKUId': 'batch.node.ubuntu 16.04'}})
    enable = interaction('pools_and_nodes', 'enable autoscale')['request']
    client.enable_pool_auto_scale('azure-cli-test-iaas', auto_scale_formula=enable['autoScaleFormula'])
    recorded = interaction('pools_and_nodes', 'evaluate autoscale')
    run = client.evaluate_pool_auto_scale('azure-cli-test-iaas', recorded['request'])
    assert run.results == recorded['response']['results']
    batch_prism.account.wait(lambda: batch_prism.account.pools['azure-cli-test-iaas'].current(False) == 3)
    selected = client.get_pool('azure-cli-test-iaas', select=['allocationState', 'targetLowPriorityNodes']).as_dict()
    assert set(selected) == set(interaction('pools_and_nodes', 'pool get with $select')['response']) - {
        'odata.metadata'}


def test_recorded_file_reads_replayed(batch_prism, tmp_path):
    """A task's file read whole and by range, as recorded, through Prism: the real service's spellings that break
    the spec ('False', text/plain) come from the double by default and pass the derived spec (prism.py)."""
    client = batch_prism.client()
    client.create_pool({'id': 'xplatTestPool', 'vmSize': 'standard_d2s_v3', 'targetDedicatedNodes': 1,
                        'virtualMachineConfiguration': {'imageReference': {'publisher': 'canonical'},
                                                        'nodeAgentSKUId': 'batch.node.ubuntu 22.04'},
                        'startTask': {'commandLine': '/bin/echo test', 'waitForSuccess': True}})
    client.create_job({'id': 'xplatJobForTaskTests', 'poolInfo': {'poolId': 'xplatTestPool'}})
    whole = interaction('file_download', 'task file')
    recorded_output = tmp_path / 'stdout.txt'
    recorded_output.write_bytes(whole['responseText'].encode())
    client.create_task('xplatJobForTaskTests', {'id': 'xplatTask1',
                                                'commandLine': '/bin/cat ' + shlex.quote(str(recorded_output))})
    batch_prism.account.wait(
        lambda: batch_prism.account.jobs['xplatJobForTaskTests'].tasks['xplatTask1'].state == 'completed')
    ranged = interaction('file_download', 'task file, a range')
    response = client.get_task_file('xplatJobForTaskTests', 'xplatTask1', 'stdout.txt',
                                    ocp_range=ranged['requestHeaders']['ocp-range'])
    assert b''.join(response) == ranged['responseText'].encode()
    assert b''.join(client.get_task_file('xplatJobForTaskTests', 'xplatTask1', 'stdout.txt')) == \
        whole['responseText'].encode()
    recorded_node = interaction('file_download', 'node list')['response']['value'][0]
    node = next(iter(client.list_nodes('xplatTestPool'))).as_dict()
    not_modelled = {'endpointConfiguration', 'virtualMachineInfo', 'certificateReferences'}
    assert set(recorded_node) - not_modelled <= set(node)
    assert node['startTaskInfo']['result'] == recorded_node['startTaskInfo']['result'] == 'success'
    assert node['vmSize'] == recorded_node['vmSize'] == 'standard_d2s_v3'

    got = client.get_task_file_properties('xplatJobForTaskTests', 'xplatTask1', 'stdout.txt').headers
    assert set(whole['headers']) <= {k.lower() for k in got}
    for name in ('ocp-batch-file-isdirectory', 'content-type'):
        assert got[name] == whole['headers'][name]
    assert got['ocp-batch-file-url'].startswith('https%3A%2F%2F')
    added = client.create_task_collection('xplatJobForTaskTests', [{'id': 'quirk', 'commandLine': '/bin/true'}])
    assert [r.status for r in added.value] == ['Success']
    client.create_pool({'id': 'users', 'vmSize': 'small', 'virtualMachineConfiguration': {
        'imageReference': {}, 'nodeAgentSKUId': 'batch.node.ubuntu 22.04'}, 'userAccounts': [
        {'name': 'cliTestUser', 'password': 'not-a-real-password', 'elevationLevel': 'admin'}]})
    users = client.get_pool('users').as_dict()['userAccounts']
    assert users == [{'name': 'cliTestUser', 'elevationLevel': 'admin'}]  # as recorded: no password back
    assert batch_prism.take_violations() == []


def test_prism_still_holds_requests_to_the_spec(batch_prism):
    """The derived spec accepts the answers' spellings only in answers: a request spelled so is refused (422)."""
    with pytest.raises(HttpResponseError) as refused:
        batch_prism.client().create_pool({
            'id': 'p', 'vmSize': 'small', 'taskSchedulingPolicy': {'nodeFillType': 'Spread'},
            'virtualMachineConfiguration': {'imageReference': {}, 'nodeAgentSKUId': 'batch.node.ubuntu 22.04'}},
            retry_total=0)
    assert refused.value.status_code == 422
    found = batch_prism.take_violations()
    assert found and 'nodeFillType' in str(refused.value.response.text())


def test_without_quirks_the_double_answers_in_the_spec_spelling(batch_double):
    """`account.quirks = False` (a test comparing the two): the spec's spellings, which the scheduler reads alike."""
    batch_double.account.quirks = False
    client = batch_double.client()
    client.create_pool({'id': 'p', 'vmSize': 'STANDARD_D2S_V3', 'virtualMachineConfiguration': {
        'imageReference': {}, 'nodeAgentSKUId': 'batch.node.ubuntu 22.04'}})
    client.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
    assert [r.status for r in client.create_task_collection('j', [{'id': 't', 'commandLine': '/bin/true'}]).value] \
        == ['success']
    pool = client.get_pool('p').as_dict()
    assert pool['vmSize'] == 'STANDARD_D2S_V3' and pool['taskSchedulingPolicy']['nodeFillType'] == 'spread'
    batch_double.account.quirks = True
    pool = client.get_pool('p').as_dict()
    assert pool['vmSize'] == 'standard_d2s_v3' and pool['taskSchedulingPolicy']['nodeFillType'] == 'Spread'
