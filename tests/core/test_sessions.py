"""core/service/sessions.py and the download session: the environment read once per host as requests reads it per
request, no ~/.netrc, kept-alive connections and no cookies, checked against a real HTTP server on loopback."""
import pytest
import requests

from azext_batchai_sweep.core.outputs import download
from azext_batchai_sweep.core.service.sessions import EnvironmentOnceSession, pooled_session

from ..loopback_http import ScriptedHandler, serving

URLS = ('https://account.file.core.windows.net/share/x?sig=1', 'http://127.0.0.1:1234/a',
        'https://management.azure.com/subscriptions', 'https://internal.example.org/')
ENVIRONMENTS = (
    {},
    {'HTTPS_PROXY': 'http://proxy.example:3128'},
    {'HTTPS_PROXY': 'http://proxy.example:3128', 'HTTP_PROXY': 'http://plain.example:80',
     'NO_PROXY': 'example.org,127.0.0.1'},
    {'REQUESTS_CA_BUNDLE': '/etc/ssl/bundle.pem'},
    {'CURL_CA_BUNDLE': '/etc/ssl/curl.pem', 'https_proxy': 'http://lower.example:8080'},
)
VARIABLES = ('HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'ALL_PROXY', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE')


@pytest.mark.parametrize('environment', ENVIRONMENTS)
def test_environment_settings_are_what_requests_reads_itself(monkeypatch, environment):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    reference = requests.Session()  # trust_env: reads the environment on every request
    mine = EnvironmentOnceSession()
    for url in URLS:
        for verify in (None, True, False, '/explicit.pem'):
            for proxies in ({}, {'https': 'http://explicit.example:1'}):
                expected = reference.merge_environment_settings(url, dict(proxies), False, verify, None)
                assert mine.merge_environment_settings(url, dict(proxies), False, verify, None) == expected
                assert mine.merge_environment_settings(url, dict(proxies), False, verify, None) == expected


def test_the_environment_is_read_once_per_host(monkeypatch):
    monkeypatch.setenv('HTTPS_PROXY', 'http://first.example:1')
    session = EnvironmentOnceSession()
    first = session.merge_environment_settings(URLS[0], {}, False, None, None)['proxies']
    monkeypatch.setenv('HTTPS_PROXY', 'http://second.example:2')
    assert session.merge_environment_settings(URLS[0], {}, False, None, None)['proxies'] == first
    assert session.merge_environment_settings(URLS[2], {}, False, None, None)['proxies'] == {
        'https': 'http://second.example:2'}  # another host: read now


class _Recorder(ScriptedHandler):
    seen = []

    def do_GET(self):  # noqa: N802
        type(self).seen.append({'port': self.client_address[1], 'authorization': self.headers.get('Authorization'),
                                'cookie': self.headers.get('Cookie')})
        self.reply(200, b'hello', headers={'Set-Cookie': 'tracker=1; Path=/'})


@pytest.fixture
def recorder():
    _Recorder.seen = []
    with serving(_Recorder) as base:
        yield base + '/file?sig=secret'


def test_no_netrc_password_rides_along(recorder, tmp_path, monkeypatch):
    netrc = tmp_path / 'netrc'
    netrc.write_text('machine 127.0.0.1 login someone password hunter2\n')
    netrc.chmod(0o600)
    monkeypatch.setenv('NETRC', str(netrc))
    requests.Session().get(recorder).close()
    assert _Recorder.seen[-1]['authorization'].startswith('Basic ')  # requests itself would send it
    pooled_session().get(recorder, headers={'Authorization': 'Bearer token'}).close()
    assert _Recorder.seen[-1]['authorization'] == 'Bearer token'
    pooled_session().get(recorder).close()
    assert _Recorder.seen[-1]['authorization'] is None


def test_downloads_keep_their_connection_and_no_cookies(recorder, monkeypatch):
    monkeypatch.setattr(download, '_SESSION', [])  # a fresh session, not one another test left behind
    for _ in range(5):
        assert b''.join(download.iter_url_chunks(recorder)) == b'hello'
    assert len({request['port'] for request in _Recorder.seen}) == 1
    assert all(request['cookie'] is None for request in _Recorder.seen)
    assert download.download_session() is download.download_session()


def test_verification_switched_off_stays_off_whatever_the_ca_bundle(monkeypatch):
    """Unlike requests (where REQUESTS_CA_BUNDLE would turn a session's verify=False back on): az's
    AZURE_CLI_DISABLE_CONNECTION_VERIFICATION wins over a CA bundle, as it does for az's own clients."""
    monkeypatch.setenv('REQUESTS_CA_BUNDLE', '/etc/ssl/bundle.pem')
    session = EnvironmentOnceSession()
    assert session.merge_environment_settings(URLS[0], {}, False, None, None)['verify'] == '/etc/ssl/bundle.pem'
    session.verify = False
    assert session.merge_environment_settings(URLS[0], {}, False, None, None)['verify'] is False
