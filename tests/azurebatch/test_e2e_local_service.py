"""`az batchai sweep local start|status|stop --scheduler azure-batch` the way a user runs them: `az login` (the real
az, offline: login_fixtures.py), then `local start --batch-account NAME -g RG`; the service az spawns finds the
account with azure-mgmt-batch, checks az's login against it (refusals: exit code 7, saying what to fix), gets its
Batch tokens from az, and sends every Batch call through Prism (e2e_fixtures.py). Shown: the Batch account and
allocation mode, pools with their node counts; a service killed (SIGKILL) while its tasks run and started again,
getting its own token from az and re-attaching without adding any task twice; a token that expires mid-run replaced
through az; `local stop` naming the pools that still hold nodes."""
import json
import os

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.names import batch_job_id, pool_id
from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import
from tests.cli.test_sweep_errors_and_tables import fits

pytestmark = [pytest.mark.az, pytest.mark.service]

TOKEN_FROM_AZ = "got an access token for https://batch.core.windows.net/ from az's login"


def _start(svc, *extra):
    return svc.az('batchai', 'sweep', 'local', 'start', '--data-dir', svc.data_dir, '--scheduler', 'azure-batch',
                  *extra)


def test_local_start_refuses_what_azure_batch_cannot_take(batch_user):  # pylint: disable=redefined-outer-name
    svc, data_dir = batch_user, batch_user.data_dir
    missing = _start(svc)
    assert missing.exit_code == 6 and '--scheduler azure-batch needs --batch-account' in missing.stderr
    slots = _start(svc, '--batch-account', ACCOUNT, '--slots', '2')
    assert slots.exit_code == 6 and '--slots is for the processes scheduler' in slots.stderr
    elsewhere = svc.az('batchai', 'sweep', 'local', 'start', '--data-dir', data_dir, '--batch-account', ACCOUNT)
    assert elsewhere.exit_code == 6 and 'only apply with --scheduler azure-batch' in elsewhere.stderr
    prefix = _start(svc, '--batch-account', ACCOUNT, '--pool-prefix', 'no/slash')
    assert prefix.exit_code == 6 and "--pool-prefix 'no/slash'" in prefix.stderr
    assert not os.path.exists(os.path.join(data_dir, 'service.json'))


def test_local_start_refuses_an_account_az_login_cannot_use(batch_user):  # pylint: disable=redefined-outer-name
    """What the service finds through az's login and refuses before it serves: exit code 7, the reason and the fix."""
    svc, arm = batch_user, batch_user.login.double
    unknown = _start(svc, '--batch-account', 'nosuchacct', '-g', RESOURCE_GROUP)
    assert unknown.exit_code == 7, unknown.stderr
    assert "Batch account 'nosuchacct' in resource group '{}'".format(RESOURCE_GROUP) in unknown.stderr
    assert 'not found' in unknown.stderr

    account_id = add_account(svc.login, allowedAuthenticationModes=['SharedKey'])
    keys_only = _start(svc, '--batch-account', ACCOUNT, '-g', RESOURCE_GROUP)
    assert keys_only.exit_code == 7, keys_only.stderr
    assert 'does not allow Microsoft Entra ID authentication (allowedAuthenticationModes: SharedKey)' in \
        keys_only.stderr and 'allowedAuthenticationModes AAD' in keys_only.stderr

    add_account(svc.login)
    arm.assignments = [(account_id, 'Azure Batch Account Reader')]  # may read the account, not run work on it
    reader = _start(svc, '--batch-account', ACCOUNT)  # found by its name alone (ARM lists the subscription's)
    assert reader.exit_code == 7, reader.stderr
    assert "may read Batch account '{}' but not run work on it".format(ACCOUNT) in reader.stderr
    assert "Assign the role Azure Batch Data Contributor: az role assignment create --role 'Azure Batch Data " \
        "Contributor'" in reader.stderr and account_id in reader.stderr
    assert not os.path.exists(os.path.join(svc.data_dir, 'service.json'))
    # Nothing was created at Batch, and no token (a JWT starts so) reached az's output.
    assert not svc.double.account.pools and not svc.double.account.jobs
    assert 'eyJ' not in unknown.stderr + keys_only.stderr + reader.stderr


