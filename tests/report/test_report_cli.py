"""`az batchai sweep report` through the real az on the session's local service (the sweep of conftest.py)."""
import os
import stat

import pytest

from tests.report.conftest import ceiling

pytestmark = [pytest.mark.az, pytest.mark.service]


def test_json_is_what_the_service_holds_and_the_plots_show(reported_sweep):
    data = reported_sweep.data
    status = {row['name']: row for row in reported_sweep.status['jobs']}
    jobs = {job['name']: job for job in data['jobs']}
    assert set(jobs) == set(status) and len(jobs) == 12
    for name, job in jobs.items():
        assert job['state'] == status[name]['state'] and job['parameters'] == status[name]['parameters']
        expected_epochs = 3 if status[name]['state'] == 'failed' else 8
        assert [step for step, _ in job['reports']] == [float(e) for e in range(1, expected_epochs + 1)]
        if job['state'] == 'succeeded':
            assert job['objective'] == ceiling(job['parameters'])
    succeeded = [job for job in jobs.values() if job['state'] == 'succeeded']
    best = max(succeeded, key=lambda job: ceiling(job['parameters']))
    assert data['summary']['best']['name'] == best['name']
    # The service's states, as status counts them (status also counts planned jobs missing from the service).
    assert data['summary']['counts'] == {state: count for state, count in reported_sweep.status['counts'].items()
                                         if state != 'missing'}
    assert data['stepKey'] == 'epoch' and data['sampling'] == 'random'  # the plan submit --spec wrote
    axes = {axis['name']: axis['kind'] for axis in data['parameters']}
    assert axes == {'LEARNING_RATE': 'log', 'UNITS': 'linear', 'OPT': 'categorical'}
    assert sorted(data['plots']['learningCurves']['drawn']) == sorted(jobs)
    assert data['plots']['bestSoFar']['expectedRandom'][-1][0] == len(succeeded)
    assert data['reportFile'] == reported_sweep.report_file
    with open(reported_sweep.report_file, encoding='utf-8') as f:
        html = f.read()
    assert html.startswith('<!DOCTYPE html>') and best['name'] in html
    assert stat.S_IMODE(os.stat(reported_sweep.report_file).st_mode) == 0o644


def test_table_without_plan_and_open(reported_sweep, tmp_path):
    # Another directory: no plan file there, so sampling and scales are inferred; --open runs $BROWSER.
    opened = tmp_path / 'opened.txt'
    browser = tmp_path / 'browser.sh'
    browser.write_text('#!/bin/sh\necho "$1" > {}\n'.format(opened))
    browser.chmod(0o755)
    result = reported_sweep.run('report', '--metric', 'val_accuracy', '--step', 'epoch', '--open', '-o', 'table',
                                cwd=str(tmp_path), env={'BROWSER': str(browser), 'DISPLAY': ':0'})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ['Sweep', 'Jobs', 'Succeeded'] and 'Report' in lines[0]
    assert lines[2].split()[:2] == ['curves', '12']
    report = tmp_path / 'curves-report.html'
    assert report.is_file() and str(report) in lines[2]
    assert 'Wrote the report of sweep curves (12 jobs, best ' in result.stderr
    assert opened.read_text().strip() == 'file://' + str(report)
    data = reported_sweep.run('report', '--metric', 'val_accuracy', '--query', '[sampling, plots.bestSoFar.'
                              'expectedRandom, parameters[0].kind]', cwd=str(tmp_path)).json()
    assert data == [None, None, 'log']  # no plan: no random-search curve; LEARNING_RATE spans 10^4, a log axis


def test_watch_opens_the_live_page_once(reported_sweep, tmp_path):
    # --watch --open: the browser az opens ($BROWSER) gets the live page once it is written; the sweep has ended, so
    # the first look makes the page final and the command returns.
    opened = tmp_path / 'opened.txt'
    browser = tmp_path / 'browser.sh'
    browser.write_text('#!/bin/sh\necho "$1" >> {}\n'.format(opened))
    browser.chmod(0o755)
    page = tmp_path / 'live.html'
    result = reported_sweep.run('report', '--metric', 'val_accuracy', '--watch', '--interval', '1', '--open',
                                '--output-file', str(page), '-o', 'none', cwd=str(tmp_path),
                                env={'BROWSER': str(browser), 'DISPLAY': ':0'}, timeout=120)
    assert result.exit_code == 0, result.stderr
    assert 'The sweep has ended: {} is final.'.format(page) in result.stderr
    assert page.is_file()
    assert opened.read_text().splitlines() == ['file://' + str(page)]


