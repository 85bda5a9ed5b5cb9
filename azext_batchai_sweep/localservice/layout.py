"""Where a job's files live in the data dir, the environment Batch AI gives it, and the command it runs.

Data dir layout (the storage part is the contract with files_api.py):
    storage/<account>/shares/<share>             an Azure file share
    storage/<account>/containers/<container>     a blob container
    clusters/<sub>/<rg>/<workspace>/<cluster>/mounts   AZ_BATCHAI_MOUNT_ROOT (symlinks to node setup volumes)
    jobs/<job uid>/mounts                        AZ_BATCHAI_JOB_MOUNT_ROOT (symlinks to the job's volumes)
    jobs                                         AZ_BATCHAI_JOB_TEMP_DIR
    jobs/<job uid>/tmp                           AZ_BATCHAI_JOB_TEMP, the job's working directory
    jobs/<job uid>/shared                        AZ_BATCHAI_SHARED_JOB_TEMP (every node of the job sees it)
    jobs/<job uid>/hostfile                      AZ_BATCHAI_MPI_HOST_FILE
"""
import os
import re
import urllib.parse

from .errors import bad_request
from .schedulers.jobenv import MARKER_VARIABLE, job_environment

_VARIABLE = re.compile(r'\$(\w+)|\$\{(\w+)\}')


def expand(text, variables):
    """Replace $NAME / ${NAME} of `variables` in `text` (others are left for the job's shell)."""
    def substitute(match):
        name = match.group(1) or match.group(2)
        return variables.get(name, match.group(0))
    return _VARIABLE.sub(substitute, text)


def _storage_target(data_dir, ref, kind):
    """The local directory backing a mount volume reference."""
    if kind == 'azureBlobFileSystems':
        account, name, sub = ref['accountName'], ref['containerName'], 'containers'
    else:
        url = urllib.parse.urlsplit(ref['azureFileUrl'])
        parts = [p for p in url.path.split('/') if p]
        sub = 'shares'
        if url.hostname and '.file.' in url.hostname:
            account, name = url.hostname.split('.', 1)[0], parts[0] if parts else ''
        else:  # path-style, as the local files endpoint answers: http://127.0.0.1:<port>/<account>/<share>
            account, name = (parts + ['', ''])[:2]
    for value in (account, name):
        if not value or value in ('.', '..') or '/' in value or '\\' in value:
            # Named by where it mounts and what it points at, never by the whole reference: it holds the account key.
            raise bad_request('InvalidMountVolume', "Cannot map mount volume '{}' ({}) to local storage.".format(
                ref.get('relativeMountPath'), ref.get('azureFileUrl') or ref.get('containerName')))
    return os.path.join(data_dir, 'storage', account.lower(), sub, name)


def link_volumes(data_dir, mount_root, volumes):
    """Create the storage directories of `volumes` and symlink them at mount_root/<relativeMountPath>."""
    os.makedirs(mount_root, exist_ok=True)
    for kind in ('azureFileShares', 'azureBlobFileSystems'):
        for ref in (volumes or {}).get(kind) or []:
            target = _storage_target(data_dir, ref, kind)
            os.makedirs(target, exist_ok=True)
            link = os.path.join(mount_root, ref['relativeMountPath'].strip('/'))
            os.makedirs(os.path.dirname(link), exist_ok=True)
            if os.path.islink(link):
                if os.readlink(link) == target:
                    continue
                os.unlink(link)
            os.symlink(target, link)


def output_paths(props, roots):
    """(stdouterr dir, {output id: dir}, {input id: dir}) of a job, as Batch AI placed them: under the expanded
    stdOutErrPathPrefix / pathPrefix, the job's jobOutputDirectoryPathSegment, then stdouterr / outputs[/pathSuffix].
    `roots`: AZ_BATCHAI_JOB_MOUNT_ROOT, AZ_BATCHAI_MOUNT_ROOT, AZ_BATCHAI_JOB_TEMP where the job runs (this machine's
    data dir, or an Azure Batch node's mounts and task folder)."""
    segment = props['jobOutputDirectoryPathSegment']
    # Normalised as the node's file system reads the path (`a//b`, `a/./b`, a trailing slash: the same folder), so
    # that every comparison of these paths (the file API's, the Azure Batch task files', the share reader's) agrees.
    stdouterr = os.path.normpath(os.path.join(expand(props['stdOutErrPathPrefix'], roots), segment, 'stdouterr'))
    outputs = {}
    for entry in props.get('outputDirectories') or []:
        path = os.path.join(expand(entry['pathPrefix'], roots), segment, 'outputs')
        if entry.get('pathSuffix'):
            path = os.path.join(path, entry['pathSuffix'])
        outputs[entry['id']] = os.path.normpath(path)
    inputs = {entry['id']: os.path.normpath(expand(entry['path'], roots))
              for entry in props.get('inputDirectories') or []}
    return stdouterr, outputs, inputs


