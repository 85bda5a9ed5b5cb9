"""`az batchai sweep create` through the real az executable (temporary config dir, extension from source)."""
import json
import os
import shutil

import pytest

from azext_batchai_sweep.core.spec.plan import read_plan

pytestmark = pytest.mark.az

EXAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', 'examples')
# --plan-only: these tests need no service (create would otherwise create the experiment).
BASE = ['batchai', 'sweep', 'create', '--plan-only', '-g', 'rg', '-w', 'ws', '-e', 'exp']


@pytest.fixture
def example(tmp_path):
    """The example sweep copied into the test's directory (the az runner's working directory)."""
    for name in ('sweep.yaml', 'job.json'):
        shutil.copy(os.path.join(EXAMPLES, name), str(tmp_path / name))
    return 'sweep.yaml'


def test_table_output_has_one_row_per_job_and_a_column_per_parameter(az, example, tmp_path):
    result = az(*BASE, '-n', 'mnist', '--spec', example, '-c', 'nc6', '--storage-account-name', 'acct', '-o', 'table')
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ['Name', 'UNITS', 'BATCH_SIZE']
    rows = [line.split() for line in lines[2:]]
    assert len(rows) == 9
    assert [row[1:] for row in rows[:3]] == [['100', '50'], ['100', '100'], ['100', '200']]
    assert all(row[0].startswith('mnist-') for row in rows)
    # Status goes to stderr, results only to stdout.
    assert 'Planned 9 jobs of sweep mnist' in result.stderr
    assert 'Planned' not in result.stdout
    assert (tmp_path / 'mnist.plan.jsonl').exists()


def test_json_output_and_the_plan_file(az, example, tmp_path):
    result = az(*BASE, '-n', 'mnist', '--spec', example, '-c', 'nc6', '--storage-account-name', 'acct', '-o', 'json')
    assert result.exit_code == 0, result.stderr
    summary = result.json()
    plan_path = str(tmp_path / 'mnist.plan.jsonl')
    assert {k: v for k, v in summary.items() if k != 'jobs'} == {
        'sweep': 'mnist', 'resourceGroup': 'rg', 'workspace': 'ws', 'experiment': 'exp', 'planFile': plan_path,
        'jobCount': 9, 'sampling': 'grid', 'seed': None, 'parameters': ['UNITS', 'BATCH_SIZE']}
    assert summary['jobs'][0]['parameters'] == {'UNITS': 100, 'BATCH_SIZE': 50}

    header, jobs = read_plan(plan_path)
    jobs = list(jobs)
    assert header['sweep'] == 'mnist' and header['jobCount'] == 9 and header['jobNamePrefix'] == 'mnist'
    assert [job['name'] for job in jobs] == [job['name'] for job in summary['jobs']]
    properties = jobs[0]['job']['properties']
    # Not logged in: the cluster name is expanded with the all-zero subscription, as create never needs a login.
    assert properties['cluster']['id'] == ('/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/'
                                           'providers/Microsoft.BatchAI/workspaces/ws/clusters/nc6')
    assert properties['chainerSettings']['commandLineArgs'] == \
        '-g -o $AZ_BATCHAI_OUTPUT_MODEL --unit 100 --batchsize 50'
    assert properties['mountVolumes']['azureFileShares'][0]['azureFileUrl'] == 'https://acct.file.core.windows.net/logs'
    env = {item['name']: item['value'] for item in properties['environmentVariables']}
    assert env['PARAM_UNITS'] == '100' and env['BATCHAI_SWEEP_NAME'] == 'mnist'


def test_query_random_search_and_plan_file_option(az, example, tmp_path):
    args = [*BASE, '-n', 'r', '--spec', example, '--storage-account-name', 'acct', '--sampling', 'random',
            '--count', '4', '--seed', '7', '--plan-file', 'plans/r.jsonl', '--query', '[jobCount, seed, jobs[].name]']
    (tmp_path / 'plans').mkdir()
    first = az(*args)
    assert first.exit_code == 0, first.stderr
    count, seed, names = first.json()
    assert (count, seed, len(names)) == (4, 7, 4)
    assert az(*args).json()[2] == names  # the same seed plans the same jobs
    assert read_plan(str(tmp_path / 'plans' / 'r.jsonl'))[0]['sampling'] == {'type': 'random', 'count': 4, 'seed': 7}


def test_storage_account_from_the_environment(az, example, tmp_path):
    result = az(*BASE, '-n', 'e', '--spec', example, '--query', 'jobCount',
                env={'AZURE_BATCHAI_STORAGE_ACCOUNT': 'envacct'})
    assert result.exit_code == 0, result.stderr
    job = next(read_plan(str(tmp_path / 'e.plan.jsonl'))[1])
    assert job['job']['properties']['mountVolumes']['azureFileShares'][0]['accountName'] == 'envacct'


