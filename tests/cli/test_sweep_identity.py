"""A sweep is one object (issue 10, rules 1-3): its jobs carry its identity, a re-plan never changes it, and a plan
is never destroyed. Through the real az executable against the session's local Batch AI service.

Every az run costs about a second of start-up, so each test makes as few as it can; the jobs are instant.
"""
import json
import os
import uuid

import pytest

from azext_batchai_sweep.core.spec.naming import job_name
from tests.fixtures_az import service_az

pytestmark = [pytest.mark.az, pytest.mark.service]

COMMAND = 'echo "x={{X}}"'


def write_sweep(directory, values=(1, 2), command=COMMAND, sampling='', name='sweep.yaml', parameter=None):
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
           'customToolkitSettings': {'commandLine': command}}
    parameter = parameter or '{{name: X, type: discrete, values: {}}}'.format(json.dumps(list(values)))
    text = 'jobNamePrefix: same\n{}parameters:\n  - {}\njob: {}\n'.format(sampling, parameter, json.dumps(job))
    path = os.path.join(directory, name)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    return path


def read_plan(path):
    with open(path, encoding='utf-8') as f:
        lines = [json.loads(line) for line in f]
    return lines[0], lines[1:]


def env_of(record):
    return {var['name']: var['value'] for var in record['job']['properties']['environmentVariables']}


class Target:
    """-g/-w/-e of one fresh experiment on the session's service, and an az runner working in `directory`."""

    def __init__(self, service, directory, experiment=None):
        self.service = service
        self.directory = directory
        self.az = service_az(service, directory)
        self.experiment = experiment or 'id-' + uuid.uuid4().hex[:8]

    def args(self, name, experiment=None):
        return ['-g', self.service.resource_group, '-w', self.service.workspace, '-e',
                experiment or self.experiment, '-n', name]

    def run(self, command, name, *args, experiment=None, **kwargs):
        return self.az('batchai', 'sweep', command, *self.args(name, experiment), *args, **kwargs)


@pytest.fixture
def target(local_service, tmp_path):
    return Target(local_service, str(tmp_path))


def test_two_sweeps_of_one_file_each_get_their_own_jobs(target, batchai_client):
    write_sweep(target.directory)
    names = {}
    for sweep in ('a', 'b'):
        result = target.run('submit', sweep, '--spec', 'sweep.yaml', '-c', target.service.cluster, '-o', 'json')
        assert result.exit_code == 0, result.stderr
        assert (result.json()['submitted'], result.json()['alreadyPresent']) == (2, 0)
        names[sweep] = [record['name'] for record in read_plan(os.path.join(target.directory,
                                                                            sweep + '.plan.jsonl'))[1]]
    assert not set(names['a']) & set(names['b'])
    # The names carry the sweep: the prefix of the file, then a hash over the sweep name and the values.
    assert all(name.startswith('same-') for name in names['a'] + names['b'])
    assert job_name('same', {'X': 1}, sweep_name='a') in names['a']
    assert job_name('same', {'X': 1}) not in names['a'] + names['b']  # not the 0.1 name
    svc = target.service
    on_service = {job.name: job for job in batchai_client.jobs.list_by_experiment(
        svc.resource_group, svc.workspace, target.experiment)}
    assert sorted(on_service) == sorted(names['a'] + names['b'])
    for sweep, jobs in names.items():
        for name in jobs:
            env = {var.name: var.value for var in on_service[name].environment_variables}
            assert env['BATCHAI_SWEEP_NAME'] == sweep
            assert len(env['BATCHAI_SWEEP_JOB_DIGEST']) == 16
    status = target.run('status', 'b', '--query', 'jobs[].name')
    assert sorted(status.json()) == sorted(names['b'])


def test_a_planned_name_held_by_another_sweep_is_an_error_that_changes_nothing(target, batchai_client):
    svc = target.service
    write_sweep(target.directory, values=(1, 2, 3))
    planned = target.run('create', 'mine', '--spec', 'sweep.yaml', '-c', svc.cluster, '--query', 'jobs[].name')
    assert planned.exit_code == 0, planned.stderr
    taken = sorted(planned.json())[1]
    # Another sweep's job under one of the planned names (a hand-made job, or a colliding 0.1 name).
    body = {'properties': {'cluster': {'id': svc.cluster_id}, 'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
                           'customToolkitSettings': {'commandLine': 'echo theirs'},
                           'environmentVariables': [{'name': 'BATCHAI_SWEEP_NAME', 'value': 'theirs'}]}}
    batchai_client.jobs.begin_create(svc.resource_group, svc.workspace, target.experiment, taken, body).result()
    for command in (('submit', 'mine'), ('create', 'mine', '--spec', 'sweep.yaml', '-c', svc.cluster)):
        refused = target.run(*command)
        assert refused.exit_code == 6, refused.stderr
        assert 'Job {} is already on the service and belongs to sweep \'theirs\''.format(taken) in refused.stderr
        assert 'Traceback' not in refused.stderr
    jobs = list(batchai_client.jobs.list_by_experiment(svc.resource_group, svc.workspace, target.experiment))
    assert [job.name for job in jobs] == [taken]  # nothing submitted, the foreign job untouched
    assert jobs[0].custom_toolkit_settings.command_line == 'echo theirs'


