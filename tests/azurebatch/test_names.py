"""names.py: Batch ids are valid, deterministic, distinct where the Batch AI names differ, shared where only case
differs."""
import re

from hypothesis import given, settings, strategies as st

from azext_batchai_sweep.localservice.azurebatch import names

BATCH_ID = re.compile(r'[A-Za-z0-9_-]{1,64}')
name = st.text(st.characters(codec='utf-8', exclude_categories=('Cs',)), min_size=1, max_size=100)


@settings(max_examples=200, deadline=None)
@given(name, name, name)
def test_ids_are_valid_and_deterministic(prefix, workspace, cluster):
    for make in (names.pool_id, names.batch_job_id):
        made = make(prefix, workspace, cluster)
        assert BATCH_ID.fullmatch(made)
        assert made == make(prefix, workspace, cluster)
    task = names.task_id('/'.join([prefix, workspace, cluster]), 'uid-1')
    assert BATCH_ID.fullmatch(task) and task == names.task_id('/'.join([prefix, workspace, cluster]), 'uid-1')


@settings(max_examples=200, deadline=None)
@given(st.tuples(name, name, name), st.tuples(name, name, name))
def test_different_clusters_never_share_a_pool(a, b):
    if [s.lower() for s in a] != [s.lower() for s in b]:
        assert names.pool_id(*a).lower() != names.pool_id(*b).lower()


def test_names_the_readable_part_would_merge_get_distinct_ids():
    assert names.pool_id('bai', 'a-b', 'c') != names.pool_id('bai', 'a', 'b-c')
    long = 'x' * 80
    assert names.pool_id('bai', 'ws', long + '1') != names.pool_id('bai', 'ws', long + '2')
    assert names.pool_id('bai', 'ws', 'nc6').startswith('bai-ws-nc6-')


def test_names_differing_in_case_are_one_resource_as_in_arm_and_batch():
    assert names.pool_id('bai', 'WS', 'NC6').lower() == names.pool_id('bai', 'ws', 'nc6').lower()


def test_a_job_created_again_under_its_name_is_a_new_task_and_pool_and_job_ids_differ():
    key = 'sub/rg/ws/exp/job-1'
    assert names.task_id(key, 'uid-1') != names.task_id(key, 'uid-2')
    assert names.task_id(key, 'uid-1').startswith('job-1-')
    assert names.pool_id('bai', 'ws', 'c') != names.batch_job_id('bai', 'ws', 'c')
