"""`sweep run`, `metrics` and `report` through the real az and the session's local service, with jobs that print the
issue's hostile values: 1e308 and -1e308 under the median policy, a job whose first report is at epoch 1e308 (a job
resuming from a checkpoint), a job that repeats a step. The run ends with the sweep's best value; a re-run goes on;
`metrics --reduce mean` shows 1e308; the report is written."""
import os
import sys
import textwrap

import pytest

from tests.fixtures_az import service_az

pytestmark = [pytest.mark.az, pytest.mark.service]

# Each job prints the lines of its LINES parameter (';' between lines): the values are the job's output, untrusted.
PRINTER = textwrap.dedent('''
    import sys, time
    for line in sys.argv[1].split(';'):
        print(line, flush=True)
        time.sleep(0.4)  # running while the controller judges it
''')
JOBS = ['epoch=1 val_accuracy=1e308;epoch=2 val_accuracy=1e308;' * 3,
        ';'.join('epoch={} val_accuracy=-1e308'.format(e) for e in range(1, 7)),
        'epoch=1e308 val_accuracy=0.5;epoch=1 val_accuracy=0.4;epoch=2 val_accuracy=0.3',
        'epoch=1 val_accuracy=99;epoch=1 val_accuracy=1e300;epoch=2 val_accuracy=5e-324']


def test_hostile_values_never_end_a_sweep_its_metrics_or_its_report(local_service, tmp_path):
    directory = str(tmp_path)
    with open(os.path.join(directory, 'printer.py'), 'w', encoding='utf-8') as f:
        f.write(PRINTER)
    command = '{} {} \\"{{{{LINES}}}}\\"'.format(sys.executable, os.path.join(directory, 'printer.py'))
    spec = os.path.join(directory, 'hostile.yaml')
    with open(spec, 'w', encoding='utf-8') as f:
        f.write('\n'.join([
            'objective: {metric: val_accuracy, goal: max, step: epoch}',
            'earlyTermination: {policy: median}',
            'limits: {maxConcurrentJobs: 4}',
            'parameters:',
            '  - name: LINES',
            '    type: discrete',
            '    values: [{}]'.format(', '.join('"{}"'.format(line) for line in JOBS)),
            'job:',
            '  nodeCount: 1',
            '  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs',
            '  customToolkitSettings: {{commandLine: "{}"}}'.format(command), '']))
    az = service_az(local_service, directory)
    target = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'hostile', '-n', 'hostile']
    run = az('batchai', 'sweep', 'run', *target, '--spec', spec, '-c', local_service.cluster, '--poll-interval',
             '0.2', '-o', 'json', timeout=300)
    assert run.exit_code == 0, run.stderr
    assert 'Traceback' not in run.stderr
    result = run.json()
    assert result['ended'] == 'exhausted' and result['jobs'] == 4
    assert result['best']['objective'] == 1e308
    # judged while they ran: at epoch 3 and later the -1e308 job is below the median of itself and the job that
    # reported epoch 1e308 first (it has reached every step)
    assert result['decisions'].get('stopped', 0) >= 1, run.stderr
    again = az('batchai', 'sweep', 'run', *target, '--spec', spec, '-c', local_service.cluster, '--poll-interval',
               '0.2', '-o', 'json', timeout=300)
    assert again.exit_code == 0, again.stderr
    assert again.json()['best']['objective'] == 1e308

    for output in ('json', 'table'):
        status = az('batchai', 'sweep', 'status', *target, '-o', output, timeout=120)
        assert status.exit_code == 0 and 'Traceback' not in status.stderr, status.stderr

    mean = az('batchai', 'sweep', 'metrics', *target, '--reduce', 'mean', '-o', 'json', timeout=120)
    assert mean.exit_code == 0, mean.stderr
    by_lines = {row['parameters']['LINES']: row['metric'] for row in mean.json()}
    assert by_lines[JOBS[0]] == 1e308 and by_lines[JOBS[1]] == -1e308

    report = az('batchai', 'sweep', 'report', *target, '-f', os.path.join(directory, 'hostile.html'), '-o', 'json',
                timeout=120)
    assert report.exit_code == 0, report.stderr
    assert report.json()['summary']['best']['value'] == 1e308
    assert os.path.getsize(os.path.join(directory, 'hostile.html')) > 1000
