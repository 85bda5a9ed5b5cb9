"""`local start|status|stop --scheduler azure-batch` through the real az when the service is gone (issue 31 rule 3):
in Cloud Shell (detected as az does: ACC_CLOUD, AZUREPS_HOST_ENVIRONMENT) `local start` says the service stops with
the session and the pools drain by themselves, and where the data dir is; with the service killed (as Cloud Shell
ends it), `local status` and `local stop` still list the pools holding nodes, from the data dir's record of the
last reading, with its time. The user's path: az's offline login, `local start --scheduler azure-batch
--batch-account`, every Batch call through Prism (e2e_fixtures.py; the lifecycle double is TEST CODE)."""
import os

import pytest

from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import

pytestmark = [pytest.mark.az, pytest.mark.service]


def _local(svc, command):
    return svc.az('batchai', 'sweep', 'local', command, '--data-dir', svc.data_dir, '-o', 'json')


@pytest.mark.parametrize('cloud_shell', [{'ACC_CLOUD': 'PROD'}, {'AZUREPS_HOST_ENVIRONMENT': 'cloud-shell/1.0'}])
def test_pools_holding_nodes_are_listed_after_the_service_is_gone(batch_user, cloud_shell):  # pylint: disable=W0621
    svc = batch_user
    # The data dir is under HOME, as ~/.azure is in Cloud Shell (the only folder it keeps, in a session with a
    # storage account: its share mounted as ~/clouddrive).
    os.makedirs(os.path.join(svc.directory, 'clouddrive'), exist_ok=True)
    started = svc.start(env=dict(cloud_shell, HOME=svc.directory))
    assert 'Cloud Shell ends this service with the session' in started.stderr
    assert 'the pools drain to zero nodes by themselves' in started.stderr
    assert 'is under your persisted home' in started.stderr
    assert svc.az('batchai', 'cluster', 'create', '-n', 'held', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '2',
                  '-u', 'batchai', '-p', 'not-used-0A!').exit_code == 0
    wait_until(lambda: [(p['cluster'], p['nodes']) for p in _local(svc, 'status').json()['pools']] == [('held', 2)],
               what='the pool holds 2 nodes')

    svc.kill()  # Cloud Shell ends the session: the service goes, the pool stays
    status = _local(svc, 'status')
    assert status.exit_code == 0, status.stderr
    shown = status.json()
    assert shown['running'] is False and shown['poolsReadAt']
    assert [(p['cluster'], p['nodes']) for p in shown['pools']] == [('held', 2)]
    assert 'The service is not running: as it last read them' in status.stderr and '(2 nodes)' in status.stderr
    stopped = _local(svc, 'stop')
    assert stopped.exit_code == 0, stopped.stderr
    assert [(p['cluster'], p['nodes']) for p in stopped.json()['pools']] == [('held', 2)]
    assert 'az batch pool delete' in stopped.stderr


def test_outside_cloud_shell_local_start_says_nothing_of_it(batch_user):  # pylint: disable=W0621
    started = batch_user.start(env={'ACC_CLOUD': '', 'AZUREPS_HOST_ENVIRONMENT': ''})
    assert 'Cloud Shell' not in started.stderr
    status = _local(batch_user, 'status')
    assert status.exit_code == 0 and status.json()['pools'] == [], status.stderr


def test_an_ephemeral_cloud_shell_session_is_said_with_the_cleanup_commands(batch_user):  # pylint: disable=W0621
    """Cloud Shell without a storage account (no ~/clouddrive): `local start` says nothing outlives the session, not
    that the data dir under home does, and names the commands that delete what stays at Batch."""
    svc = batch_user
    started = svc.start('--pool-prefix', 'eph', env={'ACC_CLOUD': 'PROD', 'HOME': svc.directory})
    assert 'no storage account (an ephemeral session' in started.stderr, started.stderr
    assert 'is under your persisted home' not in started.stderr
    assert 'az batchai cluster delete -n CLUSTER' in started.stderr
    assert "starts_with(id, 'eph-')" in started.stderr
