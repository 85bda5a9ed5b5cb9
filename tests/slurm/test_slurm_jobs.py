"""Jobs of the local service on a real Slurm cluster (tests/slurm/cluster.py): the mapping of docs/slurm.md."""
import os
import time

import pytest
from azure.core.exceptions import HttpResponseError
from azure.mgmt.batchai import models

from azext_batchai_sweep.core.service.client import local_batchai_client
from azext_batchai_sweep.localservice.schedulers.slurm.commands import SlurmCli, SlurmError
from tests.fixtures_service import start_service, stop_service
from tests.localservice.conftest import job_params
from tests.localservice.test_stdouterr_prefix import ACCEPTED, check_stdouterr, prefix_job
from tests.slurm.conftest import slurm_service_args


def wait_end(client, service, experiment, name, timeout=60, states=('succeeded', 'failed')):
    deadline = time.monotonic() + timeout
    while True:
        job = client.jobs.get(service.resource_group, service.workspace, experiment, name)
        if job.execution_state in states:
            return job
        assert time.monotonic() < deadline, 'job {} still {}'.format(name, job.execution_state)
        time.sleep(0.1)


def create(client, service, experiment, name, params):
    client.experiments.begin_create(service.resource_group, service.workspace, experiment).result()
    return client.jobs.begin_create(service.resource_group, service.workspace, experiment, name, params).result()


def stdout_of(service, job, name='stdout.txt'):
    path = '{}/storage/acct/shares/logs/{}/stdouterr/{}'.format(service.data_dir,
                                                                  job.job_output_directory_path_segment, name)
    with open(path, encoding='utf-8') as f:
        return f.read()


def test_job_succeeds_and_fails_with_its_exit_code(slurm_client, slurm_service, idle_cluster):
    create(slurm_client, slurm_service, 'basic', 'ok', job_params(slurm_service, 'echo hello from $SLURMD_NODENAME'))
    create(slurm_client, slurm_service, 'basic', 'bad', job_params(slurm_service, 'echo oops >&2; exit 3'))
    ok = wait_end(slurm_client, slurm_service, 'basic', 'ok')
    assert ok.execution_state == 'succeeded' and ok.execution_info.exit_code == 0
    assert 'hello from n' in stdout_of(slurm_service, ok)
    bad = wait_end(slurm_client, slurm_service, 'basic', 'bad')
    assert bad.execution_state == 'failed' and bad.execution_info.exit_code == 3
    assert bad.execution_info.errors[0].code == 'NonZeroExitCode' and '3' in bad.execution_info.errors[0].message
    assert 'oops' in stdout_of(slurm_service, bad, 'stderr.txt')


def gpu_cluster(client, service, name, vm_size, nodes=4):
    """A cluster of `vm_size` (GPUs per node from the size) on the service's Slurm partition."""
    params = models.ClusterCreateParameters(
        vm_size=vm_size,
        scale_settings=models.ScaleSettings(manual=models.ManualScaleSettings(target_node_count=nodes)),
        user_account_settings=models.UserAccountSettings(admin_user_name='tester', admin_user_password='pw-0'))
    cluster = client.clusters.begin_create(service.resource_group, service.workspace, name, params).result()
    return cluster.id


def test_two_node_mpi_job_sees_its_hosts_and_task_indexes(slurm_client, slurm_service, idle_cluster):
    command = ('echo task=$AZ_BATCHAI_TASK_INDEX node=$SLURMD_NODENAME hosts=$AZ_BATCH_HOST_LIST '
               'master=$AZ_BATCHAI_MPI_MASTER_NODE hostfile=$(tr "\\n " ";:" < $AZ_BATCHAI_MPI_HOST_FILE)')
    params = job_params(slurm_service, node_count=2)
    params.custom_toolkit_settings = None
    params.custom_mpi_settings = models.CustomMpiSettings(command_line=command, process_count=2)
    params.job_preparation = models.JobPreparation(command_line='echo prepared $SLURMD_NODENAME')
    job = wait_end(slurm_client, slurm_service, 'mpi', create(slurm_client, slurm_service, 'mpi', 'two', params).name)
    assert job.execution_state == 'succeeded', job.execution_info.errors
    lines = sorted(line.split() for line in stdout_of(slurm_service, job).splitlines() if line.startswith('task='))
    assert [line[0] for line in lines] == ['task=0', 'task=1']
    nodes = {line[1].split('=')[1] for line in lines}
    assert len(nodes) == 2, 'the two tasks ran on two different nodes'
    hosts = lines[0][2].split('=')[1].split(',')
    assert sorted(hosts) == sorted(nodes) and all(line[2] == lines[0][2] for line in lines)
    assert lines[0][3] == 'master=' + hosts[0]
    assert lines[0][4] == 'hostfile=' + ''.join('{}:slots=1;'.format(h) for h in hosts)
    prepared = stdout_of(slurm_service, job, 'stdout-job_prep.txt').split()
    assert sorted(prepared[1::2]) == sorted(nodes), 'job preparation ran once on every node'


