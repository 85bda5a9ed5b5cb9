"""The Batch double through Prism with the real SDK (`azure.batch.BatchClient`, as az ships it): every operation
the double answers, a 2-node multi-instance task, preemption, and each injected fault. TEST CODE for test code:
these tests keep the double (which the scheduler's end-to-end tests rely on) honest against the spec and Batch's
documented behaviour; Prism fails a test whose traffic breaks tests/specs/batch-2024-02-01.19.0.
"""
import datetime
import json
import os
import ssl
import time
import urllib.error
import urllib.request

import pytest
from azure.batch.models import CreateTasksError
from azure.core.exceptions import (HttpResponseError, ResourceExistsError, ResourceNotFoundError, ServiceRequestError,
                                   ServiceResponseError)

IMAGE = {'imageReference': {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy', 'sku': '22_04-lts',
                            'version': 'latest'}, 'nodeAgentSKUId': 'batch.node.ubuntu 22.04'}
# The autoscale formula in the shape the scheduler writes (azurebatch/pools.py AUTOSCALE_GRAMMAR): min 0, max 3,
# initial 0, dedicated nodes.
FORMULA = ('$samples = $PendingTasks.GetSamplePercent(TimeInterval_Minute * 5);\n'
           '$tasks = $samples < 70 ? max(0, $PendingTasks.GetSample(1)) : '
           'max($PendingTasks.GetSample(TimeInterval_Minute * 5));\n'
           '$nodes = $samples < 70 ? max(0, $tasks) : $tasks;\n'
           '$TargetDedicatedNodes = min(3, max(0, $nodes));\n'
           '$TargetLowPriorityNodes = 0;\n'
           '$NodeDeallocationOption = taskcompletion;')


def pool(pool_id, **extra):
    return dict({'id': pool_id, 'vmSize': 'standard_d2s_v3', 'virtualMachineConfiguration': IMAGE}, **extra)


def shell(script):
    """A Batch command line: Batch runs no shell, so a script needs one named (as users write it)."""
    return "/bin/bash -c '{}'".format(script.replace("'", "'\\''"))


def wait_task(double, job_id, task_id, state='completed', timeout=15):
    double.account.wait(lambda: double.account.jobs[job_id].tasks[task_id].state == state, timeout)


def read(client, job_id, task_id, path, **kwargs):
    return b''.join(client.get_task_file(job_id, task_id, path, **kwargs)).decode()


