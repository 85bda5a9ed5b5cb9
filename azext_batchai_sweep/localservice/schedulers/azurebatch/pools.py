"""A Batch AI cluster as the Batch pool add body (data plane 2024-02-01.19.0 `PoolAddParameter`, REST JSON).

`pool_body` maps the cluster's create properties as received (keys and password still in them: the body goes to
Batch only, never to disk or a log):

Batch AI cluster -> Batch pool:
- `vmSize` -> `vmSize` (checked by vm_sizes.py first);
- `vmPriority` -> dedicated or Spot/low-priority targets by the account's allocation mode (priority.py);
- `scaleSettings.manual.targetNodeCount` -> a fixed size: `enableAutoScale: false`, the target of the priority;
- `scaleSettings.autoScale` (min, max, initial) -> `enableAutoScale`, `autoScaleFormula` (AUTOSCALE_GRAMMAR),
  `autoScaleEvaluationInterval` PT5M;
- `virtualMachineConfiguration.imageReference` -> `virtualMachineConfiguration` from images.choose_image (image and
  node agent from the supported list, of a Hyper-V generation the size boots), with a Docker-compatible
  `containerConfiguration` when the cluster names a Docker-compatible image itself (container_pool: then every
  job of it needs `containerSettings`, and only then may a job have them);
- `nodeSetup.mountVolumes.azureFileShares` / `azureBlobFileSystems` -> `mountConfiguration[]`
  `azureFileShareConfiguration` / `azureBlobFileSystemConfiguration`, with the account key (Batch needs it on
  every node);
- `nodeSetup.setupTask` -> `startTask` (waits for success; output under its stdOutErrPathPrefix, a folder a node);
- `userAccountSettings` (name, password) -> `userAccounts` (an admin user); an SSH public key has no pool field
  (left out, said by `pool_notes`);
- `subnet.id` -> `networkConfiguration.subnetId`;
- (may run jobs of several nodes) -> `enableInterNodeCommunication`;
- (Batch AI ran one job per node) -> `taskSlotsPerNode: 1`, `taskSchedulingPolicy.nodeFillType: spread`.

Refused (Refusal, at cluster create): KeyVault secret references for storage keys, file servers and unmanaged file
systems, a blob container without an account key.
"""
import datetime
import re
import shlex

from .errors import Refusal
from .priority import node_priority

EVALUATION_INTERVAL = 'PT5M'  # Batch's minimum; issue 31 rule 3 (say "next evaluation about HH:MM")
EVALUATION_MINUTES = 5
SAMPLE_PERCENT = 70  # below: too few $PendingTasks samples in the window (a new pool): use the last sample
MANUAL_RESIZE_TIMEOUT = 'PT15M'
CONTAINER_CAPABILITY = 'dockercompatible'
# What the nodes' start task and tasks run as: the pool-wide auto user, admin (Docker, and the passwordless SSH Batch
# sets up between a pool's nodes for MPI multi-instance tasks, both need it).
POOL_ADMIN = {'autoUser': {'scope': 'pool', 'elevationLevel': 'admin'}}

AUTOSCALE_GRAMMAR = r"""The autoscale formula, always exactly these six statements (one per line, in this order; the
second is one line in the formula):

    $samples = $PendingTasks.GetSamplePercent(TimeInterval_Minute * 5);
    $tasks = $samples < 70 ? max(0, $PendingTasks.GetSample(1)) :
             max($PendingTasks.GetSample(TimeInterval_Minute * 5));
    $nodes = $samples < 70 ? max(INITIAL, $tasks) : $tasks;
    TARGET = min(MAX, max(MIN, $nodes));
    OTHER = 0;
    $NodeDeallocationOption = taskcompletion;

where INITIAL, MIN and MAX are non-negative integer literals (the cluster's initialNodeCount <= MAX,
minimumNodeCount, maximumNodeCount) and TARGET/OTHER are $TargetDedicatedNodes and $TargetLowPriorityNodes (or the
reverse, for Spot/low-priority). Semantics (Batch's, batch-automatic-scaling.md): $PendingTasks is $ActiveTasks +
$RunningTasks of the pool's jobs, sampled every 30 s, where an active multi-instance task counts its number of
instances (so a pending 4-node job asks for 4 nodes); GetSamplePercent(window) is the percentage of the window's
samples available; GetSample(1) the last sample; GetSample(window) the samples of the window (max of it: the
largest). Hence: no pending task in the window -> MIN nodes (0 unless the user asked for a minimum); k >= 1 pending
task instances -> min(k, MAX) nodes, at least 1; a new pool (too few samples) starts at max(INITIAL, last sample);
and nodes leave only once their task completed (taskcompletion): scale-in never kills a running task.
`autoscale_parameters` reads the three numbers and the targets back from a formula of this shape.
"""

