"""Model-based Hyperband and warm start through the real az and the session's local service (issue 28, items 2-3):
tiny deterministic jobs (data/curve.py), one at a time, so the sweep on the service must be the one the same
controller makes in-process on the same curves, even when a first process stops early and a second one goes on; then
a bayesian sweep warm started from that sweep (by name) and from its `metrics -o json` export, and its report."""
import json
import os
import re

import pytest

from azext_batchai_sweep.core.service.listing import env_of, parameters_of
from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.controller import Limits
from azext_batchai_sweep.core.tuning.simulation import simulate, sweep_controller

from .run_helpers import Watcher, run_args, service_setup, target, with_q_range, write_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

EPOCHS = 3
# s_max = 1: bracket 1 runs 3 configurations for 1 epoch and promotes the best to 3; bracket 0 runs 2 for 3 epochs.
BOHB = {'type': 'hyperband', 'sampler': 'bayesian', 'resource': 'EPOCHS', 'minResource': 1, 'maxResource': 3,
        'eta': 3, 'seed': 4, 'startupJobs': 2, 'randomFraction': 0}
Q_RANGE = '{name: Q, type: numeric, dataType: REAL, start: 0.0, end: 1.0, scale: LINEAR}'


def curve(params):
    # data/curve.py prints each value with 6 decimals: the in-process reference sees the same numbers
    return [float('{:.6f}'.format(params['Q'] * (1 - 0.5 ** epoch))) for epoch in range(1, EPOCHS + 1)]


@pytest.fixture(scope='module')
def setup(local_service, tmp_path_factory):
    return service_setup(local_service, tmp_path_factory, 'bohb')


@pytest.fixture(scope='module')
def bohb_run(setup, local_service, batchai_client):
    az, directory, experiment = setup
    sampling = 'sampling: ' + json.dumps(BOHB)
    spec = with_q_range(write_sweep(directory, 'bohb', [sampling, 'limits: {maxConcurrentJobs: 1}'], [0.5],
                                  sleep=0.05), Q_RANGE)
    with Watcher(batchai_client, local_service, experiment, 'bohb') as watcher:
        # a first process stops after 3 jobs; a second one (a new sampler, the results read back from the service)
        # goes on: the sweep must be the one an uninterrupted run makes
        first = az(*run_args(local_service, experiment, 'bohb', spec, '--max-total-jobs', '3'))
        assert first.exit_code == 0, first.stderr
        assert first.json()['ended'] == 'maxTotalJobs'
        run = az(*run_args(local_service, experiment, 'bohb', spec, '--verbose'))
    assert run.exit_code == 0, run.stderr
    return run, watcher.jobs()


def test_model_based_hyperband_on_the_service_is_the_in_process_sweep(bohb_run):
    run, jobs = bohb_run
    result = run.json()
    assert result['ended'] == 'exhausted' and result['jobs'] == 3 + 1 + 2
    expected, _, end = simulate(sweep_controller([NumParamSpec('Q', 0.0, 1.0, 'REAL', 'LINEAR')], BOHB,
                                                 limits=Limits(max_concurrent_jobs=1), step_label='epoch'), curve)
    assert end == 'exhausted'
    jobs = sorted(jobs, key=lambda job: int(env_of(job)['BATCHAI_SWEEP_INDEX']))
    assert [(parameters_of(job)['Q'], float(env_of(job)['BATCHAI_SWEEP_RESOURCE'])) for job in jobs] == \
        [(t.params['Q'], t.resource) for t in expected]
    # bracket 0's two configurations: the first from the 3 results at 1 epoch (1 at 3 is fewer than startupJobs),
    # the second from the 2 at 3 epochs (the promotion's and the first's): the highest resource with enough
    notes = re.findall(r'submitted \S+ \((bracket 0, rung 0[^)]*)\)', run.stderr)
    assert notes == ['bracket 0, rung 0, EPOCHS 3; TPE on the 3 results at EPOCHS 1',
                     'bracket 0, rung 0, EPOCHS 3; TPE on the 2 results at EPOCHS 3'], run.stderr


