"""The data dir: created private when absent; an existing one is used as it is, never changed, or refused.

The service writes its token, keys, database and log there, so a folder other users can write to (or that belongs
to someone else) would let them swap those files for links or read what the service writes; such a folder is
refused with the reason, and nothing is written in it. An existing folder keeps its mode: `local start` does not
change what it does not own. The service's own files are created private (0600) whatever the umask.
"""
import os
import stat

PRIVATE_FILES = ('service.db', 'service.db-wal', 'service.db-shm', 'service.json', 'service.log', 'service.lock')


class DataDirError(RuntimeError):
    """The data dir cannot be used safely; the message says why and what to do."""


def prepare(data_dir):
    """Create `data_dir` (mode 0700) when it does not exist, else check it is safe to use as it is."""
    try:
        os.mkdir(data_dir, 0o700)
        return
    except FileNotFoundError:
        os.makedirs(os.path.dirname(data_dir), exist_ok=True)
        os.mkdir(data_dir, 0o700)
        return
    except FileExistsError:
        pass
    check(data_dir)


def check(data_dir):
    """Raise DataDirError unless `data_dir` is a directory of this user that no other user can write to."""
    try:
        info = os.stat(data_dir)
    except OSError as ex:
        raise DataDirError('cannot use data dir {}: {}'.format(data_dir, ex.strerror)) from None
    if not stat.S_ISDIR(info.st_mode):
        raise DataDirError('cannot use data dir {}: it is not a directory'.format(data_dir))
    if hasattr(os, 'geteuid') and info.st_uid != os.geteuid():
        raise DataDirError('refusing data dir {}: it belongs to another user (uid {}); use a directory of your '
                           'own'.format(data_dir, info.st_uid))
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise DataDirError('refusing data dir {}: other users can write to it (mode {:04o}); its mode is left as '
                           'it is: use a private directory (for example a new one, which is created with mode 0700)'
                           .format(data_dir, stat.S_IMODE(info.st_mode)))


def write_private(path, text):
    """Write one of the service's files whole (a temporary file renamed over it), readable by this user only."""
    with open(os.open(path + '.tmp', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'w', encoding='utf-8') as f:
        f.write(text)
    os.replace(path + '.tmp', path)


def make_private(data_dir):
    """Mode 0600 on the service's own files in the data dir (created with the process umask)."""
    for name in PRIVATE_FILES:
        path = os.path.join(data_dir, name)
        try:
            if not os.path.islink(path):
                os.chmod(path, 0o600)
        except FileNotFoundError:
            pass