_FORMULA = (
    '$samples = $PendingTasks.GetSamplePercent(TimeInterval_Minute * {window});\n'
    '$tasks = $samples < {percent} ? max(0, $PendingTasks.GetSample(1)) : '
    'max($PendingTasks.GetSample(TimeInterval_Minute * {window}));\n'
    '$nodes = $samples < {percent} ? max({initial}, $tasks) : $tasks;\n'
    '{target} = min({max}, max({min}, $nodes));\n'
    '{other} = 0;\n'
    '$NodeDeallocationOption = taskcompletion;'
)
_NUMBERS = {'initial': r'(?P<initial>\d+)', 'min': r'(?P<min>\d+)', 'max': r'(?P<max>\d+)',
            'target': r'(?P<target>\$\w+)', 'other': r'(?P<other>\$\w+)'}


def _formula_pattern():
    """The formula's text with its five parameters as named groups."""
    text = _FORMULA.format(window=EVALUATION_MINUTES, percent=SAMPLE_PERCENT, **{k: '@{}@'.format(k) for k in _NUMBERS})
    pattern = re.escape(text)
    for name, group in _NUMBERS.items():
        pattern = pattern.replace('@{}@'.format(name), group)
    return re.compile(pattern)


_FORMULA_RE = _formula_pattern()


def autoscale_formula(min_nodes, max_nodes, initial_nodes, low_priority):
    """The pool's autoscale formula (AUTOSCALE_GRAMMAR). `low_priority`: the targets are Spot/low-priority nodes."""
    counts = [int(min_nodes), int(max_nodes), int(initial_nodes)]
    if any(c < 0 for c in counts) or counts[0] > counts[1]:
        raise Refusal('scaleSettings.autoScale needs 0 <= minimumNodeCount ({}) <= maximumNodeCount ({}) and a '
                      'non-negative initialNodeCount ({}).'.format(min_nodes, max_nodes, initial_nodes),
                      code='InvalidScaleSettings')
    target, other = '$TargetDedicatedNodes', '$TargetLowPriorityNodes'
    if low_priority:
        target, other = other, target
    return _FORMULA.format(window=EVALUATION_MINUTES, percent=SAMPLE_PERCENT, min=counts[0], max=counts[1],
                           initial=min(counts[2], counts[1]), target=target, other=other)


def autoscale_parameters(formula):
    """{'min', 'max', 'initial': int, 'target', 'other': variable} of a formula autoscale_formula wrote;
    None for any other text."""
    match = _FORMULA_RE.fullmatch(formula or '')
    if not match:
        return None
    found = match.groupdict()
    return {k: (v if k in ('target', 'other') else int(v)) for k, v in found.items()}


# ---- mounts --------------------------------------------------------------------------------------------------

def _account_key(ref, kind):
    credentials = ref.get('credentials') or {}
    if credentials.get('accountKeySecretReference'):
        raise Refusal('nodeSetup.mountVolumes.{} {}: a KeyVault secret reference cannot be given to Azure Batch; '
                      'give credentials.accountKey (it is sent only to Batch, which needs it on every node).'.format(
                          kind, ref.get('relativeMountPath')), code='UnsupportedSecretReference')
    key = credentials.get('accountKey')
    if not key:
        raise Refusal('nodeSetup.mountVolumes.{} {}: Azure Batch mounts storage with the account key; give '
                      'credentials.accountKey.'.format(kind, ref.get('relativeMountPath')),
                      code='InvalidRequestContent')
    return key


def _file_share(ref):
    modes = 'dir_mode={},file_mode={}'.format(ref.get('directoryMode') or '0777', ref.get('fileMode') or '0777')
    return {'azureFileShareConfiguration': {
        'accountName': ref['accountName'], 'azureFileUrl': ref['azureFileUrl'],
        'accountKey': _account_key(ref, 'azureFileShares'), 'relativeMountPath': ref['relativeMountPath'].strip('/'),
        'mountOptions': '-o vers=3.0,{},serverino,mfsymlinks'.format(modes)}}


def _blob_container(ref):
    config = {'accountName': ref['accountName'], 'containerName': ref['containerName'],
              'accountKey': _account_key(ref, 'azureBlobFileSystems'),
              'relativeMountPath': ref['relativeMountPath'].strip('/')}
    if ref.get('mountOptions'):
        config['blobfuseOptions'] = ref['mountOptions']
    return {'azureBlobFileSystemConfiguration': config}


