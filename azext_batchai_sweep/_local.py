# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""`az batchai sweep local start|status|stop`: the local service in the background, and az config pointed at it."""
import os

from knack.log import get_logger

from ._local_storage import local_data_dir
from ._targeting import SECTION, clear_local_target, default_data_dir, local_target, set_local_target

logger = get_logger(__name__)

# What `local start` and `local status` report of the service's service.json.
_FIELDS = ('endpoint', 'filesEndpoint', 'blobEndpoint', 'dataDir', 'pid', 'tokenFile', 'subscriptionId',
           'resourceGroup', 'workspace', 'cluster', 'scheduler')
# Shown only when the service has them: the Slurm cluster and partition, the GPUs of the processes scheduler, the
# Batch account of the Azure Batch scheduler.
_OPTIONAL_FIELDS = ('slurmCluster', 'slurmConf', 'partition', 'account', 'gpus', 'batchAccount',
                    'batchResourceGroup', 'batchEndpoint', 'poolAllocationMode', 'poolPrefix')


def _report(info):
    report = {key: info.get(key) for key in _FIELDS}
    report.update({key: info[key] for key in _OPTIONAL_FIELDS if info.get(key) is not None})
    return report


def _check_slurm(slurm_conf, partition, account):
    """Refuse before starting anything when Slurm cannot take jobs from here (the service checks again)."""
    from azure.cli.core.azclierror import ValidationError
    from .localservice.schedulers.slurm.commands import SlurmCli, SlurmError
    try:
        return SlurmCli(slurm_conf, partition, account).check()
    except SlurmError as ex:
        raise ValidationError('Cannot schedule on Slurm: {}'.format(ex), recommendation=(
            'Run "local start --scheduler slurm" on a machine that can submit to the cluster (sbatch and squeue '
            'work there); --slurm-conf names its slurm.conf, --partition a partition of it.')) from None


def _running_target(cli_ctx):
    """(endpoint, data dir) of the local service this config targets when it still runs there, else None."""
    from .localservice import control
    target, target_dir = local_target(cli_ctx), local_data_dir(cli_ctx)
    if not target or not target_dir:
        return None
    info = control.status(target_dir)
    return (target[0], target_dir) if info['running'] and info.get('endpoint') == target[0] else None


def _refuse_retarget(cli_ctx, data_dir):
    """Another running service is this config's target: pointing the config at a new one would silently send its
    users' next commands (another pipeline's, sharing this AZURE_CONFIG_DIR) to the wrong service."""
    from azure.cli.core.azclierror import ValidationError
    running = _running_target(cli_ctx)
    if running and running[1] != data_dir:
        raise ValidationError(
            'This az config ({}) already targets the local service at {} (data dir {}), which still runs: starting '
            'one on {} would send its users\' commands to the new service'.format(
                cli_ctx.config.config_dir, running[0], running[1], data_dir),
            recommendation='Give this pipeline its own az config: export AZURE_CONFIG_DIR="$(mktemp -d)" before '
                           '"az batchai sweep local start" (its service and data go with it); or add --retarget to '
                           'point this config at the new service anyway.')


def _batch_pools(info):
    """[{cluster, workspace, resourceGroup, nodes, allocationState}] of the Batch pools (the clusters) of a running
    Azure Batch service, read through its own API (GET clusters: the node counts its scheduler last listed)."""
    from .core.service.client import local_batchai_client
    client = local_batchai_client(info['endpoint'], info['tokenFile'], subscription_id=info['subscriptionId'],
                                  retry_total=2)
    pools = []
    for workspace in client.workspaces.list():
        group = workspace.id.split('/')[4]
        for cluster in client.clusters.list_by_workspace(group, workspace.name):
            pools.append({'cluster': cluster.name, 'workspace': workspace.name, 'resourceGroup': group,
                          'nodes': cluster.current_node_count or 0, 'allocationState': cluster.allocation_state})
    return pools


def _holding_nodes(pools):
    return ', '.join('{} ({} node{})'.format(p['cluster'], p['nodes'], '' if p['nodes'] == 1 else 's')
                     for p in pools if p['nodes'])


