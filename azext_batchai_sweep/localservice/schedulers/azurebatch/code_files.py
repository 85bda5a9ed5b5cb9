"""A job's code snapshot (--code: docs/code.md) handed to its Batch task as resource files, so the cluster need not
mount the share `sweep-code`.

az uploads the snapshot `<hash>.tar.gz` to the share `sweep-code` of the local service (its data dir), as for every
scheduler; the job (plain Batch AI fields, core/code/job.py) mounts that share at `sweep-code` and its
jobPreparation unpacks `$AZ_BATCHAI_JOB_MOUNT_ROOT/sweep-code/<hash>.tar.gz` (on every node). Batch mounts storage
only when a pool is made, so here that mount is replaced by what Batch offers per task: the service copies the
archive once per hash to the cluster storage's task-log container (blob `code/<hash>.tar.gz`, with az's storage
token: task_logs.py) and hands the task a read-only user delegation SAS URL of that blob to download. Batch's node
agent downloads before the task's commands run (a failed download fails the task with ResourceFileDownloadFailed):

- a job of one node: a `resourceFiles` entry whose `filePath` (`mounts/sweep-code/<hash>.tar.gz`, relative to the
  task's working directory) is exactly where the job's preparation reads it (the working directory's `mounts`
  folder is AZ_BATCHAI_JOB_MOUNT_ROOT: node_wrapper.py);
- a job of several nodes (a multi-instance task): Batch downloads a task's `resourceFiles` on its primary node
  only, so the archive goes in `multiInstanceSettings.commonResourceFiles`, which every node (primary and subtasks)
  downloads before the coordination command runs, into the task's root directory, one above its working directory
  (the Batch spec's MultiInstanceSettings.commonResourceFiles): `sweep-code/<hash>.tar.gz` there. The launch
  settings name that folder (COMMON_FOLDER), and the node wrapper links it at AZ_BATCHAI_JOB_MOUNT_ROOT/sweep-code
  on each node before the job's preparation (the coordination command) unpacks it into that node's working
  directory.
"""
import os
import re

from ....core.code.job import CODE_HASH_VAR, CODE_MOUNT, CODE_SHARE

BLOB_PREFIX = 'code/'
# The folder of a multi-instance task's root directory its common resource files put the snapshot in.
COMMON_FOLDER = CODE_MOUNT
_HASH = re.compile(r'^[0-9a-f]{64}$')


def code_mount(props):
    """The job's mount of the code share (an azureFileShares entry), when its snapshot can come as resource files
    instead (a job that names its snapshot); else None."""
    if code_hash(props) is None:
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
    """A one-node task's resourceFiles: the snapshot where the job's preparation unpacks it from."""
    return [{'httpUrl': url, 'filePath': 'mounts/{}/{}'.format(CODE_MOUNT, archive_name(props))}]


def common_resource_files(url, props):
    """A multi-instance task's commonResourceFiles: the snapshot in COMMON_FOLDER of the task's root directory on
    every node (linked into the job's mount root there: node_wrapper.NodeJob.link_job_mounts)."""
    return [{'httpUrl': url, 'filePath': '{}/{}'.format(COMMON_FOLDER, archive_name(props))}]