def test_gpus_come_from_the_vm_size_and_are_never_shared(slurm_client, slurm_service, idle_cluster):
    # Each node of the test cluster has two GPUs (stand-in device files: no GPU here). NC6 = 1 GPU per job, so at
    # most 8 of the 9 jobs run at once and no (node, GPU) pair is ever held by two running jobs.
    cluster_id = gpu_cluster(slurm_client, slurm_service, 'nc6', 'STANDARD_NC6')
    command = ('echo $SLURMD_NODENAME gpu=$CUDA_VISIBLE_DEVICES n=$AZ_BATCHAI_NUM_GPUS $(date +%s.%N); sleep 2; '
               'date +%s.%N')
    names = ['g{}'.format(i) for i in range(9)]
    for name in names:
        create(slurm_client, slurm_service, 'gpus', name, job_params(slurm_service, command, cluster_id=cluster_id))
    plain = create(slurm_client, slurm_service, 'gpus', 'nogpu',
                   job_params(slurm_service, 'echo "gpu=[$CUDA_VISIBLE_DEVICES] n=$AZ_BATCHAI_NUM_GPUS"'))
    runs = []
    for name in names:
        job = wait_end(slurm_client, slurm_service, 'gpus', name)
        assert job.execution_state == 'succeeded', job.execution_info.errors
        first, end = stdout_of(slurm_service, job).split('\n')[:2]
        node, gpu, count, start = first.split()
        assert gpu in ('gpu=0', 'gpu=1') and count == 'n=1'
        runs.append(((node, gpu), float(start), float(end)))
    for i, (device, start, end) in enumerate(runs):
        overlapping = [r for r in runs[i + 1:] if r[1] < end and start < r[2]]
        assert device not in [r[0] for r in overlapping], 'two running jobs shared GPU {}'.format(device)
    most = max(sum(1 for r in runs if r[1] <= start < r[2]) for _, start, _ in runs)
    assert most <= 8, 'more GPU jobs ran at once than there are GPUs'
    assert stdout_of(slurm_service, wait_end(slurm_client, slurm_service, 'gpus', plain.name)).strip() == \
        'gpu=[] n=0', 'a job of a cluster without GPUs sees none'


def test_sbatch_refusal_fails_the_job_with_slurms_message(slurm_client, slurm_service, idle_cluster):
    # NC24 needs 4 GPUs per node; the nodes have 2: sbatch refuses the job.
    cluster_id = gpu_cluster(slurm_client, slurm_service, 'nc24', 'STANDARD_NC24')
    create(slurm_client, slurm_service, 'refused', 'big', job_params(slurm_service, cluster_id=cluster_id))
    job = wait_end(slurm_client, slurm_service, 'refused', 'big', timeout=20)
    assert job.execution_state == 'failed'
    (err,) = job.execution_info.errors
    assert err.code == 'SlurmSubmitFailed' and 'Requested node configuration is not available' in err.message


def test_launch_settings_batchai_refused_are_refused_at_submit(slurm_client, slurm_service):
    params = job_params(slurm_service, node_count=2)
    params.custom_toolkit_settings = None
    params.tensor_flow_settings = models.TensorFlowSettings(python_script_file_path='train.py',
                                                            parameter_server_count=3)
    slurm_client.experiments.begin_create(slurm_service.resource_group, slurm_service.workspace, 'refuse').result()
    with pytest.raises(HttpResponseError) as refused:
        slurm_client.jobs.begin_create(slurm_service.resource_group, slurm_service.workspace, 'refuse', 'tf',
                                       params).result()
    assert refused.value.status_code == 400 and refused.value.error.code == 'InvalidRequestContent'
    assert 'parameterServerCount (3) must be at most nodeCount (2)' in refused.value.error.message


