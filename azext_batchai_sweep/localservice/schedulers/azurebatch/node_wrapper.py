"""What runs on an Azure Batch node for a Batch AI job: Batch's own variables -> Batch AI's, then launcher.py.

A task's command line unpacks this package's few modules (`payload()`: a zip of node_wrapper, launcher, layout,
jobenv, errors; carried in the task's environment, so nothing needs installing on the pool) and runs
`python3 -I wrapper.pyz MODE`. The job's launch settings come in AZ_BATCHAI_SWEEP_TASK (JSON, no secret: see
tasks.py); its own variables and secrets are the task's environment settings.

On the node, Batch AI's variables are (layout.job_variables, the same names as on every scheduler):
AZ_BATCHAI_MOUNT_ROOT = $AZ_BATCH_NODE_MOUNTS_DIR (the pool's mounts); AZ_BATCHAI_JOB_MOUNT_ROOT = a `mounts` folder
in the task's working directory whose links lead to the cluster's mounts of the same storage (and, for a
multi-instance task's --code snapshot, to where Batch downloaded its common resource files: code_files.py);
AZ_BATCHAI_JOB_TEMP = $AZ_BATCH_TASK_WORKING_DIR; AZ_BATCHAI_SHARED_JOB_TEMP = $AZ_BATCH_TASK_SHARED_DIR (one per
node on Batch); stdouterr and output directories where Batch AI put them (on the mounted share); the host file and
master node from AZ_BATCH_HOST_LIST / AZ_BATCH_MASTER_NODE (multi-instance tasks), else this node.

Modes:
- `task` (a single-node job): clean this attempt's outputs, run jobPreparation, run the job;
- `prepare` (a multi-instance task's coordination command, on every node): the master node cleans and prepares
  writing stdout-job_prep.txt to the share; the others prepare into their own Batch task output (stdout.txt of
  their subtask), so no node writes what the master is cleaning;
- `run` (a multi-instance task's command, on the master): the job's processes over the nodes (other nodes' processes
  through `mpirun -np 1 --host`, which carries the variables with -x), MPI toolkits through one mpirun.

Each attempt starts with clean outputs: a preempted attempt is requeued by Batch and starts again from scratch, so
its logs and metrics are never doubled (issue 31 rule 2). The step that ended the attempt and its exit code are
written to EXIT_FILE in the task's working directory ('prep N' or 'main N', the Slurm scheduler's format).
"""
import io
import json
import os
import shutil
import subprocess
import sys
import tokenize
import zipfile

from .. import launcher
from ..jobenv import job_environment
from ...layout import job_variables, output_paths

TASK_VARIABLE = 'AZ_BATCHAI_SWEEP_TASK'
PAYLOAD_VARIABLE = 'AZ_BATCHAI_SWEEP_WRAPPER'
PAYLOAD_FILE = 'batchai_sweep_wrapper.pyz'
EXIT_FILE = 'batchai-exit'
PREP_STDOUT = 'stdout-job_prep.txt'
PREP_STDERR = 'stderr-job_prep.txt'
# The modules the payload carries, relative to the package root (their imports are relative, so the zip keeps the
# package's layout; the packages' own __init__ files are replaced by empty ones: the root one imports azure.cli).
PAYLOAD_MODULES = ['localservice/schedulers/launcher.py', 'localservice/schedulers/jobenv.py',
                   'localservice/layout.py', 'localservice/errors.py',
                   'localservice/schedulers/azurebatch/node_wrapper.py']
PACKAGE = 'azext_batchai_sweep'
_MAIN = ('import sys\nfrom {}.localservice.schedulers.azurebatch.node_wrapper import main\n'
         'sys.exit(main())\n').format(PACKAGE)


# ---- the payload (built by the service) ----------------------------------------------------------------------

def without_comments(source):
    """Python source with its comments dropped and its docstrings emptied (the code and line numbers unchanged):
    every task carries the payload, and a task collection add must stay under 1 MB."""
    tokens, previous = [], tokenize.NEWLINE
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            continue
        if token.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            token = token._replace(string='""')  # a string standing alone as a statement: a docstring
        if token.type != tokenize.NL:
            previous = token.type
        tokens.append(token)
    return tokenize.untokenize(tokens)


