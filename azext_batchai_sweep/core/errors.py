"""Errors raised by the core library.

The command layer maps these to ``azure.cli.core.azclierror`` classes; the core never imports azure.cli, so that it
stays usable (and testable) as a plain Python library.
"""


class SweepError(Exception):
    """Base class of every error the core raises on purpose."""


class SpecError(SweepError):
    """A sweep definition, parameter specification or job template is invalid.

    The message reads ``<source>: <path>: <what is expected>``, leaving out the parts that are unknown, so that a user
    can find the offending field in their file.

    :param message: what is expected (or what is wrong) at that place.
    :param source: the file the definition came from, if any.
    :param path: the field path inside the definition, such as ``parameters[1].start``.
    """

    def __init__(self, message, source=None, path=None):
        self.message = message
        self.source = source
        self.path = path
        super().__init__(str(self))

    def __str__(self):
        return ': '.join(str(part) for part in (self.source, self.path, self.message) if part)

    def within(self, prefix=None, source=None):
        """Return a copy located inside a bigger definition.

        :param prefix: path of the enclosing field, e.g. ``parameters[1]``; joined to this error's path with a dot.
        :param source: the file, when this error does not already name one.
        """
        if prefix and self.path:
            path = prefix + ('' if self.path.startswith('[') else '.') + self.path
        else:
            path = prefix or self.path
        return SpecError(self.message, source=self.source or source, path=path)


class StorageError(SweepError):
    """Listing files in Azure Storage failed (authentication, missing container/share, network)."""


class ServiceError(SweepError):
    """The Batch AI service (Azure or the local one) refused or failed a request.

    :param message: what failed.
    :param status_code: the HTTP status code, when there was a response.
    """

    def __init__(self, message, status_code=None):
        self.status_code = status_code
        super().__init__(message)


class ServiceUnreachableError(ServiceError):
    """The service stopped answering (every retry of several requests failed): not a refusal, a later run may work."""


class NotFoundError(SweepError):
    """Something a command names does not exist: a workspace, a cluster, a sweep without jobs, a job not in the sweep.

    :param message: what was not found, named.
    :param recommendation: what to do about it, when the core knows.
    """

    def __init__(self, message, recommendation=None):
        self.recommendation = recommendation
        super().__init__(message)
