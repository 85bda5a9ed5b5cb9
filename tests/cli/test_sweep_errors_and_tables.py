"""Errors and output a user can act on (issue 10, rules 8-13), through the real az executable against the session's
local service: names that match nothing, problems found before the first request, no service at all, metrics, hints
that are commands to paste, and `-o table` within 100 columns for a sweep of two REAL parameters."""
import os

import pytest

from tests.cli.test_sweep_identity import Target
from tests.fixtures_az import AzRunner, service_env

pytestmark = [pytest.mark.az, pytest.mark.service]

# Two REAL parameters: a LOG grid (0.0001, 0.00316..., 0.1: long reprs) and a LINEAR one; the job logs loss=.
SWEEP = """jobNamePrefix: lr-sweep
parameters:
  - {name: LEARNING_RATE, type: numeric, dataType: REAL, start: 1e-4, end: 1e-1, numValues: 3, scale: LOG}
  - {name: MOMENTUM, type: numeric, dataType: REAL, start: 0.5, end: 0.9, numValues: 2, scale: LINEAR}
job:
  nodeCount: 1
  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs
  customToolkitSettings:
    commandLine: 'echo "loss={{LEARNING_RATE}}"; test "{{MOMENTUM}}" = 0.5'
"""


@pytest.fixture(scope='module')
def made(local_service, tmp_path_factory):
    """A finished 6-job sweep (the MOMENTUM 0.9 jobs fail): (target, create's table, submit's table)."""
    target = Target(local_service, str(tmp_path_factory.mktemp('tables')))
    with open(os.path.join(target.directory, 'sweep.yaml'), 'w', encoding='utf-8') as f:
        f.write(SWEEP)
    created = target.run('create', 'lr', '--spec', 'sweep.yaml', '-c', local_service.cluster, '-o', 'table')
    assert created.exit_code == 0, created.stderr
    submitted = target.run('submit', 'lr', '--wait', '--interval', '0.2', '-o', 'table')
    assert submitted.exit_code == 4, submitted.stderr  # three jobs failed (docs/pipelines.md)
    return target, created.stdout, submitted.stdout


def fits(table):
    lines = table.splitlines()
    assert lines, 'empty table'
    assert max(len(line) for line in lines) <= 100, '\n' + table
    return [line.split() for line in lines]


def test_every_table_fits_100_columns_and_shows_6_significant_digits(made):
    target, created, submitted = made
    rows = fits(created)
    assert rows[0] == ['Name', 'LEARNING_RATE', 'MOMENTUM']
    assert sorted({row[1] for row in rows[2:]}) == ['0.0001', '0.00316228', '0.1']
    assert fits(submitted)[0] == ['Sweep', 'Total', 'Submitted', 'Already', 'Present', 'Not', 'Submitted',
                                  'Succeeded', 'Failed']
    status = fits(target.run('status', 'lr', '-o', 'table').stdout)
    assert status[0] == ['Name', 'State', 'Exit', 'Start', '(UTC)', 'Duration', 'LEARNING_RATE',
                         'MOMENTUM']
    assert len(status) == 8 and all(len(row) == 8 for row in status[2:])  # Start is `MM-DD HH:MM`
    # JSON keeps the full precision.
    values = target.run('status', 'lr', '--query', 'jobs[].parameters.LEARNING_RATE').json()
    assert any(len(repr(value)) > 12 for value in values), values

    # metrics: a failed job never ranks above a succeeded one; the column is named after the metric.
    best = target.run('metrics', 'lr', '--metric', 'loss', '--goal', 'max', '-o', 'table').stdout
    rows = fits(best)
    assert rows[0] == ['Name', 'State', 'loss', 'LEARNING_RATE', 'MOMENTUM']  # the metric's own name, as jobs print it
    assert [row[1] for row in rows[2:]] == ['succeeded'] * 3 + ['failed'] * 3
    assert [row[2] for row in rows[2:5]] == ['0.1', '0.00316228', '0.0001']

    name = rows[-1][0]
    for command in (('resubmit', 'lr', '--jobs', name), ('stop', 'lr', '--yes'), ('download', 'lr', '--jobs', name),
                    ('delete', 'lr', '--jobs', name, '--yes')):
        result = target.run(*command, '-o', 'table')
        assert result.exit_code == 0, result.stderr
        if result.stdout.strip():
            fits(result.stdout)


