"""Each `az` run of the tests forked from a process that has already imported az's libraries.

Why: an az run costs about 1 s of CPU on this project's 2-core machine, and two thirds of that is importing
azure-cli's core, knack, azure-core, requests, urllib3, msrest and the Batch AI SDK, the same every time. The suite
runs az a few thousand times; that import was half of `make test`'s time.

What stays the same as the `az` executable (.venv/bin/az: `python -m azure.cli` with PYTHONPATH and AZ_INSTALLER set):
each run is a process of its own, forked from a server that has imported the libraries and nothing else. The run
gets its own pid, environment (replaced whole), working directory, sys.argv and sys.path[0] (its directory, as
`python -m` sets it), stdin/stdout/stderr on files of its own, `random` re-seeded (the standard library does it at
fork); az's own entry point (`azure.cli.__main__`) then runs as the executable's does, loading the extension from
source, reading the config dir, parsing, and exiting through the interpreter's exit path (threads joined, atexit
handlers, stdio flushed). What differs: the libraries' module-level code ran once, in the server; the run shares
the server's hash seed. So a run whose environment differs from the server's in what Python reads only at start-up
(PYTHON*, LC_*, LANG, TZ), or in what the preloaded libraries read while imported (the server records it), goes to
the real executable instead, and so does every run when the server cannot start.

The user's way (the executable, in a shell) stays tested where it is the point: the README's commands, the
pipeline script, `make demo`, the wheel, and every test that starts az with subprocess.Popen (signals, exit codes,
a killed run). `AZ_TESTS_FORK=0` makes every run use the executable (to compare, or to rule the server out).

Protocol (a Unix socket in a private directory): the client sends a JSON header (argv, env, cwd) and the run's
three file descriptors (SCM_RIGHTS); the server forks a watcher, the watcher forks the run and sends back its pid,
then its wait status. The client kills the pid on a timeout, as subprocess.run does.
"""
import atexit
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading

# The libraries an az run of this extension imports before and around the command: az's core and knack, the HTTP
# stack, the SDKs, az's telemetry and login libraries. Never the extension (it is the code under test, loaded from
# source by each run), nor azure.cli.__main__ (it runs the command when imported), nor a module that keeps
# something of the environment from its import: azure.cli.core's _config, cloud and extension modules (and every
# module that imports them: commands, parser, _help, _profile...) keep the config dir, the extension dirs and the
# cloud metadata URL, which each test sets; azure.storage's packages import wsgiref.handlers, which copies the whole
# environment. The server watches what the imports read (_preload): a run whose environment differs from the
# server's in one of those variables goes to the executable (knack, for one, keeps a default dir under HOME).
PRELOAD = (
    'azure.cli.core', 'azure.cli.core.util', 'azure.cli.core.azclierror', 'azure.cli.core.telemetry',
    'azure.cli.core._output', 'azure.cli.core.profiles', 'azure.cli.telemetry', 'azure.cli.command_modules.batchai',
    'knack', 'knack.cli', 'knack.invocation', 'knack.commands', 'knack.help', 'knack.arguments', 'knack.output',
    'knack.log', 'knack.util',
    'azure.core', 'azure.core.pipeline', 'azure.core.pipeline.policies', 'azure.core.pipeline.transport',
    'azure.core.exceptions', 'azure.core.polling', 'azure.mgmt.core', 'azure.mgmt.core.tools',
    'azure.mgmt.core.polling.arm_polling', 'azure.mgmt.batchai', 'azure.mgmt.batchai.models', 'azure.common',
    'msrest', 'msrest.serialization', 'requests', 'urllib3', 'psutil', 'portalocker', 'applicationinsights', 'msal',
    'msal_extensions', 'jmespath', 'tabulate', 'yaml', 'isodate', 'json', 'packaging.version', 'pkginfo',
    'unittest.mock', 'pkgutil', 'timeit', 'runpy', 'encodings.utf_8_sig',
)

