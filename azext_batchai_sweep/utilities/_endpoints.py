# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Where a storage account's Blob and File services answer, for the notebook-compatibility layer.

The recipes build their storage objects from an account name and key alone (``BlockBlobService(name, key)``,
``FileParameter(storage_account_name=..., ...)``), which on Azure means the public endpoints. A notebook that may
change only configuration.json reaches the local service (its Files and Blob endpoints) or an emulator through
what the configuration registers here: ``config.Configuration`` registers a ``storage_account``'s
``blob_endpoint`` / ``file_endpoint``, and ``config.create_batchai_client`` the local service's Files and Blob
endpoints for the configured account. Next come AZURE_STORAGE_CONNECTION_STRING's endpoints when it names the same
account (as for `az storage`), then Azure's public endpoints.
"""
import os
import threading

BLOB = 'BLOB'
FILE = 'FILE'
_PUBLIC = {BLOB: 'https://{}.blob.core.windows.net', FILE: 'https://{}.file.core.windows.net'}
_registered = {}
_lock = threading.Lock()


def register(account_name, blob=None, file=None):
    """Use these endpoints for `account_name` from now on in this process (None leaves a kind as it was)."""
    with _lock:
        for kind, url in ((BLOB, blob), (FILE, file)):
            if url:
                _registered[(account_name, kind)] = url.rstrip('/')


def forget(account_name):
    """Drop what was registered for `account_name` (tests; a configuration pointed elsewhere)."""
    with _lock:
        for kind in (BLOB, FILE):
            _registered.pop((account_name, kind), None)


def from_environment(account_name, storage_type, env=os.environ):
    """The Blob or File endpoint of AZURE_STORAGE_CONNECTION_STRING when it names `account_name`, else None."""
    fields = {}
    for part in (env.get('AZURE_STORAGE_CONNECTION_STRING') or '').split(';'):
        key, _, value = part.partition('=')
        fields[key.strip().lower()] = value.strip()
    if fields.get('accountname') != account_name:
        return None
    return fields.get('blobendpoint' if str(storage_type).upper() == BLOB else 'fileendpoint') or None


def configured(account_name, storage_type):
    """The registered endpoint, else the connection string's, else None (the caller's default: Azure's)."""
    kind = BLOB if str(storage_type).upper() == BLOB else FILE
    with _lock:
        url = _registered.get((account_name, kind))
    return url or from_environment(account_name, kind)


def endpoint(account_name, storage_type):
    """The endpoint to use for `account_name`: configured() or Azure's public one."""
    kind = BLOB if str(storage_type).upper() == BLOB else FILE
    return configured(account_name, kind) or _PUBLIC[kind].format(account_name)