def job_variables(name, roots, stdouterr_dir, temp_dir, shared_dir, host_file, outputs, inputs):
    """Batch AI's variables of a job wherever it runs (docs/job-environment.md): the roots, its name, its
    stdouterr, temp, shared temp and host file, AZ_BATCHAI_OUTPUT_<id> and AZ_BATCHAI_INPUT_<id>."""
    variables = dict(roots)
    variables.update({'AZ_BATCHAI_JOB_NAME': name, 'AZ_BATCHAI_STDOUTERR_DIR': stdouterr_dir,
                      'AZ_BATCHAI_JOB_TEMP_DIR': temp_dir, 'AZ_BATCHAI_SHARED_JOB_TEMP': shared_dir,
                      'AZ_BATCHAI_MPI_HOST_FILE': host_file})
    variables.update({'AZ_BATCHAI_OUTPUT_' + k: v for k, v in outputs.items()})
    variables.update({'AZ_BATCHAI_INPUT_' + k: v for k, v in inputs.items()})
    return variables


def job_dir(data_dir, uid):
    """The service's own folder of one job incarnation (mounts, temp, scheduler files), named by its uid (marker)."""
    return os.path.join(data_dir, 'jobs', uid)


def cluster_mount_root(data_dir, cluster_key):
    sub, rg, workspace, _, cluster = cluster_key.split('/')
    return os.path.join(data_dir, 'clusters', sub, rg, workspace, cluster, 'mounts')


class JobLayout:
    """Paths and environment of one job incarnation (identified by the uid ending its output path segment)."""

    def __init__(self, data_dir, body, cluster_key):
        self.data_dir = data_dir
        props = body['properties']
        self.props = props
        self.name = body['name']
        self.segment = props['jobOutputDirectoryPathSegment']
        self.uid = self.segment.rsplit('/', 1)[-1]
        self.job_dir = job_dir(data_dir, self.uid)
        self.job_mount_root = os.path.join(self.job_dir, 'mounts')
        self.temp_dir = os.path.join(self.job_dir, 'tmp')
        self.shared_dir = os.path.join(self.job_dir, 'shared')
        self.host_file = os.path.join(self.job_dir, 'hostfile')
        self.mount_root = cluster_mount_root(data_dir, cluster_key)
        roots = {'AZ_BATCHAI_JOB_MOUNT_ROOT': self.job_mount_root, 'AZ_BATCHAI_MOUNT_ROOT': self.mount_root,
                 'AZ_BATCHAI_JOB_TEMP': self.temp_dir}
        self.stdouterr_dir, self.outputs, self.inputs = output_paths(props, roots)
        self.roots = roots

    def directory(self, directory_id):
        """The directory behind a listOutputFiles `outputdirectoryid` ('stdouterr' or an output id), or None."""
        if directory_id.lower() == 'stdouterr':
            return self.stdouterr_dir
        for key, path in self.outputs.items():
            if key.lower() == directory_id.lower():
                return path
        return None

    def check_inside_data_dir(self):
        """400 unless stdouterr and output dirs are in the data dir (the only place download links can serve)."""
        root = os.path.normpath(self.data_dir) + os.sep
        for path in [self.stdouterr_dir, *self.outputs.values()]:
            if not os.path.normpath(path).startswith(root):
                raise bad_request('InvalidPath', "'{}' is outside the service's storage: write job output below "
                                  '$AZ_BATCHAI_JOB_MOUNT_ROOT or $AZ_BATCHAI_MOUNT_ROOT.'.format(path))

    def prepare(self, job_volumes, cluster_volumes):
        """Create the job's directories and mount-volume symlinks (cluster volumes first: jobs may write there)."""
        link_volumes(self.data_dir, self.mount_root, cluster_volumes)
        link_volumes(self.data_dir, self.job_mount_root, job_volumes)
        os.makedirs(self.temp_dir, exist_ok=True)
        os.makedirs(self.shared_dir, exist_ok=True)
        for path in [self.stdouterr_dir, *self.outputs.values()]:
            os.makedirs(path, exist_ok=True)

    def batchai_variables(self):
        """The Batch AI variables of this job incarnation (and the service's marker)."""
        variables = job_variables(self.name, self.roots, self.stdouterr_dir, os.path.dirname(self.job_dir),
                                  self.shared_dir, self.host_file, self.outputs, self.inputs)
        variables[MARKER_VARIABLE] = self.uid
        return variables

    def environment(self, spec_props):
        """The job's environment (jobenv.py): a minimal base, Batch AI's variables, the job's variables and secrets."""
        return job_environment(self.batchai_variables(), spec_props)
