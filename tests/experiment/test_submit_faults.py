"""submit_jobs under failures, against a scripted HTTP server (tests/experiment/fake_arm.py) through the real SDK.

A mock on purpose: these exact sequences (a 429 with Retry-After for one given job, a response lost after the job
was created, a 400 on one job) cannot be produced on demand by the local service; the random fault injection of
the local service is exercised in test_submit_service.py.
"""
import pytest

from azext_batchai_sweep.core.service.retry import RetrySettings
from azext_batchai_sweep.core.service.submit import submit_jobs

from .fake_arm import FakeArm

RG, WS, EXP = 'rg', 'ws', 'exp'
BODY = {'properties': {'nodeCount': 1, 'stdOutErrPathPrefix': '/tmp', 'cluster': {'id': '/c'},
                       'customToolkitSettings': {'commandLine': 'true'},
                       'secrets': [{'name': 'TOKEN', 'value': 'SUPER-SECRET-VALUE'}]}}


@pytest.fixture
def fake():
    server = FakeArm()
    yield server
    server.close()


def plan(count):
    return [('job-{:02d}'.format(i), BODY) for i in range(count)]


def quick(**kwargs):
    """Backoff small enough for tests; Retry-After is still honoured as sent."""
    return RetrySettings(base_delay=0.01, max_delay=0.05, **kwargs)


def test_retry_after_is_honoured_and_sdk_retries_are_off(fake):
    fake.script = {'job-03': ['retry-after:1', '503']}
    progress = []
    result = submit_jobs(fake.client(), RG, WS, EXP, plan(6), parallel=4, retry=quick(),
                         progress=lambda done, total: progress.append((done, total)))
    assert result['submitted'] == 6 and result['failed'] == [] and result['notSubmitted'] == []
    puts = fake.calls('PUT', 'job-03')
    assert len(puts) == 3  # 429, 503, created: our retries only, none added by azure-core's policy
    assert puts[1][2] - puts[0][2] >= 0.95  # waited the Retry-After second, not the 10 ms backoff
    assert progress[-1] == (6, 6) and len(progress) == 6
    assert len(fake.calls('GET')) == 1  # the one listing; no GET per job


def test_rerun_skips_existing_jobs_and_a_lost_response_is_not_a_failure(fake):
    client = fake.client()
    first = submit_jobs(client, RG, WS, EXP, plan(3), retry=quick())
    assert first['submitted'] == 3
    # job-04's PUT creates the job but the answer is lost: the retry gets 409, a GET finds the job: submitted.
    fake.script = {'job-04': ['drop']}
    second = submit_jobs(client, RG, WS, EXP, plan(5), retry=quick())
    assert (second['alreadyPresent'], second['submitted'], second['failed']) == (3, 2, [])
    assert sorted(fake.jobs) == ['job-{:02d}'.format(i) for i in range(5)]
    assert [r[0] for r in fake.requests if r[1] == 'job-00'] == ['PUT']  # only in the first run


def test_bad_request_fails_that_job_only_with_the_arm_message(fake):
    fake.script = {'job-01': ['400']}
    result = submit_jobs(fake.client(), RG, WS, EXP, plan(4), retry=quick())
    assert result['submitted'] == 3
    assert result['failed'] == [{'job': 'job-01', 'error': 'BadRequest: scripted 400'}]
    assert result['notSubmitted'] == ['job-01'] and not result['stopped']
    assert len(fake.calls('PUT', 'job-01')) == 1  # not retried


def test_exhausted_retries_stop_the_submission_and_list_what_is_missing(fake, caplog):
    fake.script = {'job-00': ['503'] * 10}
    result = submit_jobs(fake.client(), RG, WS, EXP, plan(20), parallel=1, retry=quick(max_retries=2))
    assert len(fake.calls('PUT', 'job-00')) == 3
    assert result['stopped'] and result['failed'][0]['job'] == 'job-00'
    assert result['submitted'] + len(result['notSubmitted']) == 20
    assert len(result['notSubmitted']) >= 17  # stopped right away, not after trying every job
    assert sorted(list(fake.jobs) + result['notSubmitted']) == [name for name, _ in plan(20)]
    # A re-run once the service is healthy finishes the sweep.
    again = submit_jobs(fake.client(), RG, WS, EXP, plan(20), retry=quick())
    assert again['submitted'] == len(result['notSubmitted']) and len(fake.jobs) == 20
    assert 'SUPER-SECRET-VALUE' not in caplog.text


def test_should_stop_leaves_the_rest_for_a_rerun(fake):
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 3

    result = submit_jobs(fake.client(), RG, WS, EXP, plan(10), parallel=1, retry=quick(), should_stop=stop)
    assert result['stopped'] and result['submitted'] + len(result['notSubmitted']) == 10
    assert sorted(list(fake.jobs) + result['notSubmitted']) == [name for name, _ in plan(10)]


def test_a_job_being_deleted_is_submitted_again_once_gone(fake):
    # `delete --no-wait` then `submit`: the listing still shows the job, provisioningState 'deleting'. It is not
    # "already present" (it is about to vanish): submit waits for the name to be free (409, retried) and creates it.
    import threading
    submit_jobs(fake.client(), RG, WS, EXP, plan(2), retry=quick())
    with fake.lock:
        fake.jobs['job-00']['properties']['provisioningState'] = 'deleting'
    timer = threading.Timer(0.3, lambda: fake.jobs.pop('job-00', None))
    timer.start()
    try:
        result = submit_jobs(fake.client(), RG, WS, EXP, plan(2), retry=quick(max_retries=40))
    finally:
        timer.cancel()
    assert (result['submitted'], result['alreadyPresent'], result['failed']) == (1, 1, [])
    assert fake.jobs['job-00']['properties']['provisioningState'] == 'succeeded'
