"""The store's contract with the service, rule by rule, on a real SQLite file: what insert, update, delete, the list
pages and the scheduler's queries return, read back on a connection of the store's own or a fresh one.

Each rule is one the API layer or a scheduler relies on without checking: an insert of an existing name must not
overwrite it (a PUT of an existing job is a conflict, not a silent replace), a list page must keep creation order
and its continuation point, the queue must hand out the highest priority first and skip the clusters told.
"""
import json
import sqlite3

import pytest

from azext_batchai_sweep.localservice.data.store import Store, resource_key

WS = resource_key('sub', 'rg', 'ws')
EXP = resource_key('sub', 'rg', 'ws', 'experiments', 'e')


@pytest.fixture(name='store')
def _store(tmp_path):
    store = Store(str(tmp_path / 'service.db'))
    yield store
    store.close()


def _job(store, name, cluster='c', state='queued', priority=1, parent=EXP, **columns):
    key = parent + '/jobs/' + name
    assert store.insert(key, 'job', parent, {'name': name}, spec={'secret': name}, cluster=cluster, state=state,
                        priority=priority, node_count=columns.pop('node_count', 1), **columns)
    return key


def test_insert_of_an_existing_key_is_refused_and_changes_nothing(store):
    key = resource_key('sub', 'rg', 'ws', 'clusters', 'c1')
    assert store.insert(key, 'cluster', WS, {'name': 'c1', 'v': 1}) is True
    assert store.insert(key, 'cluster', WS, {'name': 'c1', 'v': 2}, spec={'x': 1}) is False
    row = store.get(key)
    assert json.loads(row['body']) == {'name': 'c1', 'v': 1}
    assert row['spec'] is None and row['kind'] == 'cluster' and row['parent'] == WS


def test_insert_keeps_the_body_compact_and_the_spec_and_job_columns(store):
    key = _job(store, 'j', cluster='cl', state='queued', priority=2, node_count=3, marker='m1')
    row = store.get(key)
    assert row['body'] == '{"name":"j"}'  # a list page is a join of stored bodies: no spaces to strip
    assert json.loads(row['spec']) == {'secret': 'j'}
    assert (row['cluster'], row['state'], row['priority'], row['node_count'], row['marker'], row['pgid'],
            row['sched_id']) == ('cl', 'queued', 2, 3, 'm1', None, None)


def test_get_of_a_missing_key_is_none(store):
    assert store.get(EXP + '/jobs/none') is None


def test_update_applies_the_change_and_the_columns_and_returns_the_new_body(store):
    key = _job(store, 'j')

    def finish(body):
        body['executionState'] = 'succeeded'

    assert store.update(key, finish, state='succeeded', pgid=77) == {'name': 'j', 'executionState': 'succeeded'}
    row = store.get(key)
    assert json.loads(row['body']) == {'name': 'j', 'executionState': 'succeeded'}
    assert row['body'] == '{"name":"j","executionState":"succeeded"}'
    assert (row['state'], row['pgid'], row['priority'], row['cluster']) == ('succeeded', 77, 1, 'c')


def test_update_without_a_change_sets_the_columns_only(store):
    key = _job(store, 'j')
    other = _job(store, 'k')
    assert store.update(key, sched_id='41') == {'name': 'j'}
    assert store.get(key)['sched_id'] == '41' and store.get(key)['state'] == 'queued'
    assert store.get(other)['sched_id'] is None  # one row only


def test_update_of_a_missing_key_is_none_and_calls_nothing(store):
    def fail(_):
        raise AssertionError('mutate called for a missing resource')

    assert store.update(EXP + '/jobs/none', fail, state='running') is None


def test_delete_says_whether_the_resource_existed(store):
    key = _job(store, 'j')
    other = _job(store, 'k')
    assert store.delete(key) is True
    assert store.get(key) is None and store.get(other) is not None
    assert store.delete(key) is False


