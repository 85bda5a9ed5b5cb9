"""A cluster's create request as the service keeps it: every credential replaced by its digest (issue 31 rule 4: no
key on disk).

The request is kept to answer a repeated PUT (the same request: 200; another: 409) and to apply a scale update;
neither needs a storage account key or the admin password, only whether they are the same: a digest says that
(a SHA-256 of the value and of where it is, so equal keys in two places differ). The key itself goes to the
scheduler (Azure Batch: the pool's mountConfiguration) with the request as received, and nowhere else.
"""
import copy
import hashlib

DIGEST_PREFIX = 'sha256:'


def _digest(where, value):
    text = '{}\n{}'.format(where, value).encode('utf-8')
    return DIGEST_PREFIX + hashlib.sha256(text).hexdigest()


def without_credentials(params):
    """A copy of a cluster's create request with storage account keys and the admin password as digests."""
    params = copy.deepcopy(params)
    props = params.get('properties') if isinstance(params, dict) else None
    if not isinstance(props, dict):
        return params
    users = props.get('userAccountSettings')
    if isinstance(users, dict) and users.get('adminUserPassword'):
        users['adminUserPassword'] = _digest('adminUserPassword', users['adminUserPassword'])
    volumes = (props.get('nodeSetup') or {}).get('mountVolumes') if isinstance(props.get('nodeSetup'), dict) else None
    for kind in ('azureFileShares', 'azureBlobFileSystems'):
        for index, ref in enumerate((volumes or {}).get(kind) or [] if isinstance(volumes, dict) else []):
            credentials = ref.get('credentials') if isinstance(ref, dict) else None
            if isinstance(credentials, dict) and credentials.get('accountKey'):
                credentials['accountKey'] = _digest('{}/{}'.format(kind, index), credentials['accountKey'])
    return params
