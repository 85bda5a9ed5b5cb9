"""How Batch AI launched a job on its nodes, for every scheduler: the processes, their variables and output files.

`plan()` turns a job's create properties and the nodes it got (names and addresses, however they were obtained:
slots of this machine, a Slurm allocation, an Azure Batch pool) into a `Plan`: the variables every process of the
job sees, the OpenMPI host file, and one `Process` per process Batch AI started, with its command line, its own
variables and the names of its output files (docs/job-environment.md has the table):

- tensorFlowSettings: workerCount workers (default nodeCount) and parameterServerCount parameter servers (default 1
  when distributed, else 0), each its own process, spread over the nodes in turn; worker 0 is the master
  (masterCommandLineArgs), the other workers run workerCommandLineArgs, the parameter servers
  parameterServerCommandLineArgs; each gets AZ_BATCHAI_TASK_INDEX and TF_CONFIG, all AZ_BATCHAI_PS_HOSTS and
  AZ_BATCHAI_WORKER_HOSTS, with Batch AI's ports (2222 on, per node); output stdout-wk-<i>.txt / stdout-ps-<i>.txt;
- caffe2Settings and pyTorchSettings: one process per node, AZ_BATCHAI_TASK_INDEX its node's index; output
  stdout-<i>.txt / stderr-<i>.txt on more than one node;
- customMpiSettings, horovodSettings, chainerSettings and cntkSettings: processCount processes (default nodeCount)
  through one `mpirun` over the host file, started on the master node; a single process runs without mpirun;
- customToolkitSettings and caffeSettings: one process on the master node.

`run()` starts a plan's processes through a `spawn` function (a local process, or `srun` on the process's node),
waits for them and returns the job's exit code. This file imports nothing of its package: the Slurm batch script
runs it as a script (`python -I launcher.py slurm-plan ...`) on the job's first node, where only the nodes of the
allocation are known.
"""
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

TF_BASE_PORT = 2222  # Batch AI's first TensorFlow port on each node (AZ_BATCHAI_PS_HOSTS=10.0.0.4:2222)
MASTER_PORT = 6000  # AZ_BATCH_MASTER_NODE is host:port on Azure Batch (multi-instance tasks' coordination port)
MPI_TOOLKITS = ('customMpiSettings', 'horovodSettings', 'chainerSettings', 'cntkSettings')
PER_NODE_TOOLKITS = ('caffe2Settings', 'pyTorchSettings')
STOP_GRACE_SECONDS = 2.0


@dataclass(frozen=True)
class Node:
    """One node of a job: the name the host file lists, the address its processes are reached at."""
    name: str
    address: str


@dataclass
class Process:
    """One process of a job: where it runs (an index into the plan's nodes), what, and where its output goes."""
    node: int
    role: str  # 'master', 'worker', 'ps' (TensorFlow), 'node' (Caffe2, PyTorch), 'mpi', 'single'
    index: int  # AZ_BATCHAI_TASK_INDEX
    command: str  # a bash command line
    stdout: str  # file names in the job's stdouterr directory
    stderr: str
    env: dict = field(default_factory=dict)  # this process's own variables
    waited: bool = True  # False: a parameter server, stopped once every other process ended


@dataclass
class Plan:
    nodes: list  # [Node]; nodes[0] is the master
    env: dict  # the variables every process of the job sees
    host_file: str  # the text of $AZ_BATCHAI_MPI_HOST_FILE
    processes: list  # [Process]

    def to_json(self):
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        return cls(nodes=[Node(**n) for n in data['nodes']], env=data['env'], host_file=data['host_file'],
                   processes=[Process(**p) for p in data['processes']])


# ---- commands ------------------------------------------------------------------------------------------------

def _python_line(settings, args):
    interpreter = settings.get('pythonInterpreterPath')
    # A user-given path stays double-quoted so $VARIABLES in it expand like on a Batch AI node.
    interpreter = '"{}"'.format(interpreter) if interpreter else shlex.quote(sys.executable)
    return 'exec {} "{}" {}'.format(interpreter, settings['pythonScriptFilePath'], args or '').rstrip()


def command_line(props, toolkit, args_key='commandLineArgs'):
    """The bash command line of one process of a job's toolkit (`args_key`: TensorFlow's role's arguments)."""
    settings = props[toolkit]
    if toolkit in ('customToolkitSettings', 'customMpiSettings'):
        return settings.get('commandLine') or 'true'
    if toolkit == 'tensorFlowSettings':
        return _python_line(settings, settings.get(args_key))
    if toolkit == 'cntkSettings' and not settings.get('pythonScriptFilePath'):
        return 'exec cntk configFile="{}" {}'.format(settings['configFilePath'],
                                                       settings.get('commandLineArgs') or '').rstrip()
    if toolkit == 'caffeSettings' and not settings.get('pythonScriptFilePath'):
        return 'exec caffe train --solver="{}" {}'.format(settings['configFilePath'],
                                                          settings.get('commandLineArgs') or '').rstrip()
    return _python_line(settings, settings.get('commandLineArgs'))


