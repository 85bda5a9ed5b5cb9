"""`az batchai sweep run` with bayesian sampling and a bandit policy, end to end: the real az, the session's local
service, tiny deterministic jobs (data/curve.py). One job at a time, the sweep is a pure function of the seed and the
results, so the jobs on the service must be exactly those of the same controller run in-process on the same curves,
even when the sweep is run by two processes one after the other.
"""
import uuid

import pytest

from azext_batchai_sweep.core.service.listing import env_of, parameters_of
from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.controller import Controller, Limits
from azext_batchai_sweep.core.tuning.policies import make_policy
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.simulation import simulate
from tests.fixtures_az import service_az

from .run_helpers import Watcher, with_q_range, write_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

EPOCHS, COUNT, SEED, STARTUP = 4, 7, 1, 3
BANDIT = {'policy': 'bandit', 'slackFactor': 0.1, 'evaluationInterval': 1, 'delayEvaluation': 1}


def curve(params):
    # data/curve.py prints each value with 6 decimals: the in-process reference sees the same numbers
    return [float('{:.6f}'.format(params['Q'] * (1 - 0.5 ** epoch))) for epoch in range(1, EPOCHS + 1)]


def reference(seed):
    sampler = TPESampler([NumParamSpec('Q', 0.0, 1.0, 'REAL', 'LINEAR')], goal='max', seed=seed, count=COUNT,
                         startup_jobs=STARTUP)
    trials, _, end = simulate(Controller(sampler, make_policy(BANDIT, 'max', 'epoch'), Limits(max_concurrent_jobs=1)),
                              curve)
    assert end == 'exhausted'
    return trials


def test_bayesian_sweep_with_bandit_on_the_service(local_service, batchai_client, tmp_path):
    directory = str(tmp_path)
    az = service_az(local_service, directory)
    experiment = 'tpe-' + uuid.uuid4().hex[:8]
    expected = reference(SEED)
    stopped = [t.index for t in expected if t.state == 'terminated']
    assert stopped[0] < 3 < stopped[-1], 'the reference must stop jobs in both processes'

    sections = ['sampling: {{type: bayesian, count: {}, seed: {}, startupJobs: {}}}'.format(COUNT, SEED, STARTUP),
                'limits: {maxConcurrentJobs: 1}',
                'earlyTermination: {policy: bandit, slackFactor: 0.1, evaluationInterval: 1, delayEvaluation: 1}']
    # 0.4 s per epoch, polls every 0.1 s: the controller sees every job running at its evaluations, as the
    # in-process simulation does (a job that finished between two polls would escape the policy)
    # Q as a range instead of write_sweep's discrete values
    spec = with_q_range(write_sweep(directory, 'tpe', sections, [0.5], epochs=EPOCHS, sleep=0.4),
                        '{name: Q, type: numeric, dataType: REAL, start: 0.0, end: 1.0, scale: LINEAR}')

    run_args = ['batchai', 'sweep', 'run', '-g', local_service.resource_group, '-w', local_service.workspace,
                '-e', experiment, '-n', 'tpe', '--spec', spec, '-c', local_service.cluster, '--poll-interval', '0.1',
                '-o', 'json']
    with Watcher(batchai_client, local_service, experiment, 'tpe') as watcher:
        # a first process stops after 3 jobs; a second one (a new sampler, the history rebuilt from the service)
        # goes on: the sweep must be the one an uninterrupted run makes
        first = az(*run_args, '--max-total-jobs', '3')
        assert first.exit_code == 0, first.stderr
        assert first.json()['ended'] == 'maxTotalJobs' and first.json()['jobs'] == 3
        run = az(*run_args)
    assert run.exit_code == 0, run.stderr
    assert watcher.most == 1
    result = run.json()
    assert result['ended'] == 'exhausted' and result['jobs'] == COUNT

    jobs = sorted(watcher.jobs(), key=lambda job: int(env_of(job)['BATCHAI_SWEEP_INDEX']))
    qs = [parameters_of(job)['Q'] for job in jobs]
    assert qs == [t.params['Q'] for t in expected]
    assert result['decisions']['stopped'] == len(stopped), run.stderr
    # What the sampler and the policy must have done, whatever the in-process run says (a bug of the sampler or
    # of the policy is in both): every job's value is Q * (1 - 0.5^epoch), so Q orders the jobs at each epoch.
    # The TPE's first model-based job lies nearest the best startup job (its good group of one), and the model-based
    # jobs find a better Q than the startup ones; the bandit (slack 10%, from epoch 1, one job at a time) stops
    # exactly the jobs whose Q is below the best earlier one's / 1.1.
    best_startup = max(range(STARTUP), key=lambda i: qs[i])
    assert min(range(STARTUP), key=lambda i: abs(qs[STARTUP] - qs[i])) == best_startup
    assert max(qs[STARTUP:]) > qs[best_startup]
    assert stopped == [j for j in range(1, COUNT) if qs[j] * 1.1 < max(qs[:j])]
    best = max((t for t in expected if t.state == 'succeeded'), key=lambda t: t.reports[-1].value)
    assert result['best']['parameters'] == {'Q': best.params['Q']}

    # create and submit refuse bayesian sampling, pointing to sweep run, before any request
    create = az('batchai', 'sweep', 'create', '-g', local_service.resource_group, '-w', local_service.workspace,
                '-e', experiment, '-n', 'tpe2', '--spec', spec, '-c', local_service.cluster)
    assert create.exit_code != 0 and 'az batchai sweep run' in create.stderr and 'Traceback' not in create.stderr