def payload():
    """The zip app of the wrapper, bytes; deterministic (fixed dates and order), so a task body written again after
    a restart is byte-identical and Batch's TaskExists for it counts as success."""
    root = os.path.abspath(__file__)
    for _ in range(__name__.count('.')):
        root = os.path.dirname(root)  # up from this module to the package's root folder
    files = {'__main__.py': _MAIN.encode('utf-8')}
    for module in PAYLOAD_MODULES:  # every package on the modules' paths, from the root down
        parts = module.split('/')[:-1]
        for depth in range(len(parts) + 1):
            files[PACKAGE + '/' + ''.join(part + '/' for part in parts[:depth]) + '__init__.py'] = b''
    for module in PAYLOAD_MODULES:
        with open(os.path.join(root, module), encoding='utf-8') as f:
            files[PACKAGE + '/' + module] = without_comments(f.read()).encode('utf-8')
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, 'w', zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()


def command_line(mode):
    """The task's (or coordination) command line: write the payload from its variable into the working directory,
    run it with the node's python3 (in the task's container when it has one)."""
    script = ('cd "$AZ_BATCH_TASK_WORKING_DIR" && printf %s "${}" | base64 -d > {} && '
              'exec python3 -I {} {}').format(PAYLOAD_VARIABLE, PAYLOAD_FILE, PAYLOAD_FILE, mode)
    return "/bin/bash -c '{}'".format(script)


# ---- on the node ---------------------------------------------------------------------------------------------

def node_roots(environ):
    """Batch AI's three roots on this node."""
    work = environ['AZ_BATCH_TASK_WORKING_DIR']
    return {'AZ_BATCHAI_MOUNT_ROOT': environ.get('AZ_BATCH_NODE_MOUNTS_DIR') or os.path.join(work, 'fsmounts'),
            'AZ_BATCHAI_JOB_MOUNT_ROOT': os.path.join(work, 'mounts'), 'AZ_BATCHAI_JOB_TEMP': work}


def nodes(environ):
    """The job's nodes, the master first: every address of AZ_BATCH_HOST_LIST (a multi-instance task), else this
    node alone (reached as localhost)."""
    hosts = [h for h in (environ.get('AZ_BATCH_HOST_LIST') or '').split(',') if h]
    if not hosts:
        return [launcher.Node('localhost', '127.0.0.1')]
    master = (environ.get('AZ_BATCH_MASTER_NODE') or hosts[0]).rsplit(':', 1)[0]
    ordered = [master] + [h for h in hosts if h != master] if master in hosts else hosts
    return [launcher.Node(h, h) for h in ordered]


def is_master(environ):
    """This node runs the job's main command (a single-instance task always)."""
    return not environ.get('AZ_BATCH_HOST_LIST') or environ.get('AZ_BATCH_IS_CURRENT_NODE_MASTER') == 'true'


