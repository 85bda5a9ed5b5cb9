"""What the extension sends conforms to the Batch AI 2018-05-01 swagger in tests/specs (as the service's answers
are checked in tests/localservice): the request check itself, its wiring, and the job bodies planned from the
shipped examples, which are exactly what `submit` PUTs."""
import json
import os

import pytest

from azext_batchai_sweep._submission import fill_mount_credentials
from azext_batchai_sweep.core.spec.plan import resolve_secret_references
from azext_batchai_sweep.core.service.submit import submit_jobs
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file
from tests.fixtures_az import REPO_ROOT
from tests.spec_conformance import SpecCheckPolicy, request_definition, validate

JOB_PATH = ('/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.BatchAI/'
            'workspaces/ws/experiments/exp/jobs/job-1')
CLUSTER_ID = ('/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.BatchAI/'
              'workspaces/ws/clusters/local')


def test_request_definitions_come_from_the_swagger():
    assert request_definition('PUT', JOB_PATH) == 'JobCreateParameters'
    assert request_definition('GET', JOB_PATH) is None
    assert request_definition('POST', JOB_PATH + '/listOutputFiles') is None  # its options travel in the query


def test_a_misspelt_or_mistyped_job_body_is_rejected():
    good = {'properties': {'cluster': {'id': CLUSTER_ID}, 'nodeCount': 1, 'stdOutErrPathPrefix': '/tmp',
                           'customToolkitSettings': {'commandLine': 'true'}}}
    validate('JobCreateParameters', good)
    misspelt = json.loads(json.dumps(good))
    misspelt['properties']['nodeCnt'] = misspelt['properties'].pop('nodeCount')
    with pytest.raises(AssertionError, match='nodeCnt'):
        validate('JobCreateParameters', misspelt)
    mistyped = json.loads(json.dumps(good))
    mistyped['properties']['nodeCount'] = '1'
    with pytest.raises(AssertionError, match='nodeCount'):
        validate('JobCreateParameters', mistyped)


@pytest.mark.parametrize('example', ['examples/sweep.yaml', 'examples/demo/sweep.yaml'])
def test_the_job_bodies_submit_sends_for_the_examples_conform(example):
    # A planned body holds no secret; submit resolves its references and gives each mount the account key.
    definition = load_sweep_file(os.path.join(REPO_ROOT, example), storage_account_name='acct',
                                 cluster_id=CLUSTER_ID)
    jobs = definition.jobs(sweep_name='conformance')
    assert len(jobs) == 9
    for job in jobs:
        planned = json.loads(job.body_json())
        with pytest.raises(AssertionError, match="'credentials' is a required property"):
            validate('JobCreateParameters', planned)
        body = resolve_secret_references(planned)
        assert fill_mount_credentials(body, 'a-storage-key') == 2
        validate('JobCreateParameters', body)


def test_the_session_client_checks_what_submit_sends(batchai_client, local_service):
    policy = next(p for p in batchai_client._client._pipeline._impl_policies  # pylint: disable=protected-access
                  if isinstance(getattr(p, '_policy', p), SpecCheckPolicy))
    policy = getattr(policy, '_policy', policy)
    before = policy.requests_checked
    batchai_client.experiments.begin_create(local_service.resource_group, local_service.workspace,
                                            'conformance').result()
    body = {'properties': {'cluster': {'id': local_service.cluster_id}, 'nodeCount': 1,
                           'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
                           'customToolkitSettings': {'commandLine': 'true'}}}
    result = submit_jobs(batchai_client, local_service.resource_group, local_service.workspace, 'conformance',
                         [('conformance-1', body)])
    assert result['submitted'] == 1
    assert policy.requests_checked > before
