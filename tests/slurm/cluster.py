"""A private Slurm cluster on loopback for the tests: Debian's real munged, slurmctld and several slurmd.

Several compute nodes are emulated on this one host with Slurm's multiple-slurmd support (`slurmd -N nX`), each
node declaring two GPUs as GRES whose device files are `mknod` stand-ins (there is no GPU here; Slurm only needs
character devices to hand out their indexes). Everything the cluster uses (config, state, spool, logs, pid files,
munge key and socket) lives in one private directory; `/etc/slurm` and `/etc/munge` are never read because
SLURM_CONF and the munge socket point into it. Daemons run in the foreground (as child processes) and are
stopped by their pids. Needs root (SlurmUser=root, mknod).
"""
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

BINARIES = ('munged', 'mungekey', 'munge', 'slurmctld', 'slurmd', 'sbatch', 'squeue', 'scontrol', 'scancel',
            'sinfo', 'srun')
GPUS_PER_NODE = 2
# The daemons live in /usr/sbin, which a non-login root shell may not have on PATH.
PATH = os.pathsep.join([os.environ.get('PATH', ''), '/usr/sbin', '/sbin'])

_SLURM_CONF = """\
ClusterName=testcluster
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={dir}/munge/munge.socket.2
CredType=cred/munge
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool/%n
SlurmctldPidFile={dir}/run/slurmctld.pid
SlurmdPidFile={dir}/run/slurmd.%n.pid
SlurmctldLogFile={dir}/log/slurmctld.log
SlurmdLogFile={dir}/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig={dir}/etc/plugstack.conf
# No cgroups and no accounting daemon: final states come from jobcomp/filetxt and scontrol.
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={dir}/jobcomp.txt
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_min_interval=0
GresTypes=gpu
# All "nodes" share one host: let CPUs= exceed the real cores.
SlurmdParameters=config_overrides
# Fast turnaround and failure detection for tests; a job on a failed node ends NODE_FAIL (no requeue).
SlurmdTimeout=5
SlurmctldTimeout=10
MessageTimeout=5
KillWait=2
MinJobAge=600
InactiveLimit=0
Waittime=0
ReturnToService=2
JobRequeue=0
NodeName=n[1-{nodes}] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[{first_node_port}-{last_node_port}] \
CPUs={cpus} RealMemory=1000 Gres=gpu:{gpus} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=small Nodes=n1 MaxTime=5 State=UP
"""

_GRES_CONF = """\
AutoDetect=off
NodeName=n[1-{nodes}] Name=gpu File={dir}/dev/nvidia[0-{last_gpu}]
"""


def missing_binaries():
    return [b for b in BINARIES if shutil.which(b, path=PATH) is None]


def why_unavailable():
    """None when a cluster can be started here, else the reason (for a loud skip)."""
    missing = missing_binaries()
    if missing:
        return ('Slurm/munge binaries missing ({}): install slurmctld slurmd slurm-client munge '
                '(`make test` does it with apt-get when run as root)'.format(', '.join(missing)))
    if os.geteuid() != 0:
        return 'the test Slurm cluster runs its daemons as root (SlurmUser=root, mknod GPU stand-ins); not root'
    return None


def _listening_ports():
    ports = set()
    for name in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(name, encoding='ascii') as f:
                for line in f.readlines()[1:]:
                    ports.add(int(line.split()[1].rsplit(':', 1)[1], 16))
        except OSError:
            pass
    return ports


def _free_port_block(count):
    """`count` consecutive free loopback ports below the ephemeral range (a slurmd there can lose its port)."""
    taken = _listening_ports()
    for _ in range(200):
        base = random.randint(10000, 31999 - count)
        if any(p in taken for p in range(base, base + count)):
            continue
        try:
            for port in range(base, base + count):
                with socket.socket() as s:
                    s.bind(('127.0.0.1', port))
        except OSError:
            continue
        return base
    raise RuntimeError('no block of {} free ports'.format(count))