def test_a_metric_no_job_prints_is_an_error_naming_the_names_there(reported_sweep, tmp_path):
    # Issue 27: a report of empty plots for a misspelt --metric (exit 0) cost a user the sweep's look; now it names
    # what the jobs do print, and writes nothing.
    result = reported_sweep.run('report', '--metric', 'accuracy_nowhere', '-f', str(tmp_path / 'r.html'))
    assert result.exit_code == 3, result.stderr
    assert 'Metric accuracy_nowhere matches nothing in the stdout.txt of the 12 finished job(s) of sweep curves; ' \
        'names there: epoch, loss, val_accuracy' in result.stderr
    assert not (tmp_path / 'r.html').exists()


@pytest.mark.parametrize('args, code, message', [
    (['--metric', 'a', '--regex', 'a(1)'], 6, 'Give one of --regex and --metric'),
    (['--metric', 'a', '--step', 'ep och'], 6, '--step must be the name of a key'),
    (['--metric', 'a', '-f', '/nonexistent-dir/r.html'], 6, 'does not exist'),
    (['--regex', '(unclosed'], 6, 'invalid regular expression'),
])
def test_bad_arguments_fail_before_any_request(reported_sweep, args, code, message):
    result = reported_sweep.run('report', *args, env={'AZURE_BATCHAI_SWEEP_ENDPOINT': 'http://127.0.0.1:9'})
    assert result.exit_code == code, result.stderr  # bad input (docs/pipelines.md)
    assert message in result.stderr and 'Traceback' not in result.stderr


def test_without_an_objective_anywhere_the_metric_is_asked_for(reported_sweep):
    # Neither an option, nor the plan, nor a run's journal or jobs hold an objective for this sweep.
    result = reported_sweep.run('report', '--goal', 'min')
    assert result.exit_code == 6, result.stderr  # as metrics answers it (a missing argument: bad input)
    assert 'Give --metric or --regex: no objective is known for sweep curves' in result.stderr
    assert 'Traceback' not in result.stderr


def test_a_sweep_with_no_jobs_is_not_found(reported_sweep, tmp_path):
    args = list(reported_sweep.args)
    args[args.index('-n') + 1] = 'no-such-sweep'
    result = reported_sweep.az('batchai', 'sweep', 'report', *args, '--metric', 'val_accuracy', cwd=str(tmp_path))
    assert result.exit_code == 3, result.stderr
    assert 'Sweep no-such-sweep has no jobs' in result.stderr and 'Traceback' not in result.stderr
    assert not os.listdir(tmp_path)
    assert result.stdout == ''


@pytest.mark.parametrize('same_target', [True, False])
def test_the_plan_here_gives_the_objective_only_when_it_is_this_sweeps(reported_sweep, tmp_path, same_target):
    # `<name>.plan.jsonl` in the working directory, with an objective in its header: used when it names this
    # sweep's target, ignored when it is another experiment's plan of a sweep with the same name.
    import json
    with open(reported_sweep.plan_file, encoding='utf-8') as f:
        header, *rest = f.read().splitlines(keepends=True)
    header = json.loads(header)
    header['objective'] = {'metric': 'val_accuracy', 'goal': 'max'}
    if not same_target:
        header['experiment'] = 'another-experiment'
    (tmp_path / os.path.basename(reported_sweep.plan_file)).write_text(json.dumps(header) + '\n' + ''.join(rest),
                                                                        encoding='utf-8')
    result = reported_sweep.run('report', '-f', str(tmp_path / 'r.html'), '--query', 'summary.withObjective',
                                cwd=str(tmp_path))
    if same_target:
        assert result.exit_code == 0, result.stderr
        assert result.json() == reported_sweep.data['summary']['withObjective'] > 0
    else:
        assert result.exit_code == 6
        assert 'Give --metric or --regex: no objective is known for sweep curves' in result.stderr
