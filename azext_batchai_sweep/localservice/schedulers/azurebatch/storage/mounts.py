"""Which storage a cluster mounts and where a job's directories are on it: pure, no network.

A cluster's `nodeSetup.mountVolumes` (Azure file shares, Blob containers through blobfuse) are mounted by Batch on
every node of its pool, under $AZ_BATCHAI_MOUNT_ROOT; a job's own mountVolumes can only be storage its cluster
mounts (job_mounts: links under $AZ_BATCHAI_JOB_MOUNT_ROOT). From these, storage_folders says which of a job's
directories (stdouterr, outputs) are on which share or container, so that share_reader.py and blob_reader.py read
them from the storage itself; cluster_storage and logs_account say which storage accounts the service reads from
(their roles: roles.py) and which one holds the task-log container (task_logs.py).
"""
import posixpath
from urllib.parse import urlsplit

from ....layout import output_paths
from ..code_files import code_mount
from ..errors import Refusal

# Where a task's files are, as the node wrapper places them (node_wrapper.node_roots), relative to the task
# directory the task file API serves: the working directory is `wd`; the pool's mounts are outside it.
TASK_ROOT = '/@task'
NODE_ROOTS = {'AZ_BATCHAI_JOB_TEMP': TASK_ROOT + '/wd', 'AZ_BATCHAI_JOB_MOUNT_ROOT': TASK_ROOT + '/wd/mounts',
              'AZ_BATCHAI_MOUNT_ROOT': '/@node/fsmounts'}


def cluster_storage(cluster_props):
    """{storage account name: set of kinds ('file', 'blob')} a cluster's mountVolumes put job outputs on."""
    volumes = (cluster_props.get('nodeSetup') or {}).get('mountVolumes') or {}
    kinds = {}
    for key, kind in (('azureFileShares', 'file'), ('azureBlobFileSystems', 'blob')):
        for volume in volumes.get(key) or []:
            if volume.get('accountName'):
                kinds.setdefault(volume['accountName'], set()).add(kind)
    return kinds


def logs_account(cluster_props):
    """The storage account a cluster's task logs go to (the first, by name, of those it mounts), or None."""
    accounts = sorted(cluster_storage(cluster_props or {}))
    return accounts[0] if accounts else None


def blob_endpoint(account, cluster_props):
    """The Blob service URL of storage account ``account``: an Azure Files mount's host with `.file.` as
    `.blob.` (the cloud's storage suffix, as `cluster create` built it), else Azure's public suffix."""
    volumes = ((cluster_props or {}).get('nodeSetup') or {}).get('mountVolumes') or {}
    for ref in volumes.get('azureFileShares') or []:
        host = urlsplit(ref.get('azureFileUrl') or '').netloc
        if ref.get('accountName', '').lower() == account.lower() and '.file.' in host:
            return 'https://' + host.replace('.file.', '.blob.', 1)
    return 'https://{}.blob.core.windows.net'.format(account)


def _volume(ref):
    """What a mount volume reference points at, comparable between job and cluster."""
    if 'containerName' in ref:
        return ('blob', ref['accountName'].lower(), ref['containerName'])
    return ('file', ref['accountName'].lower(), ref['azureFileUrl'].rstrip('/').lower())


def job_mounts(props, cluster_props):
    """{job relativeMountPath: cluster relativeMountPath} for the job's mountVolumes: each must be storage the
    cluster mounts (Batch mounts at pool creation only), else Refusal."""
    cluster = {}
    cluster_volumes = ((cluster_props.get('nodeSetup') or {}).get('mountVolumes')) or {}
    for kind in ('azureFileShares', 'azureBlobFileSystems'):
        for ref in cluster_volumes.get(kind) or []:
            cluster.setdefault(_volume(ref), ref['relativeMountPath'].strip('/'))
    mounts = {}
    volumes = props.get('mountVolumes') or {}
    code = code_mount(props)  # (its archive comes as a resource file: no mount needed)
    for kind in ('fileServers', 'unmanagedFileSystems'):
        if volumes.get(kind):
            raise Refusal('mountVolumes.{}: Azure Batch mounts only Azure file shares and blob containers, and only '
                          'those of the cluster.'.format(kind), code='UnsupportedMountVolume')
    for kind in ('azureFileShares', 'azureBlobFileSystems'):
        for ref in volumes.get(kind) or []:
            if ref is code:
                continue
            target = cluster.get(_volume(ref))
            if target is None:
                raise Refusal("mountVolumes.{} '{}': Azure Batch mounts storage only when a pool is created; mount "
                              "the same storage in the cluster's nodeSetup.mountVolumes (it is then also at "
                              '$AZ_BATCHAI_JOB_MOUNT_ROOT/{} for this job).'.format(
                                  kind, ref['relativeMountPath'], ref['relativeMountPath']),
                              code='UnsupportedMountVolume')
            mounts[ref['relativeMountPath'].strip('/')] = target
    return mounts


def storage_folders(job_props, cluster_props, linked):
    """[(kind, account, URL, directory in the share or container, 'stdouterr' or an output id)] of a job's
    directories that are on storage the cluster mounts: kind 'file' (an Azure file share: URL its azureFileUrl) or
    'blob' (a Blob container, blobfuse: URL its container's https://<account>.blob.<suffix>/<container>, whose
    directories are `/`-separated name prefixes). `linked`: {job relativeMountPath: cluster relativeMountPath}
    (job_mounts)."""
    mounts = {}  # node path -> (kind, account, URL)
    volumes = (cluster_props.get('nodeSetup') or {}).get('mountVolumes') or {}
    for ref in volumes.get('azureFileShares') or []:
        rel = ref['relativeMountPath'].strip('/')
        mounts[posixpath.join(NODE_ROOTS['AZ_BATCHAI_MOUNT_ROOT'], rel)] = ('file', ref['accountName'],
                                                                             ref['azureFileUrl'])
    for ref in volumes.get('azureBlobFileSystems') or []:
        rel = ref['relativeMountPath'].strip('/')
        url = '{}/{}'.format(blob_endpoint(ref['accountName'], cluster_props), ref['containerName'])
        mounts[posixpath.join(NODE_ROOTS['AZ_BATCHAI_MOUNT_ROOT'], rel)] = ('blob', ref['accountName'], url)
    for job_rel, cluster_rel in (linked or {}).items():
        target = mounts.get(posixpath.join(NODE_ROOTS['AZ_BATCHAI_MOUNT_ROOT'], cluster_rel))
        if target is not None:
            mounts[posixpath.join(NODE_ROOTS['AZ_BATCHAI_JOB_MOUNT_ROOT'], job_rel)] = target
    stdouterr, outputs, _ = output_paths(job_props, NODE_ROOTS)
    found = []
    for node_dir, directory_id in [(stdouterr, 'stdouterr'), *[(path, key) for key, path in outputs.items()]]:
        node_dir = posixpath.normpath(node_dir)
        for mount in sorted(mounts, key=len, reverse=True):
            if node_dir.startswith(mount + '/'):
                found.append((*mounts[mount], node_dir[len(mount) + 1:], directory_id))
                break
    return found


def share_folders(job_props, cluster_props, linked):
    """storage_folders on an Azure file share: [(account, azureFileUrl, directory in the share, directory id)]."""
    return [f[1:] for f in storage_folders(job_props, cluster_props, linked) if f[0] == 'file']
