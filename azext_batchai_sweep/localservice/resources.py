"""Validation of create requests and construction of the public bodies of workspaces, clusters, experiments, jobs.

Bodies follow the 2018-05-01 swagger definitions (`Workspace`, `Cluster`, `Experiment`, `Job`) exactly: what the
service stores is what GET returns, so the stored form never contains a secret value (job `secrets` keep their
names only, storage credentials lose their keys, cluster user accounts lose their password, registry credentials
theirs, Application Insights references their instrumentation key).
"""
import copy
import datetime
import re
import uuid

from ..core.spec.job_paths import prefix_problem
from .errors import bad_request

PROVIDER = 'Microsoft.BatchAI'
# The swagger's path patterns, read as JSON schema reads them (ECMA-262: \w is ASCII) and matched whole
# (fullmatch: `$` alone also matches before a trailing newline, which let 'job\n' through).
NAME_RE = re.compile(r'[-\w_]+', re.ASCII)
RESOURCE_GROUP_RE = re.compile(r'[-\w._]+', re.ASCII)
DIRECTORY_ID_RE = re.compile(r'\w+', re.ASCII)
# ARM subscription ids are GUIDs; anything else never reaches a store key or a path of the data dir.
SUBSCRIPTION_RE = re.compile(r'[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}')
PRIORITIES = {'high': 0, 'normal': 1, 'low': 2}
# A job without constraints.maxWallClockTime: Batch AI answered P150D (azure-cli's recorded
# test_batchai_job_level_mounting_scenario, 2021), not the swagger's documented one week.
DEFAULT_WALL_CLOCK = datetime.timedelta(days=150)

# Toolkit settings property -> toolType of the job. pyTorch has none: the swagger's ToolType enum lacks 'pytorch',
# so the service leaves toolType out rather than answer a value the spec does not allow.
TOOLKITS = {
    'customToolkitSettings': 'custom', 'customMpiSettings': 'mpi', 'horovodSettings': 'horovod',
    'tensorFlowSettings': 'tensorflow', 'pyTorchSettings': None, 'chainerSettings': 'chainer',
    'cntkSettings': 'cntk', 'caffeSettings': 'caffe', 'caffe2Settings': 'caffe2',
}
JOB_PROPERTIES = {
    'schedulingPriority', 'cluster', 'mountVolumes', 'nodeCount', 'containerSettings', 'jobPreparation',
    'stdOutErrPathPrefix', 'inputDirectories', 'outputDirectories', 'environmentVariables', 'secrets',
    'constraints', *TOOLKITS,
}
CLUSTER_PROPERTIES = {'vmSize', 'vmPriority', 'scaleSettings', 'virtualMachineConfiguration', 'nodeSetup',
                      'userAccountSettings', 'subnet'}
# The image Batch AI gave a cluster created without one, and the version it filled into an image given without one
# (azure-cli's recorded batchai tests of 2021: test_batchai_cluster_with_setup_command, _with_auto_storage). The
# recorded image also held `minVersion: ""`, which the 2018-05-01 swagger's ImageReference does not define.
DEFAULT_IMAGE = {'publisher': 'microsoft-dsvm', 'offer': 'amlcompute', 'sku': 'runtime-gen1-ubuntu18'}
DEFAULT_IMAGE_VERSION = 'latest'
CLUSTER_ID_RE = re.compile(r'/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.BatchAI/'
                           r'workspaces?/([^/]+)/clusters/([^/]+)/?', re.IGNORECASE)


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(moment):
    """ISO 8601 UTC with a Z suffix, the form Batch AI answers."""
    return moment.strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3] + 'Z'


def check_name(kind, name, pattern=NAME_RE, max_length=64):
    """Batch AI's name rule (the swagger's path parameter pattern); 400 InvalidResourceName otherwise."""
    if not name or len(name) > max_length or not pattern.fullmatch(name) or name in ('.', '..'):
        raise bad_request('InvalidResourceName',
                          "The {} name '{}' is invalid: use 1 to {} letters, digits, '-' or '_'.".format(
                              kind, name, max_length))


def check_subscription(sub):
    """400 InvalidSubscriptionId unless `sub` is a subscription id (a GUID), as ARM answers."""
    if not isinstance(sub, str) or not SUBSCRIPTION_RE.fullmatch(sub):
        raise bad_request('InvalidSubscriptionId',
                          "The provided subscription identifier '{}' is malformed or invalid.".format(sub))


def arm_id(sub, rg, *segments):
    return '/subscriptions/{}/resourceGroups/{}/providers/{}/{}'.format(sub, rg, PROVIDER, '/'.join(segments))


