"""Slurm's own client commands (sbatch, squeue, scontrol, scancel), run with the service's SLURM_CONF.

Nothing here talks to slurmctld any other way: a login node that can run these commands can host the service.
One configuration serves every command, sbatch included: `--slurm-conf` when given, else the SLURM_CONF of the
service's own environment (environment modules and sites with several clusters set it), else Slurm's default.
A job's environment never chooses it (a job's own SLURM_CONF is dropped before sbatch sees it).
"""
import os
import shutil
import subprocess
import time

COMMAND_TIMEOUT = 60.0
# squeue -t all keeps a finished job for MinJobAge (300 s by default): long enough for the next poll to see it.
_SQUEUE_FORMAT = '%i|%T|%r'


class SlurmError(Exception):
    """A Slurm command failed; the message is Slurm's own (its stderr), without the 'sbatch: error: ' noise."""


def _clean(text):
    lines = [line.split('error: ', 1)[-1].strip() for line in (text or '').splitlines() if line.strip()]
    return ' '.join(dict.fromkeys(lines)) or 'no message'


def resolve_conf(conf=None, environ=None):
    """The slurm.conf a service uses: `conf` (--slurm-conf), else SLURM_CONF of `environ` (default: this process's
    environment), as an absolute path; None for Slurm's own default."""
    conf = conf or (os.environ if environ is None else environ).get('SLURM_CONF') or None
    return os.path.abspath(conf) if conf else None


