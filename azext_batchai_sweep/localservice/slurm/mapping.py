"""A Batch AI job as a Slurm batch job, and a Slurm job's end as a Batch AI outcome (docs/slurm.md has the table).

- nodeCount -> --nodes; the cluster's VM size -> --gres=gpu:<GPUs per node>; maxWallClockTime -> --time (Slurm
  counts whole minutes: the scheduler also cancels the job at the exact limit itself);
- the job's environment (layout.environment, as the processes scheduler builds it) travels with sbatch; the batch
  script adds what Batch AI set on a multi-node job (host list, MPI host file, master node, task index);
- customMpiSettings and horovodSettings run `processCount` tasks with Slurm's own srun (Batch AI ran mpirun);
  customToolkitSettings runs once, on the first node, as Batch AI ran it; every other toolkit runs one process on
  one node, and is refused with more nodes.
"""
import math
import re
import shlex

from ..errors import bad_request
from ..layout import command_line
from ..resources import job_wall_clock
from ..scheduler import REASONS

MPI_TOOLKITS = ('customMpiSettings', 'horovodSettings')
MULTI_NODE_TOOLKITS = MPI_TOOLKITS + ('customToolkitSettings',)
_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
_BASH_READONLY = {'BASHOPTS', 'BASH_VERSINFO', 'EUID', 'PPID', 'SHELLOPTS', 'UID'}
MASTER_PORT = 6000  # AZ_BATCH_MASTER_NODE is host:port on Batch (multi-instance tasks' coordination port)

# Slurm job states (squeue %T) -> Batch AI executionState while the job lives.
QUEUED_STATES = {'PENDING', 'REQUEUED', 'REQUEUE_HOLD', 'REQUEUE_FED', 'RESV_DEL_HOLD'}
LIVE_STATES = {'RUNNING', 'CONFIGURING', 'COMPLETING', 'SUSPENDED', 'STOPPED', 'SIGNALING', 'STAGE_OUT',
               'RESIZING'}

# Pending reasons that never clear by waiting: the job is cancelled and fails with the reason (never stuck queued).
UNRUNNABLE_REASONS = {
    'PartitionTimeLimit': 'its maxWallClockTime exceeds the partition\'s time limit',
    'PartitionNodeLimit': 'its nodeCount exceeds the partition\'s node limit',
    'BadConstraints': 'its constraints cannot be satisfied',
    'AccountNotAllowed': 'the account may not use the partition',
    'InvalidAccount': 'the account is invalid',
    'InvalidQOS': 'the QOS is invalid',
    'QOSMaxWallDurationPerJobLimit': 'its maxWallClockTime exceeds the QOS limit',
    'QOSMaxNodePerJobLimit': 'its nodeCount exceeds the QOS limit',
}

# Final Slurm states other than COMPLETED / FAILED / CANCELLED -> executionInfo.errors[] (code, message).
FAILURES = {
    'TIMEOUT': REASONS['wallclock'],
    'NODE_FAIL': ('NodeFailure', 'A node of the job failed (Slurm NODE_FAIL{nodes}); resubmit the job to run it '
                                 'on the remaining nodes.'),
    'OUT_OF_MEMORY': ('OutOfMemory', 'The job ran out of memory (Slurm OUT_OF_MEMORY{nodes}).'),
    'BOOT_FAIL': ('NodeBootFailed', 'A node of the job failed to boot (Slurm BOOT_FAIL{nodes}).'),
    'PREEMPTED': ('JobPreempted', 'Slurm preempted the job (PREEMPTED{nodes}).'),
    'DEADLINE': ('DeadlineReached', 'Slurm ended the job at its deadline (DEADLINE{nodes}).'),
    'LOST': ('SlurmJobLost', 'Slurm no longer knows the job and it left no exit code: it ended while the service '
                             'was down for longer than Slurm keeps finished jobs (MinJobAge).'),
}


def check_toolkit(props, toolkit):
    """400 at submit time for what the Slurm scheduler cannot run as Batch AI ran it."""
    if props['nodeCount'] > 1 and toolkit not in MULTI_NODE_TOOLKITS:
        raise bad_request('UnsupportedToolkit', '{} on {} nodes cannot run on the Slurm scheduler: multi-node jobs '
                          'need customMpiSettings, horovodSettings or customToolkitSettings (which start their '
                          'processes with srun or mpirun); run it on one node.'.format(toolkit, props['nodeCount']))
    count = process_count(props, toolkit)
    if count < 1:
        raise bad_request('InvalidRequestContent', 'processCount must be at least 1.')


