"""Create requests as the service keeps them in service.db: no secret value in clear (issue 31 rule 4, issue 41
item 3: no key on disk, for every scheduler).

A cluster's request is kept to answer a repeated PUT (the same request: 200; another: 409) and to apply a scale
update; neither needs a credential, only whether a repeated one is the same: each credential (storage account keys,
the admin password, the setup task's secret values, the Application Insights key) is kept as a salted scrypt digest
(a slow KDF from the standard library, its own salt per value: a stolen service.db resists a dictionary), checked
against the value a repeated PUT sends. The credentials themselves go to the scheduler (Azure Batch: the pool) with
the request as received, and nowhere else.

A job's request is what the scheduler runs, possibly after the service was restarted: its secret values (`secrets`,
the container registry password) are sealed (AES-GCM) with a key that lives in the service's memory only, never in
the data dir; storage account keys of job mounts, which no scheduler needs, are not kept at all. A service restarted
while a job with secrets was still queued cannot open them: the job fails, saying so (``SecretsNotKept``), and is
resubmitted; the secrets never outlived the service that needed them.
"""
import base64
import copy
import hashlib
import hmac
import json
import os
import threading

SCRYPT_PREFIX = 'scrypt:'
# scrypt's parameters (RFC 7914's interactive ones: 16 MiB, ~50 ms a value): a cluster create checks a handful.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 14, 8, 1
SEALED_PREFIX = 'sealed:v1:'
SECRETS_NOT_KEPT = ('The local Batch AI service was restarted before this job started: its secret values (secrets, '
                    'the container registry password) are kept in the memory of the service that received them, '
                    'never on disk, so they are gone. Submit the job again (az batchai sweep resubmit).')


class SecretsNotKept(Exception):
    """A job's sealed secret values cannot be opened: the service that received them was restarted."""


# ---- digests (clusters) --------------------------------------------------------------------------------------

def digest(where, value, salt=None):
    """A salted scrypt digest of a credential and of where it is (equal keys in two places differ)."""
    salt = os.urandom(16) if salt is None else salt
    derived = hashlib.scrypt('{}\n{}'.format(where, value).encode('utf-8'), salt=salt, n=SCRYPT_N, r=SCRYPT_R,
                             p=SCRYPT_P, dklen=32)
    return '{}{}${}'.format(SCRYPT_PREFIX, base64.b64encode(salt).decode('ascii'),
                            base64.b64encode(derived).decode('ascii'))


def digest_matches(stored, where, value):
    """True when ``value`` (at ``where``) is what the digest ``stored`` was made of."""
    if not isinstance(stored, str) or not stored.startswith(SCRYPT_PREFIX) or not isinstance(value, str):
        return False
    try:
        salt = base64.b64decode(stored[len(SCRYPT_PREFIX):].split('$', 1)[0])
    except ValueError:
        return False
    return hmac.compare_digest(digest(where, value, salt), stored)


def _cluster_credentials(props):
    """[(where, container, key)] of every credential of a cluster's properties that holds a value."""
    found = []
    users = props.get('userAccountSettings')
    if isinstance(users, dict) and users.get('adminUserPassword'):
        found.append(('adminUserPassword', users, 'adminUserPassword'))
    node_setup = props.get('nodeSetup') if isinstance(props.get('nodeSetup'), dict) else {}
    volumes = node_setup.get('mountVolumes')
    for kind in ('azureFileShares', 'azureBlobFileSystems'):
        for index, ref in enumerate((volumes or {}).get(kind) or [] if isinstance(volumes, dict) else []):
            credentials = ref.get('credentials') if isinstance(ref, dict) else None
            if isinstance(credentials, dict) and credentials.get('accountKey'):
                found.append(('{}/{}'.format(kind, index), credentials, 'accountKey'))
    setup = node_setup.get('setupTask') if isinstance(node_setup.get('setupTask'), dict) else {}
    for index, secret in enumerate(setup.get('secrets') or [] if isinstance(setup.get('secrets'), list) else []):
        if isinstance(secret, dict) and secret.get('value') is not None:
            found.append(('setupTask.secrets/{}'.format(index), secret, 'value'))
    counters = node_setup.get('performanceCountersSettings')
    insights = counters.get('azureApplicationInsightsReference') if isinstance(counters, dict) else None
    if isinstance(insights, dict) and insights.get('instrumentationKey'):
        found.append(('instrumentationKey', insights, 'instrumentationKey'))
    return found


def _props(params):
    props = params.get('properties') if isinstance(params, dict) else None
    return props if isinstance(props, dict) else {}


