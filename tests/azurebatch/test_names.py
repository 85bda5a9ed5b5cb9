"""names.py: Batch ids are valid, deterministic, distinct where the Batch AI names differ, shared where only case
differs."""
import re

from hypothesis import given, settings, strategies as st

from azext_batchai_sweep.localservice.schedulers.azurebatch import names

BATCH_ID = re.compile(r'[A-Za-z0-9_-]{1,64}')
name = st.text(st.characters(codec='utf-8', exclude_categories=('Cs',)), min_size=1, max_size=100)
SUB = '00000000-0000-0000-0000-000000000000'


def pool(prefix, workspace, cluster, subscription=SUB, resource_group='batchai-local'):
    return names.pool_id(prefix, workspace, cluster, subscription, resource_group)


@settings(max_examples=200, deadline=None)
@given(name, name, name)
def test_ids_are_valid_and_deterministic(prefix, workspace, cluster):
    for make in (names.pool_id, names.batch_job_id):
        made = make(prefix, workspace, cluster, SUB, 'rg')
        assert BATCH_ID.fullmatch(made)
        assert made == make(prefix, workspace, cluster, SUB, 'rg')
    task = names.task_id('/'.join([prefix, workspace, cluster]), 'uid-1')
    assert BATCH_ID.fullmatch(task) and task == names.task_id('/'.join([prefix, workspace, cluster]), 'uid-1')


@settings(max_examples=200, deadline=None)
@given(st.tuples(name, name, name, name, name), st.tuples(name, name, name, name, name))
def test_different_clusters_never_share_a_pool(a, b):
    """A cluster is its whole ARM path: prefix, workspace, name, subscription and resource group."""
    if [s.lower() for s in a] != [s.lower() for s in b]:
        assert names.pool_id(*a).lower() != names.pool_id(*b).lower()
        assert names.batch_job_id(*a).lower() != names.batch_job_id(*b).lower()


def test_the_same_cluster_names_in_two_resource_groups_or_subscriptions_are_two_pools_and_jobs():
    """Two services (two CI pipelines) with the default --pool-prefix and workspace, in their own resource groups
    or subscriptions: the hash tells them apart where the readable part cannot."""
    other_sub = '11111111-1111-1111-1111-111111111111'
    for make in (names.pool_id, names.batch_job_id):
        ids = {make('batchai', 'local', 'gpu', SUB, 'ci-a'), make('batchai', 'local', 'gpu', SUB, 'ci-b'),
               make('batchai', 'local', 'gpu', other_sub, 'ci-a')}
        assert len(ids) == 3 and all(i.startswith('batchai-local-gpu-') for i in ids)


def test_names_the_readable_part_would_merge_get_distinct_ids():
    assert pool('bai', 'a-b', 'c') != pool('bai', 'a', 'b-c')
    long = 'x' * 80
    assert pool('bai', 'ws', long + '1') != pool('bai', 'ws', long + '2')
    assert pool('bai', 'ws', 'nc6').startswith('bai-ws-nc6-')


def test_names_differing_in_case_are_one_resource_as_in_arm_and_batch():
    assert pool('bai', 'WS', 'NC6', SUB, 'RG').lower() == pool('bai', 'ws', 'nc6', SUB, 'rg').lower()


def test_a_job_created_again_under_its_name_is_a_new_task_and_pool_and_job_ids_differ():
    key = 'sub/rg/ws/exp/job-1'
    assert names.task_id(key, 'uid-1') != names.task_id(key, 'uid-2')
    assert names.task_id(key, 'uid-1').startswith('job-1-')
    assert pool('bai', 'ws', 'c') != names.batch_job_id('bai', 'ws', 'c', SUB, 'batchai-local')