_ISO_DURATION = re.compile(r'^P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?'
                           r'(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$')
_DOTNET_DURATION = re.compile(r'^(?:(\d+)\.)?(\d+):(\d+):(\d+(?:\.\d+)?)$')


def parse_duration(text):
    """A timedelta from ISO 8601 ('P7D', 'PT1H30M', the wire form) or .NET ('7.00:00:00', the swagger's default)."""
    text = (text or '').strip()
    match = _ISO_DURATION.match(text)
    if match and text not in ('P', 'PT') and not text.endswith('T'):
        weeks, days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
        return datetime.timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds)
    match = _DOTNET_DURATION.match(text)
    if match:
        days, hours, minutes, seconds = match.groups()
        return datetime.timedelta(days=int(days or 0), hours=int(hours), minutes=int(minutes),
                                  seconds=float(seconds))
    raise bad_request('InvalidDuration', "'{}' is not a duration (ISO 8601 like 'PT1H' expected).".format(text))


def format_duration(delta):
    """ISO 8601 form of a timedelta, as msrest writes it ('P7D', 'PT1H0.5S')."""
    total = delta.total_seconds()
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    out = 'P' + ('{}D'.format(int(days)) if days else '')
    time_part = ''.join('{}{}'.format(int(v), u) for v, u in ((hours, 'H'), (minutes, 'M')) if v)
    if seconds:
        time_part += ('{:g}S'.format(seconds))
    if time_part or out == 'P':
        out += 'T' + (time_part or '0S')
    return out


def _properties(body, allowed, kind):
    """The `properties` object of a create body; 400 when absent or carrying a property Batch AI does not know."""
    if not isinstance(body, dict):
        raise bad_request('InvalidRequestContent', 'The request body must be a JSON object.')
    props = body.get('properties')
    if not isinstance(props, dict):
        raise bad_request('InvalidRequestContent', "The {} body needs a 'properties' object.".format(kind))
    unknown = sorted(set(props) - allowed)
    if unknown:
        raise bad_request('InvalidRequestContent', 'Unknown {} properties: {}.'.format(kind, ', '.join(unknown)))
    return props


def _require(condition, code, message):
    if not condition:
        raise bad_request(code, message)


# ---- workspaces and experiments ------------------------------------------------------------------------------


def workspace_body(sub, rg, name, params, now):
    """Validate a workspace create body and build the Workspace resource."""
    _require(isinstance(params, dict) and isinstance(params.get('location'), str) and params['location'],
             'InvalidRequestContent', "A workspace needs a 'location'.")
    tags = params.get('tags') or {}
    _require(isinstance(tags, dict) and all(isinstance(v, str) for v in tags.values()),
             'InvalidRequestContent', "'tags' must map names to strings.")
    stamp = iso(now)
    body = {
        'id': arm_id(sub, rg, 'workspaces', name), 'name': name, 'type': PROVIDER + '/workspaces',
        'location': params['location'],
        'properties': {'creationTime': stamp, 'provisioningState': 'succeeded',
                       'provisioningStateTransitionTime': stamp},
    }
    if tags:  # Batch AI leaves `tags` out of a workspace that has none (recorded answers)
        body['tags'] = tags
    return body


def experiment_body(sub, rg, workspace, name, now):
    stamp = iso(now)
    return {
        'id': arm_id(sub, rg, 'workspaces', workspace, 'experiments', name), 'name': name,
        'type': PROVIDER + '/workspaces/experiments',
        'properties': {'creationTime': stamp, 'provisioningState': 'succeeded',
                       'provisioningStateTransitionTime': stamp},
    }


# ---- clusters ------------------------------------------------------------------------------------------------


def _public_mount_volumes(volumes):
    """Mount volumes as Batch AI answers them: without storage account keys, with the file share modes filled in."""
    volumes = copy.deepcopy(volumes)
    for kind in ('azureFileShares', 'azureBlobFileSystems'):
        for ref in volumes.get(kind) or []:
            credentials = ref.get('credentials')
            if isinstance(credentials, dict):
                credentials.pop('accountKey', None)
            if kind == 'azureFileShares':  # the swagger's defaults, which the real service answers
                ref.setdefault('fileMode', '0777')
                ref.setdefault('directoryMode', '0777')
    return volumes


