"""pools.py's rules at their edges (what mutation testing of pools.py found unchecked): the notes on what a pool
leaves out, a cluster's most nodes, the mounts' options and paths, and each refusal's words."""
import os
import subprocess

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import pools
from azext_batchai_sweep.localservice.schedulers.azurebatch.errors import Refusal
from tests.azurebatch.test_pools import BATCH_SERVICE, FILE_URL, IMAGE, TODAY, cluster

SSH_NOTE = ('userAccountSettings.adminUserSshPublicKey: a Batch pool user has no SSH key; to log in to a node, add one '
            'there: az batch node user create --pool-id POOL --node-id NODE --name {} --ssh-public-key KEY.')
NO_PASSWORD_NOTE = ("userAccountSettings.adminUserName {}: without adminUserPassword the pool gets no such user (jobs "
                    "run as the pool's admin auto-user).")


@pytest.mark.parametrize('users, notes', [
    ({'adminUserName': 'me', 'adminUserSshPublicKey': 'ssh-rsa AAA'},
     [SSH_NOTE.format('me'), NO_PASSWORD_NOTE.format('me')]),
    ({'adminUserName': 'me', 'adminUserPassword': 'pw', 'adminUserSshPublicKey': 'ssh-rsa AAA'},
     [SSH_NOTE.format('me')]),
    ({'adminUserSshPublicKey': 'ssh-rsa AAA'}, [SSH_NOTE.format('NAME')]),
    ({'adminUserName': 'admin2'}, [NO_PASSWORD_NOTE.format('admin2')]),
    ({'adminUserName': 'me', 'adminUserPassword': 'pw'}, []),
    ({}, []),
])
def test_what_a_pool_leaves_out_of_the_users_is_said_with_the_command_that_adds_it(users, notes):
    assert pools.pool_notes(cluster(userAccountSettings=users)) == notes


@pytest.mark.parametrize('scale, most', [
    ({'manual': {'targetNodeCount': 3}}, 3), ({'manual': {'targetNodeCount': 0}}, 0),
    ({'autoScale': {'minimumNodeCount': 1, 'maximumNodeCount': 7}}, 7), ({'autoScale': {'minimumNodeCount': 2}}, 0),
    ({}, 0), (None, 0),
])
def test_a_clusters_most_nodes_is_its_manual_target_or_its_autoscale_maximum(scale, most):
    props = cluster(scaleSettings=scale)
    assert pools.max_nodes(props) == most


def _mounts(**volumes):
    return pools.pool_body('p1', cluster(nodeSetup={'mountVolumes': volumes}), BATCH_SERVICE, IMAGE, False,
                           TODAY)['mountConfiguration']


@pytest.mark.parametrize('modes, expected', [
    ({}, ('0777', '0777')),  # Batch AI's defaults
    ({'directoryMode': '0755'}, ('0755', '0777')),
    ({'fileMode': '0644'}, ('0777', '0644')),
    ({'directoryMode': '0700', 'fileMode': '0600'}, ('0700', '0600')),
])
def test_a_file_share_mounts_smb3_with_the_clusters_modes_inodes_and_symlinks(modes, expected):
    share = dict({'accountName': 'acct', 'azureFileUrl': FILE_URL, 'relativeMountPath': '/afs/',
                  'credentials': {'accountKey': 'K=='}}, **modes)
    config = _mounts(azureFileShares=[share])[0]['azureFileShareConfiguration']
    assert config['relativeMountPath'] == 'afs'  # under $AZ_BATCH_NODE_MOUNTS_DIR, whatever slashes it was given
    assert config['mountOptions'].startswith('-o ')
    options = config['mountOptions'][len('-o '):].split(',')
    assert sorted(options) == sorted(['vers=3.0', 'dir_mode=' + expected[0], 'file_mode=' + expected[1],
                                      'serverino', 'mfsymlinks'])


def test_a_blob_container_mounts_under_its_path_with_the_clusters_options_only_when_given():
    blob = {'accountName': 'acct', 'containerName': 'data', 'relativeMountPath': '/bfs/',
            'credentials': {'accountKey': 'K=='}}
    config = _mounts(azureBlobFileSystems=[blob])[0]['azureBlobFileSystemConfiguration']
    assert config == {'accountName': 'acct', 'containerName': 'data', 'accountKey': 'K==', 'relativeMountPath': 'bfs'}


