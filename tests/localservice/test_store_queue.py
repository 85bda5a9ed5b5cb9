"""Store.clusters_with_queue: the scheduler's per-wake question, answered from the queue index."""
from azext_batchai_sweep.localservice.store import Store, resource_key


def _cluster(store, name):
    key = resource_key('sub', 'rg', 'ws', 'clusters', name)
    store.insert(key, 'cluster', resource_key('sub', 'rg', 'ws'), {'name': name})
    return key


def _job(store, name, cluster, state):
    key = resource_key('sub', 'rg', 'ws', 'experiments', 'e', 'jobs', name)
    store.insert(key, 'job', resource_key('sub', 'rg', 'ws', 'experiments', 'e'), {'name': name}, spec={},
                 cluster=cluster, state=state, priority=1, node_count=1)
    return key


def test_only_clusters_with_queued_jobs(tmp_path):
    store = Store(str(tmp_path / 'service.db'))
    busy, idle, empty = (_cluster(store, name) for name in ('busy', 'idle', 'empty'))
    _job(store, 'a', busy, 'queued')
    _job(store, 'b', busy, 'queued')
    _job(store, 'c', idle, 'running')
    _job(store, 'd', idle, 'succeeded')
    assert store.clusters_with_queue() == [busy]
    store.update(_job(store, 'e', empty, 'queued'), state='running')
    assert store.clusters_with_queue() == [busy]


def test_queued_jobs_of_a_missing_cluster_are_not_scheduled(tmp_path):
    store = Store(str(tmp_path / 'service.db'))
    _job(store, 'orphan', resource_key('sub', 'rg', 'ws', 'clusters', 'gone'), 'queued')
    assert store.clusters_with_queue() == []

