"""node_wrapper.py run for real, as a Batch node runs a task: the task's own command line under bash, with the
environment Batch gives it (its environmentSettings and Batch's AZ_BATCH_* variables, in folders laid out like a
node's). Only Batch's node agent is stood in for (it does not exist here): the variables and folders it provides."""
import os
import shutil
import subprocess

import pytest

from azext_batchai_sweep.localservice.schedulers import launcher
from azext_batchai_sweep.localservice.schedulers.azurebatch import node_wrapper, tasks

SEGMENT = 'sub/rg/ws/exp/j1/0a1b'
FILE_URL = 'https://acct.file.core.windows.net/share'
CLUSTER = {'vmSize': 'Standard_D2s_v3',
           'nodeSetup': {'mountVolumes': {'azureFileShares': [{'accountName': 'acct', 'azureFileUrl': FILE_URL,
                                                               'relativeMountPath': 'afs'}]}}}


class Node:
    """The folders and variables of one Batch node running one task."""

    def __init__(self, root):
        self.mounts = root / 'fsmounts'
        self.share = self.mounts / 'afs'
        self.task_dir = root / 'workitems' / 'job' / 'job-1' / 'task'
        self.work = self.task_dir / 'wd'
        self.shared = root / 'shared'
        for path in (self.share, self.work, self.shared):
            path.mkdir(parents=True)

    def run(self, body, extra=None):
        env = {'PATH': os.environ['PATH'], 'HOME': str(self.work), 'AZ_BATCH_NODE_MOUNTS_DIR': str(self.mounts),
               'AZ_BATCH_TASK_WORKING_DIR': str(self.work), 'AZ_BATCH_TASK_DIR': str(self.task_dir),
               'AZ_BATCH_TASK_SHARED_DIR': str(self.shared), 'AZ_BATCH_NODE_ID': 'tvm-1', 'AZ_BATCH_TASK_ID': 't1',
               'OUTER_SECRET': 'must-not-leak'}
        env.update({e['name']: e['value'] for e in body['environmentSettings']})
        env.update(extra or {})
        # bash reads the command line as Batch's node agent does (words, quotes), then runs it
        return subprocess.run(['bash', '-c', body['commandLine']], env=env, cwd=self.work, capture_output=True,
                              text=True, timeout=60, check=False)

    def stdouterr(self, name='stdout.txt'):
        return (self.share / SEGMENT / 'stdouterr' / name).read_text()

    def exit_record(self):
        return (self.work / node_wrapper.EXIT_FILE).read_text().split()


def job(command, **props):
    public = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/afs',
              'jobOutputDirectoryPathSegment': SEGMENT, 'customToolkitSettings': {'commandLine': command},
              'outputDirectories': [{'id': 'MODEL', 'pathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/afs'}]}
    public.update(props)
    return {'name': 'j1', 'properties': public}


def body_of(command, props=None, **public):
    return tasks.task_body('t1', job(command, **public), 'customToolkitSettings', CLUSTER, props or {})


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


def test_a_job_sees_batch_ai_variables_and_writes_where_batch_ai_put_its_files(node):
    command = ('echo "mount=$AZ_BATCHAI_MOUNT_ROOT temp=$AZ_BATCHAI_JOB_TEMP name=$AZ_BATCHAI_JOB_NAME '
               'lr=$LR token=$TOKEN gpus=$AZ_BATCHAI_NUM_GPUS outer=${OUTER_SECRET:-none} pwd=$(pwd)"; '
               'echo model > "$AZ_BATCHAI_OUTPUT_MODEL/model.txt"; echo err >&2; '
               'ls "$AZ_BATCHAI_JOB_MOUNT_ROOT/data" >/dev/null && echo linked')
    props = {'environmentVariables': [{'name': 'LR', 'value': '0.1'}],
             'secrets': [{'name': 'TOKEN', 'value': "it's secret"}],
             'mountVolumes': {'azureFileShares': [{'accountName': 'acct', 'azureFileUrl': FILE_URL,
                                                   'relativeMountPath': 'data'}]}}
    done = node.run(body_of(command, props))
    assert done.returncode == 0, done.stderr
    assert node.stdouterr() == ("mount={} temp={} name=j1 lr=0.1 token=it's secret gpus=0 outer=none pwd={}\n"
                                'linked\n').format(node.mounts, node.work, node.work)
    assert node.stdouterr('stderr.txt') == 'err\n'
    assert (node.share / SEGMENT / 'outputs' / 'model.txt').read_text() == 'model\n'
    assert node.exit_record() == ['main', '0']


