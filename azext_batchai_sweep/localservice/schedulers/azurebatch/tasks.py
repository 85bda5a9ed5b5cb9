"""A Batch AI job as a Batch task add body (data plane 2024-02-01.19.0 `TaskAddParameter`, REST JSON), and the
chunks of a task collection add.

Batch AI job -> Batch task:
- the toolkit's command, jobPreparation, stdouterr and output directories -> `commandLine`: node_wrapper.py `task`
  (several nodes: `run`, with `multiInstanceSettings.coordinationCommandLine` `prepare`);
- Batch AI's AZ_BATCHAI_* variables -> set by the wrapper on the node from Batch's AZ_BATCH_* ones
  (docs/job-environment.md);
- `environmentVariables`, `secrets` -> `environmentSettings` (readable, like every task setting, by whoever may read
  the Batch job's tasks);
- `nodeCount` > 1 -> `multiInstanceSettings.numberOfInstances` (a pool with inter-node communication, one slot per
  node);
- `constraints.maxWallClockTime` -> `constraints.maxWallClockTime` (Batch AI's 150 days when absent),
  `maxTaskRetryCount` 0;
- `containerSettings.imageSourceRegistry` (+ `shmSize`) -> `containerSettings` (`imageName`, `registry`,
  `--shm-size`), on a pool with a container configuration;
- `mountVolumes` (job level) -> links in AZ_BATCHAI_JOB_MOUNT_ROOT to the cluster's mounts of the same storage
  (Batch mounts at pool creation only), except the code snapshot's share (--code), whose archive comes as a
  `resourceFiles` entry (a one-node job) or a `multiInstanceSettings.commonResourceFiles` entry (a job of several
  nodes: every node gets it) instead (code_files.py);
- `schedulingPriority` -> none: Batch tasks have no priority; tasks run in submission order;
- (the task's own stdout/stderr) -> `outputFiles`: Batch's stdout.txt/stderr.txt uploaded at task completion to
  the cluster storage's task-log container with a write-only user delegation SAS (storage/task_logs.py), so a failure
  before the wrapper or the mount works stays readable (issue 31 rule 3).

`check_job` refuses at submit what the cluster's pool cannot run, with the reason.
"""
import base64
import json

from ..gpus import gpus_per_node
from ...resources import format_duration, job_wall_clock
from . import node_wrapper
from .code_files import CODE_MOUNT, COMMON_FOLDER, code_mount, common_resource_files, resource_files
from .errors import Refusal
from .pools import POOL_ADMIN, max_nodes
from .storage.mounts import cluster_storage, job_mounts, logs_account

# Batch's limits on one task collection add: 100 tasks, and the request body under 1 MB (TooManyTasks,
# RequestBodyTooLarge), measured on the bytes the SDK sends (request_bytes).
MAX_TASKS_PER_ADD = 100
MAX_ADD_BYTES = 1000 * 1000
LAUNCH_KEYS = ('nodeCount', 'jobPreparation', 'stdOutErrPathPrefix', 'outputDirectories', 'inputDirectories',
               'jobOutputDirectoryPathSegment')


