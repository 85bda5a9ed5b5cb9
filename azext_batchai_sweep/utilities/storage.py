# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Notebook-compatibility layer: the legacy storage classes the recipes use, on the storage SDK az ships.

The recipes import ``BlockBlobService`` from ``azure.storage.blob`` and ``FileService`` from ``azure.storage.file``
(the 0.x-2.x "legacy" SDK), which cannot be installed beside the azure-storage-blob 12 / azure-storage-file-share 12
that az ships (same ``azure.storage.blob`` package). A notebook changes those two import lines to
``from azext_batchai_sweep.utilities.storage import BlockBlobService, FileService`` and its cells run: the classes
take the legacy constructor arguments and implement the methods the recipes call, with the legacy arguments and
return values (``create_container``/``create_share``/``create_directory`` return whether they created it, and with
``fail_on_exist=True`` raise azure-core's ResourceExistsError where the legacy SDK raised AzureConflictHttpError).

Endpoints: the account's ``blob_endpoint`` / ``file_endpoint`` from configuration.json, the local service's Files
and Blob endpoints when the configuration's ``base_url`` is the local service (what is uploaded there is what its
jobs mount), AZURE_STORAGE_CONNECTION_STRING's, else Azure's public ones (utilities/_endpoints.py).
"""
import collections
import os

from . import _endpoints

__all__ = ['BlockBlobService', 'FileService', 'FilePermissions', 'Blob', 'File', 'Directory', 'ResourceProperties']

# Azurite's documented development account, for is_emulated=True as the legacy SDK had it.
_DEV_ACCOUNT = 'devstoreaccount1'
_DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
_DEV_BLOB_ENDPOINT = 'http://127.0.0.1:10000/devstoreaccount1'

#: what the legacy create_*_from_* methods returned
ResourceProperties = collections.namedtuple('ResourceProperties', ['etag', 'last_modified'])
#: a legacy listing's entries: a blob, a file (with its properties) and a directory
Blob = collections.namedtuple('Blob', ['name', 'properties'])
File = collections.namedtuple('File', ['name', 'properties'])
Directory = collections.namedtuple('Directory', ['name'])


class FilePermissions:  # pylint: disable=too-few-public-methods
    """The legacy SAS permission set of a file (``FilePermissions.READ + FilePermissions.WRITE``, or
    ``FilePermissions(read=True)``); ``str()`` gives the letters a SAS takes (the PyTorch recipe imports it)."""

    def __init__(self, read=False, create=False, write=False, delete=False, _str=None):
        letters = _str or ''
        self.read, self.create = read or 'r' in letters, create or 'c' in letters
        self.write, self.delete = write or 'w' in letters, delete or 'd' in letters

    def __add__(self, other):
        return FilePermissions(_str=str(self) + str(other))

    def __str__(self):
        return ''.join(letter for letter, granted in (('r', self.read), ('c', self.create), ('w', self.write),
                                                       ('d', self.delete)) if granted)


FilePermissions.READ = FilePermissions(read=True)
FilePermissions.CREATE = FilePermissions(create=True)
FilePermissions.WRITE = FilePermissions(write=True)
FilePermissions.DELETE = FilePermissions(delete=True)


def _created(create, fail_on_exist):
    """The legacy create_* contract: True when created; False when it existed (unless fail_on_exist)."""
    from azure.core.exceptions import ResourceExistsError
    try:
        create()
        return True
    except ResourceExistsError:
        if fail_on_exist:
            raise
        return False


def _deleted(delete, fail_not_exist):
    """The legacy delete_* contract: True when deleted; False when it did not exist (unless fail_not_exist)."""
    from azure.core.exceptions import ResourceNotFoundError
    try:
        delete()
        return True
    except ResourceNotFoundError:
        if fail_not_exist:
            raise
        return False


def _exists(get_properties):
    from azure.core.exceptions import ResourceNotFoundError
    try:
        get_properties()
        return True
    except ResourceNotFoundError:
        return False


def _properties(answer):
    answer = answer or {}
    return ResourceProperties(answer.get('etag'), answer.get('last_modified'))


def _credential(account_name, account_key, sas_token):
    if account_key:
        return {'account_name': account_name, 'account_key': account_key}
    return sas_token


class BlockBlobService:
    """The legacy ``BlockBlobService(account_name=None, account_key=None, sas_token=None, is_emulated=False,
    ..., connection_string=None)``: containers and block blobs, over azure-storage-blob 12."""

    def __init__(self, account_name=None, account_key=None, sas_token=None, is_emulated=False,
                 connection_string=None, **_legacy_options):
        from azure.storage.blob import BlobServiceClient
        if connection_string:
            self._service = BlobServiceClient.from_connection_string(connection_string)
            self.account_name = self._service.account_name
            return
        if is_emulated:
            account_name, account_key, url = _DEV_ACCOUNT, _DEV_KEY, _DEV_BLOB_ENDPOINT
        else:
            url = _endpoints.endpoint(account_name, _endpoints.BLOB)
        self.account_name = account_name
        self._service = BlobServiceClient(url, credential=_credential(account_name, account_key, sas_token))

    def create_container(self, container_name, metadata=None, public_access=None, fail_on_exist=False,
                         timeout=None):  # pylint: disable=unused-argument
        container = self._service.get_container_client(container_name)
        return _created(lambda: container.create_container(metadata=metadata, public_access=public_access),
                        fail_on_exist)

    def delete_container(self, container_name, fail_not_exist=False, **_legacy_options):
        return _deleted(self._service.get_container_client(container_name).delete_container, fail_not_exist)

    def exists(self, container_name, blob_name=None, **_legacy_options):
        container = self._service.get_container_client(container_name)
        if blob_name is None:
            return _exists(container.get_container_properties)
        return _exists(container.get_blob_client(blob_name).get_blob_properties)

    def create_blob_from_path(self, container_name, blob_name, file_path, metadata=None, **_legacy_options):
        with open(file_path, 'rb') as stream:
            return self.create_blob_from_stream(container_name, blob_name, stream, metadata=metadata)

    def create_blob_from_stream(self, container_name, blob_name, stream, metadata=None, **_legacy_options):
        blob = self._service.get_blob_client(container_name, blob_name)
        return _properties(blob.upload_blob(stream, overwrite=True, metadata=metadata))

    def create_blob_from_bytes(self, container_name, blob_name, blob, metadata=None, **_legacy_options):
        return self.create_blob_from_stream(container_name, blob_name, bytes(blob), metadata=metadata)

    def create_blob_from_text(self, container_name, blob_name, text, encoding='utf-8', **_legacy_options):
        return self.create_blob_from_stream(container_name, blob_name, text.encode(encoding))

    def list_blobs(self, container_name, prefix=None, num_results=None, **_legacy_options):
        """The container's blobs (name, properties), all of them or the first `num_results`."""
        blobs = []
        for item in self._service.get_container_client(container_name).list_blobs(name_starts_with=prefix):
            if num_results is not None and len(blobs) >= num_results:
                break
            blobs.append(Blob(item.name, item))
        return blobs

    def get_blob_to_path(self, container_name, blob_name, file_path, **_legacy_options):
        downloader = self._service.get_blob_client(container_name, blob_name).download_blob()
        with open(file_path, 'wb') as stream:
            downloader.readinto(stream)
        return Blob(blob_name, downloader.properties)

    def delete_blob(self, container_name, blob_name, **_legacy_options):
        self._service.get_blob_client(container_name, blob_name).delete_blob()


