"""How many jobs a bayesian sweep runs, as its TPE is told (bayesian_settings.jobs_to_run): the count, else the run's
maxTotalJobs. The TPE's local phase (tpe.py) takes the last 30% of that number, so a sweep bounded by
limits.maxTotalJobs alone gets it as a sweep with a count does; a count wins over a smaller maxTotalJobs, which may be
a slice of the sweep. The same through `az batchai sweep run`: test_run_bayesian_e2e.py."""
from azext_batchai_sweep.core.tuning.bayesian_settings import jobs_to_run
from azext_batchai_sweep.core.tuning.controller import Controller, Limits
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.simulation import simulate, sweep_controller

from .test_tpe_local import GRID, objective

JOBS, STARTUP = 30, 5


def curve(params):
    return [objective(params)]


def test_the_count_else_the_runs_max_total_jobs():
    assert jobs_to_run({'count': 40}, None) == 40
    assert jobs_to_run({'count': 40}, Limits()) == 40
    assert jobs_to_run({'count': None}, Limits(max_total_jobs=25)) == 25
    assert jobs_to_run({'count': 40}, Limits(max_total_jobs=25)) == 40  # a slice of the sweep: the count stands
    assert jobs_to_run({'count': 40}, Limits(max_total_jobs=60)) == 40
    assert jobs_to_run({'count': None}, Limits(max_concurrent_jobs=4)) is None
    assert jobs_to_run({'count': None}, None) is None


def reference(seed, count):
    """The sweep of a TPE told `count` jobs (None: not told), JOBS jobs, one at a time."""
    sampler = TPESampler(GRID, goal='min', seed=seed, count=count, startup_jobs=STARTUP)
    trials, _, _ = simulate(Controller(sampler, None, Limits(max_total_jobs=JOBS, max_concurrent_jobs=1),
                                       goal='min'), curve)
    return [t.params for t in trials]


def run(seed, sampling, limits):
    """The sweep `sweep run` makes of these sections (simulation.sweep_controller builds the controller as it does)."""
    controller = sweep_controller(GRID, dict(sampling, type='bayesian', seed=seed, startupJobs=STARTUP), goal='min',
                                  limits=limits)
    trials, _, end = simulate(controller, curve)
    return [t.params for t in trials], end


def test_a_sweep_bounded_by_max_total_jobs_alone_has_the_local_phase():
    differ = 0
    for seed in range(4):
        with_count, without_count = reference(seed, JOBS), reference(seed, None)
        assert with_count[:21] == without_count[:21]  # the local phase starts at 0.7 x 30 jobs
        differ += with_count != without_count
        jobs, end = run(seed, {}, Limits(max_total_jobs=JOBS, max_concurrent_jobs=1))
        assert (jobs, end) == (with_count, 'maxTotalJobs'), seed
    assert differ >= 3, 'the local phase must change the late suggestions for the test to tell'


def test_a_count_wins_over_a_smaller_max_total_jobs_so_a_sweep_run_in_slices_suggests_what_one_run_would():
    for seed in range(3):
        whole, end = run(seed, {'count': JOBS}, Limits(max_concurrent_jobs=1))
        assert end == 'exhausted' and len(whole) == JOBS
        first, end = run(seed, {'count': JOBS}, Limits(max_total_jobs=24, max_concurrent_jobs=1))
        assert end == 'maxTotalJobs' and first == whole[:24]  # jobs 21..23 are the count's local phase already
