"""A job's code snapshot (--code: docs/code.md) handed to its Batch task as a resource file, so the cluster need not
mount the share `sweep-code`.

az uploads the snapshot `<hash>.tar.gz` to the share `sweep-code` of the local service (its data dir), as for every
scheduler; the job (plain Batch AI fields, core/code/job.py) mounts that share at `sweep-code` and its
jobPreparation unpacks `$AZ_BATCHAI_JOB_MOUNT_ROOT/sweep-code/<hash>.tar.gz`. Batch mounts storage only when a pool
is made, so here that mount is replaced by what Batch offers per task: the service copies the archive once per hash
to the cluster storage's task-log container (blob `code/<hash>.tar.gz`, with az's storage token: task_logs.py) and
gives the task a `resourceFiles` entry, a read-only user delegation SAS URL of that blob whose `filePath`
(`mounts/sweep-code/<hash>.tar.gz`, relative to the task's working directory) is exactly where the job's
preparation reads it: the working directory's `mounts` folder is AZ_BATCHAI_JOB_MOUNT_ROOT (node_wrapper.py).
Batch's node agent downloads resource files before the task's command runs (a failed download fails the task with
ResourceFileDownloadFailed).

Jobs of one node only: Batch downloads a multi-instance task's resourceFiles on its primary node alone, and its
commonResourceFiles one folder above the working directory; such a job keeps the mount, which the cluster must have.
"""
import os
import re

from ....core.code.job import CODE_HASH_VAR, CODE_MOUNT, CODE_SHARE

BLOB_PREFIX = 'code/'
_HASH = re.compile(r'^[0-9a-f]{64}$')


def code_mount(props):
    """The job's mount of the code share (an azureFileShares entry), when its snapshot can come as a resource
    file instead (a job of one node that names its snapshot); else None."""
    if int(props.get('nodeCount') or 1) != 1 or code_hash(props) is None:
        return None
    for ref in (props.get('mountVolumes') or {}).get('azureFileShares') or []:
        if (ref.get('relativeMountPath') or '').strip('/') == CODE_MOUNT and \
                (ref.get('azureFileUrl') or '').rstrip('/').endswith('/' + CODE_SHARE):
            return ref
    return None


def code_hash(props):
    for entry in props.get('environmentVariables') or []:
        if entry.get('name') == CODE_HASH_VAR and _HASH.match(str(entry.get('value') or '')):
            return entry['value']
    return None


def archive_name(props):
    return code_hash(props) + '.tar.gz'


def local_archive(data_dir, props):
    """Where az uploaded the job's snapshot in the service's data dir (files_api.py's storage tree)."""
    account = code_mount(props)['accountName']
    return os.path.join(data_dir, 'storage', account, 'shares', CODE_SHARE, archive_name(props))


def resource_files(url, props):
    """The task's resourceFiles: the snapshot where the job's preparation unpacks it from."""
    return [{'httpUrl': url, 'filePath': 'mounts/{}/{}'.format(CODE_MOUNT, archive_name(props))}]
