"""Blob storage on the local service through the real az executable: `local show-connection-string` points
`az storage container|blob` at the service's Blob endpoint; what they upload is in the container folder jobs mount
(azureBlobFileSystems), and a sweep's BLOB parameter lists it there.

The container `example-container` of account `blobacct` gets the seed README's files (`other/a.txt`, `b.txt`,
`data/c.txt`, `data/d.txt`) with `az storage blob upload-batch`; the sweep's BLOB parameter (directory `data`) plans
one job per file, and each job, which mounts the container, prints its file.
"""
import json
import os
import shutil

import pytest

from tests.fixtures_az import AzRunner, service_env

pytestmark = [pytest.mark.az, pytest.mark.service]

ACCOUNT, CONTAINER = 'blobacct', 'example-container'
FILES = {'other/a.txt': 'content of a', 'b.txt': 'content of b', 'data/c.txt': 'content of c',
         'data/d.txt': 'content of d'}
PARAMETER = {'name': 'DATA_INPUT', 'type': 'file', 'storageType': 'BLOB', 'storageAccountName': ACCOUNT,
             'container': CONTAINER, 'mountPath': 'bfs', 'directory': 'data', 'mountMethod': 'JOB'}


@pytest.fixture
def local_az(local_service, az_config_dir, tmp_path):
    return AzRunner(az_config_dir, env=service_env(local_service), cwd=str(tmp_path))


@pytest.fixture
def storage_az(local_az, local_service):
    """az with AZURE_STORAGE_CONNECTION_STRING from `local show-connection-string`, as the docs say; the container
    folder is removed afterwards (the service is the session's)."""
    shown = local_az('batchai', 'sweep', 'local', 'show-connection-string', '-n', ACCOUNT, '--query',
                     'connectionString', '-o', 'tsv')
    assert shown.exit_code == 0, shown.stderr
    connection_string = shown.stdout.strip()
    fields = dict(part.split('=', 1) for part in connection_string.split(';'))
    assert fields['BlobEndpoint'] == '{}/{}'.format(local_service.blob_endpoint, ACCOUNT)
    assert fields['FileEndpoint'] == '{}/{}'.format(local_service.files_endpoint, ACCOUNT)
    root = os.path.join(local_service.data_dir, 'storage', ACCOUNT, 'containers', CONTAINER)
    shutil.rmtree(root, ignore_errors=True)
    local_az.env['AZURE_STORAGE_CONNECTION_STRING'] = connection_string
    yield local_az
    shutil.rmtree(root, ignore_errors=True)


def test_az_storage_container_and_blob_commands(storage_az, local_service, tmp_path):
    source = tmp_path / 'dataset'
    for path, text in FILES.items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text + '\n', encoding='utf-8')
    created = storage_az('storage', 'container', 'create', '-n', CONTAINER, '-o', 'json')
    assert created.exit_code == 0, created.stderr
    assert created.json() == {'created': True}
    again = storage_az('storage', 'container', 'create', '-n', CONTAINER, '--fail-on-exist', '-o', 'json')
    assert again.exit_code != 0 and 'ContainerAlreadyExists' in again.stderr
    listed = storage_az('storage', 'container', 'list', '--query', '[].name', '-o', 'json')
    assert listed.exit_code == 0, listed.stderr
    assert CONTAINER in listed.json()

    batch = storage_az('storage', 'blob', 'upload-batch', '-d', CONTAINER, '-s', str(source), '-o', 'json')
    assert batch.exit_code == 0, batch.stderr
    single = storage_az('storage', 'blob', 'upload', '-c', CONTAINER, '-n', 'single/one.txt', '-f',
                        str(source / 'b.txt'), '-o', 'json')
    assert single.exit_code == 0, single.stderr
    names = storage_az('storage', 'blob', 'list', '-c', CONTAINER, '--query', '[].name', '-o', 'json')
    assert names.exit_code == 0, names.stderr
    assert names.json() == sorted(list(FILES) + ['single/one.txt'])
    prefixed = storage_az('storage', 'blob', 'list', '-c', CONTAINER, '--prefix', 'data/', '--query',
                          '[].[name, properties.contentLength]', '-o', 'json')
    assert prefixed.json() == [['data/c.txt', 13], ['data/d.txt', 13]]

    # What was uploaded is in the folder that azureBlobFileSystems mounts.
    root = os.path.join(local_service.data_dir, 'storage', ACCOUNT, 'containers', CONTAINER)
    for path, text in FILES.items():
        with open(os.path.join(root, path), encoding='utf-8') as f:
            assert f.read() == text + '\n'
    # And what a job writes there downloads as a blob.
    with open(os.path.join(root, 'data', 'written-by-a-job.txt'), 'w', encoding='utf-8') as f:
        f.write('job output\n')
    downloaded = storage_az('storage', 'blob', 'download', '-c', CONTAINER, '-n', 'data/written-by-a-job.txt', '-f',
                            str(tmp_path / 'out.txt'), '-o', 'none')
    assert downloaded.exit_code == 0, downloaded.stderr
    assert (tmp_path / 'out.txt').read_text(encoding='utf-8') == 'job output\n'

    missing = storage_az('storage', 'blob', 'download', '-c', CONTAINER, '-n', 'no/such.txt', '-f',
                         str(tmp_path / 'none.txt'))
    assert missing.exit_code != 0 and 'BlobNotFound' in missing.stderr
    no_container = storage_az('storage', 'blob', 'list', '-c', 'no-such-container')
    assert no_container.exit_code != 0 and 'ContainerNotFound' in no_container.stderr