def mount_configuration(volumes):
    """Batch's `mountConfiguration` for Batch AI `mountVolumes` (Refusal for what Batch cannot mount here)."""
    volumes = volumes or {}
    if volumes.get('fileServers'):
        raise Refusal('nodeSetup.mountVolumes.fileServers: Batch AI file servers do not exist on Azure Batch; put '
                      'the data on an Azure file share (azureFileShares).', code='UnsupportedMountVolume')
    if volumes.get('unmanagedFileSystems'):
        raise Refusal('nodeSetup.mountVolumes.unmanagedFileSystems: a mount command cannot be given to Azure Batch; '
                      'use azureFileShares or azureBlobFileSystems.', code='UnsupportedMountVolume')
    mounts = [_file_share(ref) for ref in volumes.get('azureFileShares') or []]
    mounts += [_blob_container(ref) for ref in volumes.get('azureBlobFileSystems') or []]
    return mounts


# ---- start task ----------------------------------------------------------------------------------------------

_VARIABLE = re.compile(r'\$(\w+)|\$\{(\w+)\}')
# Batch AI's path variables on a Batch node: the pool's mounts are under $AZ_BATCH_NODE_MOUNTS_DIR.
NODE_PATH_VARIABLES = {'AZ_BATCHAI_MOUNT_ROOT': 'AZ_BATCH_NODE_MOUNTS_DIR'}


def shell_path(text, variables=None):
    """A path holding $VARIABLES as a bash word: the literal parts quoted, each variable expanded by the shell
    (renamed through `variables`, default NODE_PATH_VARIABLES)."""
    variables = NODE_PATH_VARIABLES if variables is None else variables
    words, last = [], 0
    for match in _VARIABLE.finditer(text):
        if match.start() > last:
            words.append(shlex.quote(text[last:match.start()]))
        name = match.group(1) or match.group(2)
        words.append('"${{{}}}"'.format(variables.get(name, name)))
        last = match.end()
    if last < len(text):
        words.append(shlex.quote(text[last:]))
    return ''.join(words) or "''"


def _environment(entries):
    return [{'name': e['name'], 'value': e.get('value') or ''} for e in entries or []]


def start_task(setup_task):
    """Batch's `startTask` for a Batch AI `nodeSetup.setupTask`: its command under bash with Batch AI's
    AZ_BATCHAI_MOUNT_ROOT, its output appended to <stdOutErrPathPrefix>[/<stdOutErrPathSuffix>]/<node id>/stdout.txt
    and stderr.txt; its variables and secrets as the start task's environment (readable by whoever can read the
    pool on Batch); waitForSuccess, so a failing setup makes the node unusable and shows in `cluster show`."""
    out = shell_path(setup_task['stdOutErrPathPrefix'].rstrip('/'))
    if setup_task.get('stdOutErrPathSuffix'):
        out += shlex.quote('/' + setup_task['stdOutErrPathSuffix'].strip('/'))
    script = ('export AZ_BATCHAI_MOUNT_ROOT="$AZ_BATCH_NODE_MOUNTS_DIR"; out={}/"$AZ_BATCH_NODE_ID"; '
              'mkdir -p "$out" || exit 1; bash -c {} >>"$out/stdout.txt" 2>>"$out/stderr.txt"').format(
                  out, shlex.quote(setup_task['commandLine']))
    # Batch AI ran the setup task "in a bash subshell as a root": the pool's admin auto-user.
    task = {'commandLine': '/bin/bash -c {}'.format(shlex.quote(script)), 'waitForSuccess': True,
            'maxTaskRetryCount': 1, 'userIdentity': POOL_ADMIN}
    environment = _environment(setup_task.get('environmentVariables')) + _environment(setup_task.get('secrets'))
    if environment:
        task['environmentSettings'] = environment
    return task


# ---- the pool ------------------------------------------------------------------------------------------------

def check_cluster(cluster_props):
    """Refusal for cluster settings Batch cannot express (before any quota or image look-up)."""
    mount_configuration((cluster_props.get('nodeSetup') or {}).get('mountVolumes'))


def pool_notes(cluster_props):
    """What of a cluster has no pool field and is left out, as sentences for the user (never a refusal: jobs do
    not need it, and az batchai cluster create always sends an SSH key)."""
    users = cluster_props.get('userAccountSettings') or {}
    notes = []
    if users.get('adminUserSshPublicKey'):
        notes.append('userAccountSettings.adminUserSshPublicKey: a Batch pool user has no SSH key; to log in to a '
                     'node, add one there: az batch node user create --pool-id POOL --node-id NODE --name {} '
                     '--ssh-public-key KEY.'.format(users.get('adminUserName') or 'NAME'))
    if users.get('adminUserName') and not users.get('adminUserPassword'):
        notes.append('userAccountSettings.adminUserName {}: without adminUserPassword the pool gets no such user '
                     '(jobs run as the pool\'s admin auto-user).'.format(users['adminUserName']))
    return notes


