"""The multi-fidelity harness's accounting (bench/multifidelity.py): job-steps counted one per epoch read, the budget
enforced, the incumbent's regret at each budget read from the configurations trained to the end; and the sweeps it
runs deterministic under a seed. A pure-Python curve stands in for the bench-only formulas (mf-prior-bench, mf2)."""
import math

import pytest

from bench.multifidelity import (RESOURCE, Meter, Task, choice_windows, regret_at_budgets, run_bohb, run_bohb_paper,
                                  run_hyperband, run_random, trace_line)


def _task():
    # The value at step t: the distance to 0.3 plus a term that fades with t; the optimum, 0, at x = 0.3 and t = R.
    return Task('toy', [(0.0, 1.0)], lambda x, t: abs(x[0] - 0.3) + (1.0 - t / RESOURCE), 0.0)


def test_meter_counts_steps_and_the_incumbent_is_the_best_at_the_top_resource():
    task = _task()
    meter = Meter(task, 3 * RESOURCE)
    assert regret_at_budgets(meter, [1]) == [math.inf]  # nothing has run
    first = meter.metered_curve({'X0': 0.5})
    assert len(first) == RESOURCE
    assert first[0] == pytest.approx(0.2 + 1 - 1 / RESOURCE)
    second = meter.metered_curve({'X0': 0.25})
    second[0], second[1]
    assert meter.steps == 3
    # The largest resource reached is 2 epochs, by X0 = 0.25 alone: it is the incumbent, judged at R (0.05).
    assert regret_at_budgets(meter, [3 / RESOURCE]) == [pytest.approx(0.05)]
    # Within the first step only X0 = 0.5 had run: the incumbent then.
    assert regret_at_budgets(meter, [1 / RESOURCE]) == [pytest.approx(0.2)]
    first[1]
    # Both at 2 epochs now: the better observed value (X0 = 0.25) wins.
    meter.spend(RESOURCE, {'X0': 0.9}, RESOURCE)
    # A configuration trained to R beats any at fewer epochs, even a better one: the top resource decides.
    assert regret_at_budgets(meter, [1, 2]) == [pytest.approx(0.05), pytest.approx(0.6)]


def test_budget_is_enforced():
    task = _task()
    meter = Meter(task, 10 * RESOURCE)
    run_random(task, 1, meter)
    assert meter.steps == 10 * RESOURCE and [entry[1] for entry in meter.trace] == [RESOURCE] * 10


@pytest.mark.parametrize('method', [run_hyperband, run_bohb, run_bohb_paper])
def test_sweeps_spend_the_budget_and_are_deterministic(method):
    budget = 8 * RESOURCE  # more than one Hyperband iteration of R = 81, eta 3 (the next sweep starts)
    runs = []
    for _ in range(2):
        meter = Meter(_task(), budget)
        method(meter.task, 4, meter)
        runs.append(meter)
    assert runs[0].trace == runs[1].trace
    # One entry per job-step (every job reports each epoch), up to the budget.
    assert budget - RESOURCE < runs[0].steps == len(runs[0].trace) <= budget
    assert regret_at_budgets(runs[0], [8])[0] < 0.3


def _mid_job_switches(meter):
    """How often the trace moves to another configuration in the middle of a job: at a step that is neither a job's
    first (1) nor a promotion's first (one past a rung's resource: 2, 4, 10, 28 for R = 81, eta 3)."""
    firsts = {1, 2, 4, 10, 28}
    return sum(1 for before, entry in zip(meter.trace, meter.trace[1:])
               if entry[3] != before[3] and entry[1] not in firsts)


@pytest.mark.parametrize('method', [run_hyperband, run_bohb])
def test_our_sweeps_run_as_many_jobs_at_once_as_asked(method):
    # The peers run one evaluation at a time; ours do too by default (--in-flight 1), so one job's steps follow each
    # other in the trace; with 8 at once the jobs' steps interleave.
    traces = {}
    for in_flight in (1, 8):
        meter = Meter(_task(), 6 * RESOURCE)
        method(meter.task, 2, meter, in_flight=in_flight)
        traces[in_flight] = meter
    assert _mid_job_switches(traces[1]) == 0
    assert _mid_job_switches(traces[8]) > 0
    default = Meter(_task(), 6 * RESOURCE)
    method(default.task, 2, default)
    assert default.trace == traces[1].trace


def test_optuna_is_a_function_of_the_seed():
    # Optuna's HyperbandPruner assigns trials to brackets by a hash of the study's name: the harness names it after
    # the seed, so two runs of one seed are one draw (a random name made every run of the table a new one).
    pytest.importorskip('optuna')
    from bench.multifidelity import run_optuna
    traces = []
    for _ in range(2):
        meter = Meter(_task(), 4 * RESOURCE)
        run_optuna(meter.task, 3, meter)
        traces.append([(steps, resource, params) for steps, resource, _, params in meter.trace])
    assert traces[0] == traces[1]


def test_bohb_paper_is_bohb_without_the_lower_agreeing_budget():
    # The toy task ranks configurations alike at every step, so once configurations reach the top budget ours fits
    # its model lower (more results) and the paper's rule does not: the runs part there, and only there.
    budget = 30 * RESOURCE
    ours, paper = Meter(_task(), budget), Meter(_task(), budget)
    run_bohb(ours.task, 4, ours)
    run_bohb_paper(paper.task, 4, paper)
    assert ours.trace != paper.trace
    first_top = next(k for k, entry in enumerate(paper.trace) if entry[1] == RESOURCE)
    assert ours.trace[:first_top] == paper.trace[:first_top]


def test_the_trace_records_where_new_configurations_came_from_and_changes_nothing():
    budget = 8 * RESOURCE
    plain, traced = Meter(_task(), budget), Meter(_task(), budget)
    traced.choices = []
    run_bohb(plain.task, 4, plain)
    run_bohb(traced.task, 4, traced)
    assert traced.trace == plain.trace  # recording reads the model's choices, it does not change them
    # The first iteration's first bracket: 81 new configurations at 1 epoch, random until a budget has d + 3 = 4
    # results (one job at a time: the first four), then from the model at 1 epoch or drawn at random (rho = 1/3).
    first = traced.choices[:81]
    assert [budget for _, budget, _ in first[:4]] == [None] * 4
    model = [c for c in first if c[1] is not None]
    assert model and {c[1] for c in model} == {1} and all(c[2] is not None for c in model)
    assert all(c[2] is None for c in first if c[1] is None)
    assert 0.2 < (81 - len(model)) / 81 < 0.5
    windows = choice_windows(traced, [2, 8])
    assert sum(w['new'] for w in windows) == len(traced.choices)
    assert [w['random'] + sum(w['budgets'].values()) for w in windows] == [w['new'] for w in windows]
    assert len(windows[0]['regrets']) == sum(windows[0]['budgets'].values())
    line = trace_line('toy', 'bohb', 4, traced, [2, 8])
    assert line.startswith('# trace toy bohb seed 4: regret ') and '0-2 x R: ' in line and '2-8 x R: ' in line
    # Our random Hyperband has no model: nothing to record.
    hyperband = Meter(_task(), budget)
    hyperband.choices = []
    run_hyperband(hyperband.task, 4, hyperband)
    assert hyperband.choices == []