class NodeJob:
    """A job on this node: its paths, variables and environment."""

    def __init__(self, spec, environ):
        self.spec = spec
        self.environ = environ
        self.props = spec['props']
        self.toolkit = spec['toolkit']
        self.work = environ['AZ_BATCH_TASK_WORKING_DIR']
        self.roots = node_roots(environ)
        self.stdouterr, self.outputs, self.inputs = output_paths(self.props, self.roots)
        self.host_file = os.path.join(self.work, 'hostfile')
        self.shared = environ.get('AZ_BATCH_TASK_SHARED_DIR') or os.path.join(self.work, 'shared')
        self.nodes = nodes(environ)

    def link_job_mounts(self):
        """AZ_BATCHAI_JOB_MOUNT_ROOT/<job's relativeMountPath> -> the cluster's mount of the same storage, or (the
        launch settings' `rootMounts`: a multi-instance task's common resource files, e.g. the --code snapshot)
        a folder of the task's root directory, one above the working directory, where Batch downloads them."""
        root = self.roots['AZ_BATCHAI_JOB_MOUNT_ROOT']
        os.makedirs(root, exist_ok=True)
        targets = [(job_path, os.path.join(self.roots['AZ_BATCHAI_MOUNT_ROOT'], cluster_path.strip('/')))
                   for job_path, cluster_path in (self.spec.get('mounts') or {}).items()]
        targets += [(job_path, os.path.join(os.path.dirname(self.work.rstrip('/')), folder.strip('/')))
                    for job_path, folder in (self.spec.get('rootMounts') or {}).items()]
        for job_path, target in sorted(targets):
            link = os.path.join(root, job_path.strip('/'))
            os.makedirs(os.path.dirname(link), exist_ok=True)
            if not os.path.lexists(link):
                os.symlink(target, link)

    def environment(self):
        """The job's environment (jobenv.job_environment): the base, Batch AI's variables, the job's own variables
        and secrets (from this task's environment settings), and Batch's AZ_BATCH_* variables."""
        variables = job_variables(self.spec['name'], self.roots, self.stdouterr, os.path.dirname(self.work),
                                  self.shared, self.host_file, self.outputs, self.inputs)
        variables['AZ_BATCHAI_NUM_GPUS'] = str(self.spec.get('gpus') or 0)
        variables.update({k: v for k, v in self.environ.items() if k.startswith('AZ_BATCH_')})
        own = [{'name': name, 'value': self.environ.get(name, '')} for name in self.spec.get('variables') or []]
        return job_environment(variables, {'environmentVariables': own}, self.environ)

    def clean(self):
        """Empty this job incarnation's stdouterr and output directories (a requeued attempt starts from scratch)."""
        for path in [self.stdouterr, *self.outputs.values()]:
            if os.path.isdir(path) and not os.path.islink(path):
                for entry in os.listdir(path):
                    target = os.path.join(path, entry)
                    if os.path.isdir(target) and not os.path.islink(target):
                        shutil.rmtree(target, ignore_errors=True)
                    else:
                        os.unlink(target)
            os.makedirs(path, exist_ok=True)

    def prepare(self, env, to_share=True):
        """Run jobPreparation.commandLine (if any) on this node; its exit code."""
        prep = (self.props.get('jobPreparation') or {}).get('commandLine')
        if not prep:
            return 0
        env = dict(env)
        env['AZ_BATCHAI_TASK_INDEX'] = str(own_index(self.nodes))
        if not to_share:
            return subprocess.run(['bash', '-c', prep], env=env, cwd=self.work, check=False).returncode
        with open(os.path.join(self.stdouterr, PREP_STDOUT), 'ab') as out, \
                open(os.path.join(self.stdouterr, PREP_STDERR), 'ab') as err:
            return subprocess.run(['bash', '-c', prep], env=env, cwd=self.work, stdout=out, stderr=err,
                                  stdin=subprocess.DEVNULL, check=False).returncode

    def run(self, env):
        """The job's processes (launcher.plan over this job's nodes); the job's exit code."""
        exports = sorted(env)
        made = launcher.plan(self.props, self.toolkit, self.nodes, self.host_file, self.shared,
                             mpirun_exports=exports if len(self.nodes) > 1 else ())
        with open(self.host_file, 'w', encoding='utf-8') as f:
            f.write(made.host_file)
        return launcher.run(made, env, self.stdouterr, spawn=mpi_spawn(exports), cwd=self.work)

    def record(self, step, code):
        with open(os.path.join(self.work, EXIT_FILE), 'w', encoding='ascii') as f:
            f.write('{} {}\n'.format(step, code))
        return code


def own_index(job_nodes):
    """This node's index among the job's nodes: the first whose address a socket here can bind (Batch gives a node
    no variable with its own address); 0 when none can."""
    import socket  # here: only a multi-node preparation needs it
    if len(job_nodes) < 2:
        return 0
    for index, node in enumerate(job_nodes):
        try:
            with socket.socket(socket.AF_INET6 if ':' in node.address else socket.AF_INET) as probe:
                probe.bind((node.address, 0))
            return index
        except OSError:
            continue
    return 0


def mpi_spawn(exports):
    """launcher.run's spawn for Batch nodes: the master's processes here, another node's through
    `mpirun -np 1 --host ADDRESS -x NAME...` (Batch sets up SSH between a pool's nodes for its pool-wide auto user;
    -x carries the process's variables, which SSH would not)."""
    def spawn(plan_, process, argv):
        if process.node == 0:
            return argv
        names = sorted(set(exports) | set(plan_.env) | set(process.env))
        return ['mpirun', '-np', '1', '--host', plan_.nodes[process.node].address,
                *[arg for name in names for arg in ('-x', name)], *argv]
    return spawn


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    mode = args[0] if args else ''
    if mode not in ('task', 'prepare', 'run'):
        print('usage: {} task|prepare|run'.format(PAYLOAD_FILE), file=sys.stderr)
        return 2
    job = NodeJob(json.loads(os.environ[TASK_VARIABLE]), dict(os.environ))
    job.link_job_mounts()
    os.makedirs(job.shared, exist_ok=True)
    env = job.environment()
    master = is_master(os.environ)
    if mode in ('task', 'prepare'):
        if master:
            job.clean()
        code = job.prepare(env, to_share=master)
        if code != 0 or mode == 'prepare':
            return job.record('prep', code) if code != 0 else 0
    return job.record('main', job.run(env))


if __name__ == '__main__':
    sys.exit(main())