def test_pools_nodes_and_autoscale_operations(batch_prism):
    client = batch_prism.client()
    client.create_pool(pool('fixed', targetDedicatedNodes=1, targetLowPriorityNodes=1, taskSlotsPerNode=2))
    assert client.pool_exists('fixed') and not client.pool_exists('nope')
    batch_prism.account.wait(lambda: batch_prism.account.pools['fixed'].alloc_state == 'steady')
    got = client.get_pool('fixed')
    assert (got.current_dedicated_nodes, got.current_low_priority_nodes, got.task_slots_per_node) == (1, 1, 2)
    with pytest.raises(ResourceExistsError) as exists:
        client.create_pool(pool('fixed'))
    assert exists.value.error.code == 'PoolExists'
    client.resize_pool('fixed', {'targetDedicatedNodes': 3, 'targetLowPriorityNodes': 0})
    batch_prism.account.wait(lambda: len(batch_prism.account.pools['fixed'].nodes) == 3)
    nodes = list(client.list_nodes('fixed'))
    assert sorted(n.is_dedicated for n in nodes) == [True, True, True]
    assert len({n.ip_address for n in nodes}) == 3
    assert client.get_node('fixed', nodes[0].id).state in ('idle', 'starting')
    client.remove_nodes('fixed', {'nodeList': [nodes[0].id]})
    batch_prism.account.wait(lambda: len(batch_prism.account.pools['fixed'].nodes) == 2)
    assert [p.id for p in client.list_pools(filter="startswith(id,'fix')", select=['id', 'state'])] == ['fixed']

    client.create_pool(pool('auto', enableAutoScale=True, autoScaleFormula=FORMULA,
                            autoScaleEvaluationInterval='PT5M', enableInterNodeCommunication=True))
    run = client.evaluate_pool_auto_scale('auto', {'autoScaleFormula': FORMULA})
    assert '$TargetDedicatedNodes=0' in run.results and '$NodeDeallocationOption=taskcompletion' in run.results
    bad = client.evaluate_pool_auto_scale('auto', {'autoScaleFormula': '$TargetDedicatedNodes = $NoSuchThing;'})
    assert bad.error.code == 'AutoScaleFormulaEvaluationError'
    with pytest.raises(HttpResponseError) as invalid:
        client.enable_pool_auto_scale('auto', auto_scale_formula='$TargetDedicatedNodes = ;')
    assert invalid.value.error.code == 'InvalidAutoScaleFormula'
    client.enable_pool_auto_scale('auto', auto_scale_formula=FORMULA,
                                  auto_scale_evaluation_interval=datetime.timedelta(minutes=5))
    assert client.get_pool('auto').auto_scale_run.results
    client.disable_pool_auto_scale('auto')
    assert client.get_pool('auto').enable_auto_scale is False
    client.delete_pool('auto')
    batch_prism.account.wait(lambda: 'auto' not in batch_prism.account.pools)
    with pytest.raises(ResourceNotFoundError) as gone:
        client.get_pool('auto')
    assert gone.value.error.code == 'PoolNotFound'


def test_account_supported_images_and_node_counts(batch_prism):
    client = batch_prism.client()
    images = list(client.list_supported_images(filter="verificationType eq 'verified'"))
    assert {i.node_agent_sku_id for i in images} >= {'batch.node.ubuntu 22.04', 'batch.node.ubuntu 20.04'}
    assert any(i.batch_support_end_of_life for i in images) and any(not i.batch_support_end_of_life for i in images)
    batch_prism.account.supported_images = [images[0].as_dict()]  # a test chooses what the account offers
    assert len(list(client.list_supported_images())) == 1
    client.create_pool(pool('p', targetDedicatedNodes=1, targetLowPriorityNodes=1))
    batch_prism.account.wait(lambda: all(n.state == 'idle' for n in batch_prism.account.pools['p'].nodes.values())
                             and len(batch_prism.account.pools['p'].nodes) == 2)
    counts = list(client.list_pool_node_counts())
    assert [(c.pool_id, c.dedicated.idle, c.dedicated.total, c.low_priority.idle) for c in counts] == [('p', 1, 1, 1)]


def test_autoscale_pending_tasks_to_nodes_idle_to_zero_taskcompletion(batch_prism):
    """The scheduler's formula shape on the double's Batch clock: k pending tasks -> k nodes (capped at max), none
    -> 0 nodes, and scale-in waits for the running task (taskcompletion) instead of killing it."""
    client, account = batch_prism.client(), batch_prism.account
    client.create_pool(pool('auto', enableAutoScale=True, autoScaleFormula=FORMULA,
                            autoScaleEvaluationInterval='PT5M'))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'auto'}})
    assert client.get_pool('auto').current_dedicated_nodes == 0
    client.create_task_collection('job', [{'id': 't{}'.format(i), 'commandLine': '/bin/sleep 0.3'} for i in range(5)])
    account.wait(lambda: account.pools['auto'].target['dedicated'] == 3, 10)  # 5 pending, max 3
    client.create_task('job', {'id': 'long', 'commandLine': shell('sleep 2; echo done')})
    account.wait(lambda: all(t.state == 'completed' for i, t in account.jobs['job'].tasks.items() if i != 'long'),
                 15)
    wait_task(batch_prism, 'job', 'long', 'running')
    account.wait(lambda: account.pools['auto'].target['dedicated'] == 1, 10)  # only the long task pends
    account.wait(lambda: len(account.pools['auto'].nodes) == 1, 10)  # idle nodes left, the busy one stayed
    wait_task(batch_prism, 'job', 'long')
    assert read(client, 'job', 'long', 'stdout.txt') == 'done\n'  # it ran to its end: scale-in did not kill it
    account.wait(lambda: not account.pools['auto'].nodes, 10)  # idle -> 0
    assert client.get_pool('auto').auto_scale_run.results.startswith('$TargetDedicatedNodes=0;')


