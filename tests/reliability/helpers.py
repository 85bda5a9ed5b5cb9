"""Shared pieces of the reliability tests: sweeps planned the way `az batchai sweep create` plans them, checks that
the service holds exactly the planned jobs, and az runs pointed at a local service."""
import json
import os
import time
from collections import Counter

from azext_batchai_sweep.core.service.client import local_batchai_client
from azext_batchai_sweep.core.service.listing import env_of, list_jobs, parameters_of
from azext_batchai_sweep.core.spec.plan import plan_header, read_plan, write_plan
from azext_batchai_sweep.core.service.retry import RetrySettings
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file

# Jobs that finish at once: the tests are about the control plane, not the jobs.
QUICK_COMMAND = 'echo "x=$PARAM_X"'


def quick_retry(**kwargs):
    """Short backoff (the service's Retry-After of 1 s is still honoured), generous retry count for high fault rates."""
    return RetrySettings(**{'base_delay': 0.05, 'max_delay': 0.5, 'max_retries': 12, **kwargs})


def client_for(service, **kwargs):
    return local_batchai_client(service.endpoint, service.token_file, service.subscription, **kwargs)


def write_sweep_file(directory, count, command=QUICK_COMMAND, cluster_id=None, extra_job=None, prefix='rel'):
    """A sweep file of `count` jobs (one INTEGER parameter X = 0..count-1) whose job runs `command`."""
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
           'customToolkitSettings': {'commandLine': command + ' # {{X}}'}}
    if cluster_id:
        job['cluster'] = {'id': cluster_id}
    job.update(extra_job or {})
    sweep = {'jobNamePrefix': prefix, 'parameters': [
        {'name': 'X', 'type': 'numeric', 'dataType': 'INTEGER', 'start': 0, 'end': count - 1, 'numValues': count,
         'scale': 'LINEAR'}], 'job': job}
    path = os.path.join(str(directory), 'sweep.json')
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(sweep, f)
    return path


def make_plan(directory, service, experiment, count, sweep='rel', command=QUICK_COMMAND, extra_job=None):
    """Plan a sweep as `create` does (sweep file -> plan file); returns the plan path."""
    spec = write_sweep_file(directory, count, command, service.cluster_id, extra_job, prefix=sweep)
    definition = load_sweep_file(spec)
    jobs = definition.jobs(sweep_name=sweep)
    header = plan_header(sweep=sweep, resource_group=service.resource_group, workspace=service.workspace,
                         experiment=experiment, job_name_prefix=jobs.prefix, sampling=definition.sampling,
                         parameters=definition.parameter_summaries, job_count=len(jobs))
    path = os.path.join(str(directory), '{}.plan.jsonl'.format(sweep))
    write_plan(path, header, ({'name': job.name, 'parameters': job.parameters, 'job': json.loads(job.body_json())}
                              for job in jobs))
    return path


def planned(plan_path):
    """{job name: parameters} of a plan file."""
    return {record['name']: record['parameters'] for record in read_plan(plan_path)[1]}


def plan_bodies(plan_path):
    return [(record['name'], record['job']) for record in read_plan(plan_path)[1]]


def service_jobs(client, service, experiment):
    return list(list_jobs(client, service.resource_group, service.workspace, experiment, retry=quick_retry()))


def assert_exactly_planned(client, service, experiment, plan_path):
    """The experiment holds each planned job exactly once, each with its own parameters; returns the jobs."""
    expected = planned(plan_path)
    jobs = service_jobs(client, service, experiment)
    counts = Counter(job.name for job in jobs)
    duplicates = {name: n for name, n in counts.items() if n > 1}
    assert not duplicates, duplicates
    assert sorted(counts) == sorted(expected), (sorted(set(expected) - set(counts))[:10],
                                               sorted(set(counts) - set(expected))[:10])
    for job in jobs:
        assert parameters_of(job) == expected[job.name], job.name
        assert env_of(job)['PARAM_X'] == str(expected[job.name]['X']), job.name
    return jobs


def wait_until(predicate, timeout, interval=0.1, what='condition'):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError('{} not reached within {}s'.format(what, timeout))