def test_terminate_cancels_and_time_limit_ends_the_job(slurm_client, slurm_service, idle_cluster):
    rg, ws = slurm_service.resource_group, slurm_service.workspace
    create(slurm_client, slurm_service, 'stop', 'long', job_params(slurm_service, 'sleep 300'))
    create(slurm_client, slurm_service, 'stop', 'timed', job_params(
        slurm_service, 'sleep 300', constraints=models.JobBasePropertiesConstraints(max_wall_clock_time='PT2S')))
    wait_end(slurm_client, slurm_service, 'stop', 'long', states=('running',))
    slurm_client.jobs.begin_terminate(rg, ws, 'stop', 'long').result()
    long = slurm_client.jobs.get(rg, ws, 'stop', 'long')
    assert long.execution_state == 'failed' and long.execution_info.errors[0].code == 'JobTerminated'
    timed = wait_end(slurm_client, slurm_service, 'stop', 'timed', timeout=30)
    assert timed.execution_state == 'failed'
    assert timed.execution_info.errors[0].code == 'MaxWallClockTimeExceeded'
    start, end = timed.execution_info.start_time, timed.execution_info.end_time
    assert 2 <= (end - start).total_seconds() < 10
    shown = idle_cluster.run('squeue', '-h', '-t', 'all', '-o', '%j %T').stdout
    assert shown.count('CANCELLED') >= 2


def test_partition_is_honoured_and_a_job_it_can_never_run_fails(slurm_cluster, tmp_path):
    # Partition 'small' of the test cluster: node n1 only, MaxTime 5 minutes.
    service = start_service(str(tmp_path / 'small'), extra_args=slurm_service_args(slurm_cluster, '--partition',
                                                                                   'small'))
    try:
        client = local_batchai_client(service.endpoint, service.token_file, service.subscription)
        cluster = client.clusters.get(service.resource_group, service.workspace, service.cluster)
        assert cluster.current_node_count == 1, 'the default cluster has the nodes of the partition'
        create(client, service, 'part', 'here', job_params(service, 'echo on $SLURMD_NODENAME'))
        create(client, service, 'part', 'long', job_params(
            service, 'true', constraints=models.JobBasePropertiesConstraints(max_wall_clock_time='PT10M')))
        here = wait_end(client, service, 'part', 'here')
        assert here.execution_state == 'succeeded' and stdout_of(service, here).strip() == 'on n1'
        long = wait_end(client, service, 'part', 'long', timeout=20)
        assert long.execution_state == 'failed'
        (err,) = long.execution_info.errors
        assert err.code == 'SlurmJobUnrunnable' and 'PartitionTimeLimit' in err.message
    finally:
        stop_service(service)
    slurm_cluster.run('scontrol', 'update', 'partitionname=small', 'state=down')
    try:
        with pytest.raises(SlurmError, match="the Slurm partition 'small' is DOWN"):
            SlurmCli(slurm_cluster.conf, 'small').check()
    finally:
        slurm_cluster.run('scontrol', 'update', 'partitionname=small', 'state=up')