def _check_mount_volumes(volumes, where):
    if volumes is None:
        return
    _require(isinstance(volumes, dict), 'InvalidRequestContent', '{}.mountVolumes must be an object.'.format(where))
    unsupported = [k for k in ('fileServers', 'unmanagedFileSystems') if volumes.get(k)]
    _require(not unsupported, 'UnsupportedMountVolume',
             'The local service mounts Azure file shares and blob containers only, not {}.'.format(
                 ', '.join(unsupported)))
    # The fields the 2018-05-01 spec requires (credentials too: Azure answers 400 without them, so the local service
    # does, although it mounts its own storage and never needs the key).
    for kind, fields in (('azureFileShares', ('accountName', 'azureFileUrl', 'relativeMountPath')),
                         ('azureBlobFileSystems', ('accountName', 'containerName', 'relativeMountPath'))):
        for ref in volumes.get(kind) or []:
            _require(isinstance(ref, dict) and all(isinstance(ref.get(f), str) and ref.get(f) for f in fields),
                     'InvalidRequestContent', '{}.mountVolumes.{} entries need {} and credentials.'.format(
                         where, kind, ', '.join(fields)))
            credentials = ref.get('credentials')
            _require(isinstance(credentials, dict) and (credentials.get('accountKey')
                                                        or credentials.get('accountKeySecretReference')),
                     'InvalidRequestContent', '{}.mountVolumes.{} entry {}: credentials need accountKey (or '
                     'accountKeySecretReference).'.format(where, kind, ref['relativeMountPath']))
            _require(not credentials.get('accountKeySecretReference'), 'UnsupportedSecretReference',
                     'The local service cannot read KeyVault: give the storage account key as accountKey.')
            relative = ref['relativeMountPath']
            _require(not relative.startswith('/') and '..' not in relative.split('/'), 'InvalidMountPath',
                     "relativeMountPath '{}' must be a relative path inside the mount root.".format(relative))


def cluster_slots(props):
    """Number of nodes (= local job slots) of a cluster from its scale settings."""
    scale = props.get('scaleSettings') or {}
    if scale.get('manual'):
        return int(scale['manual'].get('targetNodeCount', 0))
    return int(scale['autoScale'].get('maximumNodeCount', 0))


def _check_cluster_objects(props):
    """The objects a cluster's defaults are filled into are objects (a 400, never a 500 on a list or a string)."""
    vm = props.get('virtualMachineConfiguration')
    _require(vm is None or (isinstance(vm, dict) and isinstance(vm.get('imageReference', {}), dict)),
             'InvalidRequestContent', 'virtualMachineConfiguration.imageReference must be an object.')
    node_setup = props.get('nodeSetup')
    _require(node_setup is None or (isinstance(node_setup, dict) and isinstance(node_setup.get('setupTask', {}), dict)
                                    and isinstance((node_setup.get('setupTask') or {}).get('secrets', []), list)),
             'InvalidRequestContent', 'nodeSetup.setupTask must be an object.')
    setup_task = (node_setup or {}).get('setupTask')
    if setup_task:
        _require(isinstance(setup_task.get('commandLine'), str) and isinstance(setup_task.get('stdOutErrPathPrefix'),
                                                                               str),
                 'InvalidRequestContent', 'nodeSetup.setupTask needs commandLine and stdOutErrPathPrefix.')


def cluster_body(sub, rg, workspace, name, params, now):
    """Validate a cluster create body and build the Cluster resource (allocation is immediate: nodes are slots)."""
    props = _properties(params, CLUSTER_PROPERTIES, 'cluster')
    _require(isinstance(props.get('vmSize'), str) and props['vmSize'], 'InvalidRequestContent',
             "A cluster needs a 'vmSize'.")
    account = props.get('userAccountSettings')
    _require(isinstance(account, dict) and account.get('adminUserName'), 'InvalidRequestContent',
             "A cluster needs 'userAccountSettings.adminUserName'.")
    scale = props.get('scaleSettings')
    _require(isinstance(scale, dict) and bool(scale.get('manual')) != bool(scale.get('autoScale')),
             'InvalidScaleSettings', 'Exactly one of scaleSettings.manual or scaleSettings.autoScale is required.')
    try:
        slots = cluster_slots(props)
    except (TypeError, ValueError, KeyError):
        slots = -1
    _require(slots >= 0, 'InvalidScaleSettings', 'The node counts of scaleSettings must be integers >= 0.')
    _check_mount_volumes((props.get('nodeSetup') or {}).get('mountVolumes'), 'nodeSetup')
    _check_cluster_objects(props)
    public = copy.deepcopy(props)
    public['userAccountSettings'].pop('adminUserPassword', None)
    public.setdefault('vmPriority', 'dedicated')
    # The swagger's scale defaults, which the real service answers.
    if public['scaleSettings'].get('manual'):
        public['scaleSettings']['manual'].setdefault('targetNodeCount', 0)
        public['scaleSettings']['manual'].setdefault('nodeDeallocationOption', 'requeue')
    else:
        public['scaleSettings']['autoScale'].setdefault('initialNodeCount', 0)
    if (public.get('nodeSetup') or {}).get('mountVolumes'):
        public['nodeSetup']['mountVolumes'] = _public_mount_volumes(public['nodeSetup']['mountVolumes'])
    image = public.setdefault('virtualMachineConfiguration', {}).setdefault('imageReference', dict(DEFAULT_IMAGE))
    image.setdefault('version', DEFAULT_IMAGE_VERSION)
    setup_task = (public.get('nodeSetup') or {}).get('setupTask') or {}
    for secret in setup_task.get('secrets') or []:
        secret.pop('value', None)
    insights = ((public.get('nodeSetup') or {}).get('performanceCountersSettings') or {}).get(
        'azureApplicationInsightsReference')
    if isinstance(insights, dict):  # a key Batch AI never returned
        insights.pop('instrumentationKey', None)
    if setup_task:
        # Where Batch AI put the setup task's logs under stdOutErrPathPrefix: a folder of its own per cluster.
        setup_task['stdOutErrPathSuffix'] = '/'.join([sub, rg, 'workspaces', workspace, 'clusters', name,
                                                     str(uuid.uuid4())])
    stamp = iso(now)
    public.update({'creationTime': stamp, 'provisioningState': 'succeeded',
                   'provisioningStateTransitionTime': stamp, 'allocationState': 'steady',
                   'allocationStateTransitionTime': stamp, 'currentNodeCount': slots})
    return {'id': arm_id(sub, rg, 'workspaces', workspace, 'clusters', name), 'name': name,
            'type': PROVIDER + '/workspaces/clusters', 'properties': public}


