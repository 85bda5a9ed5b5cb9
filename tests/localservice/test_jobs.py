"""Job execution: scheduling order on slots, terminate, maxWallClockTime, the recipe job, files and download links."""
import os
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.mgmt.batchai import models

from azext_batchai_sweep.localservice import auth
from azext_batchai_sweep.localservice.api import downloads
from tests.localservice.conftest import job_params, job_pids, process_alive, wait_state
from tests.localservice.test_job_launch import need_mpirun

RECIPE_SCRIPT = '''import os, sys
print('args', sys.argv[1:])
print('job', os.environ['AZ_BATCHAI_JOB_NAME'], 'secret', os.environ['SECRET'] == 'hidden')
out = sys.argv[sys.argv.index('-o') + 1]
with open(os.path.join(out, 'model.txt'), 'w') as f:
    f.write('trained')
'''


def _read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def test_queue_order_priority_then_submission(client, local_service):
    rg, ws = local_service.resource_group, local_service.workspace
    client.clusters.begin_create(rg, ws, 'one', models.ClusterCreateParameters(
        vm_size='LOCAL', user_account_settings=models.UserAccountSettings(admin_user_name='me'),
        scale_settings=models.ScaleSettings(manual=models.ManualScaleSettings(target_node_count=1)))).result()
    cluster_id = local_service.cluster_id.rsplit('/', 1)[0] + '/one'
    client.experiments.begin_create(rg, ws, 'order').result()
    client.jobs.begin_create(rg, ws, 'order', 'blocker', job_params(local_service, 'sleep 0.5', cluster_id=cluster_id),
                             polling=False)
    wait_state(client, local_service, 'order', 'blocker', ('running',))
    submitted = [('low1', 'low'), ('normal1', 'normal'), ('high1', 'high'), ('normal2', 'normal')]
    for name, priority in submitted:
        client.jobs.begin_create(rg, ws, 'order', name, job_params(
            local_service, 'sleep 0.05', cluster_id=cluster_id, scheduling_priority=priority), polling=False)
    assert client.jobs.get(rg, ws, 'order', 'low1').execution_state == 'queued'
    assert client.clusters.get(rg, ws, 'one').node_state_counts.running_node_count == 1
    jobs = [wait_state(client, local_service, 'order', name) for name, _ in submitted]
    started = [j.name for j in sorted(jobs, key=lambda j: j.execution_info.start_time)]
    assert started == ['high1', 'normal1', 'normal2', 'low1']
    assert all(j.execution_state == 'succeeded' for j in jobs)


def test_terminate_kills_the_process_group(client, local_service, tmp_path):
    rg, ws = local_service.resource_group, local_service.workspace
    client.experiments.begin_create(rg, ws, 'term').result()
    pid_file = tmp_path / 'child.pid'
    command = 'sleep 60 & echo $! > {}; wait'.format(pid_file)
    client.jobs.begin_create(rg, ws, 'term', 'long', job_params(local_service, command), polling=False)
    wait_state(client, local_service, 'term', 'long', ('running',))
    (child,) = job_pids(pid_file)
    client.jobs.begin_terminate(rg, ws, 'term', 'long').result()
    job = client.jobs.get(rg, ws, 'term', 'long')
    assert job.execution_state == 'failed'
    assert [e.code for e in job.execution_info.errors] == ['JobTerminated']
    deadline = time.monotonic() + 5
    while process_alive(child):
        assert time.monotonic() < deadline, 'the job\'s background child survived terminate'
        time.sleep(0.05)


def test_terminate_of_a_queued_job_fails_it_before_it_runs(client, local_service, tmp_path):
    """A job still queued (its one-node cluster busy) fails at once with JobTerminated, and never runs after."""
    rg, ws = local_service.resource_group, local_service.workspace
    client.clusters.begin_create(rg, ws, 'busy', models.ClusterCreateParameters(
        vm_size='LOCAL', user_account_settings=models.UserAccountSettings(admin_user_name='me'),
        scale_settings=models.ScaleSettings(manual=models.ManualScaleSettings(target_node_count=1)))).result()
    cluster_id = local_service.cluster_id.rsplit('/', 1)[0] + '/busy'
    client.experiments.begin_create(rg, ws, 'termq').result()
    client.jobs.begin_create(rg, ws, 'termq', 'blocker', job_params(local_service, 'sleep 0.5', cluster_id=cluster_id),
                             polling=False)
    wait_state(client, local_service, 'termq', 'blocker', ('running',))
    ran = tmp_path / 'ran'
    client.jobs.begin_create(rg, ws, 'termq', 'queued', job_params(
        local_service, 'touch {}'.format(ran), cluster_id=cluster_id), polling=False)
    assert client.jobs.get(rg, ws, 'termq', 'queued').execution_state == 'queued'
    client.jobs.begin_terminate(rg, ws, 'termq', 'queued').result()
    job = client.jobs.get(rg, ws, 'termq', 'queued')
    assert job.execution_state == 'failed'
    assert [e.code for e in job.execution_info.errors] == ['JobTerminated']
    assert wait_state(client, local_service, 'termq', 'blocker').execution_state == 'succeeded'
    time.sleep(0.5)  # the slot is free: a job still queued would have started by now
    assert client.jobs.get(rg, ws, 'termq', 'queued').execution_state == 'failed'
    assert not ran.exists(), 'the terminated job ran once the cluster was free'


