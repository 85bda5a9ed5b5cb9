"""A sweep end to end through the real az on the local service's Slurm scheduler: local start --scheduler slurm,
submit, a node failure, resubmit, status, local stop."""
import json
import os
import time

import pytest

from azext_batchai_sweep.core.service.client import local_batchai_client
from azext_batchai_sweep.localservice import control
from tests.cli.test_sweep_errors_and_tables import fits
from tests.fixtures_az import AzRunner

pytestmark = [pytest.mark.az, pytest.mark.service]

# Job X=2 hangs until $FIXED exists (the node under it is then taken down); every job says where it ran.
COMMAND = 'echo "x={{X}} on $SLURMD_NODENAME"; test -e "$FIXED" || test {{X}} != 2 || sleep 300'


def write_sweep(directory, fixed):
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
           'customToolkitSettings': {'commandLine': COMMAND},
           'environmentVariables': [{'name': 'FIXED', 'value': fixed}]}
    with open(os.path.join(directory, 'sweep.yaml'), 'w', encoding='utf-8') as f:
        f.write('jobNamePrefix: onslurm\nparameters:\n  - {{name: X, type: discrete, values: [0, 1, 2]}}\n'
                'job: {}\n'.format(json.dumps(job)))


def test_sweep_on_slurm_through_az(slurm_cluster, tmp_path):
    slurm_cluster.wait_idle()
    config = tmp_path / 'azure-config'
    config.mkdir()
    az = AzRunner(str(config), cwd=str(tmp_path))
    data_dir = str(tmp_path / 'local')

    refused = az('batchai', 'sweep', 'local', 'start', '--data-dir', str(tmp_path / 'nope'), '--scheduler', 'slurm',
                 '--slurm-conf', slurm_cluster.conf, '--partition', 'nope')
    assert refused.exit_code != 0 and "the Slurm partition 'nope' does not exist" in refused.stderr
    assert not os.path.exists(tmp_path / 'nope' / 'service.json')
    mixed = az('batchai', 'sweep', 'local', 'start', '--data-dir', data_dir, '--gpus', '1', '--scheduler', 'slurm')
    assert mixed.exit_code != 0 and '--gpus is for the processes scheduler' in mixed.stderr

    try:
        started = az('batchai', 'sweep', 'local', 'start', '--data-dir', data_dir, '--scheduler', 'slurm',
                     '--slurm-conf', slurm_cluster.conf, '-o', 'json')
        assert started.exit_code == 0, started.stderr
        info = started.json()
        assert (info['scheduler'], info['slurmCluster'], info['partition']) == ('slurm', 'testcluster', 'debug')
        assert 'Jobs run on Slurm cluster testcluster, partition debug' in started.stderr
        status = az('batchai', 'sweep', 'local', 'status', '--data-dir', data_dir, '-o', 'table')
        assert status.exit_code == 0 and fits(status.stdout)[2][:5] == ['True', 'True', 'slurm', 'debug',
                                                                        '(testcluster)'], status.stdout

        fixed = str(tmp_path / 'fixed')
        write_sweep(str(tmp_path), fixed)
        args = ['-g', info['resourceGroup'], '-w', info['workspace'], '-e', 'slurm', '-n', 'onslurm']
        submitted = az('batchai', 'sweep', 'submit', *args, '--spec', 'sweep.yaml', '-c', info['cluster'],
                       '-o', 'json')
        assert submitted.exit_code == 0, submitted.stderr
        assert submitted.json()['submitted'] == 3

        # Take the node under the hanging job down: the job fails with a node failure.
        client = local_batchai_client(info['endpoint'], info['tokenFile'])
        deadline = time.monotonic() + 30
        while True:
            jobs = {j.name: j for j in client.jobs.list_by_experiment(info['resourceGroup'], info['workspace'],
                                                                      'slurm')}
            hanging = [j for j in jobs.values() if j.execution_state == 'running']
            done = [j for j in jobs.values() if j.execution_state == 'succeeded']
            if len(hanging) == 1 and len(done) == 2:
                break
            assert time.monotonic() < deadline, {n: j.execution_state for n, j in jobs.items()}
            time.sleep(0.2)
        node = slurm_cluster.run('squeue', '-h', '-t', 'running', '-o', '%N').stdout.strip()
        slurm_cluster.set_node_state(node, 'down')
        try:
            waited = az('batchai', 'sweep', 'status', *args, '--wait', '--interval', '0.5', '-o', 'json')
            assert waited.exit_code != 0
            failed = client.jobs.get(info['resourceGroup'], info['workspace'], 'slurm', hanging[0].name)
            assert failed.execution_info.errors[0].code == 'NodeFailure'
        finally:
            slurm_cluster.set_node_state(node, 'resume')
        open(fixed, 'w').close()
        again = az('batchai', 'sweep', 'resubmit', *args, '--wait', '--interval', '0.5', '-o', 'json')
        assert again.exit_code == 0, again.stderr
        assert 'queued job' not in again.stderr  # Slurm's scheduler says nothing of why a job waits: lines unchanged
        final = {j.name: j.execution_state for j in client.jobs.list_by_experiment(
            info['resourceGroup'], info['workspace'], 'slurm')}
        assert set(final.values()) == {'succeeded'} and len(final) == 3
    finally:
        stopped = az('batchai', 'sweep', 'local', 'stop', '--data-dir', data_dir)
        control.stop(data_dir)
    assert stopped.exit_code == 0, stopped.stderr
