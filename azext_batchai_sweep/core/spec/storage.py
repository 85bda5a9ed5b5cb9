"""File enumeration in Azure Blob containers and Azure File shares, for `FileParamSpec`.

Uses the real `azure-storage-blob` / `azure-storage-file-share` clients that azure-cli ships; they are imported
lazily so that the rest of the library (and its tests) never pays for them.

Secrets (account key, SAS token, connection string) never appear in the messages of the errors raised here: SDK
exceptions can carry the request URL, which holds the SAS signature, so they are not chained into ours.
"""
import logging
import os
import posixpath
from urllib.parse import urlsplit

from ..errors import SpecError, StorageError

logger = logging.getLogger(__name__)

STORAGE_TYPES = ('BLOB', 'FILE')

# The variables `az storage` reads, so a user configures both tools once.
ENV_ACCOUNT_KEY = 'AZURE_STORAGE_KEY'
ENV_CONNECTION_STRING = 'AZURE_STORAGE_CONNECTION_STRING'
ENV_SAS_TOKEN = 'AZURE_STORAGE_SAS_TOKEN'

# The SDK's default backoff (15s, 18s, 24s) makes a mistyped account name or endpoint hang for a minute before the
# user hears of it; listing is an interactive planning step, so retry transient faults quickly and connections once.
RETRY_SETTINGS = {'retry_total': 3, 'retry_connect': 1, 'initial_backoff': 1, 'increment_base': 2}

CREDENTIALS_HELP = ('provide the storage account key (storageAccountKey, or the {} environment variable), '
                    'a connection string ({}) or a SAS token ({}), as for `az storage`'
                    .format(ENV_ACCOUNT_KEY, ENV_CONNECTION_STRING, ENV_SAS_TOKEN))


def resolve_storage_credentials(env=os.environ):
    """The storage credentials set in `env`, as keyword arguments of `list_file_paths` (unset ones left out)."""
    names = {'account_key': ENV_ACCOUNT_KEY, 'connection_string': ENV_CONNECTION_STRING, 'sas_token': ENV_SAS_TOKEN}
    return {arg: env[var] for arg, var in names.items() if env.get(var)}


def list_file_paths(storage_type, account_name, *, container=None, share=None, directory=None, account_key=None,
                    account_url=None, connection_string=None, sas_token=None):
    """Paths of the files in a Blob container (BLOB) or File share (FILE), each with a leading '/', sorted.

    `directory` (relative to the container/share root) limits the listing to the files below it. The endpoint is
    the connection string's if given, else `account_url`, else the public Azure endpoint of `account_name`; the
    credential is the account key, else the SAS token (a connection string carries its own).
    """
    storage_type = (storage_type or '').upper()
    if storage_type not in STORAGE_TYPES:
        raise SpecError('storageType must be one of {}, not {!r}'.format(', '.join(STORAGE_TYPES), storage_type))
    if storage_type == 'BLOB' and not container:
        raise SpecError('a container is required when storageType is BLOB')
    if storage_type == 'FILE' and not share:
        raise SpecError('a file share is required when storageType is FILE')
    if not (account_key or sas_token or connection_string):
        raise StorageError('no credentials for storage account {!r}: {}'.format(account_name, CREDENTIALS_HELP))
    directory = (directory or '').strip('/')
    credential = _credential(account_name, account_key, sas_token)

    from azure.core.exceptions import (ClientAuthenticationError, HttpResponseError, ResourceNotFoundError,
                                       ServiceRequestError)
    if storage_type == 'BLOB':
        where = 'container {!r}'.format(container)
        lister = _blob_lister(account_name, container, directory, credential, account_url, connection_string)
    else:
        where = 'file share {!r}'.format(share)
        lister = _share_lister(account_name, share, directory, credential, account_url, connection_string)
    if directory:
        where += ', directory {!r}'.format(directory)
    account = 'storage account {!r}'.format(account_name)
    # `from None` on purpose: see the module docstring.
    try:
        paths = sorted('/' + path for path in lister())
    except ResourceNotFoundError as exc:
        raise StorageError('{} not found in {} ({})'.format(where, account, _code(exc))) from None
    except ServiceRequestError as exc:
        raise StorageError('cannot reach the {} endpoint of {} ({}): check the account name or endpoint'
                           .format(storage_type.lower(), account, type(exc).__name__)) from None
    except (ClientAuthenticationError, HttpResponseError) as exc:
        # A bad key or SAS is a ClientAuthenticationError from Azure but a plain 403 from some emulators.
        if isinstance(exc, ClientAuthenticationError) or exc.status_code == 403:
            raise StorageError('access to {} of {} was refused ({}): check the account key or SAS token; {}'
                               .format(where, account, _code(exc), CREDENTIALS_HELP)) from None
        raise StorageError('listing {} of {} failed ({}){}'.format(where, account, _code(exc), _hint(exc, storage_type))
                           ) from None
    logger.debug('%d files in %s of %s', len(paths), where, account)
    return paths