def test_each_attempt_starts_with_clean_outputs(node):
    """A preempted task is requeued and runs again from scratch: its logs and outputs are never doubled."""
    body = body_of('echo line; echo $RANDOM > "$AZ_BATCHAI_OUTPUT_MODEL/attempt-$$.txt"')
    assert node.run(body).returncode == 0
    shutil.rmtree(node.work)
    node.work.mkdir()  # a requeued task gets a fresh working directory on its next node
    assert node.run(body).returncode == 0
    assert node.stdouterr() == 'line\n'
    assert len(list((node.share / SEGMENT / 'outputs').iterdir())) == 1


def test_the_job_exit_code_is_the_task_exit_code(node):
    done = node.run(body_of('echo before; exit 7'))
    assert done.returncode == 7 and node.exit_record() == ['main', '7']
    assert node.stdouterr() == 'before\n'


def test_job_preparation_runs_first_and_its_failure_ends_the_task(node):
    ok = node.run(body_of('echo main', jobPreparation={'commandLine': 'echo prep at $AZ_BATCHAI_TASK_INDEX'}))
    assert ok.returncode == 0
    assert node.stdouterr('stdout-job_prep.txt') == 'prep at 0\n' and node.stdouterr() == 'main\n'
    failed = node.run(body_of('echo main', jobPreparation={'commandLine': 'echo no >&2; exit 3'}))
    assert failed.returncode == 3 and node.exit_record() == ['prep', '3']
    assert node.stdouterr('stderr-job_prep.txt') == 'no\n'
    # the main command never ran (and the last attempt's output was cleaned first)
    assert not (node.share / SEGMENT / 'stdouterr' / 'stdout.txt').exists()


@pytest.mark.skipif(not shutil.which('mpirun'), reason='OpenMPI is not installed (make test installs it)')
def test_an_mpi_job_of_several_processes_runs_through_mpirun_on_the_node(node):
    body = tasks.task_body('t1', {'name': 'j1', 'properties': {
        'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/afs', 'jobOutputDirectoryPathSegment': SEGMENT,
        'customMpiSettings': {'commandLine': 'echo rank $AZ_BATCHAI_TASK_INDEX of $LR', 'processCount': 2}}},
        'customMpiSettings', CLUSTER, {'environmentVariables': [{'name': 'LR', 'value': '0.5'}]})
    done = node.run(body)
    assert done.returncode == 0, done.stderr + node.stdouterr('stderr.txt')
    assert sorted(node.stdouterr().splitlines()) == ['rank 0 of 0.5', 'rank 1 of 0.5']


def test_a_multi_instance_task_plans_over_batch_host_list_master_first():
    environ = {'AZ_BATCH_HOST_LIST': '10.0.0.5,10.0.0.4,10.0.0.6', 'AZ_BATCH_MASTER_NODE': '10.0.0.4:6000'}
    assert [n.address for n in node_wrapper.nodes(environ)] == ['10.0.0.4', '10.0.0.5', '10.0.0.6']
    assert node_wrapper.nodes({}) == [launcher.Node('localhost', '127.0.0.1')]
    assert not node_wrapper.is_master(dict(environ, AZ_BATCH_IS_CURRENT_NODE_MASTER='false'))
    assert node_wrapper.is_master(dict(environ, AZ_BATCH_IS_CURRENT_NODE_MASTER='true')) and \
        node_wrapper.is_master({})
    made = launcher.plan({'nodeCount': 2, 'pyTorchSettings': {'pythonScriptFilePath': 'train.py'}},
                         'pyTorchSettings', node_wrapper.nodes(environ)[:2], '/wd/hostfile', '/shared')
    spawn = node_wrapper.mpi_spawn(['LR'])
    assert spawn(made, made.processes[0], ['bash', '-c', 'x']) == ['bash', '-c', 'x']
    remote = spawn(made, made.processes[1], ['bash', '-c', 'x'])
    assert remote[:5] == ['mpirun', '-np', '1', '--host', '10.0.0.5'] and remote[-3:] == ['bash', '-c', 'x']
    assert ('-x', 'LR') in list(zip(remote, remote[1:])) and ('-x', 'AZ_BATCHAI_TASK_INDEX') in list(
        zip(remote, remote[1:]))


