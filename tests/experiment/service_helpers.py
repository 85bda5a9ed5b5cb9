"""Sweeps of tiny shell jobs on the local Batch AI service, for the experiment tests."""
import json
import uuid

import pytest

from azext_batchai_sweep.core.service.retry import RetrySettings
from azext_batchai_sweep.core.service.status import wait_for_jobs

SWEEP_PREFIX = 'exp-test'


def quick_retry(**kwargs):
    """Short backoff for tests; the service's Retry-After is still honoured."""
    return RetrySettings(**{'base_delay': 0.02, 'max_delay': 0.2, **kwargs})


def job_body(service, sweep, x, command, extra_env=None):
    """A generated-looking job: PARAM_X, BATCHAI_SWEEP_NAME and BATCHAI_SWEEP_PARAMS, like core/spec/sweep.py makes."""
    env = [{'name': 'PARAM_X', 'value': str(x)}, {'name': 'BATCHAI_SWEEP_NAME', 'value': sweep},
           {'name': 'BATCHAI_SWEEP_PARAMS', 'value': json.dumps({'X': x}, separators=(',', ':'))}]
    env += [{'name': k, 'value': v} for k, v in (extra_env or {}).items()]
    return {'properties': {
        'cluster': {'id': service.cluster_id},
        'nodeCount': 1,
        'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
        'outputDirectories': [{'id': 'MODEL', 'pathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/outputs'}],
        'customToolkitSettings': {'commandLine': command},
        'environmentVariables': env,
    }}


def sweep_plan(service, sweep, count, command, extra_env=None):
    return [('{}-{:03d}'.format(sweep, x), job_body(service, sweep, x, command, extra_env)) for x in range(count)]


def new_experiment(client, service):
    name = 'exp-' + uuid.uuid4().hex[:10]
    client.experiments.begin_create(service.resource_group, service.workspace, name).result()
    return name


def wait_all(client, service, experiment, sweep, timeout=60):
    result = wait_for_jobs(client, service.resource_group, service.workspace, experiment, sweep_name=sweep,
                           interval=0.2, timeout=timeout, retry=quick_retry())
    if not result['finished']:
        pytest.fail('jobs did not finish in {}s: {}'.format(timeout, result['counts']))
    return result
