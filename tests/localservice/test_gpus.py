"""GPUs on the processes scheduler (`--gpus`): each job its own devices through CUDA_VISIBLE_DEVICES, never more
GPU jobs at once than GPUs. This machine has no GPU: a stand-in `nvidia-smi` script on PATH lists two, which is all
`--gpus auto` reads of a real one."""
import os
import stat
import time

import pytest
from azure.core.exceptions import HttpResponseError
from azure.mgmt.batchai import models

from azext_batchai_sweep.core.service.client import local_batchai_client
from azext_batchai_sweep.localservice.schedulers.gpus import detect, gpus_per_node, parse_gpus
from tests.fixtures_service import start_service, stop_service
from tests.localservice.conftest import job_params
from tests.localservice.test_job_launch import caffe2_params, hang_script, pids_of

pytestmark = pytest.mark.service

STAND_IN_SMI = """#!/bin/sh
# Stand-in for nvidia-smi (no GPU on the test machine): the two lines `nvidia-smi -L` prints on a 2-GPU host.
[ "$1" = "-L" ] || exit 9
echo "GPU 0: Tesla K80 (UUID: GPU-00000000-0000-0000-0000-000000000000)"
echo "GPU 1: Tesla K80 (UUID: GPU-11111111-1111-1111-1111-111111111111)"
"""


@pytest.fixture
def stand_in_smi(tmp_path, monkeypatch):
    directory = tmp_path / 'bin'
    directory.mkdir()
    path = directory / 'nvidia-smi'
    path.write_text(STAND_IN_SMI)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv('PATH', '{}{}{}'.format(directory, os.pathsep, os.environ['PATH']))
    return str(path)


def test_vm_sizes_and_gpu_options(stand_in_smi, monkeypatch):
    assert [gpus_per_node(s) for s in ('STANDARD_NC6', 'Standard_NC12', 'STANDARD_NC24r', 'STANDARD_NC6s_v3',
                                       'STANDARD_ND24rs', 'STANDARD_NV12', 'STANDARD_ND40rs_v2', 'STANDARD_D4_V2',
                                       'STANDARD_F16')] == [1, 2, 4, 1, 4, 2, 8, 0, 0]
    assert gpus_per_node('LOCAL', 2) == 1 and gpus_per_node('LOCAL', 0) == 0
    assert parse_gpus('auto') == ['0', '1'] == detect()
    assert parse_gpus('3') == ['0', '1', '2'] and parse_gpus('2, 5') == ['2', '5']
    for bad in ('', 'x', '1,1', '-1', '0,a'):
        with pytest.raises(ValueError):
            parse_gpus(bad)
    monkeypatch.setenv('PATH', '/nonexistent')
    assert parse_gpus('auto') == [], 'without nvidia-smi: no GPUs'


