"""A Batch AI job as a Slurm batch job, and a Slurm job's end as a Batch AI outcome (docs/slurm.md has the table).

- nodeCount -> --nodes; the cluster's VM size -> --gres=gpu:<GPUs per node>; maxWallClockTime -> --time (Slurm
  counts whole minutes: the scheduler also cancels the job at the exact limit itself);
- the job's environment (layout.environment, as the processes scheduler builds it) travels with sbatch; on the
  job's first node the batch script has launcher.py plan the job's processes over the allocation's nodes (host
  list, MPI host file, master node and address, TensorFlow's hosts) and run them: each process on its node (srun
  for the other nodes), MPI toolkits through one mpirun over the host file, as Batch AI ran every toolkit.
"""
import json
import math
import os
import re
import shlex
import sys

from .. import launcher
from ...errors import bad_request
from ...resources import job_wall_clock
from ..scheduler import REASONS

_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
_BASH_READONLY = {'BASHOPTS', 'BASH_VERSINFO', 'EUID', 'PPID', 'SHELLOPTS', 'UID'}

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
    """400 at submit time for the launch settings Batch AI refused."""
    problem = launcher.check(props, toolkit)
    if problem:
        raise bad_request('InvalidRequestContent', problem)


def resource_options(props, toolkit, gpus_per_node):
    """The sbatch options that say what a job needs (nodes, tasks, GPUs, time): jobs with equal ones can share one
    job array."""
    nodes = props['nodeCount']
    options = ['--nodes={}'.format(nodes),
               '--ntasks-per-node={}'.format(math.ceil(launcher.process_count(props, toolkit) / nodes)),
               '--no-requeue', '--export=ALL']
    if gpus_per_node:
        options.append('--gres=gpu:{}'.format(gpus_per_node))
    if (props.get('constraints') or {}).get('maxWallClockTime'):
        # Without one, the partition's default time limit applies (Batch AI's 150-day default may exceed the
        # partition's MaxTime, which would leave the job pending for ever); the service enforces the default itself.
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


def launch_settings(props, toolkit, layout):
    """What launcher.py needs to plan the job on its nodes (written into the job's folder): no variable or secret."""
    settings = {k: props[k] for k in ('nodeCount', toolkit)}
    return json.dumps({'props': settings, 'toolkit': toolkit, 'host_file': layout.host_file,
                       'shared': layout.shared_dir})


def batch_script(props, toolkit, layout, exit_file, settings_file, env_file=None):
    """The bash batch script: the job's launch planned on its nodes (Batch AI's node variables and host file),
    job preparation on every node, then the toolkit's processes.

    `env_file`: the job's environment comes from this file (an array task: sbatch's environment is the array's),
    which the script reads and removes (its secrets stay on disk only until the job starts), then it enters the
    job's working directory (sbatch's --chdir is the array's).
    """
    q = shlex.quote
    nodes = props['nodeCount']
    script = '{} -I {}'.format(q(sys.executable), q(launcher.__file__))
    plan_file = os.path.join(layout.job_dir, 'launch-plan.json')
    plan_env = os.path.join(layout.job_dir, 'launch-env')
    lines = ['#!/bin/bash', '# Written by the local Batch AI service for job {} ({}).'.format(layout.name, layout.uid)]
    if env_file:
        lines += ['. {0} && rm -f {0} || exit 1'.format(q(env_file)), 'cd {} || exit 1'.format(q(layout.temp_dir))]
    lines += [
        'exit_file={}'.format(q(exit_file)),
        '{} slurm-plan {} {} {} || exit 1'.format(script, q(settings_file), q(plan_file), q(plan_env)),
        '. {} || exit 1'.format(q(plan_env)),
    ]
    prep = (props.get('jobPreparation') or {}).get('commandLine')
    if prep:
        out = q(layout.stdouterr_dir + '/stdout-job_prep.txt')
        err = q(layout.stdouterr_dir + '/stderr-job_prep.txt')
        if nodes > 1:  # on every node of the job, as Batch AI prepared each node
            launch = 'srun --nodes={0} --ntasks={0} --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c {1}'.format(
                nodes, q('export AZ_BATCHAI_TASK_INDEX=$SLURM_PROCID; ' + prep))
        else:
            launch = 'bash -c {}'.format(q(prep))
        lines += ['{} >>{} 2>>{}'.format(launch, out, err),
                  'rc=$?; if [ $rc -ne 0 ]; then echo "prep $rc" > "$exit_file"; exit $rc; fi']
    # The processes do not depend on the nodes' names: planned here on stand-ins, to know whether the job is one
    # process writing stdout.txt (sbatch's --output: it runs in this script) or several (launcher.py runs them).
    stand_ins = [launcher.Node('node', '127.0.0.1')] * nodes
    processes = launcher.plan(props, toolkit, stand_ins, layout.host_file, layout.shared_dir).processes
    if len(processes) == 1 and processes[0].stdout == 'stdout.txt':
        launch = 'bash -c {}'.format(q(processes[0].command))
    else:
        launch = '{} run {} {} srun'.format(script, q(plan_file), q(layout.stdouterr_dir))
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