def test_horovod_runs_its_processes_and_a_custom_toolkit_runs_once(slurm_client, slurm_service, idle_cluster):
    # horovodSettings: processCount tasks with srun over the nodes; customToolkitSettings: once, on the first node,
    # with the host list to start its own processes from (as Batch AI ran both).
    scripts = '{}/storage/acct/shares/logs/scripts'.format(slurm_service.data_dir)
    os.makedirs(scripts, exist_ok=True)
    with open(os.path.join(scripts, 'train.py'), 'w', encoding='utf-8') as f:
        f.write('import os, sys\nprint("rank", os.environ["AZ_BATCHAI_TASK_INDEX"], os.environ["SLURMD_NODENAME"], '
                'sys.argv[1])\n')
    horovod = job_params(slurm_service, node_count=2)
    horovod.custom_toolkit_settings = None
    horovod.horovod_settings = models.HorovodSettings(
        python_script_file_path='$AZ_BATCHAI_JOB_MOUNT_ROOT/logs/scripts/train.py', command_line_args='--lr=0.1',
        process_count=4)
    custom = job_params(slurm_service, 'echo once on $SLURMD_NODENAME of $AZ_BATCH_HOST_LIST', node_count=2)
    create(slurm_client, slurm_service, 'multi', 'hvd', horovod)
    create(slurm_client, slurm_service, 'multi', 'custom', custom)
    hvd = wait_end(slurm_client, slurm_service, 'multi', 'hvd')
    assert hvd.execution_state == 'succeeded', hvd.execution_info.errors
    ranks = sorted(line.split() for line in stdout_of(slurm_service, hvd).splitlines() if line.startswith('rank'))
    assert [r[1] for r in ranks] == ['0', '1', '2', '3'] and {r[3] for r in ranks} == {'--lr=0.1'}
    assert len({r[2] for r in ranks}) == 2, '4 processes over the 2 nodes'
    one = wait_end(slurm_client, slurm_service, 'multi', 'custom')
    lines = stdout_of(slurm_service, one).split('\n')
    assert one.execution_state == 'succeeded' and len([x for x in lines if x]) == 1
    node, hosts = lines[0].split()[2], lines[0].split()[4].split(',')
    assert len(hosts) == 2 and node == hosts[0]


@pytest.mark.parametrize('prefix', ['100%/%j%x', '%%a%4j', 'back\\slash%j', 'two\\\\back%%'])
def test_a_percent_in_stdouterrpathprefix_is_no_sbatch_pattern(slurm_client, slurm_service, idle_cluster, prefix):
    """sbatch expanded a % of the job's paths: the job failed (exit 181) without output. The output is where Batch AI
    puts it: <stdOutErrPathPrefix>/<the job's path segment>/stdouterr/stdout.txt, the prefix as written."""
    params = job_params(slurm_service, 'echo out-of-a-percent-path; echo err-of-it >&2')
    params.std_out_err_path_prefix = '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs/' + prefix
    name = 'pct-{}'.format(abs(hash(prefix)) % 10 ** 6)
    create(slurm_client, slurm_service, 'percent', name, params)
    job = wait_end(slurm_client, slurm_service, 'percent', name)
    assert job.execution_state == 'succeeded', job.execution_info
    folder = os.path.join(slurm_service.data_dir, 'storage', 'acct', 'shares', 'logs', prefix,
                          job.job_output_directory_path_segment, 'stdouterr')
    with open(os.path.join(folder, 'stdout.txt'), encoding='utf-8') as f:
        assert f.read() == 'out-of-a-percent-path\n'
    with open(os.path.join(folder, 'stderr.txt'), encoding='utf-8') as f:
        assert 'err-of-it' in f.read()
    # and the service serves it from there (the files the output directory lists)
    files = slurm_client.jobs.list_output_files(slurm_service.resource_group, slurm_service.workspace, 'percent', name,
                                                models.JobsListOutputFilesOptions(outputdirectoryid='stdouterr'))
    assert {'stdout.txt', 'stderr.txt'} <= {f.name for f in files}


@pytest.mark.parametrize('prefix,root,below', [ACCEPTED[0], ACCEPTED[2], ACCEPTED[5]])
def test_stdouterrpathprefix_spellings_batch_ai_accepted(slurm_client, slurm_service, idle_cluster, prefix, root,
                                                        below):
    """A prefix under $AZ_BATCHAI_JOB_TEMP or a share, with `//` or a trailing slash, runs under sbatch and its
    stdout/stderr are listed where Batch AI put them (tests/localservice/test_stdouterr_prefix.py: the same cases)."""
    name = 'sp{}'.format(ACCEPTED.index((prefix, root, below)))
    create(slurm_client, slurm_service, 'spellings', name, prefix_job(slurm_service, prefix, name))
    check_stdouterr(slurm_client, slurm_service, wait_end(slurm_client, slurm_service, 'spellings', name), root, below,
                    name)
