"""The sweep workflow through the real az executable against the session's local Batch AI service.

One module-scoped sweep (6 tiny shell jobs, the odd ones failing until a flag file exists) serves the read-only
commands; the tests that change it (resubmit, delete) come last, in file order. Every az run costs about a second
of start-up, so each test makes as few as it can.
"""
import csv
import json
import os
import uuid

import pytest

from tests.fixtures_az import service_az, service_env

pytestmark = [pytest.mark.az, pytest.mark.service]

SWEEP = 'flaky'
# Odd X fails until the file $FIXED exists; each job logs a Katib-style metric and writes a file of its own.
JOB_COMMAND = ('echo "training x={{X}}"; echo "loss=$(({{X}} * 3))"; '
               'mkdir -p $AZ_BATCHAI_OUTPUT_MODEL/sub && echo "model {{X}}" > $AZ_BATCHAI_OUTPUT_MODEL/sub/model.txt; '
               'test -e "$FIXED" || exit $(({{X}} % 2))')


def write_sweep(directory, fixed, values=(0, 1, 2, 3, 4, 5), extra=''):
    job = {
        'nodeCount': 1,
        'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
        'outputDirectories': [{'id': 'MODEL', 'pathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/outputs'}],
        'customToolkitSettings': {'commandLine': JOB_COMMAND},
        'environmentVariables': [{'name': 'FIXED', 'value': fixed}],
    }
    text = ('jobNamePrefix: {}\nparameters:\n  - {{name: X, type: discrete, values: {}}}\njob: {}\n{}'
            .format(SWEEP, json.dumps(list(values)), json.dumps(job), extra))
    path = os.path.join(directory, 'sweep.yaml')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    return path


class Sweep:
    """A sweep on the local service and the az runner (own config and working dirs) that made it."""

    def __init__(self, az, service, directory, experiment):
        self.az = az
        self.service = service
        self.directory = directory
        self.experiment = experiment
        self.fixed = os.path.join(directory, 'fixed')
        self.args = ['-g', service.resource_group, '-w', service.workspace, '-e', experiment, '-n', SWEEP]

    def run(self, command, *args, **kwargs):
        return self.az('batchai', 'sweep', command, *self.args, *args, **kwargs)


@pytest.fixture(scope='module')
def sweep(local_service, tmp_path_factory):
    """A finished 6-job sweep whose odd jobs failed, made with create, submit and status --wait."""
    directory = str(tmp_path_factory.mktemp('workflow'))
    az = service_az(local_service, directory)
    made = Sweep(az, local_service, directory, 'cli-' + uuid.uuid4().hex[:8])
    write_sweep(directory, made.fixed)

    created = made.run('create', '--spec', 'sweep.yaml', '-c', local_service.cluster, '--query', 'jobCount')
    assert created.exit_code == 0, created.stderr
    assert created.json() == 6
    assert 'Created experiment {}'.format(made.experiment) in created.stderr
    assert 'Using the Batch AI service at {}'.format(local_service.endpoint) in created.stderr

    submitted = made.run('submit', '-o', 'json')
    assert submitted.exit_code == 0, submitted.stderr
    assert {k: submitted.json()[k] for k in ('total', 'submitted', 'alreadyPresent', 'failed', 'notSubmitted')} == \
        {'total': 6, 'submitted': 6, 'alreadyPresent': 0, 'failed': [], 'notSubmitted': []}
    assert 'Sweep flaky: 6 submitted, 0 already present, 0 not submitted, of 6 jobs' in submitted.stderr

    # --wait prints the final status, then exits non-zero because jobs failed.
    waited = made.run('status', '--wait', '--interval', '0.2', '--query', 'counts')
    assert waited.exit_code == 4, waited.stderr  # a job failed
    assert waited.json() == {'queued': 0, 'running': 0, 'terminating': 0, 'succeeded': 3, 'failed': 3,
                             'terminated': 0, 'missing': 0}
    assert 'ERROR: 3 job(s) of sweep flaky failed' in waited.stderr
    assert 'Traceback' not in waited.stderr
    return made


def test_submit_again_finds_every_job_already_present(sweep):
    again = sweep.run('submit', '--query', '[submitted, alreadyPresent]')
    assert again.exit_code == 0, again.stderr
    assert again.json() == [0, 6]
    table = sweep.run('submit', '-o', 'table')
    assert table.stdout.splitlines()[0].split() == ['Sweep', 'Total', 'Submitted', 'Already', 'Present', 'Not',
                                                    'Submitted']