def test_an_unseeded_random_sweep_draws_its_seed_once(target):
    svc = target.service
    write_sweep(target.directory, sampling='sampling: {type: random, count: 3}\n',
                parameter='{name: X, type: numeric, dataType: REAL, start: 0, end: 1, scale: LINEAR}')
    first = target.run('create', 'r', '--spec', 'sweep.yaml', '-c', svc.cluster, '--plan-only', '-o', 'json')
    assert first.exit_code == 0, first.stderr
    seed = first.json()['seed']
    assert 'new random seed {}'.format(seed) in first.stderr
    header, records = read_plan(os.path.join(target.directory, 'r.plan.jsonl'))
    assert header['sampling']['seed'] == seed
    assert {env_of(record)['BATCHAI_SWEEP_SEED'] for record in records} == {str(seed)}
    names = sorted(record['name'] for record in records)

    # Again with the same plan file: the recorded seed, the same jobs.
    again = target.run('create', 'r', '--spec', 'sweep.yaml', '-c', svc.cluster, '--plan-only',
                       '--query', 'jobs[].name')
    assert sorted(again.json()) == names and 'reuses its recorded random seed {}'.format(seed) in again.stderr
    # Another plan file, offline: the seed of the sweep's plan file here.
    other = target.run('create', 'r', '--spec', 'sweep.yaml', '-c', svc.cluster, '--plan-only', '--plan-file',
                       'copy.jsonl', '--query', 'jobs[].name')
    assert sorted(other.json()) == names, other.stderr
    submitted = target.run('submit', 'r', '--query', 'submitted')
    assert submitted.json() == 3, submitted.stderr

    # No plan file left at all: the seed comes back from the jobs on the service, in another plan file.
    os.remove(os.path.join(target.directory, 'r.plan.jsonl'))
    replanned = target.run('submit', 'r', '--spec', 'sweep.yaml', '-c', svc.cluster, '--plan-file', 'other.jsonl',
                           '--query', '[submitted, alreadyPresent]')
    assert replanned.exit_code == 0, replanned.stderr
    assert replanned.json() == [0, 3]
    assert sorted(r['name'] for r in read_plan(os.path.join(target.directory, 'other.jsonl'))[1]) == names


def test_a_replan_that_changes_the_jobs_is_refused_naming_what_changed(target):
    svc = target.service
    write_sweep(target.directory)
    made = target.run('submit', 'c', '--spec', 'sweep.yaml', '-c', svc.cluster, '--query', 'submitted')
    assert made.json() == 2, made.stderr
    plan_path = os.path.join(target.directory, 'c.plan.jsonl')
    with open(plan_path, encoding='utf-8') as f:
        before = f.read()

    # The template changed: refused against the plan file, and (with a fresh plan file) against the service.
    write_sweep(target.directory, command='echo "changed x={{X}}"')
    refused = target.run('create', 'c', '--spec', 'sweep.yaml', '-c', svc.cluster)
    assert refused.exit_code == 6 and 'the job template' in refused.stderr, refused.stderr
    assert '--allow-changes' in refused.stderr and '-n c' in refused.stderr
    with open(plan_path, encoding='utf-8') as f:
        assert f.read() == before  # the plan is untouched
    fresh = target.run('submit', 'c', '--spec', 'sweep.yaml', '-c', svc.cluster, '--plan-file', 'fresh.jsonl')
    assert fresh.exit_code == 6 and '2 planned job(s) differ from the jobs of sweep \'c\'' in fresh.stderr
    assert not os.path.exists(os.path.join(target.directory, 'fresh.jsonl'))

    # A parameter changed: named, from the plan file and from the service alone.
    write_sweep(target.directory, values=(1, 3))
    param = target.run('create', 'c', '--spec', 'sweep.yaml', '-c', svc.cluster)
    assert param.exit_code == 6 and 'parameter X changed (values: [1, 2] -> [1, 3])' in param.stderr, param.stderr
    alone = target.run('create', 'c', '--spec', 'sweep.yaml', '-c', svc.cluster, '--plan-file', 'fresh.jsonl')
    assert alone.exit_code == 6 and 'the parameter(s) X changed' in alone.stderr, alone.stderr

    # The user means it: the plan is replaced, and submit re-creates the changed jobs under their names.
    write_sweep(target.directory, command='echo "changed x={{X}}"')
    allowed = target.run('submit', 'c', '--spec', 'sweep.yaml', '-c', svc.cluster, '--allow-changes',
                         '--query', '[submitted, alreadyPresent, replaced]')
    assert allowed.exit_code == 0, allowed.stderr
    assert allowed.json() == [0, 0, 2]
    same = target.run('submit', 'c', '--query', '[submitted, alreadyPresent, replaced]')
    assert same.json() == [0, 2, 0], same.stderr


