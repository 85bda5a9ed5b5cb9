# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""--code (or the sweep file's `code:`): the folder packed into a snapshot, the job template made to unpack it, and
the snapshot uploaded once per content to the share `sweep-code` of the jobs' storage account.

The upload goes where the jobs' mount reads it: on the local service (its processes and Slurm schedulers read its
shares from its data dir; its Azure Batch scheduler copies the snapshot to the cluster's storage and hands it to
each task as a resource file) through its Files endpoint with its own key; on Azure with the AZURE_STORAGE_*
credentials `az storage` reads. An archive is complete once its marker `<hash>.done` exists (written after the
archive): that name is asked first, so an unchanged folder is never uploaded twice and an interrupted upload is made again.
"""
import os

from knack.log import get_logger

from ._errors import core_errors

logger = get_logger(__name__)

ACCOUNT_ENV = 'AZURE_BATCHAI_STORAGE_ACCOUNT'


class CodeSnapshot:
    """A snapshot attached to a sweep's template, and where it goes."""

    def __init__(self, snapshot, account):
        self.snapshot = snapshot
        self.account = account
        self.uploaded = None  # True: sent now; False: already there; None: not asked (--plan-only)

    def summary(self):
        summary = dict(self.snapshot.summary(), storageAccount=self.account)
        if self.uploaded is not None:
            summary['uploaded'] = self.uploaded
        return summary


def attach_code_folder(definition, code=None, code_size_limit=None, storage_account_name=None):
    """Pack the folder --code names (relative to here) or the sweep file's `code:` names (relative to the sweep
    file), and make definition.template unpack it; the CodeSnapshot, or None without a code folder."""
    from .core.code.job import attach_code, storage_account_of
    from .core.code.snapshot import DEFAULT_LIMIT_MB, format_size, take_snapshot
    folder = code or definition.code
    if not folder:
        return None
    if code_size_limit is not None and not code_size_limit > 0:
        from azure.cli.core.azclierror import InvalidArgumentValueError
        raise InvalidArgumentValueError('--code-size-limit must be a positive number of MiB, not {}'.format(
            code_size_limit))
    with core_errors():
        snapshot = take_snapshot(folder, DEFAULT_LIMIT_MB if code_size_limit is None else code_size_limit)
    logger.warning('Code %s: %d file(s), %s, snapshot %s', folder, len(snapshot.files),
                   format_size(snapshot.size), snapshot.digest[:12])
    if snapshot.key_like:
        logger.warning('The code folder holds files named like keys, sent with every job: %s (leave them out with a '
                       '.sweepignore or .gitignore line)', ', '.join(snapshot.key_like[:10]))
    account = storage_account_of(definition.template, storage_account_name or os.environ.get(ACCOUNT_ENV))
    with core_errors():
        definition.template = attach_code(definition.template, snapshot, account, source=definition.source)
    return CodeSnapshot(snapshot, account)


def say_plan_only(code):
    if code is not None:
        logger.warning('Would upload code snapshot %s to share sweep-code of storage account %s unless it is there '
                       '(--plan-only: nothing is uploaded)', code.snapshot.digest[:12], code.account)


def upload_code(cli_ctx, code):
    """Upload the snapshot unless the share has it already; sets and returns code.uploaded."""
    from .core.code.job import CODE_SHARE
    from .core.code.snapshot import format_size
    from azure.core.exceptions import ResourceExistsError
    share = _share_client(cli_ctx, code.account, CODE_SHARE)
    archive = code.snapshot.archive_name
    marker = code.snapshot.digest + '.done'
    code.uploaded = not _has_snapshot(cli_ctx, code)
    with core_errors():
        if code.uploaded:
            try:
                share.create_share()
            except ResourceExistsError:
                pass
            data = code.snapshot.archive_bytes()
            share.get_file_client(archive).upload_file(data)
            share.get_file_client(marker).upload_file(b'')
    if code.uploaded:
        logger.warning('Uploaded code snapshot %s (%s compressed) to share %s of storage account %s',
                       code.snapshot.digest[:12], format_size(len(data)), CODE_SHARE, code.account)
    else:
        logger.warning('Code snapshot %s is already in share %s of storage account %s: not uploaded again',
                       code.snapshot.digest[:12], CODE_SHARE, code.account)
    return code.uploaded