class SlurmCli:
    """Runs Slurm client commands against one cluster: the one `resolve_conf` names, for every command."""

    def __init__(self, conf=None, partition=None, account=None):
        self.conf = resolve_conf(conf)
        self.partition = partition
        self.account = account
        self.calls = {}  # command -> [calls, seconds]: where the time goes (logged when the service stops)

    def environment(self, base=None):
        """`base` (default: the service's environment) with SLURM_CONF set to this cluster's, or removed when it
        is Slurm's default: whatever `base` carried, the command goes to the cluster the service talks to."""
        env = dict(os.environ if base is None else base)
        env.pop('SLURM_CONF', None)
        if self.conf:
            env['SLURM_CONF'] = self.conf
        return env

    def run(self, *args, env=None, check=True):
        # Found on the service's PATH: a job's environment (which sbatch gets) need not have Slurm on its PATH.
        program = shutil.which(args[0]) or args[0]
        started = time.monotonic()
        try:
            proc = subprocess.run([program, *args[1:]], env=env or self.environment(), capture_output=True, text=True,
                                  timeout=COMMAND_TIMEOUT, stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise SlurmError('{} is not installed (or not on PATH)'.format(args[0])) from None
        except subprocess.TimeoutExpired:
            raise SlurmError('{} did not answer within {:g} s'.format(args[0], COMMAND_TIMEOUT)) from None
        finally:
            spent = self.calls.setdefault(args[0], [0, 0.0])
            spent[0] += 1
            spent[1] += time.monotonic() - started
        if check and proc.returncode != 0:
            raise SlurmError(_clean(proc.stderr or proc.stdout))
        return proc

    # ---- checks at start -------------------------------------------------------------------------------------

    def check(self):
        """What `local start --scheduler slurm` can check from here; raise SlurmError saying what is wrong.

        Returns {'cluster': ClusterName, 'partition': name, 'nodes': node count of the partition, 'cpus': its CPUs
        (TotalCPUs), 'maxArraySize': the largest job array the cluster takes (MaxArraySize; Slurm's default 1001)}.
        """
        for command in ('sbatch', 'squeue', 'scontrol', 'scancel'):
            if shutil.which(command) is None:
                raise SlurmError('{} was not found on PATH: run the service on a machine that can submit to the '
                                 'cluster (a login node with the Slurm client commands)'.format(command))
        if self.conf and not os.path.isfile(self.conf):
            raise SlurmError('the Slurm configuration {} does not exist'.format(self.conf))
        try:
            self.run('squeue', '--me', '-h', '-o', '%i')
            ping = self.run('scontrol', 'ping', check=False)
            config = self.run('scontrol', 'show', 'config').stdout
        except SlurmError as ex:
            raise SlurmError('Slurm does not answer: {}'.format(ex)) from None
        if ping.returncode != 0 or 'is UP' not in ping.stdout:
            raise SlurmError('the Slurm controller does not answer: {}'.format(
                _clean(ping.stdout + ping.stderr)))
        cluster = _config_value(config, 'ClusterName') or 'unknown'
        partition = self.partition or self._default_partition()
        try:
            shown = self.run('scontrol', 'show', 'partition', partition, '-o').stdout
        except SlurmError:
            raise SlurmError("the Slurm partition '{}' does not exist on cluster {}".format(partition, cluster)) \
                from None
        nodes = int(_field(shown, 'TotalNodes') or 0)
        state = _field(shown, 'State') or 'UP'
        if state != 'UP':
            raise SlurmError("the Slurm partition '{}' is {}: it takes no jobs".format(partition, state))
        if nodes < 1:
            raise SlurmError("the Slurm partition '{}' has no nodes".format(partition))
        try:
            max_array_size = max(1, int(_config_value(config, 'MaxArraySize') or 1001))
        except ValueError:
            max_array_size = 1001
        try:
            cpus = int(_field(shown, 'TotalCPUs') or 0)
        except ValueError:
            cpus = 0
        return {'cluster': cluster, 'partition': partition, 'nodes': nodes, 'cpus': cpus or nodes,
                'maxArraySize': max_array_size}

    def _default_partition(self):
        for line in self.run('scontrol', 'show', 'partition', '-o').stdout.splitlines():
            if 'Default=YES' in line.split():
                return _field(line, 'PartitionName')
        raise SlurmError('the Slurm cluster has no default partition: give one with --partition')

    # ---- jobs ------------------------------------------------------------------------------------------------

    def submit(self, options, script, env):
        """sbatch a script file; return Slurm's job id."""
        args = ['sbatch', '--parsable', *options]
        if self.partition:
            args.append('--partition=' + self.partition)
        if self.account:
            args.append('--account=' + self.account)
        out = self.run(*args, script, env=env).stdout.strip()
        return out.split(';', 1)[0]

    def states(self, job_ids):
        """{job id: (Slurm state, reason)} of the jobs Slurm still knows (finished ones for MinJobAge).

        An array task's id is `<array id>_<index>`; -r lists each task on a line of its own (squeue otherwise
        folds an array's pending tasks into one `<array id>_[i-j]` line).
        """
        if not job_ids:
            return {}
        proc = self.run('squeue', '-r', '-h', '-t', 'all', '-j', ','.join(job_ids), '-o', _SQUEUE_FORMAT, check=False)
        states = {}
        for line in proc.stdout.splitlines():
            parts = line.strip().split('|')
            if len(parts) == 3:
                states[parts[0]] = (parts[1], parts[2])
        if proc.returncode != 0 and not states and len(job_ids) > 1:
            # squeue refuses a whole list when one id in it is unknown: ask for each.
            for job_id in job_ids:
                states.update(self.states([job_id]))
        return states

    def show(self, job_id):
        """`scontrol show job` as a dict (JobState, ExitCode, Reason, NodeList...), None if Slurm forgot it."""
        proc = self.run('scontrol', '-o', 'show', 'job', job_id, check=False)
        if proc.returncode != 0 or not proc.stdout.strip():
            return None
        return _fields(proc.stdout)

    def find_by_name(self, name):
        """Ids of the jobs (any state Slurm still knows) named `name`."""
        proc = self.run('squeue', '-h', '-t', 'all', '--name=' + name, '-o', '%i', check=False)
        return proc.stdout.split()

    def find_array(self, name):
        """The id of the job array named `name` (any state Slurm still knows), or None."""
        proc = self.run('squeue', '-r', '-h', '-t', 'all', '--name=' + name, '-o', '%F', check=False)
        found = proc.stdout.split()
        return found[0] if found else None

    def cancel(self, job_ids):
        if job_ids:
            self.run('scancel', *job_ids, check=False)


def _fields(line):
    fields = {}
    for token in line.split():
        if '=' in token:
            key, value = token.split('=', 1)
            fields.setdefault(key, value)
    return fields


def _field(line, name):
    return _fields(line).get(name)


def _config_value(config, name):
    for line in config.splitlines():
        key, _, value = line.partition('=')
        if key.strip() == name:
            return value.strip()
    return None
