"""ARM-shaped errors: raised anywhere in request handling, turned into `{"error": {"code", "message"}}`."""
import errno
import sqlite3

DISK_FULL_MESSAGE = ("The local service's disk is full: free space on the file system of its data dir, then retry "
                     '(nothing was changed by this request).')


class ArmError(Exception):
    """An error answered to the client with an HTTP status and an ARM error body."""

    def __init__(self, status, code, message, headers=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}

    def body(self):
        return {'error': {'code': self.code, 'message': self.message}}


# Batch AI's own codes and messages for a missing resource. JobNotFound and ClusterNotFound are as the real service
# answered (azure-cli's recorded batchai tests, tests/localservice/recorded/); the workspace and experiment ones
# follow the same form.
_NOT_FOUND = {
    'workspace': ('WorkspaceNotFound', 'The specified workspace {} is not found'),
    'cluster': ('ClusterNotFound', 'The specified managed compute cluster is not found'),
    'experiment': ('ExperimentNotFound', 'The specified experiment {} is not found'),
    'job': ('JobNotFound', 'The specified job {} is not found'),
}


def not_found(kind, name):
    code, message = _NOT_FOUND.get(kind, ('ResourceNotFound', 'The specified {} {{}} is not found'.format(kind)))
    return ArmError(404, code, message.format(name))


def bad_request(code, message):
    return ArmError(400, code, message)


def conflict(code, message):
    return ArmError(409, code, message)


def is_disk_full(error):
    """Whether an exception says the data dir's file system is full (an OSError, or SQLite's SQLITE_FULL)."""
    if isinstance(error, OSError):
        return error.errno in (errno.ENOSPC, errno.EDQUOT)
    if isinstance(error, sqlite3.Error):
        return getattr(error, 'sqlite_errorcode', None) == 13 or 'disk is full' in str(error)  # 13: SQLITE_FULL
    return False


def disk_full():
    """507 Insufficient Storage: not retried by the SDKs, so the client says at once why it failed."""
    return ArmError(507, 'InsufficientStorage', DISK_FULL_MESSAGE)