def _credential(account_name, account_key, sas_token):
    # A dict, not the bare key: with a path-style endpoint (Azurite, the local service) the SDK cannot derive the
    # account name from the host.
    if account_key:
        return {'account_name': account_name, 'account_key': account_key}
    if sas_token:
        return sas_token.lstrip('?')
    return None


def _service_client(client_class, endpoint_kind, account_name, credential, account_url, connection_string):
    """A Blob or File service client: from a connection string, an explicit URL, or the account's public one."""
    if connection_string:
        return client_class.from_connection_string(connection_string, **RETRY_SETTINGS)
    url = account_url or 'https://{}.{}.core.windows.net'.format(account_name, endpoint_kind)
    return client_class(account_url=url, credential=credential, **RETRY_SETTINGS)


def _blob_lister(account_name, container, directory, credential, account_url, connection_string):
    from azure.storage.blob import BlobServiceClient
    service = _service_client(BlobServiceClient, 'blob', account_name, credential, account_url, connection_string)
    container_client = service.get_container_client(container)
    prefix = directory + '/' if directory else None

    def names():
        return [blob.name for blob in container_client.list_blobs(name_starts_with=prefix)]
    logger.debug('listing blobs of %s at %s', container, _safe_endpoint(service.url))
    return names


def _share_lister(account_name, share, directory, credential, account_url, connection_string):
    from azure.storage.fileshare import ShareServiceClient
    service = _service_client(ShareServiceClient, 'file', account_name, credential, account_url, connection_string)
    share_client = service.get_share_client(share)

    def names():
        files, pending = [], [directory]
        while pending:
            current = pending.pop()
            for item in share_client.get_directory_client(current).list_directories_and_files():
                path = posixpath.join(current, item['name'])
                (pending if item['is_directory'] else files).append(path)
        return files
    logger.debug('listing files of share %s at %s', share, _safe_endpoint(service.url))
    return names


# Azure's naming rules, for the error an invalid name gets (its message only says "invalid characters").
NAMING_RULES = {
    'BLOB': 'container names are 3-63 lowercase letters, digits and single hyphens, starting with a letter or digit',
    'FILE': 'share names are 3-63 lowercase letters, digits and single hyphens (no "_"), starting with a letter or '
            'digit',
}


def _hint(exc, storage_type):
    code = getattr(exc, 'error_code', None)
    if getattr(code, 'value', code) in ('InvalidResourceName', 'OutOfRangeInput'):
        return ': ' + NAMING_RULES[storage_type]
    return ''


def _safe_endpoint(url):
    """The URL without its query string, which may hold a SAS token."""
    parts = urlsplit(url)
    return '{}://{}{}'.format(parts.scheme, parts.netloc, parts.path)


def _code(exc):
    """A short, secret-free description of an SDK HTTP error: its storage error code and HTTP status."""
    status = getattr(exc, 'status_code', None)
    code = getattr(exc, 'error_code', None)
    code = getattr(code, 'value', code)  # the SDK gives a StorageErrorCode enum or a plain string
    return ', '.join(str(part) for part in (code, 'HTTP {}'.format(status) if status else None) if part) or \
        type(exc).__name__