def mpirun_line(command, count, host_file, exports=()):
    """Batch AI's launch of an MPI toolkit: mpirun over the host file; each rank's AZ_BATCHAI_TASK_INDEX is its
    rank. OpenMPI refuses root without --allow-run-as-root (a container's user is often root). `exports`: names of
    variables mpirun must pass to the ranks on other nodes (`-x NAME`: where no Slurm carries the environment, as on
    Azure Batch nodes reached over SSH)."""
    rank = 'export AZ_BATCHAI_TASK_INDEX=${OMPI_COMM_WORLD_RANK:-0}; '
    root = ' --allow-run-as-root' if os.geteuid() == 0 else ''
    forward = ''.join(' -x {}'.format(shlex.quote(name)) for name in exports)
    return 'exec mpirun{}{} --hostfile {} -np {} bash -c {}'.format(root, forward, shlex.quote(host_file), count,
                                                                    shlex.quote(rank + command))


# ---- counts --------------------------------------------------------------------------------------------------

def tf_counts(props):
    """(workers, parameter servers) of a TensorFlow job, with Batch AI's defaults."""
    settings = props['tensorFlowSettings']
    nodes = props['nodeCount']
    workers = settings.get('workerCount')
    ps = settings.get('parameterServerCount')
    distributed = nodes > 1 or workers is not None or ps is not None
    workers = nodes if workers is None else int(workers)
    ps = (1 if distributed else 0) if ps is None else int(ps)
    return workers, ps


def process_count(props, toolkit):
    """How many processes the job runs (Batch AI's processCount, TensorFlow's workers and parameter servers)."""
    if toolkit == 'tensorFlowSettings':
        return sum(tf_counts(props))
    if toolkit in PER_NODE_TOOLKITS:
        return props['nodeCount']
    if toolkit in MPI_TOOLKITS:
        count = props[toolkit].get('processCount')
        return props['nodeCount'] if count is None else int(count)
    return 1


def check(props, toolkit):
    """What Batch AI refused of a job's launch settings: a message, or None."""
    count = process_count(props, toolkit)
    if toolkit == 'tensorFlowSettings':
        workers, ps = tf_counts(props)
        if workers < 1 or ps < 0:
            return 'tensorFlowSettings.workerCount must be at least 1 and parameterServerCount at least 0.'
        if ps > props['nodeCount']:
            return 'tensorFlowSettings.parameterServerCount ({}) must be at most nodeCount ({}).'.format(
                ps, props['nodeCount'])
    elif count < 1:
        return 'processCount must be at least 1.'
    return None


def uses_mpirun(props, toolkit):
    return toolkit in MPI_TOOLKITS and process_count(props, toolkit) > 1


# ---- the plan ------------------------------------------------------------------------------------------------

def batchai_ports(addresses):
    """Batch AI's TensorFlow ports: 2222, 2223... on each address in the order its processes are placed (nodes
    sharing an address, as an emulated cluster's do, go on counting)."""
    used = {}
    ports = []
    for address in addresses:
        ports.append(TF_BASE_PORT + used.get(address, 0))
        used[address] = used.get(address, 0) + 1
    return ports