def test_jobs_and_tasks_operations(batch_prism):
    client = batch_prism.client()
    client.create_pool(pool('p', targetDedicatedNodes=2))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'p'},
                       'commonEnvironmentSettings': [{'name': 'COMMON', 'value': 'c'}]})
    with pytest.raises(ResourceExistsError):
        client.create_job({'id': 'job', 'poolInfo': {'poolId': 'p'}})
    client.create_task('job', {'id': 'env', 'commandLine': shell('echo $COMMON $OWN $AZ_BATCH_JOB_ID $AZ_BATCH_TASK_ID;'
                                                                 ' pwd; echo err >&2'),
                               'environmentSettings': [{'name': 'OWN', 'value': 'o'}]})
    with pytest.raises(ResourceExistsError) as exists:
        client.create_task('job', {'id': 'env', 'commandLine': '/bin/true'})
    assert exists.value.error.code == 'TaskExists'
    # No shell: `$HOME` stays literal, as on Batch.
    client.create_task('job', {'id': 'noshell', 'commandLine': '/bin/echo $HOME'})
    client.create_task('job', {'id': 'fails', 'commandLine': shell('exit 3'),
                               'constraints': {'maxTaskRetryCount': 1}})
    client.create_task('job', {'id': 'missing', 'commandLine': '/no/such/program'})
    result = client.create_task_collection('job', [{'id': 'c{}'.format(i), 'commandLine': '/bin/true'}
                                                    for i in range(3)] + [{'id': 'env', 'commandLine': '/bin/true'}])
    assert sorted((r.task_id, r.status) for r in result.value)[:1] == [('c0', 'Success')]  # as recorded
    assert {r.task_id: (r.error.code if r.error else None) for r in result.value}['env'] == 'TaskExists'
    for task_id in ('env', 'noshell', 'fails', 'missing', 'c0', 'c1', 'c2'):
        wait_task(batch_prism, 'job', task_id)
    env = client.get_task('job', 'env')
    assert env.execution_info.result == 'success' and env.execution_info.exit_code == 0
    stdout = read(client, 'job', 'env', 'stdout.txt').splitlines()
    assert stdout[0] == 'c o job env'
    assert stdout[1] == batch_prism.account.node_of('job', 'env').root + '/workitems/job/job-1/env/wd'
    assert read(client, 'job', 'env', 'stderr.txt') == 'err\n'
    assert read(client, 'job', 'noshell', 'stdout.txt') == '$HOME\n'
    fails = client.get_task('job', 'fails')
    assert (fails.execution_info.exit_code, fails.execution_info.retry_count, fails.execution_info.result,
            fails.execution_info.failure_info.code) == (3, 1, 'failure', 'FailureExitCode')
    assert client.get_task('job', 'missing').execution_info.failure_info.code == 'CommandProgramNotFound'
    # One list call for many tasks: $filter, $select, and the SDK following odata.nextLink pages.
    listed = list(client.list_tasks('job', filter="state eq 'completed' and executionInfo/exitCode ne 0",
                                    select=['id', 'state', 'executionInfo'], maxresults=1))
    assert sorted(t.id for t in listed) == ['fails', 'missing']  # OData: a missing exitCode is `ne 0`
    everything = list(client.list_tasks('job', select=['id'], maxresults=2))
    assert len(everything) == 7 and all(t.command_line is None for t in everything)
    assert batch_prism.count('GET', '^/jobs/job/tasks$') == 2 + 4  # 2 pages of 1, then 4 pages of 2
    counts = client.get_job_task_counts('job')
    assert (counts.task_counts.completed, counts.task_counts.failed) == (7, 2)

    client.create_task('job', {'id': 'sleeper', 'commandLine': '/bin/sleep 30'})
    wait_task(batch_prism, 'job', 'sleeper', 'running')
    client.terminate_task('job', 'sleeper')
    sleeper = client.get_task('job', 'sleeper')
    assert sleeper.state == 'completed' and sleeper.execution_info.failure_info.code == 'TaskEnded'
    client.delete_task('job', 'sleeper')
    with pytest.raises(ResourceNotFoundError):
        client.get_task('job', 'sleeper')
    client.create_task('job', {'id': 'last', 'commandLine': '/bin/sleep 30'})
    wait_task(batch_prism, 'job', 'last', 'running')
    client.terminate_job('job')
    batch_prism.account.wait(lambda: batch_prism.account.jobs['job'].state == 'completed')
    job = client.get_job('job')
    assert job.execution_info['terminateReason'] == 'UserTerminate'
    assert client.get_task('job', 'last').state == 'completed'
    assert [j.id for j in client.list_jobs(filter="state eq 'completed'")] == ['job']
    client.delete_job('job')
    batch_prism.account.wait(lambda: 'job' not in batch_prism.account.jobs)


