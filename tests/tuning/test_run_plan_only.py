"""`az batchai sweep run --plan-only` (alias --validate-only): a sweep file for `run` checked without a service, for
every sampling type, with the first jobs `run` submits (issue 27, item 5). The jobs' names are checked against a
real run of the same file on the local service: the plan is what `run` does."""
import uuid

import pytest

from tests.fixtures_az import service_az

from .run_helpers import write_sweep

pytestmark = pytest.mark.az

SAMPLINGS = {
    'grid': (['limits: {maxConcurrentJobs: 2}'], 2),
    'random': (['sampling: {type: random, count: 5, seed: 3}', 'limits: {maxConcurrentJobs: 3}'], 3),
    'bayesian': (['sampling: {type: bayesian, count: 6, seed: 5, startupJobs: 3}', 'limits: {maxConcurrentJobs: 4}'],
                 4),  # random while fewer than startupJobs have an objective: 4 at once, as run submits them
    'hyperband': (['sampling: {type: hyperband, resource: EPOCHS, minResource: 1, maxResource: 9, eta: 3, seed: 4}',
                   'limits: {maxConcurrentJobs: 3}'], 3),
}


def offline_run(az, spec, *extra, env=None):
    return az('batchai', 'sweep', 'run', '-g', 'rg', '-w', 'ws', '-e', 'exp', '-n', 'plan', '--spec', spec, '-c',
              'local', '-o', 'json', *extra, env=env)


@pytest.mark.parametrize('sampling', sorted(SAMPLINGS))
@pytest.mark.parametrize('option', ['--plan-only', '--validate-only'])
def test_plan_only_checks_the_file_and_lists_the_first_jobs_without_a_service(az, tmp_path, sampling, option):
    sections, first = SAMPLINGS[sampling]
    values = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    spec = write_sweep(str(tmp_path), 'plan', sections, values, epochs=3 if sampling != 'hyperband' else
                       '{{EPOCHS}}')
    # No endpoint, no login: an unreachable endpoint proves nothing is asked of a service.
    result = offline_run(az, spec, option, env={'AZURE_BATCHAI_SWEEP_ENDPOINT': 'http://127.0.0.1:9',
                                                'AZURE_BATCHAI_SWEEP_TOKEN_FILE': str(tmp_path / 'none')})
    assert result.exit_code == 0, result.stderr
    plan = result.json()
    assert plan['valid'] is True and plan['sampling']['type'] == sampling
    assert len(plan['firstJobs']) == first and all(job['name'].startswith('plan-') for job in plan['firstJobs'])
    assert all(job['parameters']['Q'] in values for job in plan['firstJobs'])
    if sampling == 'grid':
        assert [job['parameters']['Q'] for job in plan['firstJobs']] == [0.1, 0.2]
    if sampling == 'hyperband':
        assert {job['parameters']['EPOCHS'] for job in plan['firstJobs']} == {1}
    table = offline_run(az, spec, option, '-o', 'table')
    assert table.exit_code == 0 and plan['firstJobs'][0]['name'] in table.stdout


