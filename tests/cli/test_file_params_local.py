"""FILE parameters on the local service, through the real az executable: the seed README's FILE example.

The share `example_share` of account `acct` gets `/other/a.txt`, `/b.txt`, `/data/c.txt` and `/data/d.txt`, once
by copying into the data dir and once by uploading with azure-storage-file-share to the service's Files endpoint
(the two ways docs/local-storage.md documents). With the commands pointed at the service, the sweep's FILE
parameter lists that share through the Files endpoint with the local key, with nothing else set up by the user.
"""
import json
import os
import shutil

import pytest

from tests.fixtures_az import AzRunner, service_env

pytestmark = [pytest.mark.az, pytest.mark.service]

ACCOUNT, SHARE = 'acct', 'example-share'
FILES = {'other/a.txt': 'content of a', 'b.txt': 'content of b', 'data/c.txt': 'content of c',
         'data/d.txt': 'content of d'}
# The seed README's example, with the FILE storage type.
PARAMETER = {'name': 'DATA_INPUT', 'type': 'file', 'storageType': 'FILE', 'storageAccountName': ACCOUNT,
             'fileshare': SHARE, 'mountPath': 'afs', 'directory': 'data'}


def local_key(service):
    with open(os.path.join(service.data_dir, 'storage.key'), encoding='ascii') as f:
        return f.read().strip()


def copy_into_data_dir(service):
    root = os.path.join(service.data_dir, 'storage', ACCOUNT, 'shares', SHARE)
    for path, text in FILES.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), 'w', encoding='utf-8') as f:
            f.write(text + '\n')


def upload_with_sdk(service):
    from azure.storage.fileshare import ShareServiceClient  # pylint: disable=import-outside-toplevel
    client = ShareServiceClient('{}/{}'.format(service.files_endpoint, ACCOUNT),
                                credential={'account_name': ACCOUNT, 'account_key': local_key(service)})
    share = client.get_share_client(SHARE)
    share.create_share()
    for directory in ('other', 'data'):
        share.get_directory_client(directory).create_directory()
    for path, text in FILES.items():
        share.get_file_client(path).upload_file((text + '\n').encode('utf-8'))


@pytest.fixture(params=[copy_into_data_dir, upload_with_sdk], ids=['copied', 'uploaded'])
def example_share(request, local_service):
    """The share, filled one of the two documented ways; removed afterwards (the service is the session's)."""
    root = os.path.join(local_service.data_dir, 'storage', ACCOUNT, 'shares', SHARE)
    shutil.rmtree(root, ignore_errors=True)
    request.param(local_service)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def local_az(local_service, az_config_dir, tmp_path):
    return AzRunner(az_config_dir, env=service_env(local_service), cwd=str(tmp_path))


def write_sweep(directory, name, parameter, job):
    path = os.path.join(str(directory), name)
    with open(path, 'w', encoding='utf-8') as f:
        json.dump({'jobNamePrefix': 'files', 'parameters': [parameter], 'job': job}, f)
    return path


def test_create_lists_the_files_of_the_local_share(example_share, local_az, local_service, tmp_path):
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
           'customToolkitSettings': {'commandLine': 'cat {{DATA_INPUT}}'}}
    write_sweep(tmp_path, 'sweep.json', PARAMETER, job)
    common = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'files', '-n', 'readme']
    created = local_az('batchai', 'sweep', 'create', *common, '--spec', 'sweep.json', '-c', local_service.cluster,
                       '-o', 'json', '--debug')
    assert created.exit_code == 0, created.stderr[-3000:]
    jobs = created.json()['jobs']
    assert sorted(job['parameters']['DATA_INPUT'] for job in jobs) == [
        '$AZ_BATCHAI_MOUNT_ROOT/afs/data/c.txt', '$AZ_BATCHAI_MOUNT_ROOT/afs/data/d.txt']
    # The listing went to the service's Files endpoint; the key appears nowhere, not even in --debug output.
    assert local_service.files_endpoint in created.stderr
    key = local_key(local_service)
    assert key not in created.stdout and key not in created.stderr
    with open(created.json()['planFile'], encoding='utf-8') as f:
        assert key not in f.read()


def test_submitted_jobs_read_their_file_from_the_mounted_share(example_share, local_az, local_service, tmp_path):
    # The job mounts the share itself (mountMethod JOB): the values are under $AZ_BATCHAI_JOB_MOUNT_ROOT.
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
           'mountVolumes': {'azureFileShares': [{'azureFileUrl': 'https://{}.file.core.windows.net/{}'.format(
               ACCOUNT, SHARE), 'relativeMountPath': 'afs'}]},
           'customToolkitSettings': {'commandLine': 'cat {{DATA_INPUT}}'}}
    write_sweep(tmp_path, 'sweep.json', dict(PARAMETER, mountMethod='JOB'), job)
    experiment = 'files-' + os.path.basename(example_share) + '-' + str(os.getpid())
    common = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', experiment, '-n', 'mounted']
    submitted = local_az('batchai', 'sweep', 'submit', *common, '--spec', 'sweep.json', '-c', local_service.cluster,
                         '--wait', '--interval', '0.2', '-o', 'json')
    assert submitted.exit_code == 0, submitted.stderr[-3000:]
    assert submitted.json()['counts']['succeeded'] == 2

    status = local_az('batchai', 'sweep', 'status', *common, '-o', 'json').json()
    values = {row['parameters']['DATA_INPUT']: row['name'] for row in status['jobs']}
    assert sorted(values) == ['$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/data/c.txt', '$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/data/d.txt']
    for value, name in values.items():
        tail = local_az('batchai', 'sweep', 'status', *common, '--job', name, '--tail', '1', '-o', 'tsv')
        assert tail.exit_code == 0, tail.stderr[-2000:]
        assert tail.stdout == FILES['data/' + os.path.basename(value)] + '\n'


def test_environment_credentials_are_not_used_for_a_local_share(example_share, local_az, local_service, tmp_path):
    """AZURE_STORAGE_KEY is for Azure: a local sweep still lists the local share (and says the variable is ignored)."""
    job = {'nodeCount': 1, 'customToolkitSettings': {'commandLine': 'cat {{DATA_INPUT}}'}}
    write_sweep(tmp_path, 'sweep.json', PARAMETER, job)
    common = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'files', '-n', 'env']
    created = local_az('batchai', 'sweep', 'create', *common, '--spec', 'sweep.json', '--plan-only',
                       '--query', 'jobCount', env={'AZURE_STORAGE_KEY': 'bm90IHRoZSBrZXk='})
    assert created.exit_code == 0, created.stderr[-3000:]
    assert created.json() == 2
    assert 'ignoring AZURE_STORAGE_KEY' in created.stderr


def test_the_readme_share_name_is_refused_with_azure_naming_rule(local_az, local_service, tmp_path):
    """The seed README writes `example_share`, which Azure (and so the local service) refuses: "_" is not allowed."""
    job = {'nodeCount': 1, 'customToolkitSettings': {'commandLine': 'cat {{DATA_INPUT}}'}}
    write_sweep(tmp_path, 'sweep.json', dict(PARAMETER, fileshare='example_share'), job)
    common = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'files', '-n', 'bad']
    created = local_az('batchai', 'sweep', 'create', *common, '--spec', 'sweep.json', '--plan-only')
    assert created.exit_code == 1
    assert 'InvalidResourceName' in created.stderr and 'no "_"' in created.stderr
    assert 'Traceback' not in created.stderr