class SlurmCluster:
    """One started cluster: `env` (SLURM_CONF), `conf`, `dir`, node control for fault injection, `stop()`."""

    def __init__(self, nodes=4, cpus=4, root=None):
        self.nodes = nodes
        self.cpus = cpus
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix='slurmtest.', dir=root))
        self.conf = os.path.join(self.dir, 'etc', 'slurm.conf')
        self.jobcomp = os.path.join(self.dir, 'jobcomp.txt')
        self.env = dict(os.environ, SLURM_CONF=self.conf, PATH=PATH)
        self.procs = {}
        self._logs = []

    # ---- start / stop ----------------------------------------------------------------------------------------

    def start(self, timeout=60.0):
        try:
            return self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout):
        for sub in ('etc', 'munge', 'state', 'spool', 'log', 'run', 'dev'):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        os.chmod(self.dir, 0o755)
        os.chmod(os.path.join(self.dir, 'munge'), 0o755)  # munged wants its socket directory world-executable
        base = _free_port_block(self.nodes + 1)
        values = dict(dir=self.dir, host=socket.gethostname().split('.')[0], ctld_port=base, nodes=self.nodes,
                      first_node_port=base + 1, last_node_port=base + self.nodes, cpus=self.cpus,
                      gpus=GPUS_PER_NODE, last_gpu=GPUS_PER_NODE - 1)
        self._write('etc/slurm.conf', _SLURM_CONF.format(**values))
        self._write('etc/gres.conf', _GRES_CONF.format(**values))
        self._write('etc/plugstack.conf', '')  # empty: /etc/slurm/plugstack.conf.d stays unread
        for index in range(GPUS_PER_NODE):
            # GRES files must be character devices or Slurm hands out no CUDA_VISIBLE_DEVICES; NVIDIA's major
            # number, no driver behind it (stand-ins: this machine has no GPU).
            path = os.path.join(self.dir, 'dev', 'nvidia{}'.format(index))
            try:
                os.mknod(path, 0o600 | 0o020000, os.makedev(195, index))
            except OSError:
                os.symlink(('/dev/null', '/dev/zero')[index % 2], path)
        key = os.path.join(self.dir, 'munge', 'munge.key')
        subprocess.run(['mungekey', '-c', '-b', '1024', '-k', key], check=True, capture_output=True)
        os.chmod(key, 0o400)
        sock = os.path.join(self.dir, 'munge', 'munge.socket.2')
        self._spawn('munged', ['munged', '-F', '--force', '--socket=' + sock, '--key-file=' + key,
                               '--pid-file=' + os.path.join(self.dir, 'run', 'munged.pid'),
                               '--log-file=' + os.path.join(self.dir, 'log', 'munged.log'),
                               '--seed-file=' + os.path.join(self.dir, 'munge', 'munged.seed'), '--num-threads=4'])
        self._until(lambda: os.path.exists(sock), 10, 'munged socket')
        self._spawn('slurmctld', ['slurmctld', '-D', '-c', '-i'])
        self._until(lambda: self.run('scontrol', 'ping').returncode == 0, 20, 'slurmctld answering')
        for n in range(1, self.nodes + 1):
            self.start_node('n{}'.format(n))
        self._until(lambda: self.node_states().count('idle') == self.nodes, timeout, 'all nodes idle')
        return self

    def stop(self, remove=True):
        """Cancel what runs, stop every daemon by pid (SIGTERM, then SIGKILL), kill this cluster's leftovers;
        then delete the cluster's directory (`remove`)."""
        ctld = self.procs.get('slurmctld')
        if ctld is not None and ctld.poll() is None:
            self.run('scancel', '--full', '--user=root')
            self._until(lambda: not self.run('squeue', '-h', '-o', '%i').stdout.strip(), 10, None)
        for name in sorted(self.procs, key=lambda n: (not n.startswith('slurmd'), n == 'munged')):
            self._stop_proc(self.procs[name])
        self._kill_leftovers()
        for f in self._logs:
            f.close()
        if remove:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---- fault injection -------------------------------------------------------------------------------------

    def kill_node(self, node):
        """SIGKILL one node's slurmd (its jobs end NODE_FAIL once slurmctld notices, ~16 s)."""
        proc = self.procs['slurmd.' + node]
        proc.kill()
        proc.wait()

    def start_node(self, node):
        os.makedirs(os.path.join(self.dir, 'spool', node), exist_ok=True)
        self._spawn('slurmd.' + node, ['slurmd', '-D', '-N', node])

    def set_node_state(self, node, state, reason='test'):
        """`scontrol update` a node (down: its jobs end NODE_FAIL at once; resume: back in service)."""
        args = ['scontrol', 'update', 'nodename=' + node, 'state=' + state]
        if state.lower() in ('down', 'drain'):
            args.append('reason=' + reason)
        done = self.run(*args)
        if done.returncode != 0 and not (state == 'resume' and 'Invalid node state' in done.stderr):
            # (resume of a node that is back already: ReturnToService=2 returns it when it answers again)
            raise RuntimeError('{}: {}'.format(' '.join(args), done.stderr.strip()))

    def node_states(self, nodes=None):
        """The states of the nodes (each once, though a node in two partitions is listed twice)."""
        args = ['sinfo', '-h', '-N', '-o', '%N %T']
        if nodes:
            args += ['-n', nodes]
        states = dict(line.split() for line in self.run(*args).stdout.splitlines() if line.strip())
        return [states[n] for n in sorted(states)]

    def wait_node(self, node, state, timeout=30.0):
        self._until(lambda: self.node_states(node) == [state], timeout, '{} {}'.format(node, state))

    def wait_idle(self, timeout=60.0):
        """Until no job of this cluster is pending or running and every node is idle (between tests)."""
        self._until(lambda: not self.run('squeue', '-h', '-o', '%i').stdout.strip()
                    and self.node_states().count('idle') == self.nodes, timeout, 'an idle cluster')

    def run(self, *args, check=False):
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True, check=check, timeout=60)

    # ---- helpers ---------------------------------------------------------------------------------------------

    def _write(self, relpath, text):
        with open(os.path.join(self.dir, relpath), 'w', encoding='utf-8') as f:
            f.write(text)

    def _spawn(self, name, args):
        log = open(os.path.join(self.dir, 'log', name + '.out'), 'ab')  # pylint: disable=consider-using-with
        self._logs.append(log)
        self.procs[name] = subprocess.Popen(args, env=self.env, stdout=log, stderr=log,  # noqa: consider-using-with
                                            stdin=subprocess.DEVNULL, start_new_session=True)

    def _until(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.1)
        if what is None:
            return False
        raise RuntimeError('test Slurm cluster: timed out waiting for {} (logs in {})'.format(
            what, os.path.join(self.dir, 'log')))

    @staticmethod
    def _stop_proc(proc, grace=10.0):
        if proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _kill_leftovers(self):
        """slurmstepd and job processes of this cluster (a SIGKILLed slurmd leaves them), by SLURM_CONF."""
        needle = ('SLURM_CONF=' + self.conf).encode()
        for pid in os.listdir('/proc'):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open('/proc/{}/environ'.format(pid), 'rb') as f:
                    env = f.read().split(b'\0')
                with open('/proc/{}/comm'.format(pid), 'rb') as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if needle not in env:
                continue
            if comm not in (b'slurmstepd', b'slurmd', b'slurmctld', b'munged') and \
                    not any(e.startswith(b'SLURM_JOB_ID=') for e in env):
                continue
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
