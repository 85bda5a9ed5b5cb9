"""Issues 28 and 29 together through the real az and the session's local service: a sweep with two objectives and a
constraint, warm started from an earlier single-objective sweep (read from the service: its logs hold every metric)
and from that sweep's `metrics -o json` export (one objective only: said and skipped); then its report with every
new section at once (Run card, Pareto front, What mattered, inherited jobs marked). --plan-only / --validate-only
with the new keys together. Tiny deterministic jobs (data/tradeoff.py: accuracy Q, latency 100 Q K, memory 10 Q).
"""
import json
import os

import pytest

from .run_helpers import report_html, run_args, service_setup, target, write_tradeoff_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

OLD_Q = [0.2, 0.5, 0.8]
NEW_Q = [0.2, 0.3, 0.5, 0.6, 0.8]


MULTI = ['objectives: [{metric: val_accuracy, goal: max}, {metric: latency_ms, goal: min}]',
         'constraints: [{metric: memory_gb, max: 7}]']


@pytest.fixture(scope='module')
def ran(local_service, tmp_path_factory):
    az, directory, experiment = service_setup(local_service, tmp_path_factory, 'combo')
    old = write_tradeoff_sweep(directory, 'single', ['objective: {metric: val_accuracy, goal: max}',
                                       'limits: {maxConcurrentJobs: 3}'], OLD_Q)
    first = az(*run_args(local_service, experiment, 'single', old))
    assert first.exit_code == 0, first.stderr
    exported = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'single'), '-o', 'json')
    assert exported.exit_code == 0, exported.stderr
    with open(os.path.join(directory, 'single.json'), 'w', encoding='utf-8') as f:
        f.write(exported.stdout)
    spec = write_tradeoff_sweep(directory, 'multi', MULTI + [
        'sampling: {type: bayesian, count: 3, seed: 1, startupJobs: 4, warmStart: [single, single.json]}',
        'limits: {maxConcurrentJobs: 1}'], NEW_Q)
    run = az(*run_args(local_service, experiment, 'multi', spec))
    assert run.exit_code == 0, run.stderr
    return az, directory, experiment, run


def test_motpe_learns_from_the_earlier_sweep_and_skips_its_single_objective_export(ran):
    _, _, _, run = ran
    assert 'warmStart single: 6 finished job(s) inherited, 0 skipped' in run.stderr
    assert 'warmStart single.json: 0 finished job(s) inherited, 6 skipped' in run.stderr
    assert ('warmStart single.json: 6 job(s) has no value of latency_ms, memory_gb (a sweep with one objective '
            'does not log it): skipped') in run.stderr
    result = run.json()
    assert result['warmStart']['inherited'] == 6 and result['jobs'] == 3
    own = {(e['parameters']['Q'], e['parameters']['K'])
           for e in result['pareto']['ranked'] + result['pareto']['infeasible']}
    # nothing is run again: the new jobs are among the four configurations the earlier sweep did not try
    assert own and not own & {(q, k) for q in OLD_Q for k in (1, 2)}
    # the front is of this sweep's own jobs
    assert {e['name'] for e in result['pareto']['front']} <= {e['name'] for e in result['pareto']['ranked']}
    assert all(e['name'].startswith('multi-') for e in result['pareto']['ranked'])


def test_the_report_shows_every_new_section_at_once(ran, local_service):
    az, directory, experiment, run = ran
    made, html = report_html(az, local_service, experiment, 'multi', directory)
    for section in ('summary', 'pareto', 'importance', 'inherited', 'jobs'):
        assert '<section id="{}"'.format(section) in html, section
    assert '<div class="big ended">exhausted</div>' in html or '<div class="big ended">' in html
    assert 'warm start: 6 job(s) inherited from single (6), single.json (0)' in html
    inherited = html[html.index('<section id="inherited">'):]
    assert inherited[:inherited.index('</section>')].count('<span class="chip inherited">inherited</span>') == 6
    data = made.json()
    # What mattered explains this sweep's jobs: one entry per objective, the inherited jobs not counted
    importance = data['importance']
    assert [entry['objective'] for entry in importance] == ['val_accuracy', 'latency_ms']
    assert all(entry['jobs'] == len(data['summary']['figures']['pareto']['ranked']) <= 3 for entry in importance)
    assert json.dumps(data).count('"inherited"') >= 1 and len(data['jobs']) == run.json()['jobs']


@pytest.mark.parametrize('option', ['--plan-only', '--validate-only'])
def test_plan_only_with_the_new_keys_together(ran, option):
    az, directory, _, _ = ran
    spec = write_tradeoff_sweep(directory, 'plan', MULTI + [
        'sampling: {type: hyperband, sampler: bayesian, resource: EPOCHS, minResource: 1, maxResource: 9, seed: 4, '
        'startupJobs: 3, warmStart: [single.json, single]}',
        'limits: {maxConcurrentJobs: 3, stopAt: 0.75, noImprovementJobs: 5}'], NEW_Q, epochs='{{EPOCHS}}')
    result = az('batchai', 'sweep', 'run', '-g', 'rg', '-w', 'ws', '-e', 'exp', '-n', 'plan', '--spec', spec, '-c',
                'local', '-o', 'json', option,
                env={'AZURE_BATCHAI_SWEEP_ENDPOINT': 'http://127.0.0.1:9',
                     'AZURE_BATCHAI_SWEEP_TOKEN_FILE': os.path.join(directory, 'none')})
    assert result.exit_code == 0, result.stderr
    plan = result.json()
    assert plan['valid'] is True and plan['sampling']['sampler'] == 'bayesian'
    assert plan['limits']['stopAt'] == 0.75 and plan['limits']['noImprovementJobs'] == 5
    assert plan['warmStart'][0]['inherited'] == 0 and plan['warmStart'][0]['skipped'] == 6
    assert 'has no value of latency_ms, memory_gb' in result.stderr
    assert 'warmStart single: a sweep, read from the service by `run` (not by --plan-only)' in result.stderr
    assert ('Hyperband, the multi-fidelity model (BOHB: the TPE at each resource), limits.stopAt, '
            'limits.noImprovementJobs judge(s) by the first objective alone, val_accuracy (max)') in result.stderr
    assert {job['parameters']['EPOCHS'] for job in plan['firstJobs']} == {1}