def scale_settings(cluster_props, priority):
    """The pool's scale fields for Batch AI's scaleSettings, with nodes of `priority` (a NodePriority)."""
    scale = cluster_props.get('scaleSettings') or {}
    if scale.get('manual'):
        return {'enableAutoScale': False, 'resizeTimeout': MANUAL_RESIZE_TIMEOUT,
                priority.target_property: int(scale['manual'].get('targetNodeCount') or 0)}
    auto = scale.get('autoScale') or {}
    formula = autoscale_formula(auto.get('minimumNodeCount') or 0, auto.get('maximumNodeCount') or 0,
                                auto.get('initialNodeCount') or 0, priority.preemptible)
    return {'enableAutoScale': True, 'autoScaleFormula': formula,
            'autoScaleEvaluationInterval': EVALUATION_INTERVAL}


def max_nodes(cluster_props):
    """The most nodes the cluster can hold (the quota check's count)."""
    scale = cluster_props.get('scaleSettings') or {}
    if scale.get('manual'):
        return int(scale['manual'].get('targetNodeCount') or 0)
    return int((scale.get('autoScale') or {}).get('maximumNodeCount') or 0)


def container_pool(cluster_props, image):
    """Whether the cluster's pool runs its tasks in containers (`containerConfiguration`): only when the cluster
    names a Docker-compatible image itself. Batch then requires `containerSettings` on every task of the pool (a
    task without them fails `ContainerTaskSettingsNotFound` on its node), and refuses them on a pool without it;
    so container support is the cluster's declared choice, never a side effect of the image the default picks
    (the default GPU image, microsoft-dsvm ubuntu-hpc, is Docker-compatible: its plain jobs must run). Each job is
    then checked against it at submit (tasks.check_job)."""
    from .images import BATCHAI_DEFAULT_IMAGE  # pylint: disable=import-outside-toplevel
    ref = (cluster_props.get('virtualMachineConfiguration') or {}).get('imageReference') or {}
    named = bool(ref) and (str(ref.get('publisher') or '').lower(), str(ref.get('offer') or '').lower()) != \
        BATCHAI_DEFAULT_IMAGE
    return named and CONTAINER_CAPABILITY in [str(c).lower() for c in image.capabilities]


def pool_body(pool_id, cluster_props, account, image, multi_node, today=None, containers=False):
    """The Batch pool add JSON of a cluster.

    :param cluster_props: the cluster's create properties as received (with storage keys and the admin password).
    :param account: the Batch account's ARM properties (`poolAllocationMode`).
    :param image: images.ChosenImage for the cluster's image.
    :param multi_node: the cluster may run jobs of several nodes: inter-node communication on (fixed at creation).
        (The autoscale formula needs nothing more: a pending multi-instance task counts its instances.)
    :param today: the date priorities are judged on (low-priority's retirement); default today (UTC).
    :param containers: the pool runs its tasks in containers (container_pool): `containerConfiguration`.
    """
    check_cluster(cluster_props)
    today = today or datetime.datetime.now(datetime.timezone.utc).date()
    priority = node_priority(cluster_props.get('vmPriority'), account, today)
    vm = {'imageReference': dict(image.image_reference), 'nodeAgentSKUId': image.node_agent_sku_id}
    if containers:
        vm['containerConfiguration'] = {'type': 'dockerCompatible'}
    body = {'id': pool_id, 'vmSize': cluster_props['vmSize'], 'virtualMachineConfiguration': vm,
            'enableInterNodeCommunication': bool(multi_node), 'taskSlotsPerNode': 1,
            'taskSchedulingPolicy': {'nodeFillType': 'spread'}}
    body.update(scale_settings(cluster_props, priority))
    node_setup = cluster_props.get('nodeSetup') or {}
    mounts = mount_configuration(node_setup.get('mountVolumes'))
    if mounts:
        body['mountConfiguration'] = mounts
    if node_setup.get('setupTask'):
        body['startTask'] = start_task(node_setup['setupTask'])
    users = cluster_props.get('userAccountSettings') or {}
    if users.get('adminUserName') and users.get('adminUserPassword'):
        body['userAccounts'] = [{'name': users['adminUserName'], 'password': users['adminUserPassword'],
                                 'elevationLevel': 'admin'}]
    subnet = (cluster_props.get('subnet') or {}).get('id')
    if subnet:
        body['networkConfiguration'] = {'subnetId': subnet}
    return body
