"""One number per job, the same everywhere (issue 42, item 5), through the real az on the session's local service.

A job a bandit policy stops goes on printing for a moment (here: it traps SIGTERM and prints three better epochs
before it exits, as a training loop finishing its epoch does). Its value is the one it had when it was judged
(core/tuning/job_value.py): `run`'s result, `status` (Latest beside Best, -o table too), `metrics` (its later value
shown apart, as afterDecision) and `report` all say the same number, and none ranks it above the sweep's best; its
steps after the decision count as run, not saved (item 6). Two
jobs tied for best: `metrics --top 1` names the job `run` names.
"""
import sys

import pytest

from .run_helpers import report_html, run_args, service_setup, target

pytestmark = [pytest.mark.az, pytest.mark.service]

# epoch=N val_accuracy=Q every 0.15 s; on SIGTERM, three more epochs at 0.99 (after the decision), then exit.
LATE_LINES = '''\
import signal, sys, time
q, epochs = float(sys.argv[1]), int(sys.argv[2])
epoch = 0
def late(*_):
    for extra in range(1, 4):
        print('epoch={} val_accuracy=0.99'.format(epoch + extra), flush=True)
    sys.exit(143)
signal.signal(signal.SIGTERM, late)
for epoch in range(1, epochs + 1):
    print('epoch={} val_accuracy={}'.format(epoch, q), flush=True)
    time.sleep(0.15)
'''


def _write(directory, name, values, policy):
    script = '{}/late_lines.py'.format(directory)
    with open(script, 'w', encoding='utf-8') as f:
        f.write(LATE_LINES)
    spec = '{}/{}.yaml'.format(directory, name)
    with open(spec, 'w', encoding='utf-8') as f:
        f.write('\n'.join([
            'jobNamePrefix: {}'.format(name),
            'objective: {metric: val_accuracy, goal: max, step: epoch}',
            'limits: {{maxConcurrentJobs: {}}}'.format(len(values)),
            *([policy] if policy else []),
            'parameters:', '  - {{name: Q, type: discrete, values: {}}}'.format(list(values)),
            'job:', '  nodeCount: 1', '  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs',
            '  customToolkitSettings: {{commandLine: "{} {} {{{{Q}}}} 30"}}'.format(sys.executable, script)]) + '\n')
    return spec


@pytest.fixture(scope='module')
def setup(local_service, tmp_path_factory):
    return service_setup(local_service, tmp_path_factory, 'onevalue')


def _rows(result):
    return result.get('jobs', result) if isinstance(result, dict) else result


