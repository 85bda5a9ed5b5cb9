"""The Azure Batch scheduler's poll at scale (issue 44, item 3), against the lifecycle double (TEST CODE: it answers
as the real service's recordings do, tests/azurebatch/double/): a task list is read as the REST JSON it is, never
through the SDK's models (0.3 ms of CPU per task: over 3 s for a poll of 10,000 tasks), page after page by
odata.nextLink with the same query, and gives exactly what the SDK's own list gives. Counted, not timed; the figures
are bench/scale.py --batch's (docs/benchmarks.md)."""
import pytest

from tests.azurebatch.test_client import _api, _pool_and_job, _task




@pytest.mark.parametrize('tasks', [30, 1100])  # Batch's pages hold 1,000 tasks
def test_a_poll_reads_the_task_list_as_json_page_by_page(double, monkeypatch, tasks):  # pylint: disable=W0621
    import azure.batch._model_base as models
    from azext_batchai_sweep.localservice.schedulers.azurebatch.client import POLL_SELECT
    api = _api(double, [])
    _pool_and_job(api)
    assert set(api.add_tasks('j', [_task('t{:04d}'.format(i)) for i in range(tasks)]).values()) == {None}
    since = '2000-01-01T00:00:00.000Z'
    page = 1000
    expected = [t.as_dict() for t in api.client.list_tasks(
        'j', select=POLL_SELECT, filter="stateTransitionTime ge datetime'{}'".format(since))]
    made = []
    real = models._deserialize  # pylint: disable=protected-access
    monkeypatch.setattr(models, '_deserialize', lambda *a, **k: made.append(a) or real(*a, **k))
    before = double.count('GET', '^/jobs/j/tasks')
    listed = api.list_tasks('j', since=since)
    assert not made  # no SDK model made, none turned back into JSON
    assert listed == expected and len(listed) == tasks
    assert double.count('GET', '^/jobs/j/tasks') - before == -(-tasks // page)  # one request per page, no more
    pages = [r for r in double.requests if r.method == 'GET' and r.path == '/jobs/j/tasks'][-(-(-tasks // page)):]
    assert all("stateTransitionTime ge datetime'{}'".format(since) == r.query.get('$filter') and
               r.query.get('$select') == ','.join(POLL_SELECT) for r in pages)  # the next pages keep the query


def test_a_missing_job_lists_no_task(double):  # pylint: disable=redefined-outer-name
    api = _api(double, [])
    _pool_and_job(api)
    assert api.list_tasks('no-such-job') == []  # JobNotFound, read from the answer's JSON as the SDK's error


def test_the_task_list_request_holds_to_the_batch_spec(batch_prism):
    """The request is the SDK's own (its generated builder): Prism validates it and the answer against the spec (the
    fixture fails the test on any violation), the next-page requests included."""
    api = _api(batch_prism, [])
    _pool_and_job(api)
    assert set(api.add_tasks('j', [_task('t{}'.format(i)) for i in range(3)]).values()) == {None}
    listed = api.list_tasks('j', since='2000-01-01T00:00:00.000Z')
    assert sorted(t['id'] for t in listed) == ['t0', 't1', 't2'] and all(t['state'] == 'active' for t in listed)