def test_page_lists_one_kind_under_one_parent_in_creation_order_from_a_point(store):
    other = resource_key('sub', 'rg', 'ws', 'experiments', 'f')
    for name in ('b', 'a', 'c'):
        _job(store, name)
    _job(store, 'x', parent=other)
    store.insert(EXP + '/other', 'experiment', EXP, {'name': 'not a job'})
    first = store.page('job', EXP, 0, 2)
    assert [body for _, body in first] == ['{"name":"b"}', '{"name":"a"}']
    rest = store.page('job', EXP, first[-1][0], 2)
    assert [body for _, body in rest] == ['{"name":"c"}']
    assert store.page('job', EXP, rest[-1][0], 2) == []
    assert [json.loads(body)['name'] for _, body in store.page('job', other, 0, 10)] == ['x']


def test_page_by_prefix_starts_after_the_point_and_stops_at_the_limit(store):
    for name in ('w1', 'w2', 'w3'):
        store.insert(resource_key('sub1', 'rg', name), 'workspace', resource_key('sub1', 'rg'), {'name': name})
    first = store.page_by_prefix('workspace', 'sub1/', 0, 2)
    assert [body for _, body in first] == ['{"name":"w1"}', '{"name":"w2"}']
    assert [body for _, body in store.page_by_prefix('workspace', 'sub1/', first[-1][0], 2)] == ['{"name":"w3"}']
    assert store.page_by_prefix('cluster', 'sub1/', 0, 10) == []


def test_all_by_prefix_gives_key_parent_and_body_of_one_kind_under_a_prefix(store):
    a = _job(store, 'a')
    _job(store, 'b', parent=resource_key('sub2', 'rg', 'ws', 'experiments', 'e'))
    store.insert(EXP + '/x', 'other', EXP, {})
    assert store.all_by_prefix('job', 'sub/') == [(a, EXP, '{"name":"a"}')]


def test_scheduler_ids_are_those_of_the_experiments_jobs_with_an_id(store):
    _job(store, 'a', sched_id='11')
    _job(store, 'b')
    _job(store, 'c', parent=resource_key('sub', 'rg', 'ws', 'experiments', 'f'), sched_id='12')
    store.insert(EXP + '/notajob', 'other', EXP, {}, sched_id='13')
    assert store.scheduler_ids(EXP) == {'a': '11'}


def test_next_queued_is_the_highest_priority_then_the_oldest_of_the_cluster(store):
    _job(store, 'low', priority=2)
    _job(store, 'first', priority=1, node_count=4)
    _job(store, 'second', priority=1)
    _job(store, 'running', priority=0, state='running')
    _job(store, 'elsewhere', priority=0, cluster='d')
    row = store.next_queued('c')
    assert row['key'].endswith('/first') and row['node_count'] == 4
    store.update(row['key'], state='running')
    assert store.next_queued('c')['key'].endswith('/second')
    assert store.next_queued('none') is None


def test_unsubmitted_skips_the_clusters_told_and_stops_at_the_limit(store):
    _job(store, 'a', cluster='c1', priority=1)
    _job(store, 'b', cluster='c2', priority=0)
    _job(store, 'c', cluster='c3', priority=1)
    _job(store, 'd', cluster='c1', priority=1, sched_id='5')
    _job(store, 'e', cluster='c1', state='running')

    def names(rows):
        return [row['key'].rsplit('/', 1)[-1] for row in rows]

    assert names(store.unsubmitted(10)) == ['b', 'a', 'c']
    assert names(store.unsubmitted(2)) == ['b', 'a']
    assert names(store.unsubmitted(10, skip_clusters={'c2'})) == ['a', 'c']
    assert names(store.unsubmitted(10, skip_clusters=['c2', 'c1'])) == ['c']
    assert dict(store.unsubmitted(1)[0]) == {'key': EXP + '/jobs/b', 'node_count': 1, 'cluster': 'c2'}


