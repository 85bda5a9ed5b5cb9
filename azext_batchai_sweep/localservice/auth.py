"""Secrets of a local service: the ARM bearer token, the storage account key and the download-link signing key.

All three live in the data dir as 0600 files, created at first start with the `secrets` module, so a restart on
the same data dir keeps working clients, mounted storage credentials and unexpired download links.
"""
import base64
import hashlib
import hmac
import logging
import os
import secrets
import time
from dataclasses import dataclass

logger = logging.getLogger(__name__)

TOKEN_FILE = 'token'
STORAGE_KEY_FILE = 'storage.key'
LINK_KEY_FILE = 'link.key'


@dataclass(frozen=True)
class ServiceSecrets:
    """The secrets of one data dir; `repr` never shows them (they must never reach a log)."""
    token: str
    storage_key: str
    link_key: bytes
    token_file: str

    def __repr__(self):
        return 'ServiceSecrets(token_file={!r})'.format(self.token_file)


def _read_or_create(path, make):
    """Return the stripped content of `path`, creating it (mode 0600, exclusively) with `make()` when absent."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with open(path, encoding='ascii') as f:
            return f.read().strip()
    with os.fdopen(fd, 'w', encoding='ascii') as f:
        value = make()
        f.write(value + '\n')
    logger.info('created %s', path)
    return value


def load_or_create_secrets(data_dir):
    """Load the data dir's secrets, generating the missing ones."""
    os.makedirs(data_dir, exist_ok=True)
    token_file = os.path.join(data_dir, TOKEN_FILE)
    token = _read_or_create(token_file, lambda: secrets.token_urlsafe(32))
    storage_key = _read_or_create(os.path.join(data_dir, STORAGE_KEY_FILE),
                                  lambda: base64.b64encode(secrets.token_bytes(64)).decode('ascii'))
    link_key = _read_or_create(os.path.join(data_dir, LINK_KEY_FILE), lambda: secrets.token_hex(32))
    return ServiceSecrets(token=token, storage_key=storage_key, link_key=bytes.fromhex(link_key),
                          token_file=token_file)


def check_bearer(authorization, token):
    """True when an `Authorization` header carries exactly the service's bearer token (constant-time compare)."""
    if not authorization:
        return False
    scheme, _, value = authorization.partition(' ')
    if scheme.lower() != 'bearer':
        return False
    return hmac.compare_digest(value.strip().encode('utf-8'), token.encode('utf-8'))


def _link_signature(link_key, relpath, expiry):
    message = '{}\n{}'.format(relpath, expiry).encode('utf-8')
    return hmac.new(link_key, message, hashlib.sha256).hexdigest()


def sign_link(link_key, relpath, expiry_minutes, now=None):
    """Query string (`se=...&sig=...`) for a download link to `relpath`, valid for `expiry_minutes`."""
    expiry = int((now if now is not None else time.time()) + expiry_minutes * 60)
    return 'se={}&sig={}'.format(expiry, _link_signature(link_key, relpath, expiry))


def verify_link(link_key, relpath, expiry, signature, now=None):
    """True when the signature matches `relpath` and `expiry`, and the link has not expired."""
    try:
        expiry = int(expiry)
    except (TypeError, ValueError):
        return False
    if expiry < (now if now is not None else time.time()):
        return False
    # Bytes: compare_digest raises TypeError on a non-ASCII str, and the signature is whatever the request sent.
    return hmac.compare_digest(_link_signature(link_key, relpath, expiry).encode('ascii'),
                               (signature or '').encode('utf-8', 'surrogateescape'))
