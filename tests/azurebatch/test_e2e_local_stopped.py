"""`local start|status|stop --scheduler azure-batch` through the real az when the service is gone (issue 31 rule 3):
in Cloud Shell (detected as az does: ACC_CLOUD, AZUREPS_HOST_ENVIRONMENT) `local start` says the service stops with
the session and the pools drain by themselves, and where the data dir is; with the service killed (as Cloud Shell
ends it), `local status` and `local stop` still list the pools holding nodes, from the data dir's record of the
last reading, with its time. The account lookup, login and mapping are test stand-ins (e2e_fixtures.py)."""
import os
import signal

import pytest

from tests.azurebatch.e2e_fixtures import standin_az, wait_until  # pylint: disable=unused-import

pytestmark = [pytest.mark.az, pytest.mark.service]


def _killed(pid):
    if not os.path.exists('/proc/{}'.format(pid)):
        return True
    with open('/proc/{}/stat'.format(pid), encoding='ascii') as f:
        return f.read().split(')')[1].split()[0] == 'Z'


@pytest.mark.parametrize('cloud_shell', [{'ACC_CLOUD': 'PROD'}, {'AZUREPS_HOST_ENVIRONMENT': 'cloud-shell/1.0'}])
def test_pools_holding_nodes_are_listed_after_the_service_is_gone(standin_az, cloud_shell):  # pylint: disable=W0621
    az, data_dir = standin_az.az, standin_az.data_dir
    home = standin_az.directory  # the data dir is under it, as ~/.azure is in Cloud Shell
    start = ['batchai', 'sweep', 'local', 'start', '--data-dir', data_dir, '--scheduler', 'azure-batch',
             '--batch-account', 'testacct', '-o', 'json']
    started = az(*start, env=dict(cloud_shell, HOME=home))
    assert started.exit_code == 0, started.stderr
    assert 'Cloud Shell ends this service with the session' in started.stderr
    assert 'the pools drain to zero nodes by themselves' in started.stderr
    assert 'is under your persisted home' in started.stderr
    info = started.json()
    group = ['-g', info['resourceGroup'], '-w', info['workspace']]
    assert az('batchai', 'cluster', 'create', '-n', 'held', *group, '-s', 'Standard_D2s_v3', '-t', '2', '-u',
              'batchai', '-p', 'not-used-0A!').exit_code == 0
    wait_until(lambda: [(p['cluster'], p['nodes']) for p in az('batchai', 'sweep', 'local', 'status', '--data-dir',
                                                               data_dir, '-o', 'json').json()['pools']]
               == [('held', 2)], what='the pool holds 2 nodes')

    os.kill(info['pid'], signal.SIGKILL)  # Cloud Shell ends the session: the service goes, the pool stays
    wait_until(lambda: _killed(info['pid']), what='killed')
    status = az('batchai', 'sweep', 'local', 'status', '--data-dir', data_dir, '-o', 'json')
    assert status.exit_code == 0, status.stderr
    shown = status.json()
    assert shown['running'] is False and shown['poolsReadAt']
    assert [(p['cluster'], p['nodes']) for p in shown['pools']] == [('held', 2)]
    assert 'The service is not running: as it last read them' in status.stderr and '(2 nodes)' in status.stderr
    stopped = az('batchai', 'sweep', 'local', 'stop', '--data-dir', data_dir, '-o', 'json')
    assert stopped.exit_code == 0, stopped.stderr
    assert [(p['cluster'], p['nodes']) for p in stopped.json()['pools']] == [('held', 2)]
    assert 'az batch pool delete' in stopped.stderr


def test_outside_cloud_shell_local_start_says_nothing_of_it(standin_az):  # pylint: disable=W0621
    started = standin_az.az('batchai', 'sweep', 'local', 'start', '--data-dir', standin_az.data_dir, '--scheduler',
                            'azure-batch', '--batch-account', 'testacct', env={'ACC_CLOUD': '',
                                                                               'AZUREPS_HOST_ENVIRONMENT': ''})
    assert started.exit_code == 0, started.stderr
    assert 'Cloud Shell' not in started.stderr
    status = standin_az.az('batchai', 'sweep', 'local', 'status', '--data-dir', standin_az.data_dir, '-o', 'json')
    assert status.json()['pools'] == []