# ---- jobs ----------------------------------------------------------------------------------------------------


def parse_cluster_id(cluster_id):
    """(sub, rg, workspace, cluster) of a cluster resource id; 400 when it is not one."""
    match = CLUSTER_ID_RE.fullmatch(cluster_id or '') if isinstance(cluster_id, str) else None
    _require(match, 'InvalidClusterId', "'{}' is not a Batch AI cluster resource id.".format(cluster_id))
    sub, rg, workspace, cluster = match.groups()
    check_subscription(sub)
    check_name('resource group', rg, RESOURCE_GROUP_RE, max_length=90)
    check_name('workspace', workspace)
    check_name('cluster', cluster)
    return sub, rg, workspace, cluster


def _check_path_prefix(what, value):
    """400 for a path prefix outside the rule (core/spec/job_paths.py: the one the sweep file is checked with)."""
    problem = prefix_problem(value)
    _require(problem is None, 'InvalidPath', '{}: {}.'.format(what, problem))


def _check_directories(props, kind):
    seen = set()
    for entry in props.get(kind) or []:
        field = 'path' if kind == 'inputDirectories' else 'pathPrefix'
        _require(isinstance(entry, dict) and isinstance(entry.get('id'), str) and isinstance(entry.get(field), str),
                 'InvalidRequestContent', '{} entries need id and {}.'.format(kind, field))
        _require(DIRECTORY_ID_RE.fullmatch(entry['id']) and entry['id'].upper() not in seen, 'InvalidDirectoryId',
                 "{} id '{}' must be unique and made of letters, digits and '_'.".format(kind, entry['id']))
        if field == 'pathPrefix':
            _check_path_prefix('{} {} pathPrefix'.format(kind, entry['id']), entry[field])
        seen.add(entry['id'].upper())


def _check_variables(props):
    for kind in ('environmentVariables', 'secrets'):
        for entry in props.get(kind) or []:
            _require(isinstance(entry, dict) and isinstance(entry.get('name'), str) and entry['name'],
                     'InvalidRequestContent', '{} entries need a name.'.format(kind))
            if kind == 'secrets' and 'value' not in entry:
                raise bad_request('UnsupportedSecretReference',
                                  "Secret '{}': the local service cannot read KeyVault; give a value.".format(
                                      entry['name']))
            _require(isinstance(entry.get('value'), str), 'InvalidRequestContent',
                     "{} '{}' needs a string value.".format(kind, entry['name']))


