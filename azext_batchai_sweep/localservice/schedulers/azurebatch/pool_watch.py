"""What a user waiting on Azure Batch is told, and what outlives the service (issue 31 rule 3).

- `waiting_note(pool, nodes)`: instead of a bare "queued", why a job waits: for an autoscale pool "waiting for the
  pool (next evaluation about HH:MM UTC)" (Batch evaluates a formula every 5 minutes at the least), for a pool that
  cannot grow its error (the job fails with it after the service's bounded wait), else "waiting for a node".
- The pools as last read, written to the data dir (`LAST_POOLS`, at every read of the pools): `local status` and
  `local stop` list the pools still holding nodes from it when the service is not running (Cloud Shell ended the
  session, or the service was killed). It is what the service last saw, with the time it saw it: an autoscale pool
  may have drained since (its formula deallocates without the service), which `az batch pool list` shows.
"""
import datetime
import json
import os

from . import states

LAST_POOLS = 'azure-batch-pools.json'


def _utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def next_evaluation_text(pool, now=None):
    """'HH:MM UTC' of the pool's next autoscale evaluation (never in the past: an evaluation Batch runs late, or the
    first one of a pool not evaluated yet, is 'due now'), or None for a pool without autoscale."""
    now = now or _utc_now()
    due = states.next_evaluation(pool, now)
    if due is None:
        return None
    if due <= now:
        return 'due now'
    return 'about {}'.format(due.astimezone(datetime.timezone.utc).strftime('%H:%M UTC'))


def waiting_note(pool, nodes=(), now=None, needed=1):
    """Why a job of `needed` nodes queued on the pool waits, as one phrase for the user."""
    if pool is None:
        return 'waiting for its pool to be read'
    problem = states.cannot_grow(pool, nodes, needed)
    if problem is not None:
        return 'waiting for a pool that cannot grow ({}); the job fails with it after a bounded wait'.format(
            problem['code'])
    evaluation = next_evaluation_text(pool, now)
    if evaluation is not None:
        return 'waiting for the pool (next evaluation {})'.format(evaluation)
    return 'waiting for a node of the pool'


def pool_row(cluster_key, pool, now=None):
    """A pools row of `local status`: cluster, workspace, resourceGroup, pool, nodes, allocationState and, for an
    autoscale pool, nextEvaluation."""
    parts = cluster_key.split('/')
    row = {'cluster': parts[4], 'workspace': parts[2], 'resourceGroup': parts[1], 'pool': pool.get('id'),
           'nodes': int(pool.get('currentDedicatedNodes') or 0) + int(pool.get('currentLowPriorityNodes') or 0),
           'allocationState': pool.get('allocationState')}
    evaluation = next_evaluation_text(pool, now)
    if evaluation is not None:
        row['nextEvaluation'] = evaluation
    return row


def write_last_pools(data_dir, rows, now=None):
    """Record the pools as just read (rows of pool_row), replacing the previous record atomically."""
    path = os.path.join(data_dir, LAST_POOLS)
    record = {'readAt': (now or _utc_now()).strftime('%Y-%m-%dT%H:%M:%SZ'), 'pools': rows}
    with open(path + '.tmp', 'w', encoding='utf-8') as f:
        json.dump(record, f, sort_keys=True)
    os.replace(path + '.tmp', path)


def read_last_pools(data_dir):
    """{'readAt', 'pools'} as last recorded in the data dir, or None (no Azure Batch service ever ran there)."""
    try:
        with open(os.path.join(data_dir, LAST_POOLS), encoding='utf-8') as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get('pools'), list) else None