def process_count(props, toolkit):
    """Batch AI's processCount of an MPI toolkit (default: nodeCount); 1 for the others."""
    if toolkit not in MPI_TOOLKITS:
        return 1
    count = props[toolkit].get('processCount')
    return props['nodeCount'] if count is None else int(count)


def resource_options(props, toolkit, gpus_per_node):
    """The sbatch options that say what a job needs (nodes, tasks, GPUs, time): jobs with equal ones can share one
    job array."""
    nodes = props['nodeCount']
    options = ['--nodes={}'.format(nodes),
               '--ntasks-per-node={}'.format(math.ceil(process_count(props, toolkit) / nodes)),
               '--no-requeue', '--export=ALL']
    if gpus_per_node:
        options.append('--gres=gpu:{}'.format(gpus_per_node))
    if (props.get('constraints') or {}).get('maxWallClockTime'):
        # Without one, the partition's default time limit applies (Batch AI's one-week default may exceed the
        # partition's MaxTime, which would leave the job pending for ever); the service enforces the week itself.
        minutes = max(1, math.ceil(job_wall_clock(props).total_seconds() / 60.0))
        options.append('--time={}'.format(minutes))
    return options


def literal_filename(path):
    """`path` written as sbatch's --output/--error "filename pattern" that names exactly that file.

    sbatch replaces %j, %x, %a... (and a number between: %4j) in these paths, %% is a "%", and a path holding "\\"
    is not replaced at all, its "\\" read as one backslash (checked on Slurm 22.05: tests/slurm). A job's
    stdOutErrPathPrefix, and the service's data directory, may hold any of these: each is escaped, so the output
    lands where Batch AI puts it. --chdir and --job-name are no patterns: they are passed as they are.
    """
    if '\\' in path:
        return path.replace('\\', '\\\\')  # every backslash doubled: no replacement at all, each pair one backslash
    return path.replace('%', '%%')


def sbatch_options(props, toolkit, gpus_per_node, name, stdouterr_dir, workdir):
    """All the sbatch options of a job submitted on its own."""
    return ['--job-name=' + name, *resource_options(props, toolkit, gpus_per_node),
            '--output=' + literal_filename(stdouterr_dir + '/stdout.txt'),
            '--error=' + literal_filename(stdouterr_dir + '/stderr.txt'), '--open-mode=append', '--chdir=' + workdir]


def array_options(resources, name, array_dir, count):
    """The sbatch options of `count` jobs with the same `resources` submitted as one job array: task i's output
    goes through array_dir/i.out and i.err, links to its own job's stdout.txt and stderr.txt."""
    if '\\' in array_dir:
        raise ValueError('an array\'s output pattern cannot be written in a folder whose path holds a backslash')
    return ['--job-name=' + name, '--array=0-{}'.format(count - 1), *resources,
            '--output=' + literal_filename(array_dir) + '/%a.out', '--error=' + literal_filename(array_dir) + '/%a.err',
            '--open-mode=append', '--chdir=' + array_dir]


def array_script(array_dir):
    """The array's batch script: task i runs the batch script of the i-th job (array_dir/i.sh links to it)."""
    return '#!/bin/bash\nexec /bin/bash {}/"$SLURM_ARRAY_TASK_ID".sh\n'.format(shlex.quote(array_dir))


def environment_file(env):
    """A job's environment as a file its batch script sources: one quoted `export NAME=value` per variable.

    A name bash cannot hold (not an identifier, or one of its read-only variables) is left out: it would not reach
    the job's command through the bash batch script by sbatch's environment either.
    """
    return ''.join('export {}={}\n'.format(name, shlex.quote(value)) for name, value in sorted(env.items())
                   if _NAME.fullmatch(name) and name not in _BASH_READONLY)