def start(cli_ctx, data_dir=None, port=0, slots=None, faults=None, scheduler='processes', gpus=None,
          partition=None, account=None, slurm_conf=None, retarget=False, batch_account=None,
          batch_resource_group=None, pool_prefix=None):
    from azure.cli.core.azclierror import ValidationError
    from ._exit_codes import NoServiceError
    from .localservice import control
    from .localservice.data.datadir import DataDirError
    from .localservice.ports import PortInUseError
    data_dir = os.path.abspath(data_dir or default_data_dir(cli_ctx))
    if not retarget:
        _refuse_retarget(cli_ctx, data_dir)
    already_running = control.status(data_dir)['running']
    if already_running:
        logger.warning('A local Batch AI service already runs on %s: this start shares it, and a "local stop" stops '
                       'it for everyone using it.', data_dir)
    if scheduler == 'slurm':
        from .localservice.schedulers.slurm.commands import resolve_conf
        # --slurm-conf, else this shell's SLURM_CONF: checked here, handed to the service, used for every command.
        slurm_conf = resolve_conf(slurm_conf)
        if not already_running:
            _check_slurm(slurm_conf, partition, account)
        options = {'scheduler': 'slurm', 'slurm_conf': slurm_conf, 'partition': partition, 'account': account}
        slots = None
    elif scheduler == 'azure-batch':
        # The service finds the account and checks az's login against it before it serves (its error is quoted).
        options = {'scheduler': 'azure-batch', 'batch_account': batch_account,
                   'resource_group': batch_resource_group, 'pool_prefix': pool_prefix}
        slots = None
    else:
        options = {'gpus': gpus}
        slots = slots or os.cpu_count() or 1
    try:
        info = control.start_background(data_dir, port=port or 0, slots=slots, faults=faults, scheduler=options)
    except DataDirError as ex:  # the folder given is the problem (bad input), not the service
        raise ValidationError('The local Batch AI service did not start: {}'.format(ex)) from None
    except PortInUseError as ex:
        raise ValidationError('The local Batch AI service did not start: {}'.format(ex), recommendation=(
            'Give "--port 0" (a free port, the default) or another port; nothing was written to {}.'.format(
                data_dir))) from None
    except RuntimeError as ex:
        raise NoServiceError('The local Batch AI service did not start: {}'.format(ex),
                                    recommendation='Check --port and --faults, and the log named above.') from None
    set_local_target(cli_ctx, info['endpoint'], info['tokenFile'])
    logger.warning('Local Batch AI service at %s (data in %s); every "az batchai sweep" command, and az\'s own '
                   '"az batchai" commands, now use it until "az batchai sweep local stop". Workspace %s, cluster %s, '
                   'resource group %s.',
                   info['endpoint'], data_dir, info['workspace'], info['cluster'], info['resourceGroup'])
    if info.get('scheduler') == 'slurm':
        logger.warning('Jobs run on Slurm cluster %s, partition %s (%s).', info.get('slurmCluster'),
                       info.get('partition'), info.get('slurmConf') or "Slurm's default configuration")
    elif info.get('scheduler') == 'azure-batch':
        logger.warning('Jobs run as Azure Batch tasks of account %s (%s, pool allocation mode %s): each cluster you '
                       'create ("az batchai cluster create ... -w %s") is a Batch pool named '
                       '%s-<workspace>-<cluster>-<hash>, and its nodes cost money until it scales to zero or is '
                       'deleted.', info.get('batchAccount'),
                       info.get('batchEndpoint'), info.get('poolAllocationMode'), info['workspace'],
                       info.get('poolPrefix'))
        from ._local_azure_batch import cloud_shell_notes, in_cloud_shell
        if in_cloud_shell():
            for note in cloud_shell_notes(data_dir, info.get('poolPrefix')):
                logger.warning('%s', note)
    elif (info.get('scheduler') or 'processes') != scheduler:
        logger.warning('The service already running on %s uses the %s scheduler: stop it first to change it.',
                       data_dir, info.get('scheduler') or 'processes')
    _storage_hint(cli_ctx, data_dir, info)
    return _report(info)


def status(cli_ctx, data_dir=None):
    from .localservice import control
    # Without --data-dir: the service the commands use (az config), else the default data dir.
    data_dir = os.path.abspath(data_dir or local_data_dir(cli_ctx) or default_data_dir(cli_ctx))
    info = control.status(data_dir)
    target = local_target(cli_ctx)
    result = {'running': info['running'], **_report(info)}
    result['dataDir'] = data_dir
    # Whether the commands are pointed at this service (az config batchai_sweep.endpoint).
    result['targeted'] = bool(target and info['running'] and target[0] == info.get('endpoint'))
    if info['running']:
        _storage_hint(cli_ctx, data_dir, info)
        if info.get('scheduler') == 'azure-batch':
            from ._local_azure_batch import merge_next_evaluation
            result['pools'] = merge_next_evaluation(_batch_pools(info), data_dir)
    else:
        _add_last_pools(result, data_dir)
    return result


