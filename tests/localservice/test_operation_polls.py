"""Batch AI's long-running operations through the real az: `az batchai job delete` and `cluster delete` of a job that
ignores SIGTERM (the service waits its kill grace) wait by polling the operation's Azure-AsyncOperation status
resource, as az did against Batch AI (202, then InProgress with Retry-After, then Succeeded), and end once the resource
is gone; `experiment create` answers at once, as Batch AI did."""
import os
import re
import time
import uuid

import pytest

from azext_batchai_sweep.core.service.client import local_batchai_client
from tests.fixtures_az import service_az
from tests.localservice.conftest import job_params, raw, wait_state
from tests.spec_conformance import SpecCheckPolicy, validate_operation_status

pytestmark = [pytest.mark.az, pytest.mark.service]

POLLED = re.compile(r"Request URL: 'http://[^/']*(/subscriptions/[^'?]*/operationresults/[A-Za-z0-9_-]+)")


def _stubborn(client, service, experiment, name, cluster_id, directory):
    """A running job that ignores SIGTERM, once its trap is set."""
    ready = os.path.join(directory, name + '-trap-set')
    client.jobs.begin_create(service.resource_group, service.workspace, experiment, name, job_params(
        service, "trap '' TERM; touch {}; sleep 30".format(ready), cluster_id=cluster_id)).result()
    wait_state(client, service, experiment, name, ('running',))
    deadline = time.monotonic() + 30
    while not os.path.exists(ready):
        assert time.monotonic() < deadline, 'the job never set its trap'
        time.sleep(0.05)


@pytest.mark.parametrize('what', ['job', 'cluster'])
def test_az_deletes_wait_on_the_operation_status_until_the_resource_is_gone(local_service, tmp_path, what):
    service = local_service
    az = service_az(service, str(tmp_path))
    client = local_batchai_client(service.endpoint, service.token_file, service.subscription,
                                  per_retry_policies=[SpecCheckPolicy()])
    group = ['-g', service.resource_group, '-w', service.workspace]
    experiment = 'polls-' + uuid.uuid4().hex[:6]
    created = az('batchai', 'experiment', 'create', *group, '-n', experiment, '-o', 'json')
    assert created.exit_code == 0 and created.json()['provisioningState'] == 'succeeded', created.stderr
    cluster = 'polls-' + uuid.uuid4().hex[:6]
    made = az('batchai', 'cluster', 'create', '-n', cluster, *group, '-s', 'Standard_D1', '-t', '1', '-u', 'batchai',
              '-p', 'not-used-0A!', '-o', 'json')
    assert made.exit_code == 0, made.stderr
    _stubborn(client, service, experiment, 'stubborn', made.json()['id'], str(tmp_path))

    started = time.monotonic()
    if what == 'job':
        deleted = az('batchai', 'job', 'delete', *group, '-e', experiment, '-n', 'stubborn', '-y', '--debug')
    else:
        deleted = az('batchai', 'cluster', 'delete', *group, '-n', cluster, '-y', '--debug')
    took = time.monotonic() - started
    assert deleted.exit_code == 0, deleted.stderr[-3000:]
    polls = POLLED.findall(deleted.stderr)
    assert polls, deleted.stderr[-3000:]  # az followed the Azure-AsyncOperation URL the 202 named
    assert took >= 1.5  # the job's kill grace (2 s): az waited for the delete, polling
    assert "'Retry-After': '1'" in deleted.stderr
    # The same status resource, read once more: Succeeded, with its endTime, as the recorded ones.
    status, _, body = raw(service, 'GET', polls[-1])
    validate_operation_status(body)
    assert (status, body['status']) == (200, 'Succeeded') and body['endTime'] >= body['startTime']
    if what == 'job':
        shown = az('batchai', 'job', 'show', *group, '-e', experiment, '-n', 'stubborn')
    else:
        shown = az('batchai', 'cluster', 'show', *group, '-n', cluster)
    assert shown.exit_code != 0 and 'not found' in shown.stderr.lower(), shown.stderr