def test_local_service_on_azure_batch_survives_sigkill(batch_user):  # pylint: disable=redefined-outer-name
    svc = batch_user
    az, data_dir, double = svc.az, svc.data_dir, svc.double
    started = svc.start('--pool-prefix', 'lab')
    info = started.json()
    assert (info['scheduler'], info['batchAccount'], info['poolAllocationMode']) == (
        'azure-batch', ACCOUNT, 'BatchService')
    assert svc.log().count(TOKEN_FROM_AZ) == 1
    assert info['cluster'] is None and 'is a Batch pool named lab-<workspace>-<cluster>-<hash>' in started.stderr
    group = ['-g', info['resourceGroup'], '-w', info['workspace']]
    created = az('batchai', 'cluster', 'create', '-n', 'c1', *group, '-s', 'Standard_D2s_v3', '-t', '2', '-u',
                 'batchai', '-p', 'not-used-0A!')
    assert created.exit_code == 0, created.stderr
    assert 'job slots on this machine' not in created.stderr  # a real pool: its VM size and nodes are used
    assert list(double.account.pools) == [pool_id('lab', 'local', 'c1', *LOCAL)]
    adds_path = '^/jobs/{}/addtaskcollection$'.format(batch_job_id('lab', 'local', 'c1', *LOCAL))

    gate = os.path.join(svc.directory, 'gate')
    write_sweep(svc.directory, 'sweep.yaml',
                'echo epoch=1 loss={{X}}; while [ ! -e ' + gate + ' ]; do sleep 0.1; done; echo done {{X}}', [2, 1])
    target = [*group, '-e', 'ab', '-n', 'kill']
    assert az('batchai', 'sweep', 'submit', *target, '--spec', 'sweep.yaml', '-c', 'c1').exit_code == 0
    wait_until(lambda: len(tasks(double)) == 2 and all(t.state == 'running' for t in tasks(double)),
               what='both tasks run')

    status = az('batchai', 'sweep', 'local', 'status', '--data-dir', data_dir, '-o', 'json')
    assert status.exit_code == 0, status.stderr
    assert [(p['cluster'], p['nodes']) for p in status.json()['pools']] == [('c1', 2)]
    table = az('batchai', 'sweep', 'local', 'status', '--data-dir', data_dir, '-o', 'table')
    rows = fits(table.stdout)  # one row per pool: its cluster, its nodes, its next evaluation (none: no autoscale)
    assert rows[0] == ['Running', 'Targeted', 'Runs', 'On', 'Cluster', 'Nodes', 'Next', 'Evaluation'], table.stdout
    assert rows[2] == ['True', 'True', ACCOUNT, '(BatchService)', 'c1', '2'], table.stdout

    svc.kill()  # the service dies; its tasks run on at Batch
    with open(gate, 'w', encoding='utf-8'):
        pass
    wait_until(lambda: all(t.state == 'completed' for t in tasks(double)), what='the tasks end meanwhile')
    adds = double.count('POST', adds_path)

    again = svc.start('--pool-prefix', 'lab').json()
    assert again['pid'] != info['pid']
    assert svc.log().count(TOKEN_FROM_AZ) == 2  # the new process got its own token from az
    waited = az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '-o', 'json')
    assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 2, waited.stdout + waited.stderr
    assert len(tasks(double)) == 2 and double.count('POST', adds_path) == adds
    ranked = az('batchai', 'sweep', 'metrics', *target, '--metric', 'loss', '--goal', 'min', '-o', 'json').json()
    rows = ranked.get('jobs', ranked) if isinstance(ranked, dict) else ranked
    assert [row['metric'] for row in rows] == [1, 2]

    stopped = az('batchai', 'sweep', 'local', 'stop', '--data-dir', data_dir, '-o', 'json')
    assert stopped.exit_code == 0, stopped.stderr
    assert 'Batch pools still holding nodes' in stopped.stderr and 'c1 (2 nodes)' in stopped.stderr
    assert [(p['cluster'], p['nodes']) for p in stopped.json()['pools']] == [('c1', 2)]
    assert json.loads(stopped.stdout)['stopped'] is True