# Variables the preloaded libraries may read while imported: debug switches no test sets, and the temporary
# directory (tempfile's choice is made again in each run).
_READ_AT_IMPORT_AND_HARMLESS = frozenset(('PSUTIL_DEBUG', '_ARC_DEBUG', '_ARGCOMPLETE_SUPPRESS_SPACE', 'TMPDIR', 'TEMP',
                                          'TMP'))

# What Python reads from the environment when it starts (encodings, paths, hash seed, warnings, time zone): a run
# whose values differ from the server's cannot be forked from it.
_START_UP_VARIABLES = ('PYTHON', 'LC_', 'LANG', 'LANGUAGE', 'TZ')

_HEADER = struct.Struct('!I')


def _start_up_part(env):
    return {k: v for k, v in env.items() if k.startswith(_START_UP_VARIABLES)}


def executable_env(env, venv_bin):
    """What .venv/bin/az adds to the environment before it runs `python -m azure.cli` (see that script)."""
    env = dict(env)
    src = os.path.join(venv_bin, 'src')
    env['PYTHONPATH'] = src if env.get('PYTHONPATH') is None else os.pathsep.join([src, env['PYTHONPATH']])
    env.setdefault('AZ_INSTALLER', 'PIP')
    return env


# --- the server -------------------------------------------------------------------------------------------------

def _recv_exactly(conn, size):
    data = b''
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _run_az(header, fds):
    """In the forked run: become `python -m azure.cli ARGV` in the header's directory and environment."""
    for fd, target in zip(fds, (0, 1, 2)):
        os.dup2(fd, target)
    for fd in fds:
        os.close(fd)
    os.chdir(header['cwd'])
    os.environ.clear()
    os.environ.update(header['env'])
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    sys.argv = ['az', *header['argv']]
    sys.path[0] = os.getcwd()  # as `python -m` sets it
    code = 0
    try:
        import runpy
        runpy.run_module('azure.cli', run_name='__main__', alter_sys=True)
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # pylint: disable=broad-except
        import traceback
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    # The interpreter's exit path: non-daemon threads joined, atexit handlers, stdio flushed.
    threading._shutdown()  # pylint: disable=protected-access
    atexit._run_exitfuncs()  # pylint: disable=protected-access
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # pylint: disable=broad-except
            pass
    os._exit(code & 0xFF)  # pylint: disable=protected-access