@pytest.mark.parametrize('kind, ref', [
    ('azureFileShares', {'accountName': 'a', 'azureFileUrl': FILE_URL, 'relativeMountPath': 'afs'}),
    ('azureBlobFileSystems', {'accountName': 'a', 'containerName': 'c', 'relativeMountPath': 'afs'}),
])
def test_a_mount_without_a_usable_key_is_refused_naming_its_kind_path_and_fix(kind, ref):
    with pytest.raises(Refusal) as refused:
        _mounts(**{kind: [dict(ref, credentials={})]})
    assert refused.value.code == 'InvalidRequestContent'
    assert refused.value.reason == ('nodeSetup.mountVolumes.{} afs: Azure Batch mounts storage with the account '
                                    'key; give credentials.accountKey.'.format(kind))
    with pytest.raises(Refusal) as refused:
        _mounts(**{kind: [dict(ref, credentials={'accountKeySecretReference': {'secretUrl': 'https://kv/s'}})]})
    assert refused.value.code == 'UnsupportedSecretReference'
    assert refused.value.reason == ('nodeSetup.mountVolumes.{} afs: a KeyVault secret reference cannot be given to '
                                    'Azure Batch; give credentials.accountKey (it is sent only to Batch, which needs '
                                    'it on every node).'.format(kind))


def _expand(word, **env):
    """What bash makes of a word (a start task's command line is read by bash on the node)."""
    done = subprocess.run(['bash', '-c', 'printf %s ' + word], env=dict(env, PATH=os.environ['PATH']),
                          capture_output=True, text=True, check=True)
    return done.stdout


@pytest.mark.parametrize('path, expanded', [
    ('$AZ_BATCHAI_MOUNT_ROOT/afs/setup logs', '/m/afs/setup logs'),
    ('${AZ_BATCHAI_MOUNT_ROOT}/afs', '/m/afs'),
    ('logs/$AZ_BATCHAI_MOUNT_ROOT', 'logs//m'),  # literal text first, a variable last
    ("a 'quoted' $HOME-x ${HOME}y", "a 'quoted' /h-x /hy"),  # another variable keeps its name
    ('/var/log/setup', '/var/log/setup'), ('', ''),
])
def test_a_setup_path_is_one_bash_word_expanding_its_variables_only(path, expanded):
    assert _expand(pools.shell_path(path), AZ_BATCH_NODE_MOUNTS_DIR='/m', HOME='/h') == expanded


@pytest.mark.parametrize('prefix, suffix, folder', [
    ('{root}/afs/logs/', None, 'afs/logs'),
    ('{root}/afs/logsX', 'Xsub/rgX/', 'afs/logsX/Xsub/rgX'),
    ('{root}/afs', '/sub/rg/c1/', 'afs/sub/rg/c1'),
])
def test_the_setup_tasks_output_lands_in_its_prefix_and_suffix_whatever_their_slashes(tmp_path, prefix, suffix,
                                                                                      folder):
    """The start task run by bash as on a node, with an absolute prefix too (never made relative)."""
    setup = {'commandLine': 'echo out; echo err >&2', 'stdOutErrPathPrefix': prefix.format(root=tmp_path),
             'environmentVariables': [{'name': 'EMPTY'}], 'secrets': [{'name': 'S', 'value': ''}]}
    if suffix:
        setup['stdOutErrPathSuffix'] = suffix
    task = pools.start_task(setup)
    assert task['environmentSettings'] == [{'name': 'EMPTY', 'value': ''}, {'name': 'S', 'value': ''}]
    env = {'PATH': os.environ['PATH'], 'AZ_BATCH_NODE_MOUNTS_DIR': str(tmp_path / 'elsewhere'),
           'AZ_BATCH_NODE_ID': 'tvm-1'}
    subprocess.run(['bash', '-c', task['commandLine']], env=env, check=True, cwd=tmp_path / '..')
    out = tmp_path / folder / 'tvm-1'
    assert (out / 'stdout.txt').read_text() == 'out\n' and (out / 'stderr.txt').read_text() == 'err\n'


def test_a_failing_setup_task_is_retried_once_then_leaves_its_node_unusable():
    """Batch retries a start task maxTaskRetryCount times; with waitForSuccess a node whose start task failed takes
    no task. One retry covers a passing fault (a package mirror's hiccup) without holding a node for long."""
    task = pools.start_task({'commandLine': 'true', 'stdOutErrPathPrefix': '/logs'})
    assert task['maxTaskRetryCount'] == 1 and task['waitForSuccess'] is True


