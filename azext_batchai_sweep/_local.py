# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""`az batchai sweep local start|status|stop`: the local service in the background, and az config pointed at it."""
import os

from knack.log import get_logger

from ._targeting import SECTION, clear_local_target, default_data_dir, local_target, set_local_target

logger = get_logger(__name__)

# What `local start` and `local status` report of the service's service.json.
_FIELDS = ('endpoint', 'filesEndpoint', 'dataDir', 'pid', 'tokenFile', 'subscriptionId', 'resourceGroup',
           'workspace', 'cluster')


def _report(info):
    return {key: info.get(key) for key in _FIELDS}


def start(cli_ctx, data_dir=None, port=0, slots=None, faults=None):
    from azure.cli.core.azclierror import UnclassifiedUserFault
    from .localservice import control
    data_dir = os.path.abspath(data_dir or default_data_dir(cli_ctx))
    try:
        info = control.start_background(data_dir, port=port or 0, slots=slots or os.cpu_count() or 1, faults=faults)
    except RuntimeError as ex:
        raise UnclassifiedUserFault('The local Batch AI service did not start: {}'.format(ex),
                                    recommendation='Check --port and --faults, and the log named above.') from None
    set_local_target(cli_ctx, info['endpoint'], info['tokenFile'])
    logger.warning('Local Batch AI service at %s (data in %s); every "az batchai sweep" command now uses it '
                   'until "az batchai sweep local stop". Workspace %s, cluster %s, resource group %s.',
                   info['endpoint'], data_dir, info['workspace'], info['cluster'], info['resourceGroup'])
    return _report(info)


def targeted_data_dir(cli_ctx):
    """The data dir of the service az config targets (its token file lies inside it), or None."""
    target = local_target(cli_ctx)
    if not target or not target[1]:
        return None
    directory = os.path.dirname(os.path.abspath(target[1]))
    while True:
        if os.path.isfile(os.path.join(directory, 'service.json')):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def status(cli_ctx, data_dir=None):
    from .localservice import control
    # Without --data-dir: the service the commands use (az config), else the default data dir.
    data_dir = os.path.abspath(data_dir or targeted_data_dir(cli_ctx) or default_data_dir(cli_ctx))
    info = control.status(data_dir)
    target = local_target(cli_ctx)
    result = {'running': info['running'], **_report(info)}
    result['dataDir'] = data_dir
    # Whether the commands are pointed at this service (az config batchai_sweep.endpoint).
    result['targeted'] = bool(target and info['running'] and target[0] == info.get('endpoint'))
    return result


def stop(cli_ctx, data_dir=None):
    from .localservice import control
    data_dir = os.path.abspath(data_dir or targeted_data_dir(cli_ctx) or default_data_dir(cli_ctx))
    before = control.status(data_dir)
    stopped = control.stop(data_dir)
    target = local_target(cli_ctx)
    # Only forget the target when it is this service: another data dir's service may still be the one in use.
    if target and (target[0] == before.get('endpoint') or _inside(target[1], data_dir)):
        clear_local_target(cli_ctx)
        logger.warning('Cleared az config %s: the commands use your Azure login again.', SECTION)
    if not stopped:
        logger.warning('No local Batch AI service was running on %s', data_dir)
    return {'stopped': stopped, 'dataDir': data_dir}


def _inside(path, directory):
    if not path:
        return False
    path, directory = os.path.abspath(path), os.path.abspath(directory)
    return os.path.commonpath([path, directory]) == directory
