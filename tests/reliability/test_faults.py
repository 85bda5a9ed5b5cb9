"""Submitting through injected faults: exactly the planned jobs, each once, each with its own parameters.

The fault rates are the issue's: 20% of requests answered 500/503, 10% 429 with Retry-After, 2% connections dropped
without an answer (seeded, so a failure can be replayed). `make test` submits 200 jobs; the soak target 1,000.
The core-level tests use the library the command runs (core/service/submit.py); the az-level ones the real `az`
executable.
"""
import json
import threading
import time
from contextlib import contextmanager

import pytest
from azure.core.pipeline.policies import SansIOHTTPPolicy

from azext_batchai_sweep.core.service.submit import submit_jobs

from ..fixtures_service import START_TIMEOUT
from .helpers import (assert_exactly_planned, client_for, make_plan, plan_bodies, quick_retry, service_jobs,
                      wait_until)

pytestmark = pytest.mark.service

FAULTS = '5xx=0.2,429=0.1,drop=0.02,seed={}'
# Retries for a 32% failure rate: the chance of 13 failures in a row is 0.32**13 = 4e-7 per call.
RETRIES = 12


def faulty_service(service_factory, seed, slots=2):
    svc = service_factory(name='faulty-{}'.format(seed), faults=FAULTS.format(seed), slots=slots)
    # The experiment is created by the test (with its own retries): what is measured is the jobs' submission.
    client = client_for(svc, retry_total=20)
    return svc, client


def core_submit_through_faults(service_factory, tmp_path, count, seed):
    svc, client = faulty_service(service_factory, seed)
    client.experiments.begin_create(svc.resource_group, svc.workspace, 'faults', polling=False).result()
    plan = make_plan(tmp_path, svc, 'faults', count)
    started = time.monotonic()
    result = submit_jobs(client, svc.resource_group, svc.workspace, 'faults', plan_bodies(plan), parallel=8,
                         retry=quick_retry(max_retries=RETRIES))
    elapsed = time.monotonic() - started
    assert result['failed'] == [] and result['notSubmitted'] == [] and not result['stopped'], result
    assert result['submitted'] + result['alreadyPresent'] == count
    assert_exactly_planned(client_for(svc, retry_total=20), svc, 'faults', plan)
    return {'jobs': count, 'seconds': round(elapsed, 1), 'submitted': result['submitted'],
            'alreadyPresent': result['alreadyPresent']}


@pytest.mark.slow
def test_core_submit_of_200_jobs_through_faults(service_factory, tmp_path):
    core_submit_through_faults(service_factory, tmp_path, 200, seed=11)


@pytest.mark.soak
def test_soak_core_submit_of_1000_jobs_through_faults(service_factory, tmp_path):
    figures = core_submit_through_faults(service_factory, tmp_path, 1000, seed=12)
    print('\nFIGURES core submit through faults: {}'.format(json.dumps(figures)))


class RestartGate(SansIOHTTPPolicy):
    """Holds the test client's requests while the test swaps the service for another on the same port.

    The test's outage is a service that answers 503 to everything; the swap itself (SIGKILL, then a new process
    that must start and listen) leaves a gap with nothing on the port, which under load lasts longer than the
    quick retries, so requests would run out of them on "connection refused" instead. A request sent before the
    gate closed may still lose its answer (that is one retry, handled as a lost answer); every later one waits
    until the new service is ready (start_service returns once it listens).
    """

    def __init__(self):
        self._open = threading.Event()
        self._open.set()

    @contextmanager
    def closed(self):
        self._open.clear()
        try:
            yield
        finally:
            self._open.set()

    def on_request(self, request):
        if not self._open.wait(START_TIMEOUT + 10):
            raise AssertionError('the service was not restarted within {} s'.format(START_TIMEOUT + 10))


def test_exhausted_retries_stop_in_bounded_time_and_a_later_submit_finishes(service_factory, tmp_path):
    """The service starts answering 503 to everything mid-submission: submit gives up after its retries in bounded
    time, names every job not submitted, and the same submit once the service is back creates exactly those."""
    slow = service_factory(name='svc', faults='latency-ms=100')  # ~0.1 s per request: the outage lands mid-way
    port = slow.endpoint.rsplit(':', 1)[1]
    gate = RestartGate()
    client = client_for(slow, per_retry_policies=[gate])
    client.experiments.begin_create(slow.resource_group, slow.workspace, 'outage', polling=False).result()
    plan = make_plan(tmp_path, slow, 'outage', 60)
    outcome = {}

    def submit():
        started = time.monotonic()
        outcome['result'] = submit_jobs(client, slow.resource_group, slow.workspace, 'outage', plan_bodies(plan),
                                        parallel=2, retry=quick_retry(max_retries=3))
        outcome['seconds'] = time.monotonic() - started

    thread = threading.Thread(target=submit)
    thread.start()
    wait_until(lambda: len(service_jobs(client, slow, 'outage')) >= 10, 30, what='10 jobs submitted')
    # Same port, so the running submit keeps talking to it: from now on every request gets a 503.
    with gate.closed():
        down = service_factory.restart(slow, faults='5xx=1.0', extra_args=('--port', port))
    thread.join(60)
    assert not thread.is_alive(), 'submit did not stop within 60 s of the outage'
    result = outcome['result']
    assert outcome['seconds'] < 30
    assert result['stopped'] and result['notSubmitted'], result
    assert result['failed'] and all('ServiceUnavailable' in f['error'] or 'InternalServerError' in f['error']
                                    for f in result['failed']), result['failed']

    up = service_factory.restart(down, faults=None, extra_args=('--port', port))
    on_service = {job.name for job in service_jobs(client_for(up), up, 'outage')}
    # Every job is either on the service or named as not submitted (a lost answer may be both: then it is there).
    assert set(on_service) | set(result['notSubmitted']) == {name for name, _ in plan_bodies(plan)}
    again = submit_jobs(client_for(up), up.resource_group, up.workspace, 'outage', plan_bodies(plan),
                        retry=quick_retry())
    assert again['failed'] == [] and again['submitted'] == 60 - len(on_service)
    assert_exactly_planned(client_for(up), up, 'outage', plan)
