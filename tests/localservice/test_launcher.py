"""The launch plan of a job (localservice/schedulers/launcher.py): Batch AI's processes, variables and output names
from a job's settings and its nodes, whatever scheduler got the nodes; and running a plan's processes."""
import json
import os
import sys
import time

import pytest

from azext_batchai_sweep.localservice.schedulers import launcher
from azext_batchai_sweep.localservice.schedulers.launcher import Node, plan

NODES = [Node('10.0.0.4', '10.0.0.4'), Node('10.0.0.5', '10.0.0.5')]


def tf(nodes=2, **settings):
    return {'nodeCount': nodes, 'tensorFlowSettings': {'pythonScriptFilePath': 'train.py', **settings}}


def test_distributed_tensorflow_gets_batchai_documented_hosts_ports_and_task_types():
    # Batch AI's table: AZ_BATCHAI_PS_HOSTS=10.0.0.4:2222, AZ_BATCHAI_WORKER_HOSTS=10.0.0.4:2223,10.0.0.5:2222
    made = plan(tf(workerCount=2, parameterServerCount=1, masterCommandLineArgs='--m',
                   workerCommandLineArgs='--w', parameterServerCommandLineArgs='--p'), 'tensorFlowSettings', NODES,
                '/j/hostfile', '/j/shared')
    assert made.env['AZ_BATCHAI_PS_HOSTS'] == '10.0.0.4:2222'
    assert made.env['AZ_BATCHAI_WORKER_HOSTS'] == '10.0.0.4:2223,10.0.0.5:2222'
    by_file = {p.stdout: p for p in made.processes}
    assert sorted(by_file) == ['stdout-ps-0.txt', 'stdout-wk-0.txt', 'stdout-wk-1.txt']
    assert made.processes[0].stdout == 'stdout-wk-0.txt', "the master's output stands for the job's"
    master, worker, ps = by_file['stdout-wk-0.txt'], by_file['stdout-wk-1.txt'], by_file['stdout-ps-0.txt']
    assert (master.node, worker.node, ps.node) == (0, 1, 0)
    assert master.command.endswith('"train.py" --m') and worker.command.endswith('--w') and ps.command.endswith('--p')
    assert (master.stderr, worker.stderr, ps.stderr) == ('stderr-wk-0.txt', 'stderr-wk-1.txt', 'stderr-ps-0.txt')
    config = json.loads(master.env['TF_CONFIG'])
    assert config == {'cluster': {'ps': ['10.0.0.4:2222'], 'worker': ['10.0.0.4:2223', '10.0.0.5:2222']},
                      'task': {'type': 'master', 'index': 0}, 'environment': 'cloud'}
    assert json.loads(worker.env['TF_CONFIG'])['task'] == {'type': 'worker', 'index': 1}
    assert json.loads(ps.env['TF_CONFIG'])['task'] == {'type': 'ps', 'index': 0}
    assert [p.env['AZ_BATCHAI_TASK_INDEX'] for p in (master, worker, ps)] == ['0', '1', '0']
    assert not ps.waited and master.waited and worker.waited
    assert made.host_file == '10.0.0.4 slots=2\n10.0.0.5 slots=2\n'


@pytest.mark.parametrize('settings, nodes, expected', [
    ({}, 1, (1, 0)),  # one node, nothing said: one process, the master
    ({}, 3, (3, 1)),  # distributed: workerCount defaults to nodeCount, one parameter server
    ({'workerCount': 4, 'parameterServerCount': 2}, 2, (4, 2)),
    ({'parameterServerCount': 0}, 2, (2, 0)),
])
def test_tensorflow_counts_follow_batchai_defaults(settings, nodes, expected):
    made = plan(tf(nodes, **settings), 'tensorFlowSettings', [Node('h', '127.0.0.1')] * nodes, '/h', '/s')
    assert (sum(p.role in ('master', 'worker') for p in made.processes),
            sum(p.role == 'ps' for p in made.processes)) == expected
    ports = [h.rsplit(':', 1)[1] for h in (made.env['AZ_BATCHAI_PS_HOSTS'] + ',' +
                                           made.env['AZ_BATCHAI_WORKER_HOSTS']).split(',') if h]
    assert len(set(ports)) == sum(expected), 'nodes sharing an address never share a port'