def test_task_files_with_ocp_range(batch_prism):
    client = batch_prism.client()
    client.create_pool(pool('p', targetDedicatedNodes=1))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'p'}})
    client.create_task('job', {'id': 't', 'commandLine': shell('printf 0123456789 ; mkdir -p out/sub; '
                                                               'echo metric > out/sub/m.txt')})
    wait_task(batch_prism, 'job', 't')
    assert read(client, 'job', 't', 'stdout.txt', ocp_range='bytes=3-6') == '3456'
    assert read(client, 'job', 't', 'stdout.txt', ocp_range='bytes=6-') == '6789'
    assert read(client, 'job', 't', 'wd/out/sub/m.txt') == 'metric\n'
    names = {f.name: f for f in client.list_task_files('job', 't', recursive=True)}
    assert {'stdout.txt', 'stderr.txt', 'wd', 'wd/out/sub/m.txt'} <= set(names)
    assert names['stdout.txt'].properties.content_length == 10 and names['wd'].is_directory
    assert set(f.name for f in client.list_task_files('job', 't')) == {'stdout.txt', 'stderr.txt', 'wd'}
    props = client.get_task_file_properties('job', 't', 'stdout.txt').headers
    assert props['ocp-batch-file-isdirectory'] == 'False' and props['ocp-batch-file-url'].endswith('%2Fstdout.txt')
    # Prism answers a HEAD with Content-Length 0 whatever the upstream said; the double itself sends the size.
    direct = batch_prism.double.client().get_task_file_properties('job', 't', 'stdout.txt').headers
    assert direct['Content-Length'] == '10'
    with pytest.raises(ResourceNotFoundError) as missing:
        read(client, 'job', 't', 'nothing.txt')
    assert missing.value.error.code == 'FileNotFound'


def test_output_files_upload_stdout_stderr(batch_prism):
    client = batch_prism.client()
    client.create_pool(pool('p', targetDedicatedNodes=1))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'p'}})
    container = 'https://acct.blob.core.windows.net/logs'
    outputs = [{'filePattern': '../std*.txt', 'destination': {'container': {'containerUrl': container + '?sig=x',
                                                                            'path': 'job/t'}},
                'uploadOptions': {'uploadCondition': 'taskcompletion'}},
               {'filePattern': 'never.txt', 'destination': {'container': {'containerUrl': container}},
                'uploadOptions': {'uploadCondition': 'tasksuccess'}}]
    client.create_task('job', {'id': 't', 'commandLine': shell('echo out; echo err >&2; exit 1'),
                               'outputFiles': outputs})
    wait_task(batch_prism, 'job', 't')
    uploads = {(url, name): open(path, encoding='utf-8').read() for url, name, path in batch_prism.account.uploads}
    assert uploads == {(container, 'job/t/stdout.txt'): 'out\n', (container, 'job/t/stderr.txt'): 'err\n'}


