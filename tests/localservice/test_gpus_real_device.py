"""GPUs of a real machine on the processes scheduler (`--gpus auto`): the devices `nvidia-smi -L` lists are handed
to jobs through CUDA_VISIBLE_DEVICES, and a CUDA framework in the job sees exactly those. tests/localservice/
test_gpus.py checks the hand-out logic with a stand-in nvidia-smi; this one runs only where a real GPU answers
(the accelerator machine some sessions are lent) and skips elsewhere: no CI machine has a GPU."""
import shutil
import subprocess
import sys
import time

import pytest
from azure.mgmt.batchai import models

from azext_batchai_sweep.core.service.client import local_batchai_client
from azext_batchai_sweep.localservice.schedulers.gpus import detect
from tests.fixtures_service import start_service, stop_service

pytestmark = pytest.mark.service


def _real_gpus():
    if shutil.which('nvidia-smi') is None:
        return []
    return detect()


def _torch_sees_cuda():
    probe = subprocess.run([sys.executable, '-c', 'import torch; print(torch.cuda.is_available())'],
                           capture_output=True, text=True, check=False)
    return probe.stdout.strip() == 'True'


needs_gpu = pytest.mark.skipif(not _real_gpus(), reason='no GPU answers nvidia-smi -L on this machine')


def _params(service, command, cluster_id=None):
    # Mirrors tests/localservice/conftest.job_params without its spec-checking imports (this file runs on a
    # machine that has the SDK but not the rest of the test tools).
    return models.JobCreateParameters(
        cluster=models.ResourceId(id=cluster_id or service.cluster_id), node_count=1,
        std_out_err_path_prefix='$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
        mount_volumes=models.MountVolumes(azure_file_shares=[models.AzureFileShareReference(
            account_name='acct', azure_file_url='https://acct.file.core.windows.net/logs',
            credentials=models.AzureStorageCredentialsInfo(account_key='not-a-real-key'),
            relative_mount_path='logs')]),
        custom_toolkit_settings=models.CustomToolkitSettings(command_line=command))


def _wait(client, service, name, timeout=180):
    deadline = time.monotonic() + timeout
    while True:
        job = client.jobs.get(service.resource_group, service.workspace, 'gpus', name)
        if job.execution_state in ('succeeded', 'failed'):
            return job
        assert time.monotonic() < deadline, 'job {} did not end'.format(name)
        time.sleep(0.1)


@needs_gpu
def test_jobs_get_the_real_gpus_one_each_and_cuda_sees_them(tmp_path):
    gpus = _real_gpus()
    service = start_service(str(tmp_path / 'svc'), slots=len(gpus) + 2, extra_args=['--gpus', 'auto'])
    try:
        client = local_batchai_client(service.endpoint, service.token_file, service.subscription)
        rg, ws = service.resource_group, service.workspace
        client.experiments.begin_create(rg, ws, 'gpus').result()
        out = tmp_path / 'runs'
        out.mkdir()
        script = tmp_path / 'probe.py'
        script.write_text('import os\n'
                          'try:\n'
                          '    import torch\n'
                          '    seen = torch.cuda.device_count()\n'
                          'except ImportError:\n'
                          '    seen = "-"\n'
                          'print(os.environ["CUDA_VISIBLE_DEVICES"], os.environ["AZ_BATCHAI_NUM_GPUS"], seen)\n')
        record = '{}/$AZ_BATCHAI_JOB_NAME.txt'.format(out)
        probe = '{} {} > {r} && date +%s.%N >> {r} && sleep 2 && date +%s.%N >> {r}'.format(
            sys.executable, script, r=record)
        # One more one-GPU job than there are GPUs: the extra one waits for a free device.
        names = ['g{}'.format(i) for i in range(len(gpus) + 1)]
        for name in names:
            client.jobs.begin_create(rg, ws, 'gpus', name, _params(service, probe))
        seen = []
        for name in names:
            job = _wait(client, service, name)
            assert job.execution_state == 'succeeded', name
            line, start, end = (out / '{}.txt'.format(name)).read_text().splitlines()
            visible, count, torch_count = line.split()
            assert visible in gpus and count == '1'
            if _torch_sees_cuda():
                assert torch_count == '1', 'the job sees exactly the one device it was given'
            seen.append((visible, float(start), float(end)))
        overlapping = max(sum(1 for _, s, e in seen if s <= start < e) for _, start, _ in seen)
        assert overlapping <= len(gpus), 'never more GPU jobs at once than GPUs'
        for i, (device, start, end) in enumerate(seen):
            assert device not in [d for d, s, e in seen[i + 1:] if s < end and start < e], 'a GPU was shared'
    finally:
        stop_service(service)
