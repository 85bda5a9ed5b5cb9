"""The local service's own defences: bearer token on every ARM request, loopback-only unless told, signed links."""
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from azext_batchai_sweep.localservice.auth import sign_link

from tests.fixtures_service import REPO_ROOT

pytestmark = pytest.mark.service

API = '?api-version=2018-05-01'


def status_of(url, headers=None, method='GET', data=None):
    request = urllib.request.Request(url, headers=headers or {}, method=method, data=data)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as ex:
        return ex.code


def workspace_url(service, tail=''):
    return '{}/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}{}{}'.format(
        service.endpoint, service.subscription, service.resource_group, service.workspace, tail, API)


@pytest.mark.parametrize('authorization', [None, 'Bearer wrong-token', 'Basic {token}', 'Bearer {token}x',
                                           'Bearer', '{token}'])
def test_requests_without_the_right_token_get_401(local_service, authorization):
    headers = {'Authorization': authorization.format(token=local_service.token)} if authorization else {}
    assert status_of(workspace_url(local_service), headers) == 401
    # Writes too, and nothing is created by them.
    body = b'{"properties": {}}'
    put = workspace_url(local_service, '/experiments/never-created')
    assert status_of(put, dict(headers, **{'Content-Type': 'application/json'}), 'PUT', body) == 401
    good = {'Authorization': 'Bearer ' + local_service.token}
    assert status_of(put, good) == 404
    assert status_of(workspace_url(local_service), good) == 200


def test_a_non_loopback_bind_needs_allow_remote(tmp_path):
    proc = subprocess.run([sys.executable, '-m', 'azext_batchai_sweep.localservice', '--data-dir', str(tmp_path),
                           '--host', '0.0.0.0', '--port', '0', '--files-port', '0'], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert "refusing to listen on non-loopback address '0.0.0.0' without --allow-remote" in proc.stderr
    assert not os.path.exists(tmp_path / 'service.json')


def _link_status(service, relpath, query):
    url = '{}/download/{}?{}'.format(service.endpoint, urllib.parse.quote(relpath), query)
    return status_of(url)


def test_download_links_expired_tampered_or_escaping_are_refused(local_service):
    with open(os.path.join(local_service.data_dir, 'link.key'), encoding='ascii') as f:
        key = bytes.fromhex(f.read().strip())
    # A file where jobs' files live (links never serve the data dir's own top level: token, keys, database).
    relpath = 'storage/reliability-link-check.txt'
    os.makedirs(os.path.join(local_service.data_dir, 'storage'), exist_ok=True)
    with open(os.path.join(local_service.data_dir, relpath), 'w', encoding='utf-8') as f:
        f.write('ok')
    good = sign_link(key, relpath, 10)
    assert _link_status(local_service, relpath, good) == 200

    expired = sign_link(key, relpath, 10, now=time.time() - 3600)
    assert _link_status(local_service, relpath, expired) == 403
    expiry, signature = (part.split('=', 1)[1] for part in good.split('&'))
    # A later expiry with the old signature, a changed signature, another file with this file's signature.
    assert _link_status(local_service, relpath, 'se={}&sig={}'.format(int(expiry) + 3600, signature)) == 403
    changed = signature[:-1] + ('1' if signature.endswith('0') else '0')  # one in 16 signatures ends in 0
    assert _link_status(local_service, relpath, 'se={}&sig={}'.format(expiry, changed)) == 403
    assert _link_status(local_service, 'token', good) == 403
    assert _link_status(local_service, relpath, 'se={}'.format(expiry)) == 403
    # Signed with the real key but pointing outside the data dir: refused all the same.
    for escape in ('../outside.txt', '/etc/passwd', 'jobs/../../outside.txt'):
        assert _link_status(local_service, escape, sign_link(key, escape, 10)) == 403, escape