def test_multi_instance_task_on_two_nodes(batch_prism):
    client = batch_prism.client()
    client.create_pool(pool('mpi', targetDedicatedNodes=2, enableInterNodeCommunication=True))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'mpi'}})
    client.create_task('job', {
        'id': 'mi', 'commandLine': shell('echo $AZ_BATCH_HOST_LIST $AZ_BATCH_MASTER_NODE '
                                         '$AZ_BATCH_IS_CURRENT_NODE_MASTER; cat $AZ_BATCH_TASK_SHARED_DIR/coord'),
        'multiInstanceSettings': {'numberOfInstances': 2, 'coordinationCommandLine': shell(
            'echo coordinated $AZ_BATCH_NODE_ID > $AZ_BATCH_TASK_SHARED_DIR/coord; sleep 0.2')}})
    wait_task(batch_prism, 'job', 'mi')
    task = client.get_task('job', 'mi')
    assert task.execution_info.exit_code == 0
    nodes = {n.id: n.ip_address for n in client.list_nodes('mpi')}
    hosts, master, is_master = read(client, 'job', 'mi', 'stdout.txt').splitlines()[0].split()
    assert sorted(hosts.split(',')) == sorted(nodes.values())
    assert master == nodes[task.node_info.node_id] + ':6000' and is_master == 'true'
    subtasks = list(client.list_sub_tasks('job', 'mi'))
    assert len(subtasks) == 1 and subtasks[0].node_info.node_id != task.node_info.node_id
    assert subtasks[0].state == 'completed' and subtasks[0].exit_code == 0


def test_multi_instance_task_without_inter_node_communication_waits(batch_prism):
    """Batch accepts the task (as recorded, tests/azurebatch/recorded/task_create.json) but a pool without
    inter-node communication cannot run it: the double leaves it active."""
    client = batch_prism.client()
    client.create_pool(pool('plain', targetDedicatedNodes=2))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'plain'}})
    client.create_task('job', {'id': 'mi', 'commandLine': '/bin/true', 'multiInstanceSettings': {
        'numberOfInstances': 2, 'coordinationCommandLine': '/bin/true'}})
    batch_prism.account.wait(lambda: len(batch_prism.account.pools['plain'].nodes) == 2)
    time.sleep(0.2)
    assert client.get_task('job', 'mi').state == 'active'


def test_preemption_requeues_the_task_and_it_restarts_clean(batch_prism):
    client, account = batch_prism.client(), batch_prism.account
    client.create_pool(pool('spot', targetLowPriorityNodes=1))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'spot'}})
    client.create_task('job', {'id': 't', 'commandLine': shell(
        'test -e wd_marker && echo DIRTY; touch wd_marker; echo attempt; sleep 0.8')})
    wait_task(batch_prism, 'job', 't', 'running')
    first_node = account.preempt(task_id='t')
    assert client.get_node('spot', first_node).state == 'preempted'
    task = client.get_task('job', 't')
    assert task.state in ('active', 'running') and task.execution_info.requeue_count == 1
    wait_task(batch_prism, 'job', 't')
    task = client.get_task('job', 't')
    assert task.execution_info.requeue_count == 1 and task.execution_info.retry_count == 0
    assert read(client, 'job', 't', 'stdout.txt') == 'attempt\n'  # one attempt's output, no leftovers
    assert client.get_pool('spot').current_low_priority_nodes == 1