def without_credentials(params):
    """A copy of a cluster's create request with every credential as a salted digest."""
    params = copy.deepcopy(params)
    for where, container, key in _cluster_credentials(_props(params)):
        container[key] = digest(where, container[key])
    return params


def same_cluster_request(stored, params):
    """True when a repeated cluster PUT ``params`` is the request kept as ``stored`` (without_credentials)."""
    stored, params = copy.deepcopy(stored), copy.deepcopy(params)
    kept = {where: (container, key) for where, container, key in _cluster_credentials(_props(stored))}
    for where, container, key in _cluster_credentials(_props(params)):
        if where not in kept:
            return False
        stored_container, stored_key = kept.pop(where)
        if not digest_matches(stored_container[stored_key], where, container[key]):
            return False
        container[key] = stored_container[stored_key] = None
    return not kept and _canonical(stored) == _canonical(params)


# ---- sealing (jobs) ------------------------------------------------------------------------------------------

class _Sealer:
    """AES-GCM with a key made when the service starts, held in its memory only."""

    def __init__(self):
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        self._aead = AESGCM(AESGCM.generate_key(bit_length=256))

    def seal(self, where, value):
        nonce = os.urandom(12)
        sealed = self._aead.encrypt(nonce, value.encode('utf-8'), where.encode('utf-8'))
        return SEALED_PREFIX + base64.b64encode(nonce + sealed).decode('ascii')

    def open(self, where, text):
        from cryptography.exceptions import InvalidTag
        try:
            raw = base64.b64decode(text[len(SEALED_PREFIX):])
            return self._aead.decrypt(raw[:12], raw[12:], where.encode('utf-8')).decode('utf-8')
        except (InvalidTag, ValueError) as exc:
            raise SecretsNotKept(SECRETS_NOT_KEPT) from exc


_SEALER = None
_SEALER_LOCK = threading.Lock()


def _sealer():
    """The service's one sealer, made once (under a lock: concurrent PUTs must not make two keys)."""
    global _SEALER  # pylint: disable=global-statement
    if _SEALER is None:
        with _SEALER_LOCK:
            if _SEALER is None:
                _SEALER = _Sealer()
    return _SEALER


def _job_secrets(props):
    """[(where, container, key)] of the secret values of a job's properties a scheduler needs."""
    found = [('secrets/{}'.format(i), s, 'value') for i, s in enumerate(props.get('secrets') or [])
             if isinstance(s, dict) and isinstance(s.get('value'), str)]
    registry = (props.get('containerSettings') or {}).get('imageSourceRegistry') \
        if isinstance(props.get('containerSettings'), dict) else None
    credentials = registry.get('credentials') if isinstance(registry, dict) else None
    if isinstance(credentials, dict) and isinstance(credentials.get('password'), str):
        found.append(('imageSourceRegistry.password', credentials, 'password'))
    return found


def _without_mount_keys(props):
    volumes = props.get('mountVolumes')
    for kind in ('azureFileShares', 'azureBlobFileSystems'):
        for ref in (volumes or {}).get(kind) or [] if isinstance(volumes, dict) else []:
            if isinstance(ref, dict) and isinstance(ref.get('credentials'), dict):
                ref['credentials'].pop('accountKey', None)
    return props


def sealed_job(props, key):
    """What service.db keeps of a job's create properties: secret values sealed (bound to the job's key), mount
    keys dropped."""
    props = _without_mount_keys(copy.deepcopy(props))
    for where, container, name in _job_secrets(props):
        container[name] = _sealer().seal('{}#{}'.format(key, where), container[name])
    return props


def job_spec(row):
    """The job's create properties from its stored row, secret values opened (raises SecretsNotKept when this
    service did not seal them)."""
    props = json.loads(row['spec'])
    for where, container, name in _job_secrets(props):
        if container[name].startswith(SEALED_PREFIX):
            container[name] = _sealer().open('{}#{}'.format(row['key'], where), container[name])
    return props


def same_job_request(row, props):
    """True when a repeated job PUT ``props`` is the job stored in ``row``. Secret values are compared when this
    service can open them (a service restarted since cannot: the rest decides, so a re-run after a crash is
    answered 200, as before)."""
    try:
        stored = job_spec(row)
    except SecretsNotKept:
        stored = json.loads(row['spec'])
        props = copy.deepcopy(props)
        for (_, container, name), (_, given, given_name) in zip(_job_secrets(stored), _job_secrets(props)):
            container[name] = given[given_name] = None
    return _canonical(stored) == _canonical(_without_mount_keys(copy.deepcopy(props)))


def _canonical(value):
    return json.dumps(value, sort_keys=True, separators=(',', ':'))