def test_configured_defaults_for_group_workspace_and_experiment(az, example):
    assert az('configure', '--defaults', 'group=g1', 'batchai_workspace=w1', 'batchai_experiment=e1').exit_code == 0
    result = az('batchai', 'sweep', 'create', '--plan-only', '-n', 'd', '--spec', example,
                '--storage-account-name', 'a', '--query', '[resourceGroup, workspace, experiment]')
    assert result.exit_code == 0, result.stderr
    assert result.json() == ['g1', 'w1', 'e1']


def test_a_bad_spec_is_an_error_naming_file_and_field(az, tmp_path):
    (tmp_path / 'bad.yaml').write_text(
        'parameters:\n  - {name: LR, type: numeric, dataType: REAL, start: abc, end: 1, numValues: 2, scale: LOG}\n'
        'job: {nodeCount: 1}\n', encoding='utf-8')
    result = az(*BASE, '-n', 'bad', '--spec', 'bad.yaml', '-o', 'json')
    # A bad sweep file is bad input, 6 (docs/pipelines.md); argparse errors exit with az's 2.
    assert result.exit_code == 6
    assert result.stdout == ''
    assert ("ERROR: Invalid sweep definition: bad.yaml: parameters[0].start: expected a number, got the string 'abc'"
            in result.stderr)
    assert 'az batchai sweep create -h' in result.stderr  # the recommendation
    assert 'Traceback' not in result.stderr
    assert not (tmp_path / 'bad.plan.jsonl').exists()


def test_missing_spec_file_and_bad_arguments(az):
    missing = az(*BASE, '-n', 'm', '--spec', 'nowhere.yaml')
    assert missing.exit_code == 6
    assert 'ERROR: The sweep file nowhere.yaml (--spec) does not exist or is not a file' in missing.stderr
    bad_choice = az(*BASE, '-n', 'm', '--spec', 'nowhere.yaml', '--sampling', 'bayes')
    assert bad_choice.exit_code == 2
    bad_name = az(*BASE, '-n', 'no spaces', '--spec', 'nowhere.yaml')
    assert bad_name.exit_code == 6 and "Sweep name 'no spaces' is invalid" in bad_name.stderr


def test_max_jobs_refuses_a_large_sweep_unless_yes(az, example, tmp_path):
    refused = az(*BASE, '-n', 'big', '--spec', example, '--storage-account-name', 'a', '--max-jobs', '5')
    assert refused.exit_code == 6
    assert 'The sweep has 9 jobs, more than --max-jobs (5)' in refused.stderr
    assert 'Add --yes' in refused.stderr
    assert not (tmp_path / 'big.plan.jsonl').exists()
    accepted = az(*BASE, '-n', 'big', '--spec', example, '--storage-account-name', 'a', '--max-jobs', '5', '--yes')
    assert accepted.exit_code == 0, accepted.stderr
    summary = accepted.json()
    assert summary['jobCount'] == 9 and len(summary['jobs']) == 5
    assert 'the plan file has all of them' in accepted.stderr
    assert sum(1 for _ in read_plan(str(tmp_path / 'big.plan.jsonl'))[1]) == 9


def test_help(az):
    result = az('batchai', 'sweep', 'create', '-h')
    assert result.exit_code == 0
    for text in ('--spec', '--template', '--cluster -c', '--storage-account-name', '--sampling', '--count', '--seed',
                 '--plan-file', '--max-jobs', '--yes -y', 'Examples'):
        assert text in result.stdout
    group = az('batchai', '-h')
    assert 'sweep [Preview]' in group.stdout


def test_plan_keeps_secret_references_only(az, tmp_path):
    (tmp_path / 'sweep.yaml').write_text(
        'parameters:\n  - {name: UNITS, type: discrete, values: [1, 2]}\n'
        'job: {nodeCount: 1, customToolkitSettings: {commandLine: "run {{UNITS}}"}, '
        'secrets: [{name: TOKEN, value: "$env:MY_TOKEN"}]}\n', encoding='utf-8')
    result = az(*BASE, '-n', 's', '--spec', 'sweep.yaml', '-o', 'none', env={'MY_TOKEN': 'hunter2'})
    assert result.exit_code == 0, result.stderr
    text = (tmp_path / 's.plan.jsonl').read_text(encoding='utf-8')
    assert '$env:MY_TOKEN' in text and 'hunter2' not in text
    assert json.loads(text.splitlines()[1])['job']['properties']['secrets'] == [{'name': 'TOKEN',
                                                                                 'value': '$env:MY_TOKEN'}]