def test_fault_resize_error_with_quota_code(batch_prism):
    client = batch_prism.client()
    batch_prism.faults.resize_error('AccountLowPriorityCoreQuotaReached', nodes_allowed=0, dedicated=False)
    client.create_pool(pool('p', targetLowPriorityNodes=2, targetDedicatedNodes=1))
    batch_prism.account.wait(lambda: batch_prism.account.pools['p'].alloc_state == 'steady')
    got = client.get_pool('p')
    assert (got.current_dedicated_nodes, got.current_low_priority_nodes) == (1, 0)
    assert [e.code for e in got.resize_errors] == ['AccountLowPriorityCoreQuotaReached']
    batch_prism.faults.clear_resize_errors()
    client.resize_pool('p', {'targetDedicatedNodes': 1, 'targetLowPriorityNodes': 2})
    batch_prism.account.wait(lambda: batch_prism.account.pools['p'].current(False) == 2)
    assert not client.get_pool('p').resize_errors


def test_fault_token_expiry_answers_401(batch_prism):
    client = batch_prism.client()
    client.create_pool(pool('p'))
    batch_prism.expire_tokens()
    with pytest.raises(HttpResponseError) as expired:
        client.get_pool('p')  # the SDK's cached token is now expired at the service
    assert expired.value.status_code == 401 and expired.value.error.code == 'AuthenticationFailed'
    assert 'The token is expired' in expired.value.response.text()
    assert batch_prism.client().get_pool('p').id == 'p'  # a fresh token (a refreshed login) works


def test_fault_429_with_retry_after(batch_prism):
    client = batch_prism.client()
    client.create_pool(pool('p'))
    batch_prism.faults.throttle(count=1, retry_after=1, path='^/pools/p$')
    started = time.monotonic()
    assert client.get_pool('p').id == 'p'  # azure-core's retry policy waits Retry-After and tries again
    assert time.monotonic() - started >= 1 and batch_prism.count('GET', '^/pools/p$') == 2
    batch_prism.faults.throttle(count=1, retry_after=7, status=503, path='^/pools/p$')
    with pytest.raises(HttpResponseError) as busy:
        client.get_pool('p', retry_total=0)
    assert busy.value.status_code == 503 and busy.value.response.headers['Retry-After'] == '7'
    assert busy.value.error.code == 'ServerBusy'


def test_fault_timed_out_add_was_applied(batch_prism):
    client = batch_prism.client()
    client.create_pool(pool('p'))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'p'}})
    batch_prism.faults.time_out_after_apply(path='^/jobs/job/tasks$', seconds=2)
    with pytest.raises(ServiceResponseError):
        client.create_task('job', {'id': 't', 'commandLine': '/bin/true'}, read_timeout=0.5)
    assert client.get_task('job', 't').id == 't'  # applied although the client saw no answer
    with pytest.raises(ResourceExistsError):
        client.create_task('job', {'id': 't', 'commandLine': '/bin/true'})
    time.sleep(2)  # let the late answer pass through Prism before the teardown reads its log


def test_fault_node_removal_deletes_task_files(batch_prism):
    client = batch_prism.client()
    client.create_pool(pool('p', targetDedicatedNodes=1))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'p'}})
    client.create_task('job', {'id': 't', 'commandLine': '/bin/echo kept?'})
    wait_task(batch_prism, 'job', 't')
    assert read(client, 'job', 't', 'stdout.txt') == 'kept?\n'
    node_id = client.get_task('job', 't').node_info.node_id
    client.remove_nodes('p', {'nodeList': [node_id], 'nodeDeallocationOption': 'taskcompletion'})
    batch_prism.account.wait(lambda: not batch_prism.account.pools['p'].nodes)
    with pytest.raises(ResourceNotFoundError) as gone:
        read(client, 'job', 't', 'stdout.txt')
    assert gone.value.error.code == 'NodeNotFound'