def test_names_that_match_nothing_are_errors(made):
    target = made[0]
    svc = target.service
    for command in (('status', 'nope'), ('metrics', 'nope', '--metric', 'loss'), ('resubmit', 'nope'),
                    ('stop', 'nope', '--yes'), ('download', 'nope')):
        result = target.run(*command)
        assert result.exit_code == 3 and 'Sweep nope has no jobs in experiment' in result.stderr, result.stderr
    # delete is idempotent, as az's delete commands are: nothing to delete is a note, exit 0 (docs/pipelines.md).
    for command in (('delete', 'nope', '--yes'), ('delete', 'lr', '--jobs', 'lr-sweep-0000000000000000', '--yes')):
        result = target.run(*command)
        assert result.exit_code == 0 and 'nothing to delete' in result.stderr, result.stderr
    for command in ('resubmit', 'stop', 'download'):
        result = target.run(command, 'lr', '--jobs', 'lr-sweep-0000000000000000', '--yes' if command == 'stop'
                            else '--parallel', *([] if command == 'stop' else ['2']))
        assert result.exit_code == 3 and 'lr-sweep-0000000000000000' in result.stderr, (command, result.stderr)
        assert 'az batchai sweep status {}'.format(' '.join(target.args('lr'))) in result.stderr
    no_file = target.run('metrics', 'lr', '--metric', 'loss', '--file', 'nothere.txt')
    assert no_file.exit_code == 3 and 'has the file nothere.txt' in no_file.stderr
    workspace = target.az('batchai', 'sweep', 'status', '-g', svc.resource_group, '-w', 'nows', '-e', 'x', '-n', 'lr')
    assert workspace.exit_code == 3 and 'Workspace nows does not exist' in workspace.stderr


def test_metrics_arguments_are_checked_as_arguments(made):
    target = made[0]
    top = target.run('metrics', 'lr', '--metric', 'loss', '--top', '2')
    assert top.exit_code == 6 and '--goal' in top.stderr
    regex = target.run('metrics', 'lr', '--regex', 'loss=(')
    assert regex.exit_code == 6 and 'Invalid --regex' in regex.stderr and 'sweep definition' not in regex.stderr
    nogroup = target.run('metrics', 'lr', '--regex', 'loss=')
    assert nogroup.exit_code == 6 and 'Invalid --regex' in nogroup.stderr


def test_a_refused_job_is_never_told_to_run_the_same_command_again(made, tmp_path):
    target = made[0]
    with open(os.path.join(target.directory, 'sweep.yaml'), encoding='utf-8') as f:
        text = f.read().replace('nodeCount: 1', 'nodeCount: 9')  # more nodes than the cluster has
    with open(os.path.join(str(tmp_path), 'big.yaml'), 'w', encoding='utf-8') as f:
        f.write(text)
    result = target.run('submit', 'big', '--spec', os.path.join(str(tmp_path), 'big.yaml'), '-c',
                        target.service.cluster, '--plan-file', os.path.join(str(tmp_path), 'big.jsonl'))
    assert result.exit_code == 1, result.stderr
    assert 'InvalidNodeCount' in result.stdout and 'same command again' not in result.stderr
    assert 'will not help' in result.stderr and ' '.join(target.args('big')) in result.stderr


def test_no_service_and_no_login_names_both_ways_forward(tmp_path, local_service):
    config = tmp_path / 'empty-config'
    config.mkdir()
    az = AzRunner(str(config), cwd=str(tmp_path))
    result = az('batchai', 'sweep', 'status', '-g', 'g', '-w', 'w', '-e', 'e', '-n', 's')
    assert result.exit_code == 7 and 'Traceback' not in result.stderr  # no service
    assert 'az login' in result.stderr and 'az batchai sweep local start' in result.stderr

    # `local status` without --data-dir finds the service the config targets.
    az.env.update(service_env(local_service))
    status = az('batchai', 'sweep', 'local', 'status', '-o', 'json')
    assert status.exit_code == 0, status.stderr
    assert status.json()['running'] and status.json()['targeted']
    assert os.path.samefile(status.json()['dataDir'], local_service.data_dir)
