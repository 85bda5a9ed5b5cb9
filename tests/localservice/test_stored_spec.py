"""stored_spec.py: a cluster's create request kept with its credentials as digests (no key on disk), which still
tell a repeated create from another."""
import base64
import hashlib

import pytest

from azext_batchai_sweep.localservice.data.stored_spec import (SCRYPT_N, SCRYPT_P, SCRYPT_PREFIX, SCRYPT_R,
                                                          same_cluster_request, without_credentials)


def _request(key='a2V5', password='Passw0rd!', blob_key='YmxvYg==', secret='s3tup', insights='ik-123'):
    return {'properties': {
        'vmSize': 'Standard_D2s_v3', 'userAccountSettings': {'adminUserName': 'u', 'adminUserPassword': password},
        'nodeSetup': {'mountVolumes': {
            'azureFileShares': [{'accountName': 's', 'azureFileUrl': 'https://s.file.core.windows.net/x',
                                 'relativeMountPath': 'afs', 'credentials': {'accountKey': key}}],
            'azureBlobFileSystems': [{'accountName': 's', 'containerName': 'c', 'relativeMountPath': 'bfs',
                                      'credentials': {'accountKey': blob_key}}]},
            'setupTask': {'commandLine': 'true', 'stdOutErrPathPrefix': '/x',
                          'secrets': [{'name': 'S', 'value': secret}]},
            'performanceCountersSettings': {'azureApplicationInsightsReference': {
                'component': {'id': '/subscriptions/x/c'}, 'instrumentationKey': insights}}}}}


def test_credentials_become_digests_that_still_compare():
    request = _request()
    kept = without_credentials(request)
    text = str(kept)
    for value in ('a2V5', 'Passw0rd!', 'YmxvYg==', 's3tup', 'ik-123'):
        assert value not in text
    assert text.count(SCRYPT_PREFIX) == 5
    assert request['properties']['userAccountSettings']['adminUserPassword'] == 'Passw0rd!'  # the input unchanged
    assert same_cluster_request(kept, _request())  # a repeated create: the same
    for changed in ({'key': 'b3RoZXI='}, {'password': 'other'}, {'blob_key': 'x'}, {'secret': 'x'},
                    {'insights': 'x'}):
        assert not same_cluster_request(kept, _request(**changed)), changed  # another credential: another request
    plain = _request()
    del plain['properties']['userAccountSettings']['adminUserPassword']
    assert not same_cluster_request(kept, plain)  # a credential left out is another request too
    same_everywhere = without_credentials(_request(key='same', blob_key='same'))['properties']['nodeSetup']
    volumes = same_everywhere['mountVolumes']
    assert volumes['azureFileShares'][0]['credentials'] != volumes['azureBlobFileSystems'][0]['credentials']


@pytest.mark.parametrize('password', ['Passw0rd!', 'password', 'correct horse battery staple'])
def test_a_password_digest_is_salted_per_record_and_slow(password):
    """Issue 41, item 9: no unsalted SHA-256 a dictionary can be run against, but scrypt with a salt per record."""
    users = [without_credentials(_request(password=password))['properties']['userAccountSettings']
             ['adminUserPassword'] for _ in range(2)]
    assert users[0] != users[1]  # the same password twice: two salts, two digests
    for stored in users:
        assert stored.startswith(SCRYPT_PREFIX)
        for text in ('adminUserPassword\n' + password, password):  # the old digest's input, and the bare password
            assert hashlib.sha256(text.encode()).hexdigest() not in stored
        salt, derived = (base64.b64decode(part) for part in stored[len(SCRYPT_PREFIX):].split('$'))
        assert len(salt) >= 16
        assert hashlib.scrypt(('adminUserPassword\n' + password).encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R,
                              p=SCRYPT_P, dklen=len(derived)) == derived
    assert SCRYPT_N >= 2 ** 14


def test_requests_without_credentials_are_kept_as_they_are():
    plain = {'properties': {'vmSize': 'Standard_D2s_v3', 'scaleSettings': {'manual': {'targetNodeCount': 1}}}}
    assert without_credentials(plain) == plain
    assert without_credentials({}) == {} and without_credentials({'properties': None}) == {'properties': None}


def test_jobs_sealed_by_concurrent_requests_open_with_the_one_key():
    """Parallel PUTs seal at once: they must share the service's one key (a race made two, and jobs failed with
    SecretsNotKept on a service that never restarted)."""
    import json
    import threading
    from azext_batchai_sweep.localservice.data import stored_spec
    stored_spec._SEALER = None  # pylint: disable=protected-access  # as in a service just started
    barrier, rows = threading.Barrier(8), []

    def put(i):
        barrier.wait()
        rows.append({'key': 'job{}'.format(i), 'spec': json.dumps(stored_spec.sealed_job(
            {'secrets': [{'name': 'S', 'value': 'v{}'.format(i)}]}, 'job{}'.format(i)))})
    threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(stored_spec.job_spec(row)['secrets'][0]['value'] for row in rows) == ['v{}'.format(i)
                                                                                         for i in range(8)]