def test_fault_active_job_quota(batch_prism):
    client = batch_prism.client()
    batch_prism.faults.active_job_quota(1)
    client.create_job({'id': 'one', 'poolInfo': {'poolId': 'p'}})
    with pytest.raises(ResourceExistsError) as quota:
        client.create_job({'id': 'two', 'poolInfo': {'poolId': 'p'}})
    assert quota.value.error.code == 'ActiveJobAndScheduleQuotaReached'
    client.terminate_job('one')
    batch_prism.account.wait(lambda: batch_prism.account.jobs['one'].state == 'completed')
    client.create_job({'id': 'two', 'poolInfo': {'poolId': 'p'}})


def test_prism_refuses_what_breaks_the_spec(batch_prism):
    """The contract check itself: a request or an answer outside the spec never reaches the other side."""
    client = batch_prism.client()
    client.create_pool(pool('p'))
    context = ssl.create_default_context(cafile=batch_prism.ca_file)
    request = urllib.request.Request(
        batch_prism.endpoint + '/pools/p/resize?api-version=2024-02-01.19.0', method='POST',
        data=json.dumps({'targetDedicatedNodes': 'three'}).encode(),
        headers={'Authorization': 'Bearer ' + batch_prism.token,
                 'Content-Type': 'application/json; odata=minimalmetadata'})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, context=context)  # pylint: disable=consider-using-with
    assert refused.value.code == 422
    assert batch_prism.count('POST', '/resize$') == 0
    batch_prism.faults.answer(200, {'id': 'p', 'state': 42}, path='^/pools/p$')
    with pytest.raises(HttpResponseError) as broken:
        client.get_pool('p', retry_total=0)  # (azure-core would retry the 500 and get the double's true answer)
    assert broken.value.status_code == 500 and 'VIOLATIONS' in broken.value.response.text()
    found = batch_prism.take_violations()
    assert len(found) == 2, found


def test_the_double_alone_serves_https_with_its_own_ca(batch_double):
    """Without Prism: the endpoint ab-svc's tests may use directly, trusted through ca_file."""
    assert batch_double.endpoint.startswith('https://127.0.0.1:')
    client = batch_double.client()
    client.create_pool(pool('p'))
    assert client.get_pool('p').id == 'p'
    with pytest.raises(ServiceRequestError):  # an untrusted certificate is refused: the CA bundle is needed
        batch_double.client(connection_verify=True, retry_total=0).get_pool('p')
    assert os.path.exists(batch_double.ca_file)


def test_start_task_failure_shows_on_the_node(batch_prism):
    """Issue 31 rule 1: a failed start task is visible (node state, startTaskInfo) and takes no tasks."""
    client = batch_prism.client()
    client.create_pool(pool('p', targetDedicatedNodes=1, startTask={
        'commandLine': shell('echo setting up; exit 4'), 'waitForSuccess': True}))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'p'}})
    client.create_task('job', {'id': 't', 'commandLine': '/bin/true'})
    batch_prism.account.wait(lambda: all(n.state == 'starttaskfailed'
                                         for n in batch_prism.account.pools['p'].nodes.values()))
    node = next(iter(client.list_nodes('p')))
    assert node.start_task_info.exit_code == 4 and node.start_task_info.failure_info.code == 'FailureExitCode'
    assert client.get_task('job', 't').state == 'active'


def test_mounts_are_shared_by_the_nodes_of_a_pool(batch_prism):
    """A pool's Azure Files mount is one directory for every node (as one share is), under
    AZ_BATCH_NODE_MOUNTS_DIR/<relativeMountPath>; the start task sees it too."""
    client, account = batch_prism.client(), batch_prism.account
    mount = {'azureFileShareConfiguration': {
        'accountName': 'acct', 'azureFileUrl': 'https://acct.file.core.windows.net/share',
        'accountKey': 'not-a-real-key', 'relativeMountPath': 'afs'}}
    client.create_pool(pool('p', targetDedicatedNodes=2, mountConfiguration=[mount], startTask={
        'commandLine': shell('echo $AZ_BATCH_NODE_ID >> $AZ_BATCH_NODE_MOUNTS_DIR/afs/started'),
        'waitForSuccess': True}))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'p'}})
    account.wait(lambda: [n.state for n in account.pools['p'].nodes.values()] == ['idle', 'idle'])
    share, relative = account.mount_source(mount)
    assert relative == 'afs'
    with open(os.path.join(share, 'started'), encoding='utf-8') as f:
        assert sorted(f.read().split()) == sorted(account.pools['p'].nodes)
    answered = client.get_pool('p').as_dict()
    assert answered['mountConfiguration'][0]['azureFileShareConfiguration']['relativeMountPath'] == 'afs'