GRID_JOBS, GRID_SEED = 8, 2
GRID_Q = '{name: Q, type: numeric, dataType: REAL, start: 0.0, end: 1.0, scale: LINEAR, step: 0.05}'


def grid_reference(count):
    """The 8 jobs of a TPE on Q's grid of 21 values told `count` jobs (None: not told)."""
    sampler = TPESampler([NumParamSpec('Q', 0.0, 1.0, 'REAL', 'LINEAR', step=0.05)], goal='max', seed=GRID_SEED,
                         count=count, startup_jobs=STARTUP)
    trials, _, _ = simulate(Controller(sampler, None, Limits(max_total_jobs=GRID_JOBS, max_concurrent_jobs=1)),
                            lambda params: curve(params)[:2])
    return [t.params['Q'] for t in trials]


@pytest.mark.parametrize('bound', ['file', 'option'])
def test_a_bayesian_sweep_bounded_by_max_total_jobs_alone_ends_with_its_local_phase(local_service, batchai_client,
                                                                                     tmp_path, bound):
    """No count: the sweep's size is limits.maxTotalJobs (or --max-total-jobs, which overrides it), and the TPE's local
    phase (its last 30% of jobs: grid neighbours of the best ones) comes from that number, as with a count."""
    directory = str(tmp_path)
    az = service_az(local_service, directory)
    experiment = 'tpe-grid-' + uuid.uuid4().hex[:8]
    expected = grid_reference(GRID_JOBS)
    assert expected != grid_reference(None), 'the local phase must change the last jobs for the test to tell'
    written = GRID_JOBS if bound == 'file' else 100
    sections = ['sampling: {{type: bayesian, seed: {}, startupJobs: {}}}'.format(GRID_SEED, STARTUP),
                'limits: {{maxConcurrentJobs: 1, maxTotalJobs: {}}}'.format(written)]
    spec = with_q_range(write_sweep(directory, 'grid', sections, [0.5], epochs=2, sleep=0.02), GRID_Q)
    option = [] if bound == 'file' else ['--max-total-jobs', str(GRID_JOBS)]
    with Watcher(batchai_client, local_service, experiment, 'grid') as watcher:
        run = az('batchai', 'sweep', 'run', '-g', local_service.resource_group, '-w', local_service.workspace,
                 '-e', experiment, '-n', 'grid', '--spec', spec, '-c', local_service.cluster, '--poll-interval', '0.1',
                 *option, '-o', 'json')
    assert run.exit_code == 0, run.stderr
    assert run.json()['ended'] == 'maxTotalJobs' and run.json()['jobs'] == GRID_JOBS
    jobs = sorted(watcher.jobs(), key=lambda job: int(env_of(job)['BATCHAI_SWEEP_INDEX']))
    assert [parameters_of(job)['Q'] for job in jobs] == expected