def test_a_stopped_jobs_value_is_its_value_when_judged_in_every_command(setup, local_service):
    az, directory, experiment = setup
    spec = _write(directory, 'late', [0.9, 0.3], 'earlyTermination: {policy: bandit, slackFactor: 0.1, '
                                                 'delayEvaluation: 2}')
    run = az(*run_args(local_service, experiment, 'late', spec))
    assert run.exit_code == 0, run.stderr
    result = run.json()
    assert result['best']['parameters'] == {'Q': 0.9} and result['best']['objective'] == 0.9
    assert result['decisions'].get('stopped') == 1, result
    sweep = target(local_service, experiment, 'late')

    status = az('batchai', 'sweep', 'status', *sweep, '-o', 'json')
    assert status.exit_code == 0, status.stderr
    stopped = next(job for job in status.json()['jobs'] if job['parameters'] == {'Q': 0.3})
    assert stopped['tuning']['decision'] == 'stopped'
    assert stopped['tuning']['latest'] == 0.3 and stopped['tuning']['best'] == 0.3, stopped['tuning']
    table = az('batchai', 'sweep', 'status', *sweep, '-o', 'table').stdout.splitlines()
    header = table[0].split()
    # The job's value is headed by the objective's metric, as in metrics, report and run's end (core/units.py).
    assert header[header.index('Step') + 1:header.index('Step') + 3] == ['val_accuracy', 'Best'], table[0]
    row = next(line.split() for line in table if line.startswith(stopped['name']))
    assert row[header.index('val_accuracy')] == '0.3'
    best_row = next(line.split() for line in table if line.startswith(result['best']['name']))
    assert best_row[header.index('val_accuracy')] == '0.9'
    best_said = 'best val_accuracy 0.9 ({})'.format(result['best']['name'])
    assert best_said in run.stderr and best_said in status.stderr

    # The log holds the later lines (0.99): metrics shows them apart, and ranks by the value when judged.
    metrics = az('batchai', 'sweep', 'metrics', *sweep, '-o', 'json')
    assert metrics.exit_code == 0, metrics.stderr
    rows = {row['name']: row for row in _rows(metrics.json())}
    assert rows[stopped['name']]['metric'] == 0.3 and rows[stopped['name']]['afterDecision'] == 0.99, rows
    assert _rows(metrics.json())[0]['name'] == result['best']['name']
    top = az('batchai', 'sweep', 'metrics', *sweep, '--top', '1', '-o', 'table').stdout
    assert top.splitlines()[0].split()[:3] == ['Name', 'State', 'val_accuracy'], top
    assert top.splitlines()[2].split()[:3] == [result['best']['name'], 'succeeded', '0.9'], top
    assert 'After Decision' in az('batchai', 'sweep', 'metrics', *sweep, '-o', 'table').stdout
    assert result['best']['name'] in top and stopped['name'] not in top

    # Savings are what was saved: the stopped job's steps count as its log shows them, the later ones too.
    tail = az('batchai', 'sweep', 'status', *sweep, '--job', stopped['name'], '--tail', '100', '-o', 'json')
    ran = sum(1 for line in tail.json() if line.startswith('epoch='))
    assert ran >= stopped['tuning']['step'] + 3, tail.stdout  # three lines after the decision
    assert (result['compute']['jobSteps'], result['compute']['jobStepsFull']) == (30 + ran, 60), result['compute']
    assert '{} of 60 job-steps run'.format(30 + ran) in status.stderr

    made, _ = report_html(az, local_service, experiment, 'late', directory)
    report = made.json()
    assert best_said in made.stderr
    shown = az('batchai', 'sweep', 'report', *sweep, '-f', directory + '/late-table.html', '-o', 'table').stdout
    assert shown.splitlines()[0].split()[-2:] == ['val_accuracy', 'Report'] and ' 0.9 ' in shown.splitlines()[2], shown
    ended = az(*run_args(local_service, experiment, 'late', spec)[:-2], '-o', 'table')  # run again: it has ended
    assert ended.exit_code == 0, ended.stderr
    lines = ended.stdout.splitlines()
    assert 'val_accuracy' in lines[0].split() and 'Objective' not in lines[0], ended.stdout
    assert lines[2].split()[[h for h in lines[0].split() if h != 'Job'].index('val_accuracy')] == '0.9', ended.stdout
    assert (report['summary']['best']['name'], report['summary']['best']['value']) == (result['best']['name'], 0.9)
    job = next(job for job in report['jobs'] if job['name'] == stopped['name'])
    assert job['objective'] == 0.3, job


def test_ties_break_the_same_way_in_run_and_metrics_top_1(setup, local_service):
    az, directory, experiment = setup
    spec = _write(directory, 'tie', ['0.5', '0.50', '0.4'], None)  # three jobs, two tied at 0.5
    run = az(*run_args(local_service, experiment, 'tie', spec))
    assert run.exit_code == 0, run.stderr
    best = run.json()['best']['name']
    top = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'tie'), '--top', '1', '-o', 'json')
    assert top.exit_code == 0, top.stderr
    assert [row['name'] for row in _rows(top.json())] == [best]
    ranked = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'tie'), '-o', 'json')
    tied = sorted(row['name'] for row in _rows(ranked.json()) if row['metric'] == 0.5)
    assert len(tied) == 2 and best == tied[0]  # the first by name, in both
