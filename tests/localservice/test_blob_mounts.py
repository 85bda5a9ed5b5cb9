"""A job's azureBlobFileSystems mount is the container the local Blob endpoint serves: what is uploaded through the
endpoint is what the job reads, and what the job writes there is listed and downloaded as blobs (processes scheduler
here; tests/slurm/test_slurm_blob_mount.py runs the same on Slurm)."""
import os
import time
import uuid

import pytest
from azure.mgmt.batchai import models

from tests.localservice.conftest import job_params

pytestmark = pytest.mark.service

ACCOUNT = 'mountacct'


def blob_container(service, name):
    from azure.storage.blob import BlobServiceClient
    with open(os.path.join(service.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    client = BlobServiceClient('{}/{}'.format(service.blob_endpoint, ACCOUNT),
                               credential={'account_name': ACCOUNT, 'account_key': key})
    container = client.get_container_client(name)
    container.create_container()
    return container


def check_round_trip(client, service, timeout=120):
    """Upload, run a job that mounts the container (with the job's own mountVolumes), read what it wrote."""
    container = blob_container(service, 'jobdata-' + uuid.uuid4().hex[:8])
    container.upload_blob('inputs/data.txt', b'uploaded through the Blob endpoint\n')
    params = job_params(service, 'cat $AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/inputs/data.txt && '
                                 'mkdir -p $AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/outputs && '
                                 'echo result-$((6*7)) > $AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/outputs/result.txt')
    params.mount_volumes.azure_blob_file_systems = [models.AzureBlobFileSystemReference(
        account_name=ACCOUNT, container_name=container.container_name, relative_mount_path='bfs',
        credentials=models.AzureStorageCredentialsInfo(account_key='not-needed-locally'))]
    experiment, name = 'blobmount', 'job-' + uuid.uuid4().hex[:8]
    client.experiments.begin_create(service.resource_group, service.workspace, experiment).result()
    client.jobs.begin_create(service.resource_group, service.workspace, experiment, name, params).result()
    deadline = time.monotonic() + timeout
    while True:
        job = client.jobs.get(service.resource_group, service.workspace, experiment, name)
        if job.execution_state in ('succeeded', 'failed'):
            break
        assert time.monotonic() < deadline, 'job still {}'.format(job.execution_state)
        time.sleep(0.2)
    stdout = os.path.join(service.data_dir, 'storage', 'acct', 'shares', 'logs', job.job_output_directory_path_segment,
                          'stdouterr', 'stdout.txt')
    with open(stdout, encoding='utf-8') as f:
        assert f.read() == 'uploaded through the Blob endpoint\n'
    assert job.execution_state == 'succeeded'
    assert [blob.name for blob in container.list_blobs()] == ['inputs/data.txt', 'outputs/result.txt']
    assert container.download_blob('outputs/result.txt').readall() == b'result-42\n'
    container.delete_container()


def test_a_job_reads_the_uploaded_blobs_and_its_writes_are_blobs(batchai_client, local_service):
    check_round_trip(batchai_client, local_service)