def check_job(props, toolkit, cluster_props, multi_node, containers):  # pylint: disable=unused-argument
    """Refusal for a job the cluster's pool cannot run (never left queued for ever). `cluster_props`: its scale
    settings and mounts; `multi_node`: the pool has inter-node communication and one slot per node; `containers`:
    it has a container configuration (pools.container_pool; None: not known, not checked)."""
    nodes = int(props.get('nodeCount') or 1)
    auto = (cluster_props.get('scaleSettings') or {}).get('autoScale')
    if auto is not None and nodes > max_nodes(cluster_props):
        # (A manual cluster may be resized later, as on Batch AI: its jobs wait for that.)
        raise Refusal('nodeCount {}: the cluster scales to at most {} nodes, so the job would wait for ever; raise '
                      'its maximum (az batchai cluster auto-scale --max) or give a smaller nodeCount.'.format(
                          nodes, max_nodes(cluster_props)), code='NodeCountTooLarge')
    if nodes > 1 and not multi_node:
        raise Refusal('nodeCount {}: the cluster\'s pool was created without inter-node communication, which Batch '
                      'fixes at pool creation, so it runs jobs of one node only. Create a cluster that can run '
                      'multi-node jobs for this job.'.format(nodes), code='MultiNodeUnsupported')
    if props.get('containerSettings') and containers is False:
        raise Refusal('containerSettings: the cluster\'s pool runs no containers (Batch fixes that when the pool is '
                      'made, and refuses container settings on such a pool): create a cluster that names a '
                      'Docker-compatible image itself (virtualMachineConfiguration.imageReference, e.g. '
                      'microsoft-dsvm ubuntu-hpc 2204), or run the job without a container.',
                      code='ContainersUnsupported')
    if not props.get('containerSettings') and containers:
        raise Refusal('containerSettings: the cluster\'s pool runs every task in a container (its image, named by '
                      'the cluster, is Docker-compatible), and Batch fails a task without container settings there '
                      '(ContainerTaskSettingsNotFound). Give the job containerSettings.imageSourceRegistry, or '
                      'submit it to a cluster created with the default image.', code='ContainerSettingsRequired')
    registry = ((props.get('containerSettings') or {}).get('imageSourceRegistry') or {})
    if ((registry.get('credentials') or {}).get('passwordSecretReference')):
        raise Refusal('containerSettings.imageSourceRegistry.credentials.passwordSecretReference: a KeyVault '
                      'reference cannot be given to Azure Batch; give the password.',
                      code='UnsupportedSecretReference')
    job_mounts(props, cluster_props)
    if code_mount(props) is not None:
        if logs_account(cluster_props) is None:
            raise Refusal("--code: the code snapshot reaches a Batch task through the cluster's storage account (a "
                          'resource file of its task-log container), and this cluster mounts no storage account; '
                          "create the cluster with an Azure file share or blob container in nodeSetup.mountVolumes.",
                          code='CodeStorageMissing')


def container_settings(settings):
    """Batch's task containerSettings for Batch AI's."""
    registry = settings.get('imageSourceRegistry') or {}
    result = {'imageName': registry['image'], 'workingDirectory': 'taskWorkingDirectory'}
    credentials = registry.get('credentials') or {}
    if registry.get('serverUrl') or credentials.get('username'):
        result['registry'] = {k: v for k, v in (('registryServer', registry.get('serverUrl')),
                                                 ('username', credentials.get('username')),
                                                 ('password', credentials.get('password'))) if v}
    if settings.get('shmSize'):
        result['containerRunOptions'] = '--shm-size {}'.format(settings['shmSize'])
    return result


def output_files(container_url, task_id):
    """Batch's own stdout.txt and stderr.txt of the task (the task's folder, one up from its working directory)
    uploaded to <container>/<task id>/ when the task completes, whatever its result."""
    return [{'filePattern': '../{}.txt'.format(stream),
             'destination': {'container': {'containerUrl': container_url, 'path': '{}/{}.txt'.format(task_id, stream)}},
             'uploadOptions': {'uploadCondition': 'taskcompletion'}} for stream in ('stdout', 'stderr')]


def launch_spec(job_body, toolkit, cluster_props, props, gpus=None):
    """What node_wrapper.py needs (AZ_BATCHAI_SWEEP_TASK): launch settings and variable names, never a value of a
    variable or secret."""
    public = job_body['properties']
    settings = {k: public[k] for k in LAUNCH_KEYS if public.get(k) is not None}
    settings[toolkit] = public[toolkit]
    settings.setdefault('nodeCount', 1)
    names = [e['name'] for kind in ('environmentVariables', 'secrets') for e in props.get(kind) or []]
    spec = {'name': job_body['name'], 'toolkit': toolkit, 'props': settings, 'variables': names,
            'mounts': job_mounts(props, cluster_props),
            'gpus': gpus_per_node(cluster_props.get('vmSize')) if gpus is None else int(gpus)}
    if int(settings['nodeCount']) > 1 and code_mount(props) is not None:
        # {job relativeMountPath: folder of the task's root directory}: code_files.common_resource_files
        spec['rootMounts'] = {CODE_MOUNT: COMMON_FOLDER}
    return spec


