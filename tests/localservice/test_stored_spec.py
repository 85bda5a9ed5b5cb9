"""stored_spec.py: a cluster's create request kept with its credentials as digests (no key on disk), which still
tell a repeated create from another."""
from azext_batchai_sweep.localservice.stored_spec import DIGEST_PREFIX, without_credentials


def _request(key='a2V5', password='Passw0rd!', blob_key='YmxvYg=='):
    return {'properties': {
        'vmSize': 'Standard_D2s_v3', 'userAccountSettings': {'adminUserName': 'u', 'adminUserPassword': password},
        'nodeSetup': {'mountVolumes': {
            'azureFileShares': [{'accountName': 's', 'azureFileUrl': 'https://s.file.core.windows.net/x',
                                 'relativeMountPath': 'afs', 'credentials': {'accountKey': key}}],
            'azureBlobFileSystems': [{'accountName': 's', 'containerName': 'c', 'relativeMountPath': 'bfs',
                                      'credentials': {'accountKey': blob_key}}]}}}}


def test_credentials_become_digests_that_still_compare():
    request = _request()
    kept = without_credentials(request)
    text = str(kept)
    assert 'a2V5' not in text and 'Passw0rd!' not in text and 'YmxvYg==' not in text
    assert text.count(DIGEST_PREFIX) == 3
    assert request['properties']['userAccountSettings']['adminUserPassword'] == 'Passw0rd!'  # the input unchanged
    assert without_credentials(_request()) == kept  # a repeated create: the same
    assert without_credentials(_request(key='b3RoZXI=')) != kept  # another key: another request
    assert without_credentials(_request(password='other')) != kept
    same_everywhere = without_credentials(_request(key='same', blob_key='same'))['properties']['nodeSetup']
    volumes = same_everywhere['mountVolumes']
    assert volumes['azureFileShares'][0]['credentials'] != volumes['azureBlobFileSystems'][0]['credentials']


def test_requests_without_credentials_are_kept_as_they_are():
    plain = {'properties': {'vmSize': 'Standard_D2s_v3', 'scaleSettings': {'manual': {'targetNodeCount': 1}}}}
    assert without_credentials(plain) == plain
    assert without_credentials({}) == {} and without_credentials({'properties': None}) == {'properties': None}
