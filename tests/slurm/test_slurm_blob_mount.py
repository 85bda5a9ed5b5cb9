"""On Slurm too, a job's azureBlobFileSystems mount is the container the local Blob endpoint serves
(tests/localservice/test_blob_mounts.py says what is checked)."""
from tests.localservice.test_blob_mounts import check_round_trip


def test_a_slurm_job_reads_the_uploaded_blobs_and_its_writes_are_blobs(slurm_client, slurm_service, idle_cluster):
    check_round_trip(slurm_client, slurm_service)