def batch_script(props, toolkit, layout, exit_file, host_file, env_file=None):
    """The bash batch script: Batch AI's multi-node variables, job preparation on every node, then the toolkit.

    `env_file`: the job's environment comes from this file (an array task: sbatch's environment is the array's),
    which the script reads and removes (its secrets stay on disk only until the job starts), then it enters the
    job's working directory (sbatch's --chdir is the array's).
    """
    q = shlex.quote
    nodes = props['nodeCount']
    per_node = math.ceil(process_count(props, toolkit) / nodes)
    lines = ['#!/bin/bash', '# Written by the local Batch AI service for job {} ({}).'.format(layout.name, layout.uid)]
    if env_file:
        lines += ['. {0} && rm -f {0} || exit 1'.format(q(env_file)), 'cd {} || exit 1'.format(q(layout.temp_dir))]
    lines += [
        'exit_file={}'.format(q(exit_file)),
        'hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        'export AZ_BATCH_HOST_LIST=$(echo $hosts | tr " " ",")',
        'export AZ_BATCHAI_MPI_MASTER_NODE=${AZ_BATCH_HOST_LIST%%,*}',
        'export AZ_BATCH_MASTER_NODE=$AZ_BATCHAI_MPI_MASTER_NODE:{}'.format(MASTER_PORT),
        'export AZ_BATCHAI_MPI_HOST_FILE={}'.format(q(host_file)),
        'for h in $hosts; do echo "$h slots={}"; done > "$AZ_BATCHAI_MPI_HOST_FILE"'.format(per_node),
        'export AZ_BATCHAI_TASK_INDEX=0',
    ]
    task_index = 'export AZ_BATCHAI_TASK_INDEX=$SLURM_PROCID; '
    prep = (props.get('jobPreparation') or {}).get('commandLine')
    if prep:
        out = q(layout.stdouterr_dir + '/stdout-job_prep.txt')
        err = q(layout.stdouterr_dir + '/stderr-job_prep.txt')
        if nodes > 1:  # on every node of the job, as Batch AI prepared each node
            launch = 'srun --nodes={0} --ntasks={0} --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c {1}'.format(
                nodes, q(task_index + prep))
        else:
            launch = 'bash -c {}'.format(q(prep))
        lines += ['{} >>{} 2>>{}'.format(launch, out, err),
                  'rc=$?; if [ $rc -ne 0 ]; then echo "prep $rc" > "$exit_file"; exit $rc; fi']
    command = command_line(props, toolkit)
    if toolkit in MPI_TOOLKITS:
        count = process_count(props, toolkit)
        launch = 'srun --nodes={} --ntasks={} --kill-on-bad-exit=1 bash -c {}'.format(
            nodes, count, q(task_index + command))
    else:
        launch = 'bash -c {}'.format(q(command))
    lines += [launch, 'rc=$?', 'echo "main $rc" > "$exit_file"', 'exit $rc', '']
    return '\n'.join(lines)


def read_exit_file(path):
    """('prep'|'main', exit code) the batch script recorded, or None (it was killed before)."""
    try:
        with open(path, encoding='ascii') as f:
            step, code = f.read().split()
        return step, int(code)
    except (OSError, ValueError):
        return None


def outcome(slurm_state, reason, exit_record, slurm_exit=None, nodes=None):
    """(executionState, exit code or None, errors) of a finished Slurm job.

    `reason`: why the service stopped the job itself (a REASONS key) or None; `exit_record`: read_exit_file();
    `slurm_exit`: scontrol's ExitCode ('3:0') when the script left no record.
    """
    exit_code = exit_record[1] if exit_record else _exit_code(slurm_exit)
    where = ' on {}'.format(nodes) if nodes and nodes not in ('(null)', 'None') else ''
    if reason:
        return 'failed', exit_code, [{'code': REASONS[reason][0], 'message': REASONS[reason][1]}]
    if slurm_state == 'COMPLETED' and (exit_code in (0, None)):
        return 'succeeded', 0, []
    if exit_record and exit_record[0] == 'prep':
        return 'failed', exit_code, [{'code': 'JobPreparationFailed',
                                      'message': 'jobPreparation.commandLine exited with {}.'.format(exit_code)}]
    if slurm_state in ('FAILED', 'COMPLETED'):
        return 'failed', exit_code, [{'code': 'NonZeroExitCode',
                                      'message': 'The job exited with code {} (Slurm FAILED{}).'.format(
                                          exit_code, where)}]
    if slurm_state == 'CANCELLED':
        return 'failed', exit_code, [{'code': 'JobCancelled',
                                      'message': 'The job was cancelled in Slurm, not through the service '
                                                 '(scancel or an administrator).'}]
    if slurm_state in FAILURES:
        code, message = FAILURES[slurm_state]
        return 'failed', exit_code, [{'code': code, 'message': message.format(nodes=where)}]
    return 'failed', exit_code, [{'code': 'SlurmJobFailed',
                                  'message': 'The Slurm job ended {}{}.'.format(slurm_state, where)}]


def _exit_code(text):
    try:
        code, signal = (int(p) for p in (text or '').split(':'))
    except ValueError:
        return None
    return 128 + signal if signal and not code else code
