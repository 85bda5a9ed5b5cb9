"""requests sessions that read the proxy and CA-bundle environment once per host instead of once per request.

A `requests.Session` with `trust_env` (the default) looks up HTTP(S)_PROXY/NO_PROXY, REQUESTS_CA_BUNDLE and
~/.netrc again for every request: about a sixth of the client CPU of a small request, which is what metrics
pays a thousand times over when it reads the tails of 500 logs. `EnvironmentOnceSession` keeps what the
environment says (proxies and CA bundle, per scheme and host) and never reads ~/.netrc: a netrc password would
replace the bearer token of a management request (requests' netrc auth sets the Authorization header), and has
no business on a SAS URL either.
"""
import os
import threading
import urllib.parse

import requests
from requests.utils import get_environ_proxies


class EnvironmentOnceSession(requests.Session):
    """A requests.Session honouring the proxy and CA-bundle variables as requests does, read once per host."""

    def __init__(self):
        super().__init__()
        # Off: requests would otherwise read the environment (and netrc) per request; merge_environment_settings
        # below adds what the environment says, from the cache.
        self.trust_env = False
        self._environment = {}
        self._environment_lock = threading.Lock()

    def _environment_of(self, url, no_proxy):
        parts = urllib.parse.urlsplit(url)
        key = (parts.scheme, parts.netloc, no_proxy)
        settings = self._environment.get(key)
        if settings is None:
            settings = (get_environ_proxies(url, no_proxy=no_proxy),
                        os.environ.get('REQUESTS_CA_BUNDLE') or os.environ.get('CURL_CA_BUNDLE'))
            with self._environment_lock:
                settings = self._environment.setdefault(key, settings)
        return settings

    def merge_environment_settings(self, url, proxies, stream, verify, cert):
        """What requests' own trust_env branch does (explicit arguments win over the environment), from the cache."""
        environ_proxies, ca_bundle = self._environment_of(url, (proxies or {}).get('no_proxy'))
        proxies = dict(proxies or {})
        for scheme, proxy in environ_proxies.items():
            proxies.setdefault(scheme, proxy)
        if (verify is True or verify is None) and ca_bundle and self.verify is not False:
            verify = ca_bundle
        return super().merge_environment_settings(url, proxies, stream, verify, cert)


def pooled_session(max_connections=32):
    """An EnvironmentOnceSession keeping up to max_connections connections per host alive.

    requests' default pool holds 10: with more threads than that, every extra call opens and discards a connection
    (and urllib3 warns 'Connection pool is full').
    """
    session = EnvironmentOnceSession()
    adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=max_connections)
    for scheme in ('http://', 'https://'):
        session.mount(scheme, adapter)
    return session