@pytest.mark.parametrize('volumes, reason', [
    ({'fileServers': [{'fileServer': {'id': 'x'}, 'relativeMountPath': 'nfs'}]},
     'nodeSetup.mountVolumes.fileServers: Batch AI file servers do not exist on Azure Batch; put the data on an Azure '
     'file share (azureFileShares).'),
    ({'unmanagedFileSystems': [{'mountCommand': 'mount -t nfs x:/y', 'relativeMountPath': 'u'}]},
     'nodeSetup.mountVolumes.unmanagedFileSystems: a mount command cannot be given to Azure Batch; use '
     'azureFileShares or azureBlobFileSystems.'),
])
def test_what_batch_cannot_mount_is_refused_by_the_cluster_check_before_any_look_up(volumes, reason):
    """check_cluster runs before the quota and image look-ups (scheduler's cluster create): it alone must refuse."""
    with pytest.raises(Refusal) as refused:
        pools.check_cluster(cluster(nodeSetup={'mountVolumes': volumes}))
    assert refused.value.code == 'UnsupportedMountVolume' and refused.value.reason == reason
    pools.check_cluster(cluster(nodeSetup={'mountVolumes': {}}))  # nothing to mount: nothing refused
    pools.check_cluster(cluster())


@pytest.mark.parametrize('low, high, initial', [(5, 2, 0), (-1, 2, 0), (0, 2, -3)])
def test_impossible_autoscale_counts_are_refused_naming_each_count(low, high, initial):
    with pytest.raises(Refusal) as refused:
        pools.autoscale_formula(low, high, initial, False)
    assert refused.value.code == 'InvalidScaleSettings'
    assert refused.value.reason == ('scaleSettings.autoScale needs 0 <= minimumNodeCount ({}) <= maximumNodeCount ({}) '
                                    'and a non-negative initialNodeCount ({}).'.format(low, high, initial))


@pytest.mark.parametrize('auto, expected', [
    ({'minimumNodeCount': 1, 'maximumNodeCount': 5, 'initialNodeCount': 3}, (1, 5, 3)),
    ({'maximumNodeCount': 5}, (0, 5, 0)),  # Batch AI's defaults: no minimum, start empty
    ({'minimumNodeCount': 2, 'maximumNodeCount': 2}, (2, 2, 0)),
    ({}, (0, 0, 0)),
])
def test_an_autoscale_pool_reads_the_clusters_minimum_maximum_and_initial_counts(auto, expected):
    body = pools.pool_body('p1', cluster(scaleSettings={'autoScale': auto}), BATCH_SERVICE, IMAGE, False, TODAY)
    found = pools.autoscale_parameters(body['autoScaleFormula'])
    assert (found['min'], found['max'], found['initial']) == expected


def test_a_manual_cluster_of_zero_nodes_is_an_empty_pool():
    body = pools.pool_body('p1', cluster(scaleSettings={'manual': {'targetNodeCount': 0}}), BATCH_SERVICE, IMAGE,
                           False, TODAY)
    assert body['enableAutoScale'] is False and body['targetDedicatedNodes'] == 0


def test_a_pool_judged_today_and_made_without_saying_containers_has_none():
    body = pools.pool_body('p1', cluster(vmPriority='lowpriority'), BATCH_SERVICE, IMAGE, False)
    assert pools.autoscale_parameters(body['autoScaleFormula'])['target'] == '$TargetLowPriorityNodes'  # Spot now
    assert 'containerConfiguration' not in body['virtualMachineConfiguration']


@pytest.mark.parametrize('given, path', [('/Xdata/', 'Xdata'), ('data_X', 'data_X'), ('a/b/', 'a/b'), ('x', 'x')])
def test_a_mount_path_keeps_every_character_but_its_outer_slashes(given, path):
    key = {'credentials': {'accountKey': 'K=='}, 'relativeMountPath': given}
    share, blob = _mounts(azureFileShares=[dict(key, accountName='a', azureFileUrl=FILE_URL)],
                          azureBlobFileSystems=[dict(key, accountName='a', containerName='c')])
    assert share['azureFileShareConfiguration']['relativeMountPath'] == path
    assert blob['azureBlobFileSystemConfiguration']['relativeMountPath'] == path