def test_plan_only_warm_starts_from_files_and_names_the_sweeps_run_reads(az, tmp_path):
    """A discrete Q: the inherited configurations are never among the first jobs (nothing is run again), and the
    model is used from the first job (startupJobs met by the inherited ones)."""
    import json
    rows = [{'name': 'old-{}'.format(q), 'state': 'succeeded', 'parameters': {'Q': q}, 'metric': q,
             'metricName': 'val_accuracy'} for q in (0.1, 0.2, 0.3, 0.9)] + [
        {'name': 'odd', 'state': 'succeeded', 'parameters': {'Q': 0.25}, 'metric': 0.2, 'metricName': 'val_accuracy'}]
    (tmp_path / 'old.json').write_text(json.dumps(rows))
    spec = write_sweep(str(tmp_path), 'warm', ['sampling: {type: bayesian, count: 4, seed: 3, startupJobs: 3, '
                                               'warmStart: [old.json, lr-a]}', 'limits: {maxConcurrentJobs: 2}'],
                       [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], epochs=2)
    result = offline_run(az, spec, '--plan-only')
    assert result.exit_code == 0, result.stderr
    plan = result.json()
    assert plan['warmStart'] == [{'source': 'old.json', 'inherited': 4, 'skipped': 1, 'notes': [
        "1 job(s) has a value of Q that is not one of this sweep's values: skipped"]}]
    assert 'warmStart lr-a: a sweep, read from the service by `run` (not by --plan-only)' in result.stderr
    firsts = [job['parameters']['Q'] for job in plan['firstJobs']]
    assert len(firsts) == 2 and not set(firsts) & {0.1, 0.2, 0.3, 0.9}
    assert all(job['note'].startswith('bayesian: TPE over 4 jobs') for job in plan['firstJobs'])


def test_plan_only_refuses_an_invalid_file_naming_the_key(az, tmp_path):
    spec = write_sweep(str(tmp_path), 'bad', ['earlyTermination: {policy: bandit, delayEvaluation: 2}'], [0.1, 0.2])
    result = offline_run(az, spec, '--plan-only')
    assert result.exit_code != 0
    assert 'earlyTermination' in result.stderr and 'slackFactor' in result.stderr and 'Traceback' not in result.stderr


def test_a_bayesian_search_is_bounded_by_its_count_or_either_form_of_max_total_jobs(az, tmp_path):
    """The number of jobs may come from sampling.count, --count, limits.maxTotalJobs or --max-total-jobs (which
    overrides limits.maxTotalJobs, so it bounds the search as well); with none the file is refused, naming all four."""
    values = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    unbounded = write_sweep(str(tmp_path), 'tpe', ['sampling: {type: bayesian, seed: 5, startupJobs: 3}'], values,
                            epochs=2)
    refused = offline_run(az, unbounded, '--plan-only')
    assert refused.exit_code != 0 and 'Traceback' not in refused.stderr
    assert all(way in refused.stderr for way in ('sampling.count', '--count', 'limits.maxTotalJobs',
                                                 '--max-total-jobs')), refused.stderr
    for extra in (['--max-total-jobs', '2'], ['--count', '2']):
        planned = offline_run(az, unbounded, '--plan-only', *extra)
        assert planned.exit_code == 0, (extra, planned.stderr)
        assert planned.json()['valid'] is True and len(planned.json()['firstJobs']) == 2
    in_file = write_sweep(str(tmp_path), 'tpe2', ['sampling: {type: bayesian, seed: 5, startupJobs: 3}',
                                                 'limits: {maxTotalJobs: 3}'], values, epochs=2)
    planned = offline_run(az, in_file, '--plan-only')
    assert planned.exit_code == 0, planned.stderr
    assert len(planned.json()['firstJobs']) == 3


@pytest.mark.service
def test_the_planned_first_jobs_are_the_jobs_run_submits(local_service, tmp_path):
    az = service_az(local_service, str(tmp_path))
    sections, _ = SAMPLINGS['random']
    spec = write_sweep(str(tmp_path), 'same', sections, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], epochs=2, sleep=0.01)
    target = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'plan-' + uuid.uuid4().hex[:6],
              '-n', 'same', '--spec', spec, '-c', local_service.cluster, '-o', 'json']
    planned = az('batchai', 'sweep', 'run', *target, '--plan-only')
    assert planned.exit_code == 0, planned.stderr
    run = az('batchai', 'sweep', 'run', *target, '--poll-interval', '0.2')
    assert run.exit_code == 0, run.stderr
    status = az('batchai', 'sweep', 'status', *target[:8], '-o', 'json')
    names = {row['name'] for row in status.json()['jobs']}
    assert {job['name'] for job in planned.json()['firstJobs']} <= names
