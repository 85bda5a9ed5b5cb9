"""A code folder packed into a content-addressed snapshot: a tar.gz named by the hash of what it holds.

The hash is the SHA-256 over the sorted relative paths of the kept files (ignore.py), each followed by its
executable bit and its content's own SHA-256, so the same content always gives the same name and any change of a
kept file's path, content or mode gives another. The archive itself is reproducible too (sorted members, no
owners, no times), though nothing relies on that: the name is the content's.
"""
import fnmatch
import gzip
import hashlib
import io
import os
import stat
import tarfile
from dataclasses import dataclass, field

from ..errors import SweepError
from .ignore import kept_files

DEFAULT_LIMIT_MB = 100
# Names that usually hold a credential: warned about before they leave the machine (the user decides).
KEY_LIKE = ('*.pem', '*.key', '*.pfx', '*.p12', '.env', '.env.*', 'id_rsa', 'id_rsa*', 'id_dsa', 'id_ecdsa',
            'id_ed25519', '*.ppk', '.netrc', '.pypirc', 'credentials', '*.jks', '*.keystore')
_CHUNK = 1 << 20


class CodeError(SweepError):
    """A code folder that cannot be sent: missing, empty, or over the size limit."""


@dataclass
class Snapshot:  # pylint: disable=too-many-instance-attributes
    """What a code folder packs into.

    :ivar folder: the folder, absolute.
    :ivar digest: the content hash (64 hex characters); names the archive.
    :ivar files: [(relative path, absolute path, size)] of the kept files, sorted.
    :ivar size: the kept files' total size in bytes (before compression).
    """
    folder: str
    digest: str
    files: list
    size: int
    key_like: list = field(default_factory=list)

    @property
    def archive_name(self):
        return '{}.tar.gz'.format(self.digest)

    def summary(self):
        """What the plan file and `status` record of the snapshot."""
        return {'hash': self.digest, 'archive': self.archive_name, 'folder': self.folder, 'files': len(self.files),
                'sizeBytes': self.size}

    def archive_bytes(self):
        """The tar.gz of the kept files: reproducible (sorted, owner 0, mtime 0), modes 644 or 755."""
        raw = io.BytesIO()
        with gzip.GzipFile(fileobj=raw, mode='wb', mtime=0) as zipped:
            with tarfile.open(fileobj=zipped, mode='w', format=tarfile.PAX_FORMAT) as tar:
                for relative, path, size in self.files:
                    info = tarfile.TarInfo(relative)
                    info.size = size
                    info.mode = 0o755 if _executable(path) else 0o644
                    info.mtime = 0
                    with open(path, 'rb') as f:
                        tar.addfile(info, f)
        return raw.getvalue()


def _executable(path):
    return bool(os.stat(path).st_mode & stat.S_IXUSR)


def take_snapshot(folder, limit_mb=DEFAULT_LIMIT_MB):
    """The snapshot of `folder`; raises CodeError when it is missing, empty, or its kept files exceed `limit_mb`
    (naming the largest entries). The files are read once here, for the hash."""
    if not os.path.isdir(folder):
        raise CodeError('the code folder {} is not a folder'.format(folder))
    folder = os.path.abspath(folder)
    kept = kept_files(folder)
    if not kept:
        raise CodeError('the code folder {} has no files to send (all are ignored?)'.format(folder))
    files = [(relative, path, os.path.getsize(path)) for relative, path in kept]
    size = sum(entry[2] for entry in files)
    limit = None if limit_mb is None else int(limit_mb * 1024 * 1024)
    if limit is not None and size > limit:
        raise CodeError('the code folder {} holds {} to send, more than the limit of {}; the largest: {}'.format(
            folder, format_size(size), format_size(limit), ', '.join(
                '{} ({})'.format(name, format_size(amount)) for name, amount in largest_entries(files))))
    outer = hashlib.sha256()
    for relative, path, _ in files:
        inner = hashlib.sha256()
        with open(path, 'rb') as f:
            for chunk in iter(lambda f=f: f.read(_CHUNK), b''):
                inner.update(chunk)
        outer.update('{}\0{}\0{}\n'.format(relative, 'x' if _executable(path) else '-',
                                           inner.hexdigest()).encode('utf-8', 'surrogateescape'))
    key_like = [relative for relative, _, _ in files if looks_like_key(relative)]
    return Snapshot(folder=folder, digest=outer.hexdigest(), files=files, size=size, key_like=key_like)


def looks_like_key(relative):
    name = relative.rsplit('/', 1)[-1]
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in KEY_LIKE)


def largest_entries(files, count=5):
    """The largest top-level entries (files, or folders with their files' total), largest first."""
    totals = {}
    for relative, _, size in files:
        top = relative.split('/', 1)[0] + ('/' if '/' in relative else '')
        totals[top] = totals.get(top, 0) + size
    return sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:count]


def format_size(size):
    """A size as every size is written (core/units.size_text: binary units, named KiB and MiB)."""
    from ..units import size_text
    return size_text(size)