def test_a_failed_create_never_destroys_a_plan(target):
    svc = target.service
    write_sweep(target.directory)
    ok = target.run('create', 'p', '--spec', 'sweep.yaml', '-c', svc.cluster, '--plan-only')
    assert ok.exit_code == 0, ok.stderr
    plan_path = os.path.join(target.directory, 'p.plan.jsonl')
    with open(plan_path, encoding='utf-8') as f:
        before = f.read()

    # A missing workspace, a missing cluster: named, nothing written, nothing created.
    args = ['-g', svc.resource_group, '-w', 'no-such-ws', '-e', target.experiment, '-n', 'p']
    no_ws = target.az('batchai', 'sweep', 'create', *args, '--spec', 'sweep.yaml', '-c', svc.cluster_id,
                      '--plan-file', 'p.plan.jsonl', '--yes')
    assert no_ws.exit_code == 3 and 'Workspace no-such-ws does not exist' in no_ws.stderr, no_ws.stderr
    no_cluster = target.run('create', 'p', '--spec', 'sweep.yaml', '-c', 'no-such-cluster', '--plan-file', 'x.jsonl')
    assert no_cluster.exit_code == 3 and 'Cluster no-such-cluster does not exist' in no_cluster.stderr
    no_cluster_at_all = target.run('submit', 'p', '--spec', 'sweep.yaml', '--plan-file', 'x.jsonl')
    assert no_cluster_at_all.exit_code == 6 and '--cluster NAME' in no_cluster_at_all.stderr
    # Against its own plan, the other cluster is a change of the template: refused before any request.
    changed = target.run('create', 'p', '--spec', 'sweep.yaml', '-c', 'no-such-cluster')
    assert changed.exit_code == 6 and 'the job template' in changed.stderr
    with open(plan_path, encoding='utf-8') as f:
        assert f.read() == before
    assert not os.path.exists(os.path.join(target.directory, 'x.jsonl'))
    status = target.run('status', 'p')
    assert status.exit_code == 3 and 'Experiment {} does not exist'.format(target.experiment) in status.stderr

    # Another target's or another sweep's plan is not replaced without --yes; the message says how.
    other = target.run('create', 'p', '--spec', 'sweep.yaml', '-c', svc.cluster, '--plan-only',
                       experiment='elsewhere')
    assert other.exit_code == 6 and 'experiment {}'.format(target.experiment) in other.stderr
    assert '--plan-file FILE' in other.stderr and '--yes' in other.stderr
    foreign = target.run('create', 'q', '--spec', 'sweep.yaml', '-c', svc.cluster, '--plan-only',
                         '--plan-file', 'p.plan.jsonl')
    assert foreign.exit_code == 6 and "holds sweep 'p'" in foreign.stderr
    with open(plan_path, encoding='utf-8') as f:
        assert f.read() == before

    # The same sweep in two experiments: each gets its jobs (own plan files), never exit 0 with no jobs.
    for experiment in (target.experiment, 'id2-' + target.experiment[3:]):
        result = target.run('submit', 'p', '--spec', 'sweep.yaml', '-c', svc.cluster, '--plan-file',
                            experiment + '.jsonl', '--query', 'submitted', experiment=experiment)
        assert result.exit_code == 0 and result.json() == 2, result.stderr


def test_a_0_1_sweep_still_has_a_status_and_a_replan_says_what_to_do(target, batchai_client):
    """Migration: 0.1 named jobs `<prefix>-<hash of the values>` and wrote version 1 plans."""
    svc = target.service
    write_sweep(target.directory)
    planned = target.run('create', 'old', '--spec', 'sweep.yaml', '-c', svc.cluster, '--plan-only')
    assert planned.exit_code == 0, planned.stderr
    path = os.path.join(target.directory, 'old.plan.jsonl')
    header, records = read_plan(path)
    header.update(version=1)
    del header['templateDigest']
    for record in records:  # what 0.1 wrote: value-only names, no digest
        record['name'] = job_name('same', record['parameters'])
        props = record['job']['properties']
        props['environmentVariables'] = [var for var in props['environmentVariables']
                                         if var['name'] != 'BATCHAI_SWEEP_JOB_DIGEST']
    with open(os.path.join(target.directory, 'old01.jsonl'), 'w', encoding='utf-8') as f:
        f.writelines(json.dumps(line) + '\n' for line in [header] + records)
    os.remove(path)

    submitted = target.run('submit', 'old', '--plan-file', 'old01.jsonl', '--query', 'submitted')
    assert submitted.exit_code == 0 and submitted.json() == 2, submitted.stderr
    assert 'made by version 0.1' in submitted.stderr
    status = target.run('status', 'old', '--query', 'jobs[].name')
    assert status.exit_code == 0 and sorted(status.json()) == sorted(r['name'] for r in records)
    again = target.run('submit', 'old', '--plan-file', 'old01.jsonl', '--query', 'alreadyPresent')
    assert again.json() == 2

    replan = target.run('submit', 'old', '--spec', 'sweep.yaml', '-c', svc.cluster)
    assert replan.exit_code == 6, replan.stderr
    assert 'made by version 0.1' in replan.stderr and '--plan-file FILE' in replan.stderr
    jobs = list(batchai_client.jobs.list_by_experiment(svc.resource_group, svc.workspace, target.experiment))
    assert len(jobs) == 2  # no second copy of the sweep