def task_body(task_id, job_body, toolkit, cluster_props, props, output_container_url=None, payload=None,
              gpus=None, code_url=None):
    """The Batch task add JSON of a Batch AI job.

    :param job_body: the job as the service stores it (name, jobOutputDirectoryPathSegment, launch settings).
    :param cluster_props: the cluster's properties (vmSize, nodeSetup.mountVolumes).
    :param props: the job's create properties as received (environmentVariables and secrets with their values).
    :param output_container_url: a blob container URL Batch may write to (a SAS URL): Batch's own stdout/stderr of
        the task are uploaded there; None: no outputFiles.
    :param payload: node_wrapper.payload() (bytes), built once by the caller for all its tasks.
    :param gpus: GPUs of one node (vm_sizes.gpus of the cluster's offered size: AZ_BATCHAI_NUM_GPUS); None: from
        the VM size's name as the other schedulers count them (gpus.py: Batch AI's N-series).
    :param code_url: a URL Batch may read the job's code snapshot from (code_files.py), for a job with one.
    """
    payload = node_wrapper.payload() if payload is None else payload
    spec = launch_spec(job_body, toolkit, cluster_props, props, gpus)
    environment = [{'name': node_wrapper.PAYLOAD_VARIABLE, 'value': base64.b64encode(payload).decode('ascii')},
                   {'name': node_wrapper.TASK_VARIABLE,
                    'value': json.dumps(spec, sort_keys=True, separators=(',', ':'))}]
    environment += [{'name': e['name'], 'value': e.get('value') or ''}
                    for kind in ('environmentVariables', 'secrets') for e in props.get(kind) or []]
    nodes = int(spec['props']['nodeCount'])
    body = {'id': task_id, 'displayName': job_body['name'][:1024],
            'commandLine': node_wrapper.command_line('run' if nodes > 1 else 'task'),
            'environmentSettings': environment,
            'constraints': {'maxWallClockTime': format_duration(job_wall_clock(props)), 'maxTaskRetryCount': 0},
            'userIdentity': POOL_ADMIN, 'requiredSlots': 1}
    if nodes > 1:
        body['multiInstanceSettings'] = {'numberOfInstances': nodes,
                                         'coordinationCommandLine': node_wrapper.command_line('prepare')}
    if props.get('containerSettings'):
        body['containerSettings'] = container_settings(props['containerSettings'])
    if output_container_url:
        body['outputFiles'] = output_files(output_container_url, task_id)
    if code_url and nodes > 1:
        body['multiInstanceSettings']['commonResourceFiles'] = common_resource_files(code_url, props)
    elif code_url:
        body['resourceFiles'] = resource_files(code_url, props)
    return body


def task_identity(task):
    """Which Batch AI job incarnation a task (an add body, or a task as Batch answers it) runs: its display name (the
    job's name) and its job's output path segment (sub/rg/workspace/experiment/job/uid, unique to the incarnation)
    from the launch settings in its environment; None for a task the service did not make. The command line cannot
    tell: it is the same wrapper for every task."""
    spec = next((e.get('value') for e in task.get('environmentSettings') or []
                 if e.get('name') == node_wrapper.TASK_VARIABLE), None)
    try:
        segment = json.loads(spec)['props']['jobOutputDirectoryPathSegment']
    except (TypeError, ValueError, KeyError):
        return None
    return task.get('displayName'), segment


def batch_job_body(batch_job_id, pool_id):
    """The Batch job add JSON of a cluster's one Batch job: tasks run on its pool; the job stays active when its
    tasks complete (more come), and is terminated and deleted with the cluster."""
    return {'id': batch_job_id, 'poolInfo': {'poolId': pool_id}, 'onAllTasksComplete': 'noaction',
            'usesTaskDependencies': False}


