"""A resource's subtree is its key and the keys below it, '/' included: experiment 'tree' is no prefix of 'tree2'.

Without the '/' boundary, deleting experiment 'tree' would silently delete 'tree2' and its jobs, mark them deleting
(never scheduled again) or kill their running processes; a list by subscription 'sub1' would show 'sub10's
workspaces. Checked on the store itself, then on a running service through the real SDK client.
"""
import contextlib
import sqlite3

import pytest
from azure.core.exceptions import ResourceNotFoundError

from azext_batchai_sweep.localservice.data.store import Store, resource_key

from tests.localservice.conftest import job_params, job_pids, process_alive, wait_state


def _experiment(store, name, jobs):
    """An experiment row and its queued jobs; returns the experiment's key."""
    workspace = resource_key('sub', 'rg', 'ws')
    key = resource_key('sub', 'rg', 'ws', 'experiments', name)
    store.insert(key, 'experiment', workspace, {'name': name})
    for job in jobs:
        store.insert(key + '/jobs/' + job, 'job', key, {'name': job}, spec={}, cluster='c', state='queued',
                     priority=1, node_count=1)
    return key


def _keys(path):
    """What the database holds, as 'experiment' and 'experiment/job' (read on a connection of its own)."""
    below = resource_key('sub', 'rg', 'ws', 'experiments') + '/'
    with contextlib.closing(sqlite3.connect(path)) as db:
        return sorted(key[len(below):].replace('/jobs/', '/') for (key,) in db.execute('SELECT key FROM resources'))


def test_delete_tree_takes_the_resource_and_what_is_below_it_only(tmp_path):
    path = str(tmp_path / 'service.db')
    store = Store(path)
    tree = _experiment(store, 'tree', ['a', 'b'])
    _experiment(store, 'tree2', ['c'])
    _experiment(store, 'tre', ['d'])
    store.delete_tree(tree)
    assert _keys(path) == ['tre', 'tre/d', 'tree2', 'tree2/c']
    store.delete_tree(resource_key('sub', 'rg', 'ws', 'experiments', 'tre'))
    assert _keys(path) == ['tree2', 'tree2/c']


def test_set_state_below_marks_the_subtree_only(tmp_path):
    store = Store(str(tmp_path / 'service.db'))
    tree = _experiment(store, 'tree', ['a'])
    _experiment(store, 'tree2', ['c'])
    store.set_state_below(tree, 'deleting')
    states = {r['key'].rsplit('/', 1)[-1]: r['state'] for r in store.in_states(('queued', 'deleting'), kind=None)}
    assert states == {'tree': 'deleting', 'a': 'deleting', 'c': 'queued'}
    # the queue still has tree2's job, and only it
    assert store.next_queued('c')['key'].endswith('/tree2/jobs/c')


def test_page_by_prefix_lists_one_subscription(tmp_path):
    store = Store(str(tmp_path / 'service.db'))
    for sub, name in (('sub1', 'w1'), ('sub10', 'w10'), ('sub1', 'w2')):
        store.insert(resource_key(sub, 'rg', name), 'workspace', resource_key(sub, 'rg'), {'name': name})
    listed = [body for _, body in store.page_by_prefix('workspace', 'sub1/', 0, 10)]
    assert listed == ['{"name":"w1"}', '{"name":"w2"}']
    assert [body for _, body in store.page_by_prefix('workspace', 'sub1/', 0, 1)] == ['{"name":"w1"}']


def test_deleting_an_experiment_leaves_the_one_whose_name_it_begins(client, local_service, tmp_path):
    """Experiment 'tree' deleted while a job of 'tree2' runs: 'tree2', its job and the job's process stay."""
    rg, ws = local_service.resource_group, local_service.workspace
    for name in ('tree', 'tree2'):
        client.experiments.begin_create(rg, ws, name).result()
    client.jobs.begin_create(rg, ws, 'tree', 'done', job_params(local_service, 'true')).result()
    wait_state(client, local_service, 'tree', 'done')
    pid_file = tmp_path / 'pid'
    client.jobs.begin_create(rg, ws, 'tree2', 'long', job_params(
        local_service, 'echo $$ > {}; exec sleep 60'.format(pid_file))).result()
    (pid,) = job_pids(pid_file)
    client.experiments.begin_delete(rg, ws, 'tree').result()
    try:
        with pytest.raises(ResourceNotFoundError):
            client.experiments.get(rg, ws, 'tree')
        with pytest.raises(ResourceNotFoundError):
            client.jobs.get(rg, ws, 'tree', 'done')
        assert client.experiments.get(rg, ws, 'tree2').name == 'tree2'
        assert client.jobs.get(rg, ws, 'tree2', 'long').execution_state == 'running'
        assert process_alive(pid)
        assert [j.name for j in client.jobs.list_by_experiment(rg, ws, 'tree2')] == ['long']
    finally:
        client.experiments.begin_delete(rg, ws, 'tree2').result()

