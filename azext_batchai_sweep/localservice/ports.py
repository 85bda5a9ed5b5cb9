"""Is a port free, and if not, who holds it: `local start --port N` says so before it writes anything.

The holder comes from /proc (Linux): the listening socket's inode in /proc/net/tcp{,6}, then the process whose
/proc/PID/fd has that socket. Another user's processes cannot be read; then only the port is named.
"""
import errno
import os
import socket


class PortInUseError(RuntimeError):
    """The port asked for is taken; the message names it, its holder where the system tells, and what to do."""


def _listening_inodes(port):
    inodes = set()
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(table, encoding='ascii') as f:
                next(f, None)
                for line in f:
                    fields = line.split()
                    # local_address is HEXIP:HEXPORT; st 0A is LISTEN
                    if len(fields) > 9 and fields[3] == '0A' and int(fields[1].rsplit(':', 1)[1], 16) == port:
                        inodes.add(fields[9])
        except (OSError, ValueError):
            continue
    return inodes


def port_holder(port):
    """'PID (command line)' of the process listening on `port`, or None when the system does not tell."""
    inodes = {'socket:[{}]'.format(inode) for inode in _listening_inodes(port)}
    if not inodes:
        return None
    for pid in (p for p in os.listdir('/proc') if p.isdigit()):
        fd_dir = '/proc/{}/fd'.format(pid)
        try:
            held = any(os.readlink(os.path.join(fd_dir, fd)) in inodes for fd in os.listdir(fd_dir))
            if not held:
                continue
            with open('/proc/{}/cmdline'.format(pid), 'rb') as f:
                command = f.read().replace(b'\0', b' ').decode('utf-8', 'replace').strip()
        except OSError:
            continue
        return '{} ({})'.format(pid, command[:120] or '?')
    return None


def check_free(port, host='127.0.0.1', option='--port'):
    """Raise PortInUseError unless `port` (non-zero) can be listened on at `host` now."""
    if not port:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the service's HTTP server binds
        try:
            probe.bind((host, port))
        except OSError as ex:
            if ex.errno not in (errno.EADDRINUSE, errno.EACCES):
                raise
            holder = port_holder(port)
            reason = 'in use by process {}'.format(holder) if holder else \
                'in use' if ex.errno == errno.EADDRINUSE else 'not open to this user ({})'.format(ex.strerror)
            raise PortInUseError('port {} ({} {}) is {}'.format(port, option, port, reason)) from None