def test_in_states_of_one_kind_or_of_any(store):
    a = _job(store, 'a', state='running', pgid=3, marker='m', sched_id='9')
    _job(store, 'b', state='queued')
    _job(store, 'c', state='succeeded')
    cluster = resource_key('sub', 'rg', 'ws', 'clusters', 'c')
    store.insert(cluster, 'cluster', WS, {}, state='running')
    rows = store.in_states(('running',))
    assert [dict(r) for r in rows] == [{'key': a, 'state': 'running', 'pgid': 3, 'marker': 'm', 'cluster': 'c',
                                        'sched_id': '9'}]
    assert sorted(r['key'] for r in store.in_states(('running', 'queued'), kind=None)) == sorted(
        [a, EXP + '/jobs/b', cluster])


def test_what_a_store_wrote_is_there_for_the_next_one(tmp_path):
    """A service restart opens the same file: the rows, their order and the queue are as they were."""
    path = str(tmp_path / 'service.db')
    store = Store(path)
    _job(store, 'a', priority=1)
    _job(store, 'b', priority=0)
    store.close()
    again = Store(path)
    assert again.next_queued('c')['key'].endswith('/b')
    assert [body for _, body in again.page('job', EXP, 0, 10)] == ['{"name":"a"}', '{"name":"b"}']
    with sqlite3.connect(path) as db:
        assert db.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'
    again.close()


def test_a_failed_delete_tree_rolls_back_and_the_store_stays_usable(store, monkeypatch):
    """A full disk fails the delete: nothing is deleted, and the next statement does not meet an open transaction."""
    key = _job(store, 'a')
    conn = store._conn  # pylint: disable=protected-access

    class Failing:
        """The real connection, whose DELETE fails as on a full disk."""

        def __getattr__(self, name):
            return getattr(conn, name)

        def execute(self, sql, *args):
            if sql.startswith('DELETE'):
                conn.execute('DELETE FROM resources WHERE key = ?', (key,))  # part done, then the disk is full
                raise sqlite3.OperationalError('database or disk is full')
            return conn.execute(sql, *args)

    monkeypatch.setattr(store, '_conn', Failing())
    with pytest.raises(sqlite3.OperationalError):
        store.delete_tree(EXP)
    monkeypatch.setattr(store, '_conn', conn)
    assert not conn.in_transaction
    assert store.get(key) is not None
    store.delete_tree(EXP)
    assert store.get(key) is None


def test_one_store_serves_every_thread_of_the_service(store):
    """The HTTP layer's threads and the scheduler's share one store: a row written on one thread is read on
    another (a connection bound to its creating thread would raise ProgrammingError there)."""
    import threading
    seen, failed = [], []

    def worker(name):
        try:
            _job(store, name)
            seen.append(store.get(EXP + '/jobs/' + name)['key'])
        except Exception as exc:  # pylint: disable=broad-except
            failed.append(exc)

    threads = [threading.Thread(target=worker, args=('t{}'.format(i),)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failed and sorted(seen) == [EXP + '/jobs/t{}'.format(i) for i in range(4)]


def test_the_schedulers_question_after_every_create_is_answered_from_its_index(store):
    """Slurm's scheduler asks for the jobs still to hand over after every create, under the store lock: SQLite
    answers from the partial index of queued jobs without a scheduler id, not by scanning every job."""
    _job(store, 'a')
    conn = store._conn  # pylint: disable=protected-access
    asked = []
    conn.set_trace_callback(asked.append)  # the statement as SQLite ran it, its values bound
    try:
        assert len(store.unsubmitted(10)) == 1
    finally:
        conn.set_trace_callback(None)
    (query,) = asked
    plan = ' '.join(row[-1] for row in conn.execute('EXPLAIN QUERY PLAN ' + query))
    assert 'resources_unsubmitted' in plan.lower(), plan  # SQLite names are not case-sensitive
