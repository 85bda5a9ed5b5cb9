"""ARM-shaped errors: raised anywhere in request handling, turned into `{"error": {"code", "message"}}`."""


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