def free_ports(addresses):
    """Ports the system has free on each address (the processes scheduler's nodes all share this machine)."""
    import socket  # here: `run` (a job's start) does without it
    sockets = []
    try:
        for address in addresses:
            s = socket.socket()
            s.bind((address, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def host_file(nodes, slots):
    """OpenMPI's host file: `<name> slots=<n>` a line per node name (nodes sharing a name, one line: OpenMPI
    refuses a name given twice with slots)."""
    total = {}
    for node in nodes:
        total[node.name] = total.get(node.name, 0) + slots
    return ''.join('{} slots={}\n'.format(name, count) for name, count in total.items())


def _spread(count, nodes):
    return [i % nodes for i in range(count)]


def plan(props, toolkit, nodes, host_file_path, shared_dir, ports=batchai_ports, mpirun_exports=()):
    """The launch plan of a job (see the module's doc). `nodes`: [Node], the master first; `ports(addresses)`:
    the TensorFlow port of each process placed on those addresses, in order; `mpirun_exports`: see mpirun_line."""
    count = len(nodes)
    per_node = -(-process_count(props, toolkit) // count)
    master = nodes[0]
    env = {
        'AZ_BATCHAI_MPI_HOST_FILE': host_file_path,
        'AZ_BATCHAI_MPI_MASTER_NODE': master.name,
        'AZ_BATCHAI_JOB_MASTER_NODE_IP': master.address,
        'AZ_BATCH_HOST_LIST': ','.join(n.name for n in nodes),
        'AZ_BATCH_MASTER_NODE': '{}:{}'.format(master.address, MASTER_PORT),
        'AZ_BATCHAI_TASK_INDEX': '0',
    }
    if toolkit == 'tensorFlowSettings':
        processes = _tensorflow(props, nodes, env, ports)
    elif toolkit in PER_NODE_TOOLKITS:
        processes = [Process(node=i, role='node', index=i, command=command_line(props, toolkit),
                             stdout=_name('stdout', i, count), stderr=_name('stderr', i, count),
                             env={'AZ_BATCHAI_TASK_INDEX': str(i)}) for i in range(count)]
        if toolkit == 'pyTorchSettings':
            backend = props[toolkit].get('communicationBackend')
            env['AZ_BATCHAI_PYTORCH_INIT_METHOD'] = 'file://' + os.path.join(shared_dir, 'pytorch_init')
            if backend:
                env['AZ_BATCHAI_PYTORCH_BACKEND'] = backend.lower()
    elif uses_mpirun(props, toolkit):
        line = mpirun_line(command_line(props, toolkit), process_count(props, toolkit), host_file_path,
                           mpirun_exports)
        processes = [Process(node=0, role='mpi', index=0, command=line, stdout='stdout.txt', stderr='stderr.txt')]
    else:
        processes = [Process(node=0, role='single', index=0, command=command_line(props, toolkit),
                             stdout='stdout.txt', stderr='stderr.txt')]
    return Plan(nodes=list(nodes), env=env, host_file=host_file(nodes, per_node), processes=processes)


def _name(stream, index, count):
    """Caffe2's and PyTorch's output: stdout.txt on one node, stdout-<node>.txt on several (as Batch AI named it)."""
    return '{}.txt'.format(stream) if count == 1 else '{}-{}.txt'.format(stream, index)


def _tensorflow(props, nodes, env, ports):
    workers, ps = tf_counts(props)
    # Parameter servers first, then workers, each spread over the nodes in turn; ports counted per address in that
    # order (Batch AI: ps 10.0.0.4:2222, workers 10.0.0.4:2223,10.0.0.5:2222).
    roles = [('ps', i, node) for i, node in enumerate(_spread(ps, len(nodes)))]
    roles += [('worker', i, node) for i, node in enumerate(_spread(workers, len(nodes)))]
    numbers = ports([nodes[node].address for _, _, node in roles])
    hosts = {'ps': [], 'worker': []}
    for (role, _, node), port in zip(roles, numbers):
        hosts[role].append('{}:{}'.format(nodes[node].address, port))
    env['AZ_BATCHAI_PS_HOSTS'] = ','.join(hosts['ps'])
    env['AZ_BATCHAI_WORKER_HOSTS'] = ','.join(hosts['worker'])
    cluster = {role: addresses for role, addresses in hosts.items() if addresses}
    processes = []
    for role, index, node in roles:
        if role == 'ps':
            task, args, out = 'ps', 'parameterServerCommandLineArgs', 'ps-{}'.format(index)
        elif index == 0:
            task, args, out = 'master', 'masterCommandLineArgs', 'wk-0'
        else:
            task, args, out = 'worker', 'workerCommandLineArgs', 'wk-{}'.format(index)
        config = {'cluster': cluster, 'task': {'type': task, 'index': index}, 'environment': 'cloud'}
        processes.append(Process(
            node=node, role=task, index=index, command=command_line(props, 'tensorFlowSettings', args),
            stdout='stdout-{}.txt'.format(out), stderr='stderr-{}.txt'.format(out),
            env={'AZ_BATCHAI_TASK_INDEX': str(index), 'TF_CONFIG': json.dumps(config, separators=(',', ':'))},
            waited=role != 'ps'))
    # The master's files first: the plan's first process is the one whose output stands for the job's.
    processes.sort(key=lambda p: (p.role != 'master', p.role == 'ps', p.index))
    return processes


# ---- running a plan ------------------------------------------------------------------------------------------

def local_spawn(plan_, process, argv):  # pylint: disable=unused-argument
    """Start a process on this machine (the processes scheduler's nodes are this machine's slots)."""
    return argv


def srun_spawn(plan_, process, argv):
    """Start a process on its node of a Slurm allocation: the master's in the batch script itself (where mpirun
    starts the ranks from), the others as a one-task srun step on their node."""
    if process.node == 0:
        return argv
    return ['srun', '--nodes=1', '--ntasks=1', '--overlap', '--kill-on-bad-exit=1',
            '--nodelist=' + plan_.nodes[process.node].name, *argv]


def run(plan_, env, out_dir, spawn=local_spawn, cwd=None):
    """Run every process of the plan, each with `env` + the plan's variables + its own, its output appended to its
    files in `out_dir`; return the job's exit code: that of the first waited process to fail (the others are then
    stopped), else 0. Parameter servers are stopped once every waited process ended, as Batch AI stopped them."""
    running = []
    stopping = []

    def stop(*_):
        stopping.append(True)
        for _, proc in running:
            _terminate(proc)
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        for process in plan_.processes:
            process_env = dict(env)
            process_env.update(plan_.env)
            process_env.update(process.env)
            with open(os.path.join(out_dir, process.stdout), 'ab') as out, \
                    open(os.path.join(out_dir, process.stderr), 'ab') as err:
                proc = subprocess.Popen(spawn(plan_, process, ['bash', '-c', process.command]), env=process_env,
                                        cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
            running.append((process, proc))
        return _wait(running, stopping)
    finally:
        for _, proc in running:
            _terminate(proc, kill=True)
        signal.signal(signal.SIGTERM, previous)


def _wait(running, stopping):
    exit_code = 0
    waited = [(p, proc) for p, proc in running if p.waited]
    while waited and not stopping:
        for item in list(waited):
            code = item[1].poll()
            if code is None:
                continue
            waited.remove(item)
            if code != 0 and exit_code == 0:
                exit_code = code
                for _, proc in running:
                    _terminate(proc)
        time.sleep(0.05)
    for _, proc in running:
        _terminate(proc)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for _, proc in running:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _terminate(proc, kill=True)
    return 128 + signal.SIGTERM if stopping else exit_code


def _terminate(proc, kill=False):
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        except ProcessLookupError:
            pass


# ---- the script the Slurm batch script runs ------------------------------------------------------------------

def slurm_nodes(nodelist):
    """The nodes of a Slurm allocation, the batch host first: names from scontrol, addresses from NodeAddr."""
    names = subprocess.run(['scontrol', 'show', 'hostnames', nodelist], capture_output=True, text=True,
                           check=True).stdout.split()
    shown = subprocess.run(['scontrol', 'show', 'node', '--oneliner', ','.join(names)], capture_output=True,
                           text=True, check=True).stdout
    addresses = {}
    for line in shown.splitlines():
        fields = dict(part.split('=', 1) for part in line.split() if '=' in part)
        if 'NodeName' in fields:
            addresses[fields['NodeName']] = fields.get('NodeAddr') or fields['NodeName']
    return [Node(name, addresses.get(name, name)) for name in names]


def _export_lines(variables):
    """The variables as bash exports joined by `&&`: sourcing the file fails when any of them does not take (a
    sourced file's status is its last command's, so separate lines would hide all but the last)."""
    lines = ['export {}={}'.format(k, shlex.quote(v)) for k, v in sorted(variables.items())]
    return ' &&\n'.join(lines) + '\n' if lines else ''


def main(argv=None):
    """`slurm-plan SETTINGS PLAN ENV`: build the plan of a job on its Slurm allocation (SETTINGS: its props,
    toolkit, host file and shared dir as JSON), write it, its host file, and its variables as bash exports;
    `run PLAN OUT_DIR srun|local`: run a plan written before with this process's environment."""
    args = sys.argv[1:] if argv is None else argv
    if args[0] == 'slurm-plan':
        with open(args[1], encoding='utf-8') as f:
            settings = json.load(f)
        made = plan(settings['props'], settings['toolkit'], slurm_nodes(os.environ['SLURM_JOB_NODELIST']),
                    settings['host_file'], settings['shared'])
        with open(settings['host_file'], 'w', encoding='utf-8') as f:
            f.write(made.host_file)
        with open(args[2], 'w', encoding='utf-8') as f:
            f.write(made.to_json())
        with open(args[3], 'w', encoding='utf-8') as f:
            f.write(_export_lines(made.env))
        return 0
    if args[0] == 'run':
        with open(args[1], encoding='utf-8') as f:
            made = Plan.from_json(f.read())
        spawn = srun_spawn if args[3] == 'srun' else local_spawn
        return run(made, dict(os.environ), args[2], spawn, cwd=os.getcwd())
    print('usage: launcher.py slurm-plan SETTINGS PLAN ENV | run PLAN OUT_DIR srun|local', file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main())