def test_node_removal_with_requeue_requeues_the_running_task(batch_prism):
    client, account = batch_prism.client(), batch_prism.account
    client.create_pool(pool('p', targetDedicatedNodes=1))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'p'}})
    client.create_task('job', {'id': 't', 'commandLine': '/bin/sleep 30'})
    wait_task(batch_prism, 'job', 't', 'running')
    node_id = client.get_task('job', 't').node_info.node_id
    client.remove_nodes('p', {'nodeList': [node_id], 'nodeDeallocationOption': 'requeue'})
    account.wait(lambda: not account.pools['p'].nodes)
    task = client.get_task('job', 't')
    assert task.state == 'active' and task.execution_info.requeue_count == 1
    client.delete_pool('p')
    account.wait(lambda: 'p' not in account.pools)


def test_fault_dropped_connection_after_apply(batch_double):
    """The other timed-out add: the connection closes without an answer (direct, as Prism would turn it into its
    own error); azure-core does not retry a POST that may have been applied, the caller must look."""
    client = batch_double.client()
    client.create_pool(pool('p'))
    client.create_job({'id': 'job', 'poolInfo': {'poolId': 'p'}})
    batch_double.faults.time_out_after_apply(path='^/jobs/job/addtaskcollection$', drop=True)
    with pytest.raises(CreateTasksError) as lost:  # the SDK's collection helper wraps the transport error
        client.create_task_collection('job', [{'id': 't', 'commandLine': '/bin/true'}])
    assert 'Remote end closed connection without response' in str(lost.value)
    assert batch_double.count('POST', '/addtaskcollection$') == 1
    result = client.create_task_collection('job', [{'id': 't', 'commandLine': '/bin/true'}])
    assert [r.error.code for r in result.value] == ['TaskExists']  # applied the first time


def test_a_plain_task_on_a_container_pool_fails_on_its_node_as_batch_fails_it(batch_prism):
    """Issue 48 item 1: Batch requires containerSettings on every task of a pool with a container configuration;
    a task without them fails on its node with ContainerTaskSettingsNotFound (the code and message users report,
    e.g. microsoft/ga4gh-tes issue 525) instead of running. A container task there runs."""
    client = batch_prism.client()
    docker = dict(IMAGE, containerConfiguration={'type': 'dockerCompatible'})
    client.create_pool(pool('docker', targetDedicatedNodes=1, virtualMachineConfiguration=docker))
    client.create_job({'id': 'cj', 'poolInfo': {'poolId': 'docker'}})
    client.create_task('cj', {'id': 'plain', 'commandLine': shell('echo ran > ran.txt')})
    client.create_task('cj', {'id': 'boxed', 'commandLine': shell('true'),
                              'containerSettings': {'imageName': 'ubuntu:22.04'}})
    wait_task(batch_prism, 'cj', 'plain')
    wait_task(batch_prism, 'cj', 'boxed')
    plain = client.get_task('cj', 'plain')
    assert plain.execution_info.failure_info.code == 'ContainerTaskSettingsNotFound'
    assert plain.execution_info.failure_info.message == \
        'Container-enabled compute node requires task container settings'
    result = lambda task: str(getattr(task.execution_info.result, 'value', task.execution_info.result))  # noqa
    assert result(plain).lower() == 'failure'
    assert result(client.get_task('cj', 'boxed')).lower() == 'success'