def test_a_multi_instance_code_job_unpacks_its_snapshot_on_every_node(tmp_path):
    """Issue 50 (fails on the old code: nothing linked the common resource file, so a subtask's preparation found no
    snapshot). Batch's node agent puts a multi-instance task's commonResourceFiles in the task's root directory on
    every node (stood in for here: the archive copied there) and runs the coordination command on each; the wrapper
    links it where the job's preparation reads it, so each node unpacks the snapshot into its own working
    directory, and the master's command runs from there."""
    from azext_batchai_sweep.core.code.job import attach_code
    from azext_batchai_sweep.core.code.snapshot import take_snapshot
    code = tmp_path / 'src'
    code.mkdir()
    (code / 'data.txt').write_text('version 1\n')
    snapshot = take_snapshot(str(code))
    template = {'nodeCount': 2, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/afs',
                'jobPreparation': {'commandLine': 'cat data.txt > "$AZ_BATCHAI_MOUNT_ROOT/afs/seen-$AZ_BATCH_NODE_ID"'},
                'customToolkitSettings': {'commandLine': 'echo "main $(cat data.txt) in $(pwd)"'}}
    props = attach_code(template, snapshot, 'acct')
    public = {k: v for k, v in props.items() if k not in ('mountVolumes', 'environmentVariables')}
    body = tasks.task_body('t1', {'name': 'j1', 'properties': dict(public, jobOutputDirectoryPathSegment=SEGMENT)},
                           'customToolkitSettings', CLUSTER, props, code_url='https://127.0.0.1:9/c/code/x?sig=s')
    (common,) = body['multiInstanceSettings']['commonResourceFiles']
    hosts = {'AZ_BATCH_HOST_LIST': '127.0.0.1,127.0.0.2', 'AZ_BATCH_MASTER_NODE': '127.0.0.1:6000'}
    nodes = []
    for name, master in (('master', 'true'), ('other', 'false')):
        one = Node(tmp_path / name)
        archive = one.task_dir / common['filePath']
        archive.parent.mkdir(parents=True)
        archive.write_bytes(snapshot.archive_bytes())
        coordination = dict(body, commandLine=body['multiInstanceSettings']['coordinationCommandLine'])
        done = one.run(coordination, dict(hosts, AZ_BATCH_IS_CURRENT_NODE_MASTER=master, AZ_BATCH_NODE_ID=name))
        assert done.returncode == 0, done.stdout + done.stderr
        assert (one.work / 'sweep-code' / 'data.txt').read_text() == 'version 1\n'  # unpacked on this node
        assert (one.share / ('seen-' + name)).read_text() == 'version 1\n'  # its preparation ran from there
        nodes.append(one)
    main = nodes[0].run(body, dict(hosts, AZ_BATCH_IS_CURRENT_NODE_MASTER='true'))
    assert main.returncode == 0, main.stderr
    assert nodes[0].stdouterr() == 'main version 1 in {}\n'.format(nodes[0].work / 'sweep-code')


def test_mpi_over_several_nodes_forwards_the_job_environment():
    line = launcher.mpirun_line('python train.py', 4, '/wd/hostfile', exports=['LR', 'TOKEN'])
    assert ' -x LR -x TOKEN ' in line and '-np 4' in line
    assert ' -x ' not in launcher.mpirun_line('python train.py', 4, '/wd/hostfile')


def test_the_payload_is_small_deterministic_and_carries_no_azure_cli_import():
    import base64
    import io
    import zipfile
    payload = node_wrapper.payload()
    assert payload == node_wrapper.payload()
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        assert archive.read('azext_batchai_sweep/__init__.py') == b''
        assert '__main__.py' in archive.namelist()
        launcher_source = archive.read('azext_batchai_sweep/localservice/schedulers/launcher.py').decode()
    assert '# ----' not in launcher_source and 'How Batch AI launched' not in launcher_source
    compile(launcher_source, 'launcher.py', 'exec')
    # Every task carries it: 60 tasks with theirs must fit one task collection add (1 MB).
    assert len(base64.b64encode(payload)) * 60 < tasks.MAX_ADD_BYTES
