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


def not_found(kind, name):
    return ArmError(404, 'ResourceNotFound', "The {} '{}' was not found.".format(kind, name))


def bad_request(code, message):
    return ArmError(400, code, message)


def conflict(code, message):
    return ArmError(409, code, message)
