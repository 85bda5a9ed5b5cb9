# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""A plan file turned into the (name, body) jobs submit and resubmit send, with their secrets filled in.

The plan never holds a secret. At submit time every `$env:NAME` reference is replaced by that environment variable
(core.spec.plan.resolve_secret_references), and storage mounts get their account key the way `az batchai job create`
fills them: from AZURE_BATCHAI_STORAGE_KEY (or az config batchai.storage_key), for a mount without credentials or
whose key is the `<AZURE_BATCHAI_STORAGE_KEY>` placeholder. On the local service the key is the service's own
storage key (every local account has it), so what is sent has credentials wherever the Batch AI spec requires them.
The values only ever go into request bodies.
"""
import os
from contextlib import contextmanager

from knack.log import get_logger

from ._command_context import command_line

logger = get_logger(__name__)

STORAGE_KEY_VAR = 'AZURE_BATCHAI_STORAGE_KEY'
_MOUNT_KINDS = ('azureFileShares', 'azureBlobFileSystems')


def storage_key(cli_ctx):
    """The account key for storage mounts: the local service's own key when targeting it, else as az batchai does."""
    from ._local_storage import local_data_dir, local_storage_key
    data_dir = local_data_dir(cli_ctx)
    if data_dir is not None:
        return local_storage_key(data_dir)
    return os.environ.get(STORAGE_KEY_VAR) or cli_ctx.config.get('batchai', 'storage_key', None)


def fill_mount_credentials(body, key):
    """Give each storage mount of a job body (a dict, changed in place) the account key `key`.

    Returns the number of mounts that needed a key; raises when one needs it and there is none.
    """
    from azure.cli.core.azclierror import RequiredArgumentMissingError
    from .core.spec.plan import STORAGE_KEY_PLACEHOLDER
    volumes = (body.get('properties') or {}).get('mountVolumes') or {}
    needed = 0
    for kind in _MOUNT_KINDS:
        for mount in volumes.get(kind) or ():
            credentials = mount.get('credentials') or {}
            placeholder = credentials.get('accountKey') == STORAGE_KEY_PLACEHOLDER
            if not placeholder and (credentials.get('accountKey') or credentials.get('accountKeySecretReference')):
                continue
            needed += 1
            if not key:
                raise RequiredArgumentMissingError(
                    'The job mounts storage account {} but no account key is set'.format(
                        mount.get('accountName') or mount.get('azureFileUrl')),
                    recommendation='Set the environment variable {} (as for "az batchai job create").'.format(
                        STORAGE_KEY_VAR))
            mount['credentials'] = dict(credentials, accountKey=key)
    return needed


class PlannedJobs:
    """The jobs of a plan file, read one at a time, ready to send; len() is the header's jobCount."""

    def __init__(self, path, header, cli_ctx):
        self.path = path
        self.header = header
        self.key = storage_key(cli_ctx)

    def __len__(self):
        return self.header['jobCount']

    def __iter__(self):
        from .core.spec.plan import read_plan, resolve_secret_references
        _, records = read_plan(self.path)
        for record in records:
            body = resolve_secret_references(record['job'])
            fill_mount_credentials(body, self.key)
            yield record['name'], body

    def check_first(self):
        """Resolve the first job now: a missing secret fails before anything is submitted (the jobs share one
        template, so they share their references). Returns its body (None for an empty plan)."""
        for _, body in self:
            return body
        return None

    def identities(self):
        """(name, digest) of every planned job, read without resolving anything (core/service/identity.py)."""
        from .core.service.identity import digest_of_body
        from .core.spec.plan import read_plan
        _, records = read_plan(self.path)
        for record in records:
            yield record['name'], digest_of_body(record['job'])


def load_plan(path, sweep_name, resource_group, workspace, experiment):
    """(header, path) of a plan file, refusing one of another sweep and warning about another target."""
    from azure.cli.core.azclierror import InvalidArgumentValueError
    from .core.spec.plan import read_plan
    header, _ = read_plan(path)
    if header.get('sweep') != sweep_name:
        raise InvalidArgumentValueError(
            'The plan {} is of sweep {!r}, not {!r}'.format(path, header.get('sweep'), sweep_name),
            recommendation='Pass the sweep\'s name with -n, or the plan of this sweep with --plan-file.')
    if header.get('version') == 1:
        logger.warning('The plan %s was made by version 0.1 of the extension: its jobs keep their 0.1 names (see '
                       'the README\'s migration note)', path)
    planned = (header.get('resourceGroup'), header.get('workspace'), header.get('experiment'))
    if planned != (resource_group, workspace, experiment):
        logger.warning('The plan was made for group %s, workspace %s, experiment %s; submitting to %s, %s, %s',
                       *planned, resource_group, workspace, experiment)
    return header


def mount_keys_preparer(cmd):
    """For a job rebuilt from the service: its storage mounts' key, which the service never returns, given again
    from where `job create` and `submit` take it (the local service's own key; else AZURE_BATCHAI_STORAGE_KEY or
    `az config set batchai.storage_key`). None when no key is known: the job is then refused, naming the fix."""
    key = storage_key(cmd.cli_ctx)
    if not key:
        return None

    def prepare(body):
        fill_mount_credentials(body, key)
        return body
    return prepare


@contextmanager
def hidden_secrets_explained(identity, state, job_names):
    """Jobs that cannot be re-created from the service alone: az's error naming the fix, not a sweep-file error."""
    from azure.cli.core.azclierror import RequiredArgumentMissingError
    from .core.service.resubmit import HiddenSecretsError
    try:
        yield
    except HiddenSecretsError as ex:
        example = next(iter(sorted(ex.paths)))
        again = command_line('resubmit', identity, *(['--jobs'] + list(job_names) if job_names else
                                                     ['--state', state] if state else []))
        if ex.only_credentials:
            recommendation = ('Give the storage account key as for "az batchai job create": export {}=KEY (or "az '
                              'config set batchai.storage_key=KEY"), then run "{}" again; or resubmit with the '
                              'sweep\'s plan file (--plan-file).'.format(STORAGE_KEY_VAR, again))
        else:
            recommendation = ('Only the plan file holds the job\'s secrets: run "{} --plan-file FILE". A sweep made by '
                              '"sweep run" has no plan file: run it again as a new sweep (another -n).'.format(again))
        raise RequiredArgumentMissingError(
            '{} job(s) of sweep {} need write-only values the service does not return ({} in {})'.format(
                len(ex.paths), identity.name, ', '.join(ex.paths[example]), example),
            recommendation=recommendation) from None