def test_max_wall_clock_time_is_enforced(client, local_service):
    rg, ws = local_service.resource_group, local_service.workspace
    client.experiments.begin_create(rg, ws, 'wall').result()
    params = job_params(local_service, 'sleep 30', constraints=models.JobBasePropertiesConstraints(
        max_wall_clock_time='PT0.5S'))
    client.jobs.begin_create(rg, ws, 'wall', 'slow', params, polling=False)
    job = wait_state(client, local_service, 'wall', 'slow', timeout=10)
    assert job.execution_state == 'failed'
    assert [e.code for e in job.execution_info.errors] == ['MaxWallClockTimeExceeded']
    assert job.constraints.max_wall_clock_time.total_seconds() == 0.5


def test_recipe_job_runs_unchanged_but_the_account(client, local_service):
    """The Chainer recipe job of the seed (2 nodes, file shares, output dir, container) runs on the host (through
    mpirun over its 2 slots, as Batch AI ran Chainer)."""
    need_mpirun()
    rg, ws = local_service.resource_group, local_service.workspace
    account = 'recipestorage'
    scripts = os.path.join(local_service.data_dir, 'storage', account, 'shares', 'scripts', 'chainer')
    os.makedirs(scripts, exist_ok=True)
    with open(os.path.join(scripts, 'train_mnist.py'), 'w', encoding='utf-8') as f:
        f.write(RECIPE_SCRIPT)
    client.experiments.begin_create(rg, ws, 'chainer_experiment').result()
    share = 'https://{}.file.core.windows.net/'.format(account)
    params = models.JobCreateParameters(
        cluster=models.ResourceId(id=local_service.cluster_id), node_count=2,
        chainer_settings=models.ChainerSettings(
            python_script_file_path='$AZ_BATCHAI_JOB_MOUNT_ROOT/scripts/chainer/train_mnist.py',
            command_line_args='-g -o $AZ_BATCHAI_OUTPUT_MODEL'),
        std_out_err_path_prefix='$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
        mount_volumes=models.MountVolumes(azure_file_shares=[
            models.AzureFileShareReference(account_name=account, azure_file_url=share + 'logs',
                                           relative_mount_path='logs',
                                           credentials=models.AzureStorageCredentialsInfo(account_key='k')),
            models.AzureFileShareReference(account_name=account, azure_file_url=share + 'scripts',
                                           relative_mount_path='scripts',
                                           credentials=models.AzureStorageCredentialsInfo(account_key='k'))]),
        output_directories=[models.OutputDirectory(id='MODEL', path_prefix='$AZ_BATCHAI_JOB_MOUNT_ROOT/logs')],
        secrets=[models.EnvironmentVariableWithSecretValue(name='SECRET', value='hidden')],
        container_settings=models.ContainerSettings(image_source_registry=models.ImageSourceRegistry(
            image='batchaitraining/chainermn:openMPI')))
    job = client.jobs.begin_create(rg, ws, 'chainer_experiment', 'distributed_chainer', params).result()
    assert job.tool_type == 'chainer'
    job = wait_state(client, local_service, 'chainer_experiment', 'distributed_chainer')
    logs = os.path.join(local_service.data_dir, 'storage', account, 'shares', 'logs',
                        job.job_output_directory_path_segment)
    assert job.execution_state == 'succeeded', _read(os.path.join(logs, 'stdouterr', 'stderr.txt'))
    stdout = _read(os.path.join(logs, 'stdouterr', 'stdout.txt'))
    # $AZ_BATCHAI_OUTPUT_MODEL goes through the job's mount of the share, so the file lands in the share
    assert '/{}/outputs'.format(job.job_output_directory_path_segment) in stdout
    assert _read(os.path.join(logs, 'outputs', 'model.txt')) == 'trained'
    assert 'job distributed_chainer secret True' in stdout
    assert 'containerSettings ignored' in _read(os.path.join(logs, 'stdouterr', 'stderr.txt'))
    [model] = client.jobs.list_output_files(rg, ws, 'chainer_experiment', 'distributed_chainer',
                                            models.JobsListOutputFilesOptions(outputdirectoryid='MODEL'))
    assert model.name == 'model.txt'
    with urllib.request.urlopen(model.download_url) as response:
        assert response.read() == b'trained'


