"""Start, inspect and stop a background local service (for `az batchai sweep local start|status|stop`).

The background service is the foreground form spawned detached (its own session), logging to
`<data-dir>/service.log`; `<data-dir>/service.json` tells where it listens once it is ready.
"""
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from . import SERVICE_FILE
from .data import datadir
from .ports import check_free

logger = logging.getLogger(__name__)

MODULE = 'azext_batchai_sweep.localservice'
LOG_FILE = 'service.log'


def _read_info(data_dir):
    try:
        with open(os.path.join(data_dir, SERVICE_FILE), encoding='utf-8') as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return None


def _alive(pid):
    """True when `pid` is a live (not zombie) local service process."""
    try:
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our child that already exited
    except ChildProcessError:
        pass
    try:
        with open('/proc/{}/stat'.format(pid), 'rb') as f:
            stat = f.read()
        with open('/proc/{}/cmdline'.format(pid), 'rb') as f:
            cmdline = f.read()
    except OSError:
        return False
    state = stat[stat.rindex(b')') + 2:stat.rindex(b')') + 3]
    return state not in (b'Z', b'X') and MODULE.encode() in cmdline


def _answers(endpoint, timeout=2.0):
    """True when something speaks HTTP at the endpoint (an error status counts: it needs a token)."""
    try:
        with urllib.request.urlopen(endpoint + '/', timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def _child_environment():
    """This process's environment, with the folder holding this package first on PYTHONPATH.

    az imports extensions from its own folders (cliextensions, or AZURE_EXTENSION_DEV_SOURCES), which a new
    `python -m azext_batchai_sweep.localservice` would not search: the child must be told where the package is.
    """
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p and p != package_root]
    return dict(os.environ, PYTHONPATH=os.pathsep.join([package_root] + paths))


def status(data_dir):
    """{'running': True, **service.json} when a service runs on the data dir, else {'running': False}."""
    data_dir = os.path.abspath(data_dir)
    info = _read_info(data_dir)
    if info and _alive(info.get('pid', -1)):
        return {'running': True, **info}
    return {'running': False, 'dataDir': data_dir}


def start_background(data_dir, port=0, slots=None, faults=None, files_port=0, timeout=60.0, scheduler=None):
    """Start a detached service on `data_dir` (or return the one already running); return its service.json.

    `scheduler`: the options of the scheduler (`__main__`'s flags without '--', e.g. {'scheduler': 'slurm',
    'partition': 'gpu'} or {'gpus': 'auto'}); None values are left out.
    """
    data_dir = os.path.abspath(data_dir)
    current = status(data_dir)
    if current['running']:
        return {k: v for k, v in current.items() if k != 'running'}
    check_free(port)  # a PortInUseError names the port and its holder, before anything is written
    check_free(files_port, option='--files-port')
    created = not os.path.exists(data_dir)
    datadir.prepare(data_dir)  # a DataDirError (a RuntimeError) says why a folder is refused, before any write
    try:
        return _spawn(data_dir, port, slots, faults, files_port, timeout, scheduler)
    except BaseException:
        if created:  # a failed first start leaves no half-made data dir behind
            shutil.rmtree(data_dir, ignore_errors=True)
        raise


def _spawn(data_dir, port, slots, faults, files_port, timeout, scheduler):
    try:
        os.unlink(os.path.join(data_dir, SERVICE_FILE))  # stale: its service is gone
    except FileNotFoundError:
        pass
    cmd = [sys.executable, '-m', MODULE, '--data-dir', data_dir, '--port', str(port), '--files-port', str(files_port)]
    if slots:
        cmd += ['--slots', str(slots)]
    if faults:
        cmd += ['--faults', faults]
    for name, value in (scheduler or {}).items():
        if value is not None:
            cmd += ['--' + name.replace('_', '-'), str(value)]
    log_path = os.path.join(data_dir, LOG_FILE)
    with open(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, 'O_NOFOLLOW', 0), 0o600),
              'ab') as log:
        proc = subprocess.Popen(  # pylint: disable=consider-using-with
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True,
            env=_child_environment())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError('the local service exited with code {}: {}'.format(proc.returncode,
                                                                                 _last_error(log_path)))
        info = _read_info(data_dir)
        if info and info.get('pid') == proc.pid and _answers(info['endpoint']):
            return info
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError('the local service did not start within {:g} s; see {}'.format(
        timeout, os.path.join(data_dir, LOG_FILE)))


def _last_error(log_path):
    """The service's last log line, quoted in the error: the log itself goes with a data dir made for this start."""
    try:
        with open(log_path, encoding='utf-8', errors='replace') as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        lines = []
    return lines[-1] if lines else 'no log line'


def stop(data_dir, timeout=20.0):
    """Stop the service cleanly (SIGTERM: running jobs are killed and recorded), SIGKILL after `timeout`.

    Returns True when a service was running.
    """
    data_dir = os.path.abspath(data_dir)
    info = _read_info(data_dir)
    if not info or not _alive(info.get('pid', -1)):
        return False
    pid = info['pid']
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    logger.warning('local service %s did not stop within %g s: killing it', pid, timeout)
    try:
        os.killpg(pid, signal.SIGKILL)  # its own session: the group is the service (jobs have their own groups)
    except ProcessLookupError:
        pass
    while _alive(pid):
        time.sleep(0.05)
    return True
