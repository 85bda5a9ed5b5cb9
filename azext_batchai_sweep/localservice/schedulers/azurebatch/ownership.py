"""Which service made a Batch pool or job: recorded in its `metadata`, so that a service never adopts or deletes what
another one made.

Pool and job ids are deterministic (names.py), so two services on one Batch account with the same --pool-prefix
and cluster names (two CI pipelines, two data dirs, a Cloud Shell session that lost its data dir) compute the same
ids. Each service has an owner id, made once per data dir (OWNER_FILE) and written into the `metadata` of every
pool and Batch job it creates (with the cluster's ARM id, for whoever reads `az batch pool show`). A pool or job
found under one of our ids whose owner is another (or none: not made by this extension's service) is never
adopted (cluster create is refused, naming it), never counted as a cluster's nodes, and never deleted.
"""
import os
import uuid

OWNER_FILE = 'azure-batch-owner'
OWNER_KEY = 'batchai-sweep-owner'
CLUSTER_KEY = 'batchai-sweep-cluster'


def service_owner(data_dir):
    """The owner id of the service of `data_dir`: read from OWNER_FILE, made (a random UUID) when there is none."""
    path = os.path.join(data_dir, OWNER_FILE)
    try:
        with open(path, encoding='ascii') as f:
            text = f.read().strip()
        if text:
            return text
    except OSError:
        pass
    owner = str(uuid.uuid4())
    with open(path + '.tmp', 'w', encoding='ascii') as f:
        f.write(owner + '\n')
    os.replace(path + '.tmp', path)
    return owner


def metadata(owner, cluster_id):
    """The `metadata` of a pool or Batch job the service creates for a cluster (its ARM id)."""
    return [{'name': OWNER_KEY, 'value': owner}, {'name': CLUSTER_KEY, 'value': cluster_id}]


def owner_of(resource):
    """The owner id in a pool's or job's JSON (its `metadata`), or None."""
    for item in (resource or {}).get('metadata') or []:
        if item.get('name') == OWNER_KEY:
            return item.get('value')
    return None


def foreign(resource, owner):
    """A short description of who made `resource` when not the service of `owner`, else None."""
    theirs = owner_of(resource)
    if theirs == owner:
        return None
    if theirs is None:
        return 'not made by an azext-batchai-sweep service (no {} metadata)'.format(OWNER_KEY)
    cluster = next((i.get('value') for i in resource.get('metadata') or [] if i.get('name') == CLUSTER_KEY), None)
    return 'made by another azext-batchai-sweep service (owner {}{})'.format(
        theirs, ', for cluster {}'.format(cluster) if cluster else '')
