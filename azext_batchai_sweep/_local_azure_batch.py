# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""What `local start|status|stop` say of an Azure Batch service's pools, and of Cloud Shell (issue 31 rule 3).

The pools still holding nodes are listed whether the service runs or not: a running service answers them (its
Batch AI API, and the next autoscale evaluation from its record); a service that is not running (Cloud Shell ended
the session, or it was killed) left its last reading of the pools in the data dir (azurebatch/pool_watch.py), shown
with the time it was read. That record is chosen over asking Batch from az here: it needs no account look-up or
token, works offline, and names the clusters; what it cannot know (a pool that drained since) is said with it.
"""
import os

from knack.log import get_logger

logger = get_logger(__name__)

# How az itself knows it runs in Cloud Shell (azure.cli.core._environment.in_cloud_console: ACC_CLOUD; Cloud Shell
# also sets AZUREPS_HOST_ENVIRONMENT=cloud-shell/...).
_CLOUD_SHELL_VARIABLES = ('ACC_CLOUD', 'AZUREPS_HOST_ENVIRONMENT')


def in_cloud_shell():
    return bool(os.environ.get('ACC_CLOUD')) or \
        os.environ.get('AZUREPS_HOST_ENVIRONMENT', '').lower().startswith('cloud-shell')


def ephemeral_cloud_shell(home=None):
    """Cloud Shell without a storage account (an ephemeral session): nothing of it outlives the session, its home
    included. A session with storage mounts its file share as ~/clouddrive (Microsoft's "Persist files in Azure
    Cloud Shell": the share is mounted as clouddrive in $HOME, and $HOME is kept in an image on that share); an
    ephemeral one has none."""
    home = home or os.path.expanduser('~')
    return not os.path.isdir(os.path.join(home, 'clouddrive'))


def cloud_shell_notes(data_dir, pool_prefix=None):
    """What `local start` of an Azure Batch service says in Cloud Shell: the service stops with the session, the
    pools drain by themselves, whether the data dir survives the session (a session with storage keeps $HOME only;
    an ephemeral one keeps nothing), and the commands that clean up at Batch when it does not."""
    notes = ['Cloud Shell ends this service with the session (after 20 idle minutes): the Batch tasks run on and '
             'the pools drain to zero nodes by themselves (their autoscale formula deallocates after the tasks '
             'complete); "az batchai sweep local start" again re-attaches to the tasks and collects what finished.']
    home = os.path.realpath(os.path.expanduser('~'))
    real = os.path.realpath(data_dir)
    pools = '{}-'.format(pool_prefix or 'batchai')
    cleanup = ('Before it ends, collect what you need and delete your clusters (their Batch pools and jobs go '
               'too): az batchai cluster delete -n CLUSTER -g batchai-local -w local -y. Once it is gone, list what '
               'stays on the Batch account with: az batch pool list --query "[?starts_with(id, \'{pools}\')].id" '
               '-o tsv; and delete each: az batch pool delete --pool-id POOL; az batch job delete --job-id JOB (the '
               'same ids).').format(pools=pools)
    if ephemeral_cloud_shell():
        notes.append('This Cloud Shell session has no storage account (an ephemeral session: no ~/clouddrive), so '
                     'nothing of it outlives the session, your home and the data dir {} included: the jobs\' '
                     'records, logs and outputs go with it, while the Batch pools, jobs and tasks stay (and bill) '
                     'on the account, and a new session cannot re-attach to them. {} For a data dir that outlives '
                     'the session, use Cloud Shell with a storage account.'.format(data_dir, cleanup))
    elif os.path.commonpath([home, real]) == home:
        notes.append('Its data dir {} is under your persisted home: it outlives the session.'.format(data_dir))
    else:
        notes.append('Its data dir {} is outside your home ({}), which is all Cloud Shell keeps: jobs, logs and '
                     'outputs there are lost with the session. Give --data-dir under {}. {}'.format(
                         data_dir, home, home, cleanup))
    return notes


def _last_pools(data_dir):
    from .localservice.schedulers.azurebatch.pool_watch import read_last_pools
    return read_last_pools(data_dir)


def merge_next_evaluation(pools, data_dir):
    """Add each pool's next autoscale evaluation (as the running service last read it) to the rows of its API."""
    record = _last_pools(data_dir) or {}
    known = {(p.get('resourceGroup', '').lower(), p.get('workspace', '').lower(), p.get('cluster', '').lower()): p
             for p in record.get('pools') or []}
    for row in pools:
        last = known.get((row['resourceGroup'].lower(), row['workspace'].lower(), row['cluster'].lower())) or {}
        if last.get('nextEvaluation'):
            row['nextEvaluation'] = last['nextEvaluation']
    return pools


def pools_when_stopped(data_dir):
    """(rows, readAt) of the pools an Azure Batch service on the data dir last read, or (None, None) when none
    ever ran there."""
    record = _last_pools(data_dir)
    if record is None:
        return None, None
    rows = [{key: p.get(key) for key in ('cluster', 'workspace', 'resourceGroup', 'pool', 'nodes', 'allocationState')}
            for p in record['pools']]
    return rows, record.get('readAt')


def warn_stale(pools, read_at):
    """Say, when the service is not running, that the pools listed are its last reading."""
    holding = [p for p in pools if p.get('nodes')]
    if holding:
        logger.warning('The service is not running: as it last read them (%s), Batch pools still held nodes: %s. '
                       'An autoscale pool drains by itself; "az batch pool list --query "[].{id:id, '
                       'nodes:currentDedicatedNodes}"" shows them now, "az batch pool delete --pool-id POOL" ends '
                       'one.', read_at, ', '.join('{} ({} node{})'.format(p['pool'] or p['cluster'], p['nodes'],
                                                                          '' if p['nodes'] == 1 else 's')
                                                  for p in holding))
