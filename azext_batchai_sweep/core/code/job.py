"""A job template made to unpack a code snapshot and run from it, in plain Batch AI 2018-05-01 fields.

Batch AI has no field for "the job's code", so the snapshot travels in fields it has (every scheduler of the local
service and Batch AI itself honour them the same way):

- a mount of the storage account's share `sweep-code` (mountVolumes.azureFileShares, at `sweep-code`), where the
  snapshot `<hash>.tar.gz` was uploaded once;
- jobPreparation.commandLine (on every node, before the job): unpack the archive into
  `$AZ_BATCHAI_JOB_TEMP/sweep-code`, then run the job's own preparation, if any, from there;
- the toolkit's commandLine, prefixed so that it runs from that folder with `$AZ_BATCHAI_SWEEP_CODE_DIR` naming it;
- environmentVariables AZ_BATCHAI_SWEEP_CODE (the hash): what `status` and `resubmit` read back from the service.

Since the hash is in the template, a changed folder changes the jobs (a re-plan says so), and a resubmitted job
unpacks the very snapshot it ran first.
"""
import copy
import re

from ..errors import SpecError

CODE_SHARE = 'sweep-code'
CODE_MOUNT = 'sweep-code'
CODE_DIR_VAR = 'AZ_BATCHAI_SWEEP_CODE_DIR'
CODE_HASH_VAR = 'AZ_BATCHAI_SWEEP_CODE'
# The toolkits whose job runs a command line (the ones a prefix can move into the code folder).
COMMAND_TOOLKITS = ('customToolkitSettings', 'customMpiSettings')
_SHARE_URL = re.compile(r'^https?://([^./]+)\.file\.')


def code_dir_exports():
    return 'export {0}="$AZ_BATCHAI_JOB_TEMP/{1}"'.format(CODE_DIR_VAR, CODE_MOUNT)


def unpack_line(archive_name):
    """The bash line that unpacks the snapshot into the code folder (quiet when it is already there)."""
    return ('{exports}; mkdir -p "${var}" && tar -xzf "$AZ_BATCHAI_JOB_MOUNT_ROOT/{mount}/{archive}" -C "${var}" '
            '|| {{ echo "cannot unpack the code snapshot {archive}" >&2; exit 1; }}; cd "${var}" || exit 1').format(
                exports=code_dir_exports(), var=CODE_DIR_VAR, mount=CODE_MOUNT, archive=archive_name)


def storage_account_of(template, fallback=None):
    """The storage account the snapshot goes to: the template's first Azure Files mount's, else `fallback`."""
    volumes = template.get('mountVolumes') or {}
    for mount in volumes.get('azureFileShares') or ():
        match = _SHARE_URL.match(str(mount.get('azureFileUrl') or ''))
        if match and not match.group(1).startswith('<'):
            return match.group(1)
    for mount in volumes.get('azureBlobFileSystems') or ():
        if mount.get('accountName'):
            return mount['accountName']
    return fallback


def attach_code(template, snapshot, account_name, source=None):
    """A copy of the job template (Batch AI job properties) that unpacks `snapshot` and runs from it.

    :raises SpecError: for a job whose toolkit has no command line, or a mount path the code mount would take.
    """
    toolkit = next((name for name in COMMAND_TOOLKITS if name in template), None)
    if toolkit is None:
        raise SpecError('expected a job with customToolkitSettings or customMpiSettings to run code sent with '
                        '--code (the job\'s command runs from $AZ_BATCHAI_SWEEP_CODE_DIR)', source=source,
                        path='job')
    if not account_name:
        raise SpecError('expected a storage account for the code snapshot: give one with --storage-account-name '
                        '(or a job mounting an Azure file share)', source=source, path='job.mountVolumes')
    template = copy.deepcopy(template)
    volumes = template.setdefault('mountVolumes', {})
    shares = volumes.setdefault('azureFileShares', [])
    mounts = [mount.get('relativeMountPath') for kind in ('azureFileShares', 'azureBlobFileSystems',
                                                            'fileServers', 'unmanagedFileSystems')
              for mount in volumes.get(kind) or ()]
    if CODE_MOUNT in mounts:
        raise SpecError('expected no mount at relativeMountPath {!r}: the code snapshot is mounted there'.format(
            CODE_MOUNT), source=source, path='job.mountVolumes')
    # Credentials are filled at submit time, as for the template's own mounts (_submission.py).
    shares.append({'accountName': account_name,
                   'azureFileUrl': 'https://{}.file.core.windows.net/{}'.format(account_name, CODE_SHARE),
                   'relativeMountPath': CODE_MOUNT})
    preparation = template.get('jobPreparation') or {}
    own = preparation.get('commandLine')
    line = unpack_line(snapshot.archive_name)
    template['jobPreparation'] = dict(preparation, commandLine=line + ('; ' + own if own else ''))
    settings = template[toolkit]
    settings['commandLine'] = '{}; cd "${}" || exit 1; {}'.format(code_dir_exports(), CODE_DIR_VAR,
                                                                 settings.get('commandLine') or 'true')
    variables = [entry for entry in template.get('environmentVariables') or () if entry.get('name') != CODE_HASH_VAR]
    variables.append({'name': CODE_HASH_VAR, 'value': snapshot.digest})
    template['environmentVariables'] = variables
    return template


def code_hash_of(job_properties):
    """The snapshot hash a job (its properties, as created or as the service returns them) runs, or None."""
    for entry in (job_properties or {}).get('environmentVariables') or ():
        if entry.get('name') == CODE_HASH_VAR:
            return entry.get('value')
    return None