def test_download_links_range_expiry_and_escape(client, local_service):
    rg, ws = local_service.resource_group, local_service.workspace
    client.experiments.begin_create(rg, ws, 'links').result()
    client.jobs.begin_create(rg, ws, 'links', 'log', job_params(local_service, 'printf 0123456789'),
                             polling=False)
    wait_state(client, local_service, 'links', 'log')
    files = {f.name: f for f in client.jobs.list_output_files(rg, ws, 'links', 'log', models.JobsListOutputFilesOptions(
        outputdirectoryid='stdouterr', linkexpiryinminutes=5))}
    url = files['stdout.txt'].download_url
    request = urllib.request.Request(url, headers={'Range': 'bytes=4-'})
    with urllib.request.urlopen(request) as response:
        assert response.status == 206 and response.read() == b'456789'
        assert response.headers['Content-Range'] == 'bytes 4-9/10'
    with pytest.raises(urllib.error.HTTPError) as beyond:
        urllib.request.urlopen(urllib.request.Request(url, headers={'Range': 'bytes=10-'}))
    assert beyond.value.code == 416
    with pytest.raises(urllib.error.HTTPError) as tampered:
        urllib.request.urlopen(url.replace('sig=', 'sig=0'))
    assert tampered.value.code == 403
    split = urllib.parse.urlsplit(url)
    relpath = urllib.parse.unquote(split.path[len('/download/'):])
    key = bytes.fromhex(open(os.path.join(local_service.data_dir, 'link.key')).read().strip())
    expired = dict(urllib.parse.parse_qsl(auth.sign_link(key, relpath, 5, now=time.time() - 3600)))
    assert downloads.serve(local_service.data_dir, key, 'GET', split.path, expired, None)[0] == 403
    escape = '../' + os.path.basename(local_service.data_dir) + '-other/x'
    signed = dict(urllib.parse.parse_qsl(auth.sign_link(key, escape, 5)))
    assert downloads.serve(local_service.data_dir, key, 'GET', '/download/' + escape, signed, None)[0] == 403


def test_delete_experiment_kills_its_running_jobs(client, local_service, tmp_path):
    rg, ws = local_service.resource_group, local_service.workspace
    client.experiments.begin_create(rg, ws, 'doomed').result()
    pid_file = tmp_path / 'pid'
    client.jobs.begin_create(rg, ws, 'doomed', 'busy', job_params(
        local_service, 'echo $$ > {}; sleep 60'.format(pid_file)), polling=False)
    wait_state(client, local_service, 'doomed', 'busy', ('running',))
    (pid,) = job_pids(pid_file)
    client.experiments.begin_delete(rg, ws, 'doomed').result()
    assert not process_alive(pid)
    with pytest.raises(ResourceNotFoundError):
        client.jobs.get(rg, ws, 'doomed', 'busy')
    assert 'doomed' not in [e.name for e in client.experiments.list_by_workspace(rg, ws)]


def test_files_endpoint_serves_the_files_api(local_service):
    with pytest.raises(urllib.error.HTTPError) as unsigned:
        urllib.request.urlopen(local_service.files_endpoint + '/acct?restype=share&comp=list')
    assert unsigned.value.code not in (501, 500)  # wired to files_api.py, which wants Shared Key


def test_a_download_link_with_a_non_ascii_signature_is_403(local_service):
    url = '{}/download/token?se=9999999999&sig=%C3%A9'.format(local_service.endpoint)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=10)
    assert refused.value.code == 403
    assert not auth.verify_link(b'k' * 32, 'token', '9999999999', '\u00e9')


def test_no_link_reaches_the_services_own_secrets(client, local_service):
    # A job (it runs as the service's user) links the token and the keys into its output: listOutputFiles gives them
    # no download link, and a link signed for them anyway is refused. The job's own files still get links.
    rg, ws = local_service.resource_group, local_service.workspace
    client.experiments.begin_create(rg, ws, 'secretlinks').result()
    command = ('ln -s {0}/token $AZ_BATCHAI_STDOUTERR_DIR/t; ln -s {0}/storage.key $AZ_BATCHAI_STDOUTERR_DIR/k; '
               'ln -s {0}/service.db $AZ_BATCHAI_STDOUTERR_DIR/db; echo mine').format(local_service.data_dir)
    client.jobs.begin_create(rg, ws, 'secretlinks', 'linker', job_params(local_service, command), polling=False)
    assert wait_state(client, local_service, 'secretlinks', 'linker').execution_state == 'succeeded'
    files = {f.name: f for f in client.jobs.list_output_files(rg, ws, 'secretlinks', 'linker',
                                                              models.JobsListOutputFilesOptions(
                                                                  outputdirectoryid='stdouterr'))}
    assert {'t', 'k', 'db', 'stdout.txt'} <= set(files)
    assert files['stdout.txt'].download_url
    assert not files['t'].download_url and not files['k'].download_url and not files['db'].download_url
    key = bytes.fromhex(open(os.path.join(local_service.data_dir, 'link.key')).read().strip())
    for name in ('token', 'storage.key', 'link.key', 'service.db', 'clusters', 'storage'):
        signed = dict(urllib.parse.parse_qsl(auth.sign_link(key, name, 5)))
        assert downloads.serve(local_service.data_dir, key, 'GET', '/download/' + name, signed, None)[0] == 403