@pytest.mark.parametrize('toolkit', ['caffe2Settings', 'pyTorchSettings'])
def test_caffe2_and_pytorch_run_one_process_per_node_with_its_index(toolkit):
    props = {'nodeCount': 2, toolkit: {'pythonScriptFilePath': 's.py', 'commandLineArgs': '--shard_id $X',
                                       'communicationBackend': 'Gloo'}}
    made = plan(props, toolkit, NODES, '/j/hostfile', '/j/shared')
    assert [(p.node, p.env['AZ_BATCHAI_TASK_INDEX'], p.stdout, p.stderr) for p in made.processes] == [
        (0, '0', 'stdout-0.txt', 'stderr-0.txt'), (1, '1', 'stdout-1.txt', 'stderr-1.txt')]
    assert made.env['AZ_BATCHAI_JOB_MASTER_NODE_IP'] == '10.0.0.4'
    if toolkit == 'pyTorchSettings':
        assert made.env['AZ_BATCHAI_PYTORCH_INIT_METHOD'] == 'file:///j/shared/pytorch_init'
        assert made.env['AZ_BATCHAI_PYTORCH_BACKEND'] == 'gloo'
    one = plan({**props, 'nodeCount': 1}, toolkit, NODES[:1], '/h', '/s')
    assert [(p.stdout, p.stderr) for p in one.processes] == [('stdout.txt', 'stderr.txt')]