def _add_last_pools(result, data_dir):
    """A service not running: the pools an Azure Batch service on the data dir last read (they may hold nodes)."""
    from ._local_azure_batch import pools_when_stopped, warn_stale
    pools, read_at = pools_when_stopped(data_dir)
    if pools is not None:
        result['pools'], result['poolsReadAt'] = pools, read_at
        warn_stale(pools, read_at)


def stop(cli_ctx, data_dir=None):
    from .localservice import control
    data_dir = os.path.abspath(data_dir or local_data_dir(cli_ctx) or default_data_dir(cli_ctx))
    before = control.status(data_dir)
    pools = None
    if before['running'] and before.get('scheduler') == 'azure-batch':
        pools = _batch_pools(before)
    stopped = control.stop(data_dir)
    target = local_target(cli_ctx)
    # Only forget the target when it is this data dir's service and none runs for it any more (this stop stopped it,
    # or it was gone already): a target whose service still runs is someone's, whatever was stopped here.
    if target and (target[0] == before.get('endpoint') or local_data_dir(cli_ctx) == data_dir) \
            and _running_target(cli_ctx) is None:
        clear_local_target(cli_ctx)
        logger.warning('Cleared az config %s: the commands use your Azure login again.', SECTION)
    if not stopped:
        logger.warning('No local Batch AI service was running on %s', data_dir)
    result = {'stopped': stopped, 'dataDir': data_dir}
    if not before['running']:
        _add_last_pools(result, data_dir)
    if pools is not None:
        result['pools'] = pools
        holding = _holding_nodes(pools)
        if holding:
            # The pools outlive the service: their nodes cost money until the autoscale formula (or a delete) ends them.
            logger.warning('Batch pools still holding nodes, which cost money until they scale to zero or are '
                           'deleted: %s. Delete a cluster with "az batchai cluster delete" while the service runs, '
                           'or its pool with "az batch pool delete".', holding)
    return result


# ---- az's storage commands on the local Files and Blob endpoints -----------------------------------------------

def _storage_hint(cli_ctx, data_dir, info):
    """The exact line that points az's storage commands at this service (the key itself is only shown on request,
    by show-connection-string: start and status output are printed and logged more freely)."""
    import shlex
    option = '' if data_dir == os.path.abspath(default_data_dir(cli_ctx)) else ' --data-dir ' + shlex.quote(data_dir)
    logger.warning('az storage commands (share create, file upload, container create, blob upload) use the local '
                   'Files endpoint %s and Blob endpoint %s after: export AZURE_STORAGE_CONNECTION_STRING="$(az '
                   'batchai sweep local show-connection-string -n <storage account name>%s --query connectionString '
                   '-o tsv)"', info.get('filesEndpoint'),
                   info.get('blobEndpoint'), option)


def show_connection_string(cli_ctx, account_name, data_dir=None):
    """{'connectionString': ...} for az's storage commands and the storage SDKs: the local Files and Blob endpoints
    of `account_name` and its key.

    Queue and table endpoints name the Files endpoint, so that a queue or table command run with this string is
    refused on this machine rather than sent, signed with the local key, to the Azure account of the same name.
    """
    from azure.cli.core.azclierror import AzureConnectionError
    from .localservice import control
    from ._local_storage import local_storage_key
    data_dir = os.path.abspath(data_dir or local_data_dir(cli_ctx) or default_data_dir(cli_ctx))
    info = control.status(data_dir)
    if not info['running'] or not info.get('filesEndpoint'):
        raise AzureConnectionError('No local Batch AI service runs on {}'.format(data_dir),
                                   recommendation='Start it with "az batchai sweep local start" (with --data-dir '
                                                  'if it is not the default).')
    endpoint = '{}/{}'.format(info['filesEndpoint'].rstrip('/'), account_name)
    # A service started before the Blob endpoint existed has none: its blob commands are refused locally too.
    blob = '{}/{}'.format(info['blobEndpoint'].rstrip('/'), account_name) if info.get('blobEndpoint') else endpoint
    parts = [('DefaultEndpointsProtocol', 'http'), ('AccountName', account_name),
             ('AccountKey', local_storage_key(data_dir)), ('FileEndpoint', endpoint), ('BlobEndpoint', blob),
             ('QueueEndpoint', endpoint), ('TableEndpoint', endpoint)]
    return {'connectionString': ';'.join('{}={}'.format(name, value) for name, value in parts)}
