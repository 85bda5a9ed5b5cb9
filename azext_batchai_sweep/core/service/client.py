"""The real `azure.mgmt.batchai.BatchAI` client, pointed at a local Batch AI service.

Authentication is the service's bearer token, read from its token file on every request (so a restarted service
with a new token file keeps working). azure-core's BearerTokenCredentialPolicy insists on TLS, so a small policy
sets the header instead; to keep the token off the network, plain http is refused unless the host is loopback.
"""
import urllib.parse

from azure.core.pipeline.policies import SansIOHTTPPolicy

from ..errors import SweepError
from .loopback import is_loopback

DEFAULT_SUBSCRIPTION = '00000000-0000-0000-0000-000000000000'


class _NoCredential:  # pylint: disable=too-few-public-methods
    """Placeholder: BatchAI requires a credential, the token policy below does the real work."""

    def get_token(self, *scopes, **kwargs):
        raise RuntimeError('the local Batch AI client authenticates with its token file')


class TokenFilePolicy(SansIOHTTPPolicy):
    """Sets `Authorization: Bearer <token>` from a token file."""

    def __init__(self, token_file):
        super().__init__()
        self._token_file = token_file

    def on_request(self, request):
        with open(self._token_file, encoding='ascii') as f:
            token = f.read().strip()
        request.http_request.headers['Authorization'] = 'Bearer ' + token

    @property
    def token_file(self):
        return self._token_file


def local_token_file(client):
    """The token file of a client made by local_batchai_client (its service's data dir is that file's folder), else
    None: a client for Azure."""
    policy = getattr(getattr(client, '_config', None), 'authentication_policy', None)
    return policy.token_file if isinstance(policy, TokenFilePolicy) else None


def check_endpoint(endpoint):
    """Refuse an endpoint that would send the token in clear text off this machine."""
    url = urllib.parse.urlsplit(endpoint)
    if url.scheme not in ('http', 'https') or not url.hostname:
        raise SweepError("'{}' is not an http(s) endpoint URL.".format(endpoint))
    if url.scheme == 'http' and not is_loopback(url.hostname):
        raise SweepError("Refusing plain http to '{}': the bearer token would travel unencrypted. Use https, or "
                         'a loopback address (127.0.0.1, ::1, localhost).'.format(url.hostname))


def local_batchai_client(endpoint, token_file, subscription_id=DEFAULT_SUBSCRIPTION, **kwargs):
    """A `BatchAI` management client for a local service; extra kwargs go to the client (e.g. retry_total)."""
    from azure.mgmt.batchai import BatchAI  # pylint: disable=import-outside-toplevel
    check_endpoint(endpoint)
    return BatchAI(credential=_NoCredential(), subscription_id=subscription_id, base_url=endpoint.rstrip('/'),
                   authentication_policy=TokenFilePolicy(token_file), **kwargs)
