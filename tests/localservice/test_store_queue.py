"""Store.clusters_with_queue: the scheduler's per-wake question, answered from the queue index."""
from azext_batchai_sweep.localservice.data.store import Store, resource_key


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



def test_a_data_dir_of_0_1_1_gains_the_scheduler_id_column(tmp_path):
    """0.1.1's table had no sched_id (the Slurm job id): opening it adds the column; unsubmitted jobs come in
    Batch AI order (priority, then creation) and leave the list once they have an id."""
    import sqlite3
    from azext_batchai_sweep.localservice.data.store import Store as _Store
    path = str(tmp_path / 'old.db')
    old = sqlite3.connect(path)
    old.executescript('CREATE TABLE resources (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, '
                      'kind TEXT NOT NULL, parent TEXT NOT NULL, body TEXT NOT NULL, spec TEXT, cluster TEXT, '
                      'state TEXT, priority INTEGER, node_count INTEGER, pgid INTEGER, marker TEXT);')
    old.execute("INSERT INTO resources (key, kind, parent, body, state, priority, node_count) VALUES "
                "('low', 'job', 'e', '{}', 'queued', 2, 1)")
    old.commit()
    old.close()
    store = _Store(path)
    store.insert('high', 'job', 'e', {}, cluster='c', state='queued', priority=0, node_count=1)
    store.insert('normal', 'job', 'e', {}, cluster='c', state='queued', priority=1, node_count=1)
    assert [r['key'] for r in store.unsubmitted(10)] == ['high', 'normal', 'low']
    store.update('high', sched_id='42')
    assert [r['key'] for r in store.unsubmitted(10)] == ['normal', 'low']
    assert store.get('high')['sched_id'] == '42'