def validate_job(params):
    """Validate a job create body; return its properties and the toolkit settings key it uses."""
    props = _properties(params, JOB_PROPERTIES, 'job')
    _require(isinstance(props.get('cluster'), dict), 'InvalidRequestContent', "A job needs 'cluster.id'.")
    parse_cluster_id(props['cluster'].get('id'))
    node_count = props.get('nodeCount')
    _require(isinstance(node_count, int) and not isinstance(node_count, bool) and node_count >= 1,
             'InvalidRequestContent', "A job needs 'nodeCount' >= 1.")
    _require(isinstance(props.get('stdOutErrPathPrefix'), str) and props['stdOutErrPathPrefix'],
             'InvalidRequestContent', "A job needs 'stdOutErrPathPrefix'.")
    _check_path_prefix('stdOutErrPathPrefix', props['stdOutErrPathPrefix'])
    toolkits = [k for k in TOOLKITS if props.get(k) is not None]
    _require(len(toolkits) == 1, 'InvalidToolkitSettings',
             'A job needs exactly one toolkit settings object, got {}.'.format(', '.join(toolkits) or 'none'))
    toolkit = toolkits[0]
    settings = props[toolkit]
    _require(isinstance(settings, dict), 'InvalidRequestContent', '{} must be an object.'.format(toolkit))
    if toolkit in ('customMpiSettings',):
        _require(isinstance(settings.get('commandLine'), str), 'InvalidRequestContent',
                 'customMpiSettings needs a commandLine.')
    elif toolkit == 'customToolkitSettings':
        _require(isinstance(settings.get('commandLine', ''), str), 'InvalidRequestContent',
                 'customToolkitSettings.commandLine must be a string.')
    elif toolkit == 'cntkSettings' and settings.get('languageType', 'Python').lower() == 'brainscript':
        _require(isinstance(settings.get('configFilePath'), str), 'InvalidRequestContent',
                 'A BrainScript cntkSettings needs configFilePath.')
    elif toolkit == 'caffeSettings' and not settings.get('pythonScriptFilePath'):
        _require(isinstance(settings.get('configFilePath'), str), 'InvalidRequestContent',
                 'caffeSettings needs pythonScriptFilePath or configFilePath.')
    else:
        _require(isinstance(settings.get('pythonScriptFilePath'), str), 'InvalidRequestContent',
                 '{} needs pythonScriptFilePath.'.format(toolkit))
    _require(props.get('schedulingPriority', 'normal') in PRIORITIES, 'InvalidRequestContent',
             'schedulingPriority must be one of high, normal, low.')
    _check_mount_volumes(props.get('mountVolumes'), 'job')
    _check_directories(props, 'inputDirectories')
    _check_directories(props, 'outputDirectories')
    _check_variables(props)
    if props.get('jobPreparation') is not None:
        _require(isinstance(props['jobPreparation'].get('commandLine'), str), 'InvalidRequestContent',
                 'jobPreparation needs a commandLine.')
    wall_clock = (props.get('constraints') or {}).get('maxWallClockTime')
    if wall_clock is not None:
        _require(parse_duration(wall_clock).total_seconds() > 0, 'InvalidDuration',
                 'maxWallClockTime must be positive.')
    return props, toolkit


def job_wall_clock(props):
    """The job's maxWallClockTime as a timedelta (default: DEFAULT_WALL_CLOCK, the 150 days Batch AI answered)."""
    text = (props.get('constraints') or {}).get('maxWallClockTime')
    return parse_duration(text) if text else DEFAULT_WALL_CLOCK


def job_body(sub, rg, workspace, experiment, name, props, toolkit, now):
    """Build the public Job resource of a validated create request (queued)."""
    public = copy.deepcopy(props)
    public['secrets'] = [{k: v for k, v in s.items() if k != 'value'} for s in props.get('secrets') or []]
    if not public['secrets']:
        del public['secrets']
    if public.get('mountVolumes'):
        public['mountVolumes'] = _public_mount_volumes(public['mountVolumes'])
    credentials = ((public.get('containerSettings') or {}).get('imageSourceRegistry') or {}).get('credentials')
    if isinstance(credentials, dict):  # a password Batch AI never returned (passwordSecretReference stays)
        credentials.pop('password', None)
    public.setdefault('schedulingPriority', 'normal')
    public['constraints'] = {'maxWallClockTime': format_duration(job_wall_clock(props))}
    if TOOLKITS[toolkit]:
        public['toolType'] = TOOLKITS[toolkit]
    stamp = iso(now)
    segment = '/'.join([sub, rg, 'workspaces', workspace, 'experiments', experiment, 'jobs', name,
                        str(uuid.uuid4())])
    public.update({'jobOutputDirectoryPathSegment': segment, 'creationTime': stamp,
                   'provisioningState': 'succeeded', 'provisioningStateTransitionTime': stamp,
                   'executionState': 'queued', 'executionStateTransitionTime': stamp})
    return {'id': arm_id(sub, rg, 'workspaces', workspace, 'experiments', experiment, 'jobs', name), 'name': name,
            'type': PROVIDER + '/workspaces/experiments/jobs', 'properties': public}
