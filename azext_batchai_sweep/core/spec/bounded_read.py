"""Reading a file the user names (a sweep file, a job template, a warm-start results file) without hanging or
exhausting the machine that checks it: regular files only, never more than a limit.

A FIFO would block its reader for ever, and /dev/zero (or any character device) never ends: both are refused before
a byte is read. The file is opened without blocking and checked on the descriptor itself (fstat), so it cannot be
swapped for another between the check and the read.
"""
import os
import stat


class NotARegularFile(OSError):
    """The path names a FIFO, a device, a socket or a folder."""


class TooLarge(ValueError):
    """The file holds more than the limit."""


def _kind(mode):
    for test, name in ((stat.S_ISDIR, 'folder'), (stat.S_ISFIFO, 'FIFO (named pipe)'),
                       (stat.S_ISCHR, 'character device'), (stat.S_ISBLK, 'block device'),
                       (stat.S_ISSOCK, 'socket')):
        if test(mode):
            return name
    return 'special file'


def read_regular_file(path, limit):
    """The bytes of the regular file at ``path`` (at most ``limit``).

    Raises NotARegularFile (an OSError whose strerror says what it is), TooLarge, or the OSError of the open.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_NOCTTY', 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFile(0, 'not a regular file: a {}'.format(_kind(mode)), path)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise TooLarge(path)
    return b''.join(chunks)