def test_status_table_state_filter_and_tail(sweep):
    table = sweep.run('status', '-o', 'table')
    assert table.exit_code == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ['Name', 'State', 'Exit', 'Start', '(UTC)', 'Duration', 'X']
    rows = [line.split() for line in lines[2:]]
    assert len(rows) == 6
    assert sorted((row[-1], row[1], row[2]) for row in rows) == [
        (str(x), 'failed' if x % 2 else 'succeeded', str(x % 2)) for x in range(6)]

    failed = sweep.run('status', '--state', 'failed', '--query', 'jobs[].parameters.X')
    assert failed.exit_code == 0, failed.stderr
    assert sorted(failed.json()) == [1, 3, 5]

    name = sweep.run('status', '--query', 'jobs[?parameters.X==`3`].name | [0]', '-o', 'tsv').stdout.strip()
    tail = sweep.run('status', '--job', name, '--tail', '1', '-o', 'tsv')
    assert tail.exit_code == 0, tail.stderr
    assert tail.stdout == 'loss=9\n'
    missing = sweep.run('status', '--job', 'no-such-job')
    assert missing.exit_code == 3 and 'ERROR: ' in missing.stderr and 'Traceback' not in missing.stderr


def test_metrics_by_name_and_regex_goal_top_csv_and_missing(sweep):
    best = sweep.run('metrics', '--metric', 'loss', '--goal', 'min', '--top', '2', '-o', 'table')
    assert best.exit_code == 0, best.stderr
    lines = best.stdout.splitlines()
    assert lines[0].split() == ['Name', 'State', 'loss', 'X']  # the column is named after the metric, as written
    # A failed job (X=1, loss 3) never ranks above a succeeded one (X=2, loss 6).
    assert [line.split()[1:] for line in lines[2:]] == [['succeeded', '0.0', '0'], ['succeeded', '6.0', '2']]

    regex = sweep.run('metrics', '--regex', r'training x=(\d+)', '--goal', 'max', '--csv', 'metrics.csv',
                      '--query', '[].[parameters.X, metric]')
    assert regex.exit_code == 0, regex.stderr
    assert regex.json() == [[x, float(x)] for x in (4, 2, 0, 5, 3, 1)]  # the succeeded (even) jobs first
    with open(os.path.join(sweep.directory, 'metrics.csv'), encoding='utf-8') as f:
        rows = list(csv.reader(f))
    assert rows[0] == ['name', 'state', 'metric', 'X'] and rows[1][2:] == ['4.0', '4'] and len(rows) == 7

    # Another file of an output directory; a metric that is not there is empty, never a crash.
    model = sweep.run('metrics', '--regex', r'model (\d+)', '--output-directory-id', 'MODEL',
                      '--file', 'sub/model.txt', '--query', '[].metric')
    assert sorted(model.json()) == [float(x) for x in range(6)]
    # A metric no job prints: an error naming what the jobs do print (issue 27), never a crash.
    absent = sweep.run('metrics', '--metric', 'accuracy', '-o', 'table')
    assert absent.exit_code == 3 and 'Traceback' not in absent.stderr, absent.stderr
    assert 'Metric accuracy matches nothing in the stdout.txt of the 6 finished job(s) of sweep flaky; names ' \
        'there: x, loss' in absent.stderr
    both = sweep.run('metrics', '--metric', 'loss', '--regex', 'x')
    assert both.exit_code == 6 and 'exactly one of --regex and --metric' in both.stderr


def test_download_one_folder_per_job(sweep):
    result = sweep.run('download', '--dest', 'outputs', '-o', 'json')
    assert result.exit_code == 0, result.stderr
    summary = result.json()
    assert summary['jobs'] == 6 and summary['failed'] == [] and summary['files'] >= 12
    from azext_batchai_sweep.core.units import size_text  # a size says its unit on stderr, as every size does
    assert 'Downloaded {} file(s) ({}) of 6 job(s)'.format(summary['files'], size_text(summary['bytes'])) in \
        result.stderr, result.stderr
    root = os.path.join(sweep.directory, 'outputs')
    assert len(os.listdir(root)) == 6
    for job in os.listdir(root):
        with open(os.path.join(root, job, 'stdouterr', 'stdout.txt'), encoding='utf-8') as f:
            x = f.readline().split('=')[1].strip()
        with open(os.path.join(root, job, 'MODEL', 'sub', 'model.txt'), encoding='utf-8') as f:
            assert f.read() == 'model {}\n'.format(x)
    again = sweep.run('download', '--dest', 'outputs', '--query', '[files, skipped]')
    assert again.json() == [0, summary['files']]


def test_resubmit_the_failed_jobs_after_the_fix(sweep):
    open(sweep.fixed, 'w').close()
    result = sweep.run('resubmit', '--wait', '--interval', '0.2', '-o', 'json')
    assert result.exit_code == 0, result.stderr
    summary = result.json()
    assert len(summary['resubmitted']) == 3 and summary['failed'] == []
    assert summary['counts']['succeeded'] == 3
    nothing = sweep.run('resubmit', '-o', 'table')
    assert nothing.exit_code == 0 and nothing.stdout.strip() == ''
    assert 'Sweep flaky: 0 job(s) resubmitted' in nothing.stderr
    done = sweep.run('status', '--wait', '--interval', '0.2', '--query', 'counts.succeeded')
    assert done.exit_code == 0, done.stderr
    assert done.json() == 6