def test_a_warm_started_sweep_learns_from_an_earlier_one_and_its_export(bohb_run, setup, local_service):
    az, directory, experiment = setup
    _, earlier = bohb_run
    export = az('batchai', 'sweep', 'metrics', *target(local_service, experiment, 'bohb'), '-o', 'json')
    assert export.exit_code == 0, export.stderr
    with open(os.path.join(directory, 'bohb-metrics.json'), 'w', encoding='utf-8') as f:
        f.write(export.stdout)
    # this sweep's Q starts at 0.5: the earlier jobs below are out of its range
    kept = sorted(parameters_of(job)['Q'] for job in earlier if parameters_of(job)['Q'] >= 0.5)
    assert 0 < len(kept) < len(earlier)
    sampling = 'sampling: {type: bayesian, count: 3, seed: 2, startupJobs: 2, warmStart: [bohb, bohb-metrics.json]}'
    spec = with_q_range(write_sweep(directory, 'warm', [sampling, 'limits: {maxConcurrentJobs: 1}'], [0.5], epochs=2,
                                  sleep=0.01),
                      '{name: Q, type: numeric, dataType: REAL, start: 0.5, end: 1.0, scale: LINEAR}')
    run = az(*run_args(local_service, experiment, 'warm', spec, '--verbose'))
    assert run.exit_code == 0, run.stderr
    result = run.json()
    assert result['ended'] == 'exhausted' and result['jobs'] == 3  # the inherited jobs are not counted nor run
    skipped = len(earlier) - len(kept)
    assert result['warmStart']['inherited'] == 2 * len(kept)
    for source in ('bohb', 'bohb-metrics.json'):
        assert 'warmStart {}: {} finished job(s) inherited, {} skipped'.format(source, len(kept), skipped) \
            in run.stderr
        assert 'warmStart {}: {} job(s) has a value of Q outside this sweep\'s range (or off its grid): skipped'.format(
            source, skipped) in run.stderr
    # the model is used from the first job: the inherited results count toward startupJobs
    assert re.search(r'submitted \S+ \(bayesian: TPE over {} jobs with an objective'.format(2 * len(kept)),
                     run.stderr), run.stderr

    html_file = os.path.join(directory, 'warm.html')
    report = az('batchai', 'sweep', 'report', *target(local_service, experiment, 'warm'), '--output-file', html_file,
                '--query', 'run', '-o', 'json')
    assert report.exit_code == 0, report.stderr
    outline = report.json()
    assert outline['ended'] == 'exhausted' and outline['sampling']['warmStart'] == ['bohb', 'bohb-metrics.json']
    assert sorted(job['parameters']['Q'] for job in outline['warmStart']['jobs']) == sorted(kept * 2)
    with open(html_file, encoding='utf-8') as f:
        html = f.read()
    assert html.count('<span class="chip inherited">inherited</span>') == 2 * len(kept)
    assert '<div class="big ended">exhausted</div>' in html


def test_a_warm_start_from_a_sweep_that_is_not_there_is_refused_before_any_job(setup, local_service):
    az, directory, experiment = setup
    spec = write_sweep(directory, 'nowhere', ['sampling: {type: bayesian, count: 2, warmStart: [no-such-sweep]}'],
                       [0.5, 0.6], epochs=2)
    run = az(*run_args(local_service, experiment, 'nowhere', spec))
    assert run.exit_code == 6, run.stderr
    assert 'sampling.warmStart[0]: expected a sweep of experiment {} or a results file (.json): no job of sweep ' \
        'no-such-sweep is there'.format(experiment) in run.stderr
    status = az('batchai', 'sweep', 'status', *target(local_service, experiment, 'nowhere'), '-o', 'json')
    assert status.exit_code == 3, status.stderr  # nothing was submitted
