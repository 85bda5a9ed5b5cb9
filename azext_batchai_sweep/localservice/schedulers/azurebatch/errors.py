"""What Batch cannot do for a Batch AI request, refused before anything is created or spent."""


class Refusal(Exception):
    """A request the Azure Batch scheduler will not carry out.

    `reason` is the whole message for the user: what Batch cannot do (naming the key and value) and the fix.
    `code` is the Batch AI-style error code the service answers with (a 400's `error.code`).
    """

    def __init__(self, reason, code='UnsupportedOnAzureBatch'):
        super().__init__(reason)
        self.reason = reason
        self.code = code