def test_blob_parameter_lists_the_local_container_and_jobs_read_it(storage_az, local_service, tmp_path):
    source = tmp_path / 'dataset'
    for path, text in FILES.items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text + '\n', encoding='utf-8')
    assert storage_az('storage', 'container', 'create', '-n', CONTAINER).exit_code == 0
    uploaded = storage_az('storage', 'blob', 'upload-batch', '-d', CONTAINER, '-s', str(source))
    assert uploaded.exit_code == 0, uploaded.stderr
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
           'mountVolumes': {'azureBlobFileSystems': [{'accountName': ACCOUNT, 'containerName': CONTAINER,
                                                      'relativeMountPath': 'bfs'}]},
           'customToolkitSettings': {'commandLine': 'cat {{DATA_INPUT}}'}}
    with open(tmp_path / 'sweep.json', 'w', encoding='utf-8') as f:
        json.dump({'jobNamePrefix': 'blobs', 'parameters': [PARAMETER], 'job': job}, f)
    experiment = 'blobs-{}'.format(os.getpid())
    common = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', experiment, '-n', 'mounted']
    # The environment's connection string is for az storage: the BLOB parameter lists the local container anyway.
    submitted = storage_az('batchai', 'sweep', 'submit', *common, '--spec', 'sweep.json', '-c',
                           local_service.cluster, '--wait', '--interval', '0.2', '-o', 'json', '--debug')
    assert submitted.exit_code == 0, submitted.stderr[-3000:]
    assert submitted.json()['counts']['succeeded'] == 2
    assert local_service.blob_endpoint in submitted.stderr
    key = storage_az.env['AZURE_STORAGE_CONNECTION_STRING'].split('AccountKey=')[1].split(';')[0]
    assert key not in submitted.stdout and key not in submitted.stderr

    status = storage_az('batchai', 'sweep', 'status', *common, '-o', 'json').json()
    values = {row['parameters']['DATA_INPUT']: row['name'] for row in status['jobs']}
    assert sorted(values) == ['$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/data/c.txt', '$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/data/d.txt']
    for value, name in values.items():
        tail = storage_az('batchai', 'sweep', 'status', *common, '--job', name, '--tail', '1', '-o', 'tsv')
        assert tail.exit_code == 0, tail.stderr[-2000:]
        assert tail.stdout == FILES['data/' + os.path.basename(value)] + '\n'


@pytest.mark.parametrize('scheduler,expected', [('processes', 'local'), ('slurm', 'local'), ('azure-batch', 'azure')])
def test_blob_parameters_list_the_container_the_jobs_mount(tmp_path, scheduler, expected):
    """Processes and Slurm jobs mount the local container: listed at the Blob endpoint with the local key. Azure
    Batch pools mount the Azure container: listed there, with the environment's credentials (nothing added)."""
    from azext_batchai_sweep._local_storage import LocalFileStorage
    (tmp_path / 'storage.key').write_text('bG9jYWwga2V5\n', encoding='ascii')
    (tmp_path / 'service.json').write_text(json.dumps({
        'scheduler': scheduler, 'blobEndpoint': 'http://127.0.0.1:1', 'filesEndpoint': 'http://127.0.0.1:2'}))
    arguments = LocalFileStorage(str(tmp_path))(PARAMETER)
    assert arguments == ({'accountUrl': 'http://127.0.0.1:1/' + ACCOUNT, 'storageAccountKey': 'bG9jYWwga2V5'}
                         if expected == 'local' else {})