def test_delete_needs_yes_then_deletes_by_state_and_name(sweep):
    refused = sweep.run('delete')
    assert refused.exit_code != 0  # no terminal to confirm on: nothing is deleted
    names = sweep.run('status', '--query', 'jobs[].name').json()
    # --no-wait returns once the deletion is requested and, like any az command's --no-wait, prints no result (the
    # summary line on stderr stays); status shows when the job is gone.
    one = sweep.run('delete', '--jobs', names[0], '--yes', '--no-wait')
    assert one.exit_code == 0, one.stderr
    assert one.stdout == '' and 'Sweep flaky: 1 job(s) deleted' in one.stderr
    for _ in range(20):
        # The plan is in the working directory: a deleted job is listed as planned but missing on the service.
        if names[0] not in sweep.run('status', '--query', "jobs[?state!='missing'].name").json():
            break
    else:
        pytest.fail('job {} still listed after delete --no-wait'.format(names[0]))
    rest = sweep.run('delete', '--state', 'succeeded', '--yes', '-o', 'table')
    assert rest.exit_code == 0, rest.stderr
    assert rest.stdout.splitlines()[2].split() == ['flaky', '5', '0', '0']
    assert sweep.run('status', '--query', "length(jobs[?state!='missing'])").json() == 0
    assert sweep.run('status', '--query', 'counts.missing').json() == 6


def test_a_job_the_service_refuses_is_reported_and_the_exit_code_is_non_zero(local_service, az, tmp_path):
    az.env.update(service_env(local_service))
    write_sweep(str(tmp_path), 'x', values=[1, 2])
    args = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'cli-' + uuid.uuid4().hex[:8],
            '-n', SWEEP]
    # The job asks for 5 nodes of a 4-slot cluster: the service refuses every PUT (a missing cluster is found before
    # any request, see tests/cli/test_sweep_identity.py).
    plan = az('batchai', 'sweep', 'create', *args, '--spec', 'sweep.yaml', '-c', local_service.cluster,
              '--plan-only')
    assert plan.exit_code == 0, plan.stderr
    path = tmp_path / 'flaky.plan.jsonl'
    path.write_text(path.read_text(encoding='utf-8').replace('"nodeCount":1', '"nodeCount":5'), encoding='utf-8')
    result = az('batchai', 'sweep', 'submit', *args, '-o', 'json')
    assert result.exit_code == 1
    summary = result.json()  # the result is printed all the same
    assert summary['submitted'] == 0 and len(summary['notSubmitted']) == 2
    assert 'InvalidNodeCount' in summary['failed'][0]['error']
    assert 'ERROR: 2 job(s) of sweep flaky were not submitted' in result.stderr


def test_a_missing_secret_stops_submit_before_anything_is_sent(local_service, az, tmp_path):
    az.env.update(service_env(local_service))
    write_sweep(str(tmp_path), 'x', values=[1], extra='')
    with open(tmp_path / 'sweep.yaml', encoding='utf-8') as f:
        text = f.read().replace('"environmentVariables"', '"secrets": [{"name": "TOKEN", "value": "$env:MY_TOKEN"}], '
                                '"environmentVariables"')
    (tmp_path / 'sweep.yaml').write_text(text, encoding='utf-8')
    experiment = 'cli-' + uuid.uuid4().hex[:8]
    args = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', experiment, '-n', SWEEP]
    result = az('batchai', 'sweep', 'submit', *args, '--spec', 'sweep.yaml', '-c', local_service.cluster)
    assert result.exit_code == 6  # bad input: a secret the environment lacks
    assert 'MY_TOKEN' in result.stderr and result.stdout == ''
    sent = az('batchai', 'sweep', 'submit', *args, '--query', 'submitted', env={'MY_TOKEN': 'hunter2'})
    assert sent.exit_code == 0, sent.stderr
    assert sent.json() == 1 and 'hunter2' not in sent.stdout + sent.stderr


def test_an_unreachable_endpoint_is_a_connection_error(az):
    token = os.path.join(az.config_dir, 'token')
    with open(token, 'w', encoding='ascii') as f:
        f.write('t')
    result = az('batchai', 'sweep', 'status', '-g', 'g', '-w', 'w', '-e', 'e', '-n', 'n',
                env={'AZURE_BATCHAI_SWEEP_ENDPOINT': 'http://127.0.0.1:9', 'AZURE_BATCHAI_SWEEP_TOKEN_FILE': token})
    assert result.exit_code == 7  # no service
    assert 'ERROR: The Batch AI service at http://127.0.0.1:9 cannot be reached' in result.stderr
    assert 'az batchai sweep local start' in result.stderr and 'Traceback' not in result.stderr