def test_a_token_that_expires_mid_run_is_replaced_through_az(batch_service):  # pylint: disable=W0621
    """Batch stops accepting the service's token while a task runs (the double's expire_tokens(): a 401 from then
    on, as after the token's expiry): the service asks az for a new one and goes on; the sweep ends as usual."""
    svc = batch_service
    assert svc.az('batchai', 'cluster', 'create', '-n', 'tok', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1', '-u',
                  'batchai', '-p', 'not-used-0A!').exit_code == 0
    gate = os.path.join(svc.directory, 'gate')
    write_sweep(svc.directory, 't.yaml', 'echo loss={{X}}; while [ ! -e ' + gate + ' ]; do sleep 0.1; done', [1, 2])
    target = [*svc.group(), '-e', 'tok', '-n', 't']
    assert svc.az('batchai', 'sweep', 'submit', *target, '--spec', 't.yaml', '-c', 'tok').exit_code == 0
    wait_until(lambda: [t.state for t in tasks(svc.double)].count('running') == 1, what='a task runs')
    assert svc.log().count(TOKEN_FROM_AZ) == 1
    refused_before = sum(1 for r in svc.double.requests if r.status == 401)

    svc.double.expire_tokens()
    wait_until(lambda: svc.log().count(TOKEN_FROM_AZ) == 2, what='the service gets a new token from az')
    with open(gate, 'w', encoding='utf-8'):
        pass
    waited = svc.az('batchai', 'sweep', 'status', *target, '--wait', '--interval', '0.5', '-o', 'json')
    assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 2, waited.stdout + waited.stderr
    assert sum(1 for r in svc.double.requests if r.status == 401) > refused_before  # Batch did refuse the old one
    assert 'eyJ' not in svc.log()  # no token (a JWT starts so) in the service's log


def test_resize_and_auto_scale_reach_the_pool(batch_service):  # pylint: disable=redefined-outer-name
    """`az batchai cluster resize` and auto-scale (Batch AI's cluster update) on a service on Azure Batch change
    the pool; `az batchai list-usages` answers the account's quotas and what its pools hold; on the processes
    scheduler a resize changes the cluster's share of this machine (tests/localservice/test_cluster_resize.py)."""
    az, data_dir, double = batch_service.az, batch_service.data_dir, batch_service.double
    group = batch_service.group()
    assert az('batchai', 'cluster', 'create', '-n', 'r', *group, '-s', 'Standard_D2s_v3', '-t', '2', '-u', 'batchai',
              '-p', 'not-used-0A!').exit_code == 0
    pool = double.account.pools[pool_id('batchai', 'local', 'r', *LOCAL)]
    usages = az('batchai', 'list-usages', '-l', 'eastus', '-o', 'json')
    assert usages.exit_code == 0, usages.stderr
    usages = {u['name']['value']: (u['currentValue'], u['limit']) for u in usages.json()}
    # e2e_fixtures' account: 100 pools, 100 dedicated and 100 low-priority vCPUs; the pool: 2 nodes of 2 vCPUs.
    assert usages == {'Clusters': (len(double.account.pools), 100), 'Total Cluster Dedicated Regional vCPUs': (4, 100),
                      'Total Cluster LowPriority Regional vCPUs': (0, 100)}, usages
    resized = az('batchai', 'cluster', 'resize', '-n', 'r', *group, '-t', '0', '-o', 'json')
    assert resized.exit_code == 0, resized.stderr
    assert resized.json()['scaleSettings']['manual']['targetNodeCount'] == 0
    double.account.wait(lambda: pool.target['dedicated'] == 0 and not pool.autoscale)
    # `az batchai cluster auto-scale` itself fails in azure-cli 2.91 (its custom.py calls the SDK's
    # ClustersOperations.update without `parameters`: a TypeError before any request), so the same update goes
    # through the Batch AI SDK, as a fixed az would send it.
    from azure.mgmt.batchai import models
    from azext_batchai_sweep.core.service.client import local_batchai_client
    info = batch_service.info
    client = local_batchai_client(info['endpoint'], info['tokenFile'])
    scale = models.ScaleSettings(auto_scale=models.AutoScaleSettings(minimum_node_count=0, maximum_node_count=3))
    client.clusters.update(group[1], group[3], 'r', models.ClusterUpdateParameters(scale_settings=scale))
    double.account.wait(lambda: pool.autoscale and 'taskcompletion' in (pool.formula or ''))
    resized = az('batchai', 'cluster', 'resize', '-n', 'r', *group, '-t', '1')
    assert resized.exit_code == 0, resized.stderr
    double.account.wait(lambda: not pool.autoscale and pool.target['dedicated'] == 1)
    assert az('batchai', 'sweep', 'local', 'stop', '--data-dir', data_dir).exit_code == 0

    local = az('batchai', 'sweep', 'local', 'start', '--data-dir', data_dir + '-processes', '--slots', '1')
    assert local.exit_code == 0, local.stderr
    resized = az('batchai', 'cluster', 'resize', '-n', 'local', '-g', 'batchai-local', '-w', 'local', '-t', '1',
                 '-o', 'json')
    assert resized.exit_code == 0 and resized.json()['currentNodeCount'] == 1, resized.stderr
    assert az('batchai', 'sweep', 'local', 'stop', '--data-dir', data_dir + '-processes').exit_code == 0
