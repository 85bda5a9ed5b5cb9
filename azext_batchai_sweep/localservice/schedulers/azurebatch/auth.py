"""az's login as an azure-core TokenCredential for the Azure Batch data plane.

The service never holds a key: it asks az for an access token for the Batch resource
(`az account get-access-token --resource https://batch.core.windows.net/`, run with the Python az runs in, so with
the same login and AZURE_CONFIG_DIR as the `local start` that started it), keeps it in memory only, and asks again
REFRESH_MARGIN seconds before it expires. A token never reaches a log, an exception message, service.json or a
job's environment: what az prints on stdout is only ever parsed, and a failure is reported by az's stderr (which
holds no token) and its exit code.

The token source is a constructor argument (a callable returning (token, expires_on)), so the service's tests can
give the real az an offline login, or hand the credential a source of their own, without any user-facing option.
"""
import json
import logging
import subprocess
import sys
import threading
import time

logger = logging.getLogger(__name__)

BATCH_RESOURCE = 'https://batch.core.windows.net/'
BATCH_SCOPE = BATCH_RESOURCE + '.default'
# Asked again this long before expiry: a poll, a task add or a file read never goes out with a token about to end.
REFRESH_MARGIN = 300.0
AZ_TIMEOUT = 120.0


class LoginError(RuntimeError):
    """az could not give a token for Batch (not logged in, expired refresh token, no access): az's own words."""


def az_cli_token(resource=BATCH_RESOURCE, python=None, timeout=AZ_TIMEOUT):
    """(access token, expires_on as epoch seconds) from `az account get-access-token`, run as this Python's az."""
    cmd = [python or sys.executable, '-m', 'azure.cli', 'account', 'get-access-token', '--resource', resource,
           '--only-show-errors', '-o', 'json']
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as ex:
        raise LoginError('could not run az account get-access-token: {}'.format(type(ex).__name__)) from None
    if done.returncode != 0:
        words = done.stderr.decode('utf-8', 'replace').strip().splitlines()
        raise LoginError('az account get-access-token failed ({}): {}'.format(
            done.returncode, words[-1] if words else 'no message'))
    try:
        answer = json.loads(done.stdout)
        token = answer['accessToken']
        expires_on = int(answer.get('expires_on') or 0) or _parse_expires_on(answer['expiresOn'])
    except (ValueError, KeyError, TypeError):
        # Never quote stdout: it may hold the token.
        raise LoginError('az account get-access-token answered something that is not a token') from None
    return token, expires_on


def _parse_expires_on(text):
    """expiresOn as az prints it ('2026-11-26 18:05:01.000000', local time) -> epoch seconds."""
    import datetime  # pylint: disable=import-outside-toplevel
    return int(datetime.datetime.strptime(text.split('.')[0], '%Y-%m-%d %H:%M:%S').timestamp())


class AzLoginCredential:
    """A TokenCredential (azure-core's protocol: get_token(*scopes) -> AccessToken) for the Batch resource.

    `source()` -> (token, expires_on epoch seconds); default: az_cli_token. One token at a time, refreshed under a
    lock REFRESH_MARGIN seconds before it expires (or when it is rejected: `invalidate()`). ``resource``: what the
    tokens are for, as the log names it (the source decides it).
    """

    def __init__(self, source=None, refresh_margin=REFRESH_MARGIN, clock=time.time, resource=BATCH_RESOURCE):
        self._source = source or az_cli_token
        self.resource = resource
        self._margin = refresh_margin
        self._clock = clock
        self._lock = threading.Lock()
        self._token = None
        self._expires_on = 0
        self.refreshes = 0

    def __repr__(self):
        return 'AzLoginCredential(expires_on={})'.format(self._expires_on)  # never the token

    def get_token(self, *scopes, **kwargs):  # pylint: disable=unused-argument
        from azure.core.credentials import AccessToken  # pylint: disable=import-outside-toplevel
        with self._lock:
            if self._token is None or self._clock() >= self._expires_on - self._margin:
                self._token, self._expires_on = self._source()
                self.refreshes += 1
                logger.info('got an access token for %s from az\'s login (valid until %s)', self.resource,
                            time.strftime('%H:%M:%S', time.localtime(self._expires_on)))
            return AccessToken(self._token, int(self._expires_on))

    def invalidate(self):
        """Forget the token: the next request asks az again (Batch answered 401 before its expiry)."""
        with self._lock:
            self._token = None


def az_credential(resource):
    """az's login as a TokenCredential for ``resource`` (an audience: Batch, storage, ARM): `az account
    get-access-token --resource`, refreshed as AzLoginCredential does."""
    import functools  # pylint: disable=import-outside-toplevel
    return AzLoginCredential(source=functools.partial(az_cli_token, resource=resource), resource=resource)
