"""Where a Hyperband promotion finds its parent's checkpoint, and the warning when it cannot.

A promoted job is a new job, possibly on another node. Its environment names the parent's output directories
(BATCHAI_SWEEP_PARENT_OUTPUT_<ID>: `<pathPrefix>/<the parent's path segment>/outputs`, as the parent saw it), so it
can read them only where every node sees the same files: a mounted volume. On Batch AI that is a file share or blob
container the job mounts (`$AZ_BATCHAI_JOB_MOUNT_ROOT/<its relativeMountPath>`) or the cluster mounts
(`$AZ_BATCHAI_MOUNT_ROOT/...`); on the local service and Slurm the mount roots are folders of the data dir (shared
by the nodes on Slurm). A node-local path (`/tmp/...`, `$AZ_BATCHAI_JOB_TEMP`) is lost with the node's job.
"""
CLUSTER_ROOT = '$AZ_BATCHAI_MOUNT_ROOT'
JOB_ROOT = '$AZ_BATCHAI_JOB_MOUNT_ROOT'
VOLUME_KINDS = ('azureFileShares', 'azureBlobFileSystems', 'fileServers', 'unmanagedFileSystems')


def _job_mounts(template):
    volumes = (template or {}).get('mountVolumes') or {}
    return {str(volume.get('relativeMountPath') or '').strip('/') for kind in VOLUME_KINDS
            for volume in volumes.get(kind) or () if isinstance(volume, dict)} - {''}


def _shared(path, mounts):
    """True when `path` (a pathPrefix as written) lies on a volume every node of the job mounts."""
    text = str(path or '').replace('${AZ_BATCHAI_MOUNT_ROOT}', CLUSTER_ROOT).replace(
        '${AZ_BATCHAI_JOB_MOUNT_ROOT}', JOB_ROOT)
    if text == CLUSTER_ROOT or text.startswith(CLUSTER_ROOT + '/'):
        return True  # the cluster's own mounts (its nodeSetup.mountVolumes), which the job cannot list
    if text.startswith(JOB_ROOT + '/'):
        return text[len(JOB_ROOT) + 1:].split('/', 1)[0] in mounts
    return False


def handoff_warnings(definition):
    """The reasons a Hyperband promotion of this sweep could not read its parent's checkpoint ([] when it can, or
    when the sweep has no promotions)."""
    if definition.sampling.get('type') != 'hyperband':
        return []
    directories = definition.template.get('outputDirectories') or []
    if not directories:
        return ['the job has no outputDirectories: a promoted job gets no BATCHAI_SWEEP_PARENT_OUTPUT_<ID> and starts '
                'from scratch, spending again the epochs its parent ran']
    mounts = _job_mounts(definition.template)
    return ['outputDirectories {} ({}) is not on a mounted volume: a promoted job on another node (Batch AI, Slurm) '
            'cannot read its parent\'s checkpoint there; put it under {}/<a mountVolumes relativeMountPath> (mounted: '
            '{}) or {}/...'.format(entry.get('id'), entry.get('pathPrefix'), JOB_ROOT,
                                   ', '.join(sorted(mounts)) or 'none', CLUSTER_ROOT)
            for entry in directories if isinstance(entry, dict) and not _shared(entry.get('pathPrefix'), mounts)]