def _wait(client, service, name, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        job = client.jobs.get(service.resource_group, service.workspace, 'gpus', name)
        if job.execution_state in ('succeeded', 'failed'):
            return job
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_each_job_gets_its_own_gpus_and_waits_for_free_ones(stand_in_smi, tmp_path):
    service = start_service(str(tmp_path / 'svc'), slots=4, extra_args=['--gpus', 'auto'])
    try:
        client = local_batchai_client(service.endpoint, service.token_file, service.subscription)
        rg, ws = service.resource_group, service.workspace
        client.experiments.begin_create(rg, ws, 'gpus').result()
        nc12 = client.clusters.begin_create(rg, ws, 'nc12', models.ClusterCreateParameters(
            vm_size='STANDARD_NC12', scale_settings=models.ScaleSettings(
                manual=models.ManualScaleSettings(target_node_count=1)),
            user_account_settings=models.UserAccountSettings(admin_user_name='u', admin_user_password='p'))).result()
        out = tmp_path / 'runs'
        out.mkdir()
        # 5 one-GPU jobs on the default cluster (4 slots, 2 GPUs): at most 2 run at once, never on the same GPU.
        command = ('echo "[$CUDA_VISIBLE_DEVICES] $AZ_BATCHAI_NUM_GPUS $(date +%s.%N)" > {}/$JOB; sleep 1; '
                   'date +%s.%N >> {}/$JOB').format(out, out)
        names = ['j{}'.format(i) for i in range(5)]
        for name in names:
            client.jobs.begin_create(rg, ws, 'gpus', name, job_params(
                service, command, environment_variables=[models.EnvironmentVariable(name='JOB', value=name)]))
        both = client.jobs.begin_create(rg, ws, 'gpus', 'both', job_params(
            service, 'echo "[$CUDA_VISIBLE_DEVICES]" > {}/both'.format(out), cluster_id=nc12.id)).result()
        runs = []
        for name in names:
            assert _wait(client, service, name).execution_state == 'succeeded'
            first, end = (out / name).read_text().splitlines()
            devices, count, start = first.split()
            assert devices in ('[0]', '[1]') and count == '1'
            runs.append((devices, float(start), float(end)))
        for i, (device, start, end) in enumerate(runs):
            assert device not in [r[0] for r in runs[i + 1:] if r[1] < end and start < r[2]], 'a GPU was shared'
        assert max(sum(1 for r in runs if r[1] <= s < r[2]) for _, s, _ in runs) <= 2
        assert _wait(client, service, both.name).execution_state == 'succeeded'
        assert (out / 'both').read_text().strip() == '[0,1]', 'an NC12 node has 2 GPUs'
        nc24 = client.clusters.begin_create(rg, ws, 'nc24', models.ClusterCreateParameters(
            vm_size='STANDARD_NC24', scale_settings=models.ScaleSettings(
                manual=models.ManualScaleSettings(target_node_count=1)),
            user_account_settings=models.UserAccountSettings(admin_user_name='u', admin_user_password='p'))).result()
        d4 = client.clusters.begin_create(rg, ws, 'd4', models.ClusterCreateParameters(
            vm_size='STANDARD_D4_V2', scale_settings=models.ScaleSettings(
                manual=models.ManualScaleSettings(target_node_count=1)),
            user_account_settings=models.UserAccountSettings(admin_user_name='u', admin_user_password='p'))).result()
        none = client.jobs.begin_create(rg, ws, 'gpus', 'none', job_params(
            service, 'echo "[$CUDA_VISIBLE_DEVICES]" > {}/none'.format(out), cluster_id=d4.id)).result()
        assert _wait(client, service, none.name).execution_state == 'succeeded'
        assert (out / 'none').read_text().strip() == '[]', 'a job of a size without GPUs sees none'
        with pytest.raises(HttpResponseError) as refused:
            client.jobs.begin_create(rg, ws, 'gpus', 'four', job_params(service, cluster_id=nc24.id)).result()
        assert refused.value.error.code == 'InsufficientGpus' and 'needs 4 GPUs' in refused.value.error.message
    finally:
        stop_service(service)


def test_each_node_of_a_multi_node_job_gets_its_own_gpus(stand_in_smi, tmp_path):
    """A 2-node Caffe2 job on the default cluster (one GPU per node) with both GPUs: each node's process sees its
    node's GPU only, as each Batch AI node saw its own."""
    service = start_service(str(tmp_path / 'svc'), slots=2, extra_args=['--gpus', 'auto'])
    try:
        client = local_batchai_client(service.endpoint, service.token_file, service.subscription)
        client.experiments.begin_create(service.resource_group, service.workspace, 'gpus').result()
        params = caffe2_params(service, hang_script(tmp_path),
                               environment_variables=[models.EnvironmentVariable(name='HANG', value='0')])
        client.jobs.begin_create(service.resource_group, service.workspace, 'gpus', 'nodes', params).result()
        assert _wait(client, service, 'nodes').execution_state == 'succeeded'
        seen = {index: values[1] for index, values in pids_of(tmp_path / 'hang.py.out', 2).items()}
        assert seen == {'0': '[0]', '1': '[1]'}
    finally:
        stop_service(service)