# The longest a Batch AI job name and a task id can be: the stand-ins of a size check made before either exists.
_LONGEST_NAME = 'j' * 64
_LONGEST_TASK_ID = 't' * 64
# The longest jobOutputDirectoryPathSegment the service makes (resources.job_body: subscription/resource group/
# workspaces/workspace/experiments/experiment/jobs/job/uid, with resources.check_name's longest names: 387 characters).
_LONGEST_SEGMENT = '/'.join(['0' * 36, 'g' * 90, 'workspaces', 'w' * 64, 'experiments', 'e' * 64, 'jobs',
                             _LONGEST_NAME, '0' * 36])
# A stand-in of the task-log container's SAS URL (storage/task_logs.py) on a cluster that mounts storage: the longest
# account name (24), container name (63) and a user delegation SAS's query with margin (about 300 in practice).
_LONGEST_LOGS_URL = 'https://{}.blob.core.usgovcloudapi.net/{}?{}'.format('a' * 24, 'c' * 63, 'q' * 512)
# ... and of a --code job's snapshot URL: the blob code/<sha256>.tar.gz of that container (code_files.py).
_LONGEST_CODE_URL = 'https://{}.blob.core.usgovcloudapi.net/{}/code/{}.tar.gz?{}'.format('a' * 24, 'c' * 63, '0' * 64,
                                                                                        'q' * 512)


def check_task_size(props, toolkit, cluster_props, payload=None, max_bytes=MAX_ADD_BYTES):
    """Refusal at submit when the job's task body (environment variables, secrets, the wrapper and its launch
    settings) cannot fit in a Batch request of `max_bytes` even alone: it would fail at every add. The body is
    built as the add builds it, with the longest job name, task id, output path segment and (a --code job) snapshot
    URL, so what passes here fits at the add."""
    job_body = {'name': _LONGEST_NAME, 'properties': dict(props, jobOutputDirectoryPathSegment=_LONGEST_SEGMENT)}
    logs_url = _LONGEST_LOGS_URL if cluster_storage(cluster_props) else None  # (mounts.logs_account)
    code_url = _LONGEST_CODE_URL if logs_url and code_mount(props) is not None else None
    body = task_body(_LONGEST_TASK_ID, job_body, toolkit, cluster_props, props, output_container_url=logs_url,
                     payload=payload, code_url=code_url)
    own, limit = request_bytes(body), max_bytes - request_bytes({'value': []})
    if own > limit:
        variables = sum(request_bytes(e) for kind in ('environmentVariables', 'secrets')
                        for e in props.get(kind) or [])
        raise Refusal('The job\'s Batch task would be {} bytes, over the {} bytes a Batch request may carry (its '
                      'environmentVariables and secrets take {} bytes of it): pass large values as files (an '
                      'input directory or a mounted share) instead.'.format(own, limit, variables),
                      code='RequestTooLarge')


def request_bytes(body):
    """The size of `body` as the SDK sends it: azure-batch serialises a request body with json.dumps and Python's
    defaults (its SdkJSONEncoder only adds types plain JSON never holds): ', ' and ': ' between items, non-ASCII
    characters escaped as \\uXXXX. Compact JSON would count 4 bytes fewer per name/value pair: a body of many small
    environment variables is a sixth larger as sent than so counted."""
    return len(json.dumps(body).encode('ascii'))


def chunks(task_bodies, max_count=MAX_TASKS_PER_ADD, max_bytes=MAX_ADD_BYTES):
    """The task bodies as lists for task collection adds, in order: at most `max_count` each, and each list's
    request body ({"value": [...]}) at most `max_bytes` as the SDK sends it (request_bytes). A single task too large
    for any request is a Refusal."""
    envelope = request_bytes({'value': []})
    current, size = [], envelope
    for body in task_bodies:
        own = request_bytes(body)
        if envelope + own > max_bytes:
            raise Refusal('Job task {} is {} bytes, more than a Batch request may carry ({}): its environment '
                          'variables or secrets are too large.'.format(body.get('displayName') or body['id'], own,
                                                                       max_bytes), code='RequestTooLarge')
        added = own + (len(', ') if current else 0)  # the separator between two items
        if current and (len(current) >= max_count or size + added > max_bytes):
            yield current
            current, size = [], envelope
            added = own
        current.append(body)
        size += added
    if current:
        yield current
