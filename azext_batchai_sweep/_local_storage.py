# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""FILE and BLOB parameters of a sweep planned for the local service: list the service's own shares and containers,
with its local key.

On the local service a job's `azureFileShares` mount is the directory `<data-dir>/storage/<account>/shares/<share>`,
whatever host its URL names, and its `azureBlobFileSystems` mount `<data-dir>/storage/<account>/containers/<name>`,
so the files a FILE or BLOB parameter enumerates must come from that same local folder: the service's Files or Blob
endpoint (`filesEndpoint` / `blobEndpoint` of `<data-dir>/service.json`), signed with `<data-dir>/storage.key`. The
data dir is the folder of the configured token file (`local start` writes both there). Against Azure (no local
target), and for BLOB with the Azure Batch scheduler (its pools mount the Azure container), nothing is added and the
AZURE_STORAGE_* variables are used as by `az storage`.

The key is only ever handed to the FileParamSpec (which keeps it out of repr, errors and pickles): never logged.
"""
import json
import os

from knack.log import get_logger

logger = get_logger(__name__)

# storageType: (its endpoint in service.json, what it lists, the sweep file's key naming that)
_KINDS = {'FILE': ('filesEndpoint', 'share', 'fileshare'), 'BLOB': ('blobEndpoint', 'container', 'container')}
_ENV_CREDENTIALS = ('AZURE_STORAGE_KEY', 'AZURE_STORAGE_CONNECTION_STRING', 'AZURE_STORAGE_SAS_TOKEN')


def local_data_dir(cli_ctx):
    """The data dir of the targeted local service, or None when targeting Azure: the folder of its token file (the
    service writes the token at the top of its data dir, localservice/auth.TOKEN_FILE). Every command that needs the
    targeted service's data dir (local status/stop/show-connection-string, storage, routing) asks here."""
    from ._targeting import local_target
    target = local_target(cli_ctx)
    if target is None or not target[1]:
        return None  # no token file: the client's own error says so when a service is contacted
    return os.path.dirname(os.path.abspath(target[1]))


def local_storage_key(data_dir):
    """The account key of every storage account of the local service at `data_dir`."""
    return LocalFileStorage(data_dir).key()


def local_file_storage(cli_ctx):
    """A `file_storage` hook for core.spec.sweepfile.load_sweep_file, or None when the commands target Azure."""
    data_dir = local_data_dir(cli_ctx)
    return None if data_dir is None else LocalFileStorage(data_dir)


class LocalFileStorage:
    """FileParamSpec arguments (accountUrl, storageAccountKey) for the FILE and BLOB parameters of a sweep file.

    Reads the data dir only when such a parameter asks (a sweep without one works with the service stopped).
    """

    def __init__(self, data_dir):
        self.data_dir = data_dir

    def __repr__(self):
        return 'LocalFileStorage(data_dir={!r})'.format(self.data_dir)

    def __call__(self, entry):
        """Extra FileParamSpec keyword arguments for the sweep file's parameter `entry` (a dict as written)."""
        kind = str(entry.get('storageType', '')).upper()
        if kind not in _KINDS:
            return {}
        field, noun, name_key = _KINDS[kind]
        info = self._service_info()
        if kind == 'BLOB' and info.get('scheduler') == 'azure-batch':
            return {}  # its pools mount the Azure container: listed there, with the environment's credentials
        endpoint = info.get(field)
        if not endpoint:
            from azure.cli.core.azclierror import AzureConnectionError
            raise AzureConnectionError(
                '{} parameters are listed through the local service\'s {} endpoint, but no running service '
                'is described in {}'.format(kind, 'Files' if kind == 'FILE' else 'Blob', self._service_file()),
                recommendation='Start it with "az batchai sweep local start" (the token file configured in az '
                               'config batchai_sweep.token_file must be in its data dir).')
        account = entry.get('storageAccountName')
        ignored = [name for name in _ENV_CREDENTIALS if os.environ.get(name)]
        if ignored:
            # They would list a share or container on Azure while the local jobs mount the local one.
            logger.warning('%s parameter %s lists %s %s of the local service (ignoring %s).', kind,
                           entry.get('name'), noun, entry.get(name_key), ', '.join(ignored))
        logger.info('%s parameter %s: listing %s %s of account %s at %s', kind, entry.get('name'), noun,
                    entry.get(name_key), account, endpoint)
        return {'accountUrl': '{}/{}'.format(endpoint.rstrip('/'), account), 'storageAccountKey': self.key()}

    def _service_file(self):
        from .localservice import SERVICE_FILE
        return os.path.join(self.data_dir, SERVICE_FILE)

    def _service_info(self):
        """The running service's service.json ({} when there is none)."""
        try:
            with open(self._service_file(), encoding='utf-8') as f:
                info = json.load(f)
        except (OSError, ValueError):
            return {}
        return info if isinstance(info, dict) else {}

    def key(self):
        from azure.cli.core.azclierror import FileOperationError
        from .localservice.auth import STORAGE_KEY_FILE
        path = os.path.join(self.data_dir, STORAGE_KEY_FILE)
        try:
            with open(path, encoding='ascii') as f:
                return f.read().strip()
        except OSError as ex:
            raise FileOperationError('Cannot read the local storage key {}: {}'.format(path, ex.strerror)) from None