class FileService:
    """The legacy ``FileService(account_name=None, account_key=None, sas_token=None, ..., connection_string=None)``:
    shares, directories and files, over azure-storage-file-share 12."""

    def __init__(self, account_name=None, account_key=None, sas_token=None, connection_string=None,
                 **_legacy_options):
        from azure.storage.fileshare import ShareServiceClient
        if connection_string:
            self._service = ShareServiceClient.from_connection_string(connection_string)
            self.account_name = self._service.account_name
            return
        self.account_name = account_name
        # A path-style endpoint (the local service's) needs the credential as a dict: the SDK cannot read the
        # account name from its host.
        self._service = ShareServiceClient(_endpoints.endpoint(account_name, _endpoints.FILE),
                                           credential=_credential(account_name, account_key, sas_token))

    def _directory(self, share_name, directory_name):
        return self._service.get_share_client(share_name).get_directory_client(directory_name or '')

    def _file(self, share_name, directory_name, file_name):
        path = '/'.join(part.strip('/') for part in (directory_name, file_name) if part)
        return self._service.get_share_client(share_name).get_file_client(path)

    def create_share(self, share_name, metadata=None, quota=None, fail_on_exist=False, **_legacy_options):
        share = self._service.get_share_client(share_name)
        return _created(lambda: share.create_share(metadata=metadata, quota=quota), fail_on_exist)

    def delete_share(self, share_name, fail_not_exist=False, **_legacy_options):
        return _deleted(self._service.get_share_client(share_name).delete_share, fail_not_exist)

    def exists(self, share_name, directory_name=None, file_name=None, **_legacy_options):
        share = self._service.get_share_client(share_name)
        if file_name is not None:
            return _exists(self._file(share_name, directory_name, file_name).get_file_properties)
        if directory_name is not None:
            return _exists(self._directory(share_name, directory_name).get_directory_properties)
        return _exists(share.get_share_properties)

    def create_directory(self, share_name, directory_name, metadata=None, fail_on_exist=False, **_legacy_options):
        directory = self._directory(share_name, directory_name)
        return _created(lambda: directory.create_directory(metadata=metadata), fail_on_exist)

    def create_file_from_path(self, share_name, directory_name, file_name, local_file_path, **_legacy_options):
        with open(local_file_path, 'rb') as stream:
            self.create_file_from_stream(share_name, directory_name, file_name, stream,
                                         os.fstat(stream.fileno()).st_size)

    def create_file_from_stream(self, share_name, directory_name, file_name, stream, count, **_legacy_options):
        self._file(share_name, directory_name, file_name).upload_file(stream, length=count)

    def create_file_from_bytes(self, share_name, directory_name, file_name, file, **_legacy_options):
        self._file(share_name, directory_name, file_name).upload_file(bytes(file))

    def create_file_from_text(self, share_name, directory_name, file_name, text, encoding='utf-8',
                              **_legacy_options):
        self.create_file_from_bytes(share_name, directory_name, file_name, text.encode(encoding))

    def list_directories_and_files(self, share_name, directory_name=None, num_results=None, prefix=None,
                                   **_legacy_options):
        """The entries of one directory: File(name, properties) and Directory(name), as the legacy listing."""
        entries = []
        for item in self._directory(share_name, directory_name).list_directories_and_files(name_starts_with=prefix):
            if num_results is not None and len(entries) >= num_results:
                break
            entries.append(Directory(item['name']) if item.get('is_directory') else File(item['name'], item))
        return entries

    def get_file_to_path(self, share_name, directory_name, file_name, file_path, **_legacy_options):
        downloader = self._file(share_name, directory_name, file_name).download_file()
        with open(file_path, 'wb') as stream:
            downloader.readinto(stream)
        return File(file_name, downloader.properties)

    def delete_file(self, share_name, directory_name, file_name, **_legacy_options):
        self._file(share_name, directory_name, file_name).delete_file()
