"""The report of a sweep the adaptive controller ran (`az batchai sweep run`, issue 14): its decisions on the curves
and in the table, its objective taken from the sweep file, on the session's local service."""
import glob
import os
import re
import shutil
import uuid
import xml.etree.ElementTree as ET

import pytest

from azext_batchai_sweep.core.report.decisions import decisions_from_run_rows
from tests.fixtures_az import service_az
from tests.tuning.run_helpers import steps_in_log, write_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]


def test_run_rows_become_decisions():
    rows = {'a': {'decision': 'stopped', 'rule': 'bandit', 'reason': 'stopped at epoch 2 by bandit: 0.1 < 0.6 / 1.2',
                  'step': 2, 'rung': None, 'bracket': None},
            'b': {'decision': 'ran to the end', 'rule': None, 'reason': None},
            'c': {'decision': 'promoted', 'rule': 'hyperband', 'reason': 'promoted to rung 1', 'step': 1, 'rung': 0,
                  'bracket': 2},
            'd': {'decision': 'timeout', 'rule': 'limits', 'reason': 'the sweep\'s timeout', 'step': 3}}
    got = decisions_from_run_rows(rows)
    assert sorted(got) == ['a', 'c', 'd']
    assert got['a'] == {'action': 'stopped', 'rule': 'bandit', 'reason': rows['a']['reason'], 'step': 2,
                        'rung': None, 'bracket': None}
    assert got['c']['action'] == 'promoted' and (got['c']['rung'], got['c']['bracket']) == (0, 2)
    assert got['d']['action'] == 'stopped'


def test_report_of_a_bandit_run_shows_its_decisions(local_service, tmp_path):
    az = service_az(local_service, str(tmp_path))
    spec = write_sweep(str(tmp_path), 'bandit', [
        'limits: {maxConcurrentJobs: 3}', 'earlyTermination: {policy: bandit, slackFactor: 0.2, delayEvaluation: 2}'],
        [0.9, 0.3, 0.8, 0.2, 0.85], epochs=6, sleep=0.1)
    target = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'rep-' + uuid.uuid4().hex[:8],
              '-n', 'bandit']
    run = az('batchai', 'sweep', 'run', *target, '--spec', spec, '-c', local_service.cluster, '--poll-interval',
             '0.2', '-o', 'json')
    assert run.exit_code == 0, run.stderr
    stopped = {name for name, row in _status_rows(az, target).items() if row.get('decision') == 'stopped'}
    assert stopped, run.stdout  # bandit stopped the poor ones
    # No --metric: the objective is the sweep file's (val_accuracy, max, step epoch), read from the run's journal.
    report = az('batchai', 'sweep', 'report', *target, '-o', 'json')
    assert report.exit_code == 0, report.stderr
    data = report.json()
    assert data['objective']['metric'] == 'val_accuracy' and data['stepKey'] == 'epoch'
    jobs = {job['name']: job for job in data['jobs']}
    assert {name for name, job in jobs.items() if job['stoppedEarly']} == stopped
    for name in stopped:
        assert jobs[name]['mark'] == 'stopped' and jobs[name]['state'] == 'terminated'
        assert re.fullmatch(r'stopped at epoch \d by bandit: .* < .* / 1\.2', jobs[name]['decision']['reason'])
    assert data['summary']['decisions'] == {'stopped': len(stopped)}
    assert data['summary']['best']['parameters'] == {'Q': 0.9}
    # Saved: what the stopped jobs did not run, as their logs show it (a step printed after the decision ran: issue 42,
    # item 6); their value is at the decision (lastStep).
    ran = {name: steps_in_log(az, local_service, target[5], 'bandit', name) for name in stopped}
    assert all(ran[name] >= jobs[name]['lastStep'] for name in stopped), (ran, jobs)
    assert data['summary']['compute']['savedJobSteps'] == sum(6 - ran[name] for name in stopped) > 0
    with open(data['reportFile'], encoding='utf-8') as f:
        html = f.read()
    curves = ET.fromstring(re.search(r'<svg class="plot learning-curves.*?</svg>', html, re.S).group(0))
    crosses = [el for el in curves.iter('{http://www.w3.org/2000/svg}path') if 'end-stopped' in el.get('class', '')]
    assert {el.get('data-job') for el in crosses} == stopped
    assert all('by bandit' in el.find('{http://www.w3.org/2000/svg}title').text for el in crosses)
    assert 'saved by early termination' in html
    assert os.path.basename(data['reportFile']) == 'bandit-report.html'
    assert data['sampling'] == 'grid'  # carried by the run's jobs (sweep run writes no plan)

    # Without the run's journal (another machine), the decisions are rebuilt from the service, as status does.
    journals = glob.glob(os.path.join(az.config_dir, '**', '*.run.json'), recursive=True)
    assert len(journals) == 1
    os.unlink(journals[0])
    again = az('batchai', 'sweep', 'report', *target, '-f', str(tmp_path / 'again.html'), '-o', 'json').json()
    rebuilt = {job['name']: job for job in again['jobs']}
    assert {name for name, job in rebuilt.items() if job['stoppedEarly']} == stopped
    assert all(rebuilt[name]['decision']['reason'].startswith('stopped by bandit') for name in stopped)
    assert again['summary']['best']['name'] == data['summary']['best']['name']
    if os.environ.get('REPORT_SCREENSHOTS'):  # for a person to look at (tests/report/test_report_browser.py)
        os.makedirs(os.environ['REPORT_SCREENSHOTS'], exist_ok=True)
        shutil.copy(data['reportFile'], os.environ['REPORT_SCREENSHOTS'])


def _status_rows(az, target):
    status = az('batchai', 'sweep', 'status', *target, '-o', 'json')
    assert status.exit_code == 0, status.stderr
    return {row['name']: row.get('tuning') or {} for row in status.json()['jobs']}