def _watch(conn, listener):
    """In the watcher: fork the run, send its pid, wait for it, send its wait status."""
    listener.close()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        size = _HEADER.unpack(_recv_exactly(conn, _HEADER.size))[0]
        msg, fds, _flags, _addr = socket.recv_fds(conn, size, 3)
        while len(msg) < size:
            msg += _recv_exactly(conn, size - len(msg))
        header = json.loads(msg.decode('utf-8'))
        pid = os.fork()
        if pid == 0:
            conn.close()
            _run_az(header, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall(json.dumps({'pid': pid}).encode() + b'\n')
        _, status, usage = os.wait4(pid, 0)
        conn.sendall(json.dumps({'status': status, 'cpu': usage.ru_utime + usage.ru_stime}).encode() + b'\n')
    finally:
        os._exit(0)  # pylint: disable=protected-access


def _preload():
    """Import PRELOAD, watching which environment variables the imports read; returns the ones a run might set."""
    read = set()
    environ_class = type(os.environ)
    getitem, iterate = environ_class.__getitem__, environ_class.__iter__

    def recording_getitem(self, key):
        read.add(key)
        return getitem(self, key)

    def recording_iter(self):
        read.add('(the whole environment)')
        return iterate(self)
    environ_class.__getitem__, environ_class.__iter__ = recording_getitem, recording_iter
    try:
        for name in PRELOAD:
            try:
                __import__(name)
            except Exception:  # pylint: disable=broad-except
                pass  # a library this azure-cli no longer ships: the runs import what they need themselves
    finally:
        environ_class.__getitem__, environ_class.__iter__ = getitem, iterate
    return sorted(key for key in read
                  if key not in _READ_AT_IMPORT_AND_HARMLESS and not key.startswith(_START_UP_VARIABLES))


def serve(socket_path):
    kept = _preload()
    if threading.active_count() != 1:  # forking a process with threads is unsafe: refuse to serve
        sys.exit('az fork server: the preloaded libraries started threads')
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # watchers are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    listener.settimeout(2)
    parent = os.getppid()
    sys.stdout.write('ready {}\n'.format(json.dumps(kept)))
    sys.stdout.flush()
    while True:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            if os.getppid() != parent:  # the test process is gone (killed): so is the server
                return
            continue
        conn.settimeout(None)
        if os.fork() == 0:
            _watch(conn, listener)
        conn.close()


# --- the client -------------------------------------------------------------------------------------------------

def _read_line(conn):
    """One reply line; the server sends two, each after the event it reports, so a byte at a time is enough."""
    data = b''
    while not data.endswith(b'\n'):
        chunk = conn.recv(1)
        if not chunk:
            raise EOFError('the az fork server closed the connection')
        data += chunk
    return data

class ForkServer:
    """One server per test process, started on first use."""

    def __init__(self, python, server_env):
        self.python = python
        self.server_env = dict(server_env)
        self.directory = tempfile.mkdtemp(prefix='az-fork-')
        self.socket_path = os.path.join(self.directory, 'socket')
        self.process = None
        self.failed = None
        self.last_pid = None
        self.last_cpu = None  # the last run's CPU seconds (user + system), for measuring
        self.kept = ()  # the variables the preloaded libraries read while imported

    def start(self):
        log = open(os.path.join(self.directory, 'server.log'), 'wb')  # pylint: disable=consider-using-with
        self.process = subprocess.Popen(  # pylint: disable=consider-using-with
            [self.python, os.path.abspath(__file__), self.socket_path], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=log, env=self.server_env, cwd=self.directory)
        line = self.process.stdout.readline()
        if line.startswith(b'ready '):
            self.kept = json.loads(line[len(b'ready '):])
        else:
            self.process.wait()
            with open(log.name, encoding='utf-8', errors='replace') as f:
                self.failed = 'the az fork server did not start: ' + f.read()[-2000:]
            return False
        atexit.register(self.stop)
        return True

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)

    def can_run(self, env):
        """Whether a run with this environment can be forked: the same values as the server's of what Python reads
        at start-up and of what the preloaded libraries read while imported."""
        if '(the whole environment)' in self.kept:
            return env == self.server_env
        return (_start_up_part(env) == _start_up_part(self.server_env)
                and all(env.get(key) == self.server_env.get(key) for key in self.kept))

    def run(self, argv, env, cwd, input_bytes, timeout):
        """Run az ARGV; returns (exit code as subprocess reports it, stdout bytes, stderr bytes)."""
        with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, \
                tempfile.TemporaryFile() as stderr, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            if input_bytes:
                stdin.write(input_bytes)
                stdin.seek(0)
            conn.connect(self.socket_path)
            header = json.dumps({'argv': list(argv), 'env': env, 'cwd': cwd or os.getcwd()}).encode('utf-8')
            conn.sendall(_HEADER.pack(len(header)))
            socket.send_fds(conn, [header], [stdin.fileno(), stdout.fileno(), stderr.fileno()])
            pid = self.last_pid = json.loads(_read_line(conn))['pid']
            conn.settimeout(timeout)
            try:
                line = _read_line(conn)
            except socket.timeout:
                os.kill(pid, signal.SIGKILL)  # as subprocess.run does on a timeout, then waits
                conn.settimeout(None)
                _read_line(conn)
                raise subprocess.TimeoutExpired(['az', *argv], timeout)  # pylint: disable=raise-missing-from
            reply = json.loads(line)
            status, self.last_cpu = reply['status'], reply['cpu']
            stdout.seek(0)
            stderr.seek(0)
            return os.waitstatus_to_exitcode(status), stdout.read(), stderr.read()


if __name__ == '__main__':
    # The script's folder (tests/, with a package named `packaging`) must not shadow a library: the server imports
    # from its own empty working directory, each run from its own (`_run_az`).
    sys.path[0] = os.getcwd()
    serve(sys.argv[1])