@pytest.mark.parametrize('toolkit, settings, count', [
    ('customMpiSettings', {'commandLine': 'echo hi', 'processCount': 4}, 4),
    ('horovodSettings', {'pythonScriptFilePath': 'h.py'}, 2),  # processCount defaults to nodeCount
    ('chainerSettings', {'pythonScriptFilePath': 'c.py', 'processCount': 3}, 3),
    ('cntkSettings', {'configFilePath': 'c.cntk'}, 2),
])
def test_mpi_toolkits_run_one_mpirun_over_the_host_file_from_the_master(toolkit, settings, count):
    made = plan({'nodeCount': 2, toolkit: settings}, toolkit, NODES, '/j/hostfile', '/j/shared')
    [mpi] = made.processes
    assert (mpi.node, mpi.role, mpi.stdout, mpi.stderr) == (0, 'mpi', 'stdout.txt', 'stderr.txt')
    assert '--hostfile /j/hostfile -np {} '.format(count) in mpi.command
    assert made.host_file == ''.join('{} slots={}\n'.format(n.name, -(-count // 2)) for n in NODES)
    assert made.env['AZ_BATCHAI_MPI_MASTER_NODE'] == '10.0.0.4'


def test_single_processes_and_custom_toolkits_run_once_on_the_master():
    single = plan({'nodeCount': 1, 'horovodSettings': {'pythonScriptFilePath': 'h.py'}}, 'horovodSettings',
                  NODES[:1], '/h', '/s')
    custom = plan({'nodeCount': 2, 'customToolkitSettings': {'commandLine': 'echo x'}}, 'customToolkitSettings',
                  NODES, '/h', '/s')
    for made in (single, custom):
        [process] = made.processes
        assert 'mpirun' not in process.command and process.node == 0 and process.stdout == 'stdout.txt'
    assert custom.env['AZ_BATCH_HOST_LIST'] == '10.0.0.4,10.0.0.5'


def test_nodes_sharing_a_name_are_one_host_file_line():
    made = plan({'nodeCount': 3, 'customMpiSettings': {'commandLine': 'x'}}, 'customMpiSettings',
                [Node('localhost', '127.0.0.1')] * 3, '/h', '/s')
    assert made.host_file == 'localhost slots=3\n'


@pytest.mark.parametrize('props, toolkit, message', [
    (tf(2, parameterServerCount=3), 'tensorFlowSettings', 'parameterServerCount (3) must be at most nodeCount (2)'),
    (tf(2, workerCount=0), 'tensorFlowSettings', 'workerCount must be at least 1'),
    ({'nodeCount': 1, 'customMpiSettings': {'commandLine': 'x', 'processCount': 0}}, 'customMpiSettings',
     'processCount must be at least 1'),
])
def test_settings_batchai_refused_are_named(props, toolkit, message):
    assert message in launcher.check(props, toolkit)


def _script_plan(tmp_path, processes):
    return launcher.Plan(nodes=[Node('localhost', '127.0.0.1')], env={'SHARED': 'yes'}, host_file='',
                         processes=[launcher.Process(node=0, role=role, index=i, command=command,
                                                     stdout='o{}.txt'.format(i), stderr='e{}.txt'.format(i),
                                                     env={'OWN': str(i)}, waited=role != 'ps')
                                    for i, (role, command) in enumerate(processes)])


def test_run_waits_for_the_workers_then_stops_the_parameter_servers(tmp_path):
    made = _script_plan(tmp_path, [('ps', 'echo ps $SHARED $OWN; exec sleep 30'),
                                   ('worker', 'sleep 0.3; echo worker $BASE $OWN')])
    started = time.monotonic()
    assert launcher.run(made, {'BASE': 'b', 'PATH': os.environ['PATH']}, str(tmp_path)) == 0
    assert time.monotonic() - started < 10
    assert (tmp_path / 'o0.txt').read_text() == 'ps yes 0\n'
    assert (tmp_path / 'o1.txt').read_text() == 'worker b 1\n'


def test_run_fails_with_the_first_failing_process_and_stops_the_others(tmp_path):
    made = _script_plan(tmp_path, [('worker', 'exec sleep 30'), ('worker', 'exit 3')])
    started = time.monotonic()
    assert launcher.run(made, {'PATH': os.environ['PATH']}, str(tmp_path)) == 3
    assert time.monotonic() - started < 10


def test_the_launcher_runs_as_a_script_without_its_package(tmp_path):
    made = _script_plan(tmp_path, [('worker', 'echo $OWN$SHARED'), ('worker', 'echo $OWN$SHARED')])
    (tmp_path / 'plan.json').write_text(made.to_json())
    code = os.spawnve(os.P_WAIT, sys.executable, [sys.executable, '-I', launcher.__file__, 'run',
                                                  str(tmp_path / 'plan.json'), str(tmp_path), 'local'],
                      {'PATH': os.environ['PATH']})
    assert code == 0
    assert [(tmp_path / 'o{}.txt'.format(i)).read_text() for i in (0, 1)] == ['0yes\n', '1yes\n']


def test_an_mpi_job_is_refused_at_submit_where_mpirun_is_missing(monkeypatch, tmp_path):
    # Mock: this machine has mpirun (make test installs it); its absence is what the service must name.
    from azext_batchai_sweep.localservice.schedulers.processes import runner
    monkeypatch.setattr(runner.shutil, 'which', lambda name: None)
    scheduler = runner.Runner(store=None, data_dir=str(tmp_path))
    cluster = {'properties': {'vmSize': 'LOCAL'}}
    with pytest.raises(Exception) as refused:
        scheduler.check_job({'nodeCount': 2, 'horovodSettings': {'pythonScriptFilePath': 'h.py'}},
                            'horovodSettings', cluster)
    assert refused.value.code == 'MpiNotInstalled' and 'apt-get install openmpi-bin' in refused.value.message
    # One process needs no mpirun; nor does a TensorFlow job.
    scheduler.check_job({'nodeCount': 1, 'horovodSettings': {'pythonScriptFilePath': 'h.py'}}, 'horovodSettings',
                        cluster)
    scheduler.check_job(tf(2), 'tensorFlowSettings', cluster)


@pytest.mark.parametrize('toolkit, nodes', [('tensorFlowSettings', 1), ('tensorFlowSettings', 2),
                                            ('caffe2Settings', 1), ('caffe2Settings', 2), ('pyTorchSettings', 3),
                                            ('customMpiSettings', 2), ('customToolkitSettings', 2)])
def test_the_cli_tails_the_file_the_launcher_gives_the_master(toolkit, nodes):
    """`sweep status --job` reads the master's files by the names launcher.py gives them (core cannot import the
    service: the rule is written twice, checked equal here)."""
    from types import SimpleNamespace
    from azext_batchai_sweep.core.outputs.download import master_output_files
    settings = {'commandLine': 'x', 'pythonScriptFilePath': 's.py'}
    made = plan({'nodeCount': nodes, toolkit: settings}, toolkit, NODES[:1] * nodes, '/h', '/s')
    names = {'tensorFlowSettings': 'tensor_flow_settings', 'caffe2Settings': 'caffe2_settings',
             'pyTorchSettings': 'py_torch_settings', 'customMpiSettings': 'custom_mpi_settings',
             'customToolkitSettings': 'custom_toolkit_settings'}
    job = SimpleNamespace(node_count=nodes, **{names[toolkit]: settings})
    assert master_output_files(job) == (made.processes[0].stdout, made.processes[0].stderr)