def _share_client(cli_ctx, account, share_name):
    from azure.storage.fileshare import ShareClient
    from ._local_storage import LocalFileStorage, local_data_dir
    from .core.spec.storage import RETRY_SETTINGS, resolve_storage_credentials
    data_dir = local_data_dir(cli_ctx)
    storage = LocalFileStorage(data_dir) if data_dir is not None else None
    info = storage._service_info() if storage is not None else {}  # pylint: disable=protected-access
    if storage is not None:  # (on Azure Batch the service hands it to each task: localservice/schedulers/azurebatch/code_files)
        endpoint = info.get('filesEndpoint')
        if not endpoint:
            from azure.cli.core.azclierror import AzureConnectionError
            raise AzureConnectionError('The code snapshot goes to the local service\'s Files endpoint, but no running '
                                       'service is described in its data dir {}'.format(data_dir))
        return ShareClient(account_url='{}/{}'.format(endpoint.rstrip('/'), account), share_name=share_name,
                           credential={'account_name': account, 'account_key': storage.key()}, **RETRY_SETTINGS)
    credentials = resolve_storage_credentials()
    if credentials.get('connection_string'):
        return ShareClient.from_connection_string(credentials['connection_string'], share_name, **RETRY_SETTINGS)
    if not credentials:
        from azure.cli.core.azclierror import RequiredArgumentMissingError
        raise RequiredArgumentMissingError(
            'No credentials to upload the code snapshot to storage account {}'.format(account),
            recommendation='Set AZURE_STORAGE_KEY (or AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_CONNECTION_STRING) as '
                           'for "az storage file upload".')
    credential = ({'account_name': account, 'account_key': credentials['account_key']}
                  if credentials.get('account_key') else credentials['sas_token'].lstrip('?'))
    return ShareClient(account_url='https://{}.file.core.windows.net'.format(account), share_name=share_name,
                       credential=credential, **RETRY_SETTINGS)


def ensure_plan_code(cli_ctx, header):
    """Before `submit` sends a plan's jobs: the plan's snapshot is on the share, uploaded now from its folder
    when it is not (a plan made with --plan-only) and the folder still packs to the planned hash."""
    from azure.cli.core.azclierror import InvalidArgumentValueError
    from .core.code.snapshot import take_snapshot
    planned = header['code']
    account = planned.get('storageAccount')
    probe = CodeSnapshot(_Named(planned['hash']), account)
    if _has_snapshot(cli_ctx, probe):
        logger.warning('Code snapshot %s is already in share sweep-code of storage account %s: not uploaded again',
                       planned['hash'][:12], account)
        return
    folder = planned.get('folder')
    with core_errors():
        snapshot = take_snapshot(folder, None)  # the planned folder was checked then
    if snapshot.digest != planned['hash']:
        raise InvalidArgumentValueError(
            'The plan\'s code snapshot {} is not on the service and the folder {} changed since it was planned (it '
            'packs to {} now)'.format(planned['hash'][:12], folder, snapshot.digest[:12]),
            recommendation='Plan the sweep again (create or submit --spec, with --allow-changes to change it).')
    upload_code(cli_ctx, CodeSnapshot(snapshot, account))


class _Named:  # pylint: disable=too-few-public-methods
    def __init__(self, digest):
        self.digest = digest


def _has_snapshot(cli_ctx, code):
    from azure.core.exceptions import ResourceNotFoundError
    from .core.code.job import CODE_SHARE
    share = _share_client(cli_ctx, code.account, CODE_SHARE)
    with core_errors():
        try:
            share.get_file_client(code.snapshot.digest + '.done').get_file_properties()
            return True
        except ResourceNotFoundError:
            return False


def check_run_snapshot(client, identity, code, retry=None):
    """A resumed `sweep run` with --code keeps its sweep on one snapshot: refused when the sweep's jobs on the
    service ran another snapshot (or none)."""
    from azure.cli.core.azclierror import InvalidArgumentValueError
    from .core.code.job import CODE_HASH_VAR
    from .core.service.identity import experiment_jobs
    from .core.service.listing import env_of, select_jobs
    if code is None:
        return
    with core_errors():
        jobs = list(select_jobs(experiment_jobs(client, identity.resource_group, identity.workspace,
                                                identity.experiment, retry=retry), sweep_name=identity.name))
    ran = {env_of(job).get(CODE_HASH_VAR) for job in jobs}
    wanted = code.snapshot.digest
    others = sorted((digest or 'none')[:12] for digest in ran if digest != wanted)
    if jobs and others:
        raise InvalidArgumentValueError(
            'Sweep {} already ran code snapshot {}; this run sends {}: the jobs of a sweep run one snapshot'.format(
                identity.name, ', '.join(others), wanted[:12]),
            recommendation='Resume it with the folder as it was (or its snapshot), or start a new sweep with '
                           'another name (-n).')
