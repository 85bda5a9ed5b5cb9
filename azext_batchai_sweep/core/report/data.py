"""A SweepRecord turned into the report's data: plain JSON, what `-o json` prints and what the HTML draws.

Everything a plot needs is decided here (axes and their scales, which jobs are drawn, the aggregates, the best job,
the best-so-far and random search's expected curve), so html.py and plots.py only draw, and a person who plots the
sweep their own way gets the same numbers.

Large sweeps stay readable (and the file small) by drawing a sample, never by dropping data from the JSON:
- learning curves: at most MAX_CURVES lines: the best job, the jobs a decision stopped and the failed ones (up to a
  share each), the best by objective, then a seeded random sample of the rest; when jobs are left out, the median
  and the 10-90% band of every job's value at each step are drawn under the lines, so no job is invisible;
- parallel coordinates: at most MAX_LINES lines (the best, then a seeded random sample);
- objective against each parameter: at most MAX_POINTS points per panel (the same rule), with the median per
  category or per value bin of all jobs drawn as a line;
- the job table holds every job, a page at a time.
"""
import bisect
import copy
import datetime
import json
import math
import random

from ..floats import clamped, lerp
from ..service.status import summarize_rows
from ..tuning.best import best_of
from ..tuning.final import final_trials
from ..tuning.trial import FINISHED_STATES, PENDING_STATES
from .axes import category_text as _text, flat_values as _flat, is_number as _is_number, parameter_axes
from .importance import counted_value, report_importance
from .model import (EXTRA_CODE, EXTRA_DECISION, EXTRA_DURATION, EXTRA_END, EXTRA_ERROR, EXTRA_EXIT_CODE,
                    EXTRA_SCHEDULER, EXTRA_SCHEDULER_JOB_ID, EXTRA_START, EXTRA_STEP_KEY, SweepRecord)

DATA_VERSION = 1
MAX_CURVES = 200
MAX_LINES = 1000
MAX_POINTS = 2000
MAX_CATEGORIES = 40          # a categorical axis with more categories shows every n-th label
EXPECTED_CURVE_POINTS = 200  # random search's expected curve is evaluated at this many job counts at most
# Decisions that end a configuration before the largest step: a policy's stop, and Hyperband's "not promoted" (its
# successive halving stops the configuration at this rung). The report marks both "stopped early".
STOPPING_ACTIONS = ('stopped', 'not promoted')


def _mark(job, best_name):
    """What the plots mark a job as: best, stopped (by a decision), failed, running (or queued), finished."""
    if job['name'] == best_name:
        return 'best'
    if job['stoppedEarly']:
        return 'stopped'
    if job['state'] in ('failed', 'terminated'):
        return 'failed'
    if job['state'] in PENDING_STATES or job['state'] == 'terminating':
        return 'running'
    return 'finished'


def _job_row(trial, objective, infeasible):
    extra = trial.extra or {}
    decision = extra.get(EXTRA_DECISION)
    cut = (decision or {}).get('step') if (decision or {}).get('action') == 'stopped' else None
    # A stopped job counts (and is drawn) up to the step of the decision that stopped it, as `sweep run` counts it:
    # the lines it printed while being terminated are not part of the sweep.
    reports = [[report.step, report.value] for report in trial.reports if cut is None or report.step <= cut]
    values = [value for _, value in reports]
    best_value = None
    for value in values:
        if objective.better(value, best_value):
            best_value = value
    return {
        'name': trial.name,
        'index': trial.index,
        'state': trial.state,
        'parameters': trial.params,
        'values': _flat(trial.params),
        'objective': values[-1] if values else None,
        'bestValue': best_value,
        'reports': reports,
        'lastStep': reports[-1][0] if reports else None,
        'startTime': extra.get(EXTRA_START),
        'endTime': extra.get(EXTRA_END),
        'durationSeconds': extra.get(EXTRA_DURATION),
        'exitCode': extra.get(EXTRA_EXIT_CODE),
        'schedulerJobId': extra.get(EXTRA_SCHEDULER_JOB_ID),
        'code': extra.get(EXTRA_CODE),  # the --code snapshot's hash, or None
        'error': extra.get(EXTRA_ERROR),
        'stoppedEarly': bool(trial.stopped_early or (decision or {}).get('action') in STOPPING_ACTIONS),
        'decision': decision,
        'resource': trial.resource,
        'parent': trial.parent,
        'infeasible': infeasible.get(trial.name),  # the constraints it broke (a `sweep run`'s), or None
    }


def _infeasible(figures):
    """{job name: the constraints it broke} of a `sweep run` with constraints (its figures' Pareto part)."""
    return {entry['name']: entry.get('failed') or 'a constraint'
            for entry in ((figures or {}).get('pareto') or {}).get('infeasible') or ()}


def _best(trials, jobs, objective, infeasible):
    """The best job as `sweep run` names it (core/tuning/best.py, the one rule): the best last value among the jobs
    that ran to the end, at the largest resource for Hyperband, that broke no constraint."""
    best = best_of(final_trials(trials), objective.goal, lambda t: t.last, feasible=lambda t: t.name not in infeasible,
                   tie=lambda t: t.name)  # as `sweep run`, `status` and `metrics` (core/tuning/result.py)
    return next(job for job in jobs if job['name'] == best.name) if best is not None else None


def _decision_counts(jobs):
    counts = {}
    for job in jobs:
        action = (job['decision'] or {}).get('action')
        if action:
            counts[action] = counts.get(action, 0) + 1
    return counts


def _parse_time(text):
    if not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except ValueError:
        return None


def _run_compute(figures):
    """The summary's compute from a `sweep run`'s figures: the same job-steps used and saved that `run` reports."""
    compute = figures['compute']
    used, saved, seconds = compute['jobSteps'], compute['jobStepsSaved'], compute['jobSeconds'] or 0.0
    return {'jobSeconds': seconds, 'jobSteps': used, 'savedJobSteps': saved,
            'savedJobSeconds': round(clamped(_ratio(saved, used) * seconds), 3) if used else 0.0,
            'savedFraction': round(_ratio(saved, compute['jobStepsFull']), 4) if compute['jobStepsFull'] else 0.0}


def _ratio(part, whole):
    """part / whole as a float that never raises nor overflows (counts from a journal of an older run may be huge
    integers; the result is clamped to the largest float)."""
    try:
        return clamped(part / whole)
    except (OverflowError, ZeroDivisionError, TypeError):
        return 0.0 if not whole else clamped(float('inf') if (part > 0) == (whole > 0) else float('-inf'))


def _compute(jobs, generated_at):
    """Compute used (job-seconds, job-steps) and what early termination saved against running every job to the end.

    A stopped job's saving is the steps it did not run, up to the largest last step of the jobs that ran to the end,
    at its own seconds per step.
    """
    now = _parse_time(generated_at)
    seconds = 0.0
    steps = 0.0
    for job in jobs:
        if job['durationSeconds'] is not None:
            seconds = clamped(seconds + job['durationSeconds'])
        elif job['state'] in PENDING_STATES and now is not None and _parse_time(job['startTime']) is not None:
            seconds += max(0.0, (now - _parse_time(job['startTime'])).total_seconds())
        steps += len(job['reports'])  # a report is a step of work; a promotion reports only the steps it adds
    full_steps = max((job['lastStep'] or 0 for job in jobs if job['state'] == 'succeeded'), default=0)
    saved_steps = saved_seconds = 0.0
    # Steps are whatever the jobs printed (1e308, 5e-324...): every sum is kept finite.
    for job in jobs:
        if job['stoppedEarly'] and job['lastStep'] and full_steps > job['lastStep']:
            missing = clamped(full_steps - job['lastStep'])
            saved_steps = clamped(saved_steps + missing)
            if job['durationSeconds'] and job['lastStep'] > 0:
                saved_seconds = clamped(saved_seconds + clamped(clamped(missing / job['lastStep'])
                                                                * job['durationSeconds']))
    return {'jobSeconds': round(seconds, 3), 'jobSteps': steps, 'savedJobSteps': saved_steps,
            'savedJobSeconds': round(saved_seconds, 3),
            'savedFraction': round(saved_steps / clamped(steps + saved_steps), 4) if saved_steps > 0 else 0.0}


def _time_span(jobs):
    starts = sorted(job['startTime'] for job in jobs if job['startTime'])
    ends = sorted(job['endTime'] for job in jobs if job['endTime'])
    running = any(job['state'] in PENDING_STATES or job['state'] == 'terminating' for job in jobs)
    return {'firstStart': starts[0] if starts else None, 'lastEnd': None if running or not ends else ends[-1],
            'stillRunning': running}


def _sample(jobs, limit, must, key, seed=0):
    """Names of at most `limit` jobs: `must` first (in order), then the best by `key`'s order up to a tenth of
    the limit, then a seeded random sample of the rest (the same jobs on every run of the same sweep)."""
    chosen = []
    seen = set()
    for name in must:
        if name not in seen and len(chosen) < limit:
            chosen.append(name)
            seen.add(name)
    ranked = sorted(jobs, key=key)
    for job in ranked[:max(1, limit // 10)]:
        if job['name'] not in seen and len(chosen) < limit:
            chosen.append(job['name'])
            seen.add(job['name'])
    rest = [job['name'] for job in jobs if job['name'] not in seen]
    room = limit - len(chosen)
    if room > 0:
        chosen.extend(random.Random(seed).sample(rest, room) if len(rest) > room else rest)
    return chosen


def _quantile(sorted_values, q):
    if not sorted_values:
        return None
    position = q * (len(sorted_values) - 1)
    low = int(math.floor(position))
    high = min(low + 1, len(sorted_values) - 1)
    return lerp(sorted_values[low], sorted_values[high], position - low)


def _band(jobs):
    """[step, q10, median, q90] at each step some job reported at (at most 200 steps, evenly picked)."""
    by_step = {}
    for job in jobs:
        for step, value in job['reports']:
            by_step.setdefault(step, []).append(value)
    steps = sorted(by_step)
    if len(steps) > 200:
        steps = [steps[round(i * (len(steps) - 1) / 199)] for i in range(200)]
    band = []
    for step in steps:
        values = sorted(by_step[step])
        band.append([step, _quantile(values, 0.1), _quantile(values, 0.5), _quantile(values, 0.9)])
    return band


def _rank_key(objective):
    sign = -1 if objective.goal == 'max' else 1

    def key(job):
        value = job['objective'] if job['objective'] is not None else job['bestValue']
        return (value is None, sign * (value or 0.0), job['name'])
    return key


def _learning_curves(jobs, best, objective):
    """Drawn when some job reported more than once; then every job with a report is a line (one report: a dot, as
    Hyperband's first rung makes them)."""
    if not any(len(job['reports']) >= 2 for job in jobs):
        return {'available': False, 'jobs': 0, 'drawn': [], 'band': None,
                'why': 'no job reported the objective more than once' if jobs else 'the sweep has no jobs'}
    with_curves = [job for job in jobs if job['reports']]
    must = [best['name']] if best else []
    share = MAX_CURVES // 5
    must += [job['name'] for job in with_curves if job['stoppedEarly']][:share]
    must += [job['name'] for job in with_curves if job['state'] == 'failed'][:share]
    names_with_curves = {job['name'] for job in with_curves}
    must = [name for name in must if name in names_with_curves]
    drawn = _sample(with_curves, MAX_CURVES, must, _rank_key(objective))
    sampled = len(drawn) < len(with_curves)
    return {'available': True, 'jobs': len(with_curves), 'drawn': drawn,
            'band': _band(with_curves) if sampled else None, 'why': None}


def _sampled_for(jobs, limit, best, objective):
    candidates = [job for job in jobs if job['objective'] is not None]
    return _sample(candidates, limit, [best['name']] if best else [], _rank_key(objective))


def _best_so_far(jobs, objective):
    """The best objective so far against the number of finished jobs that reported one, in end-time order."""
    # An infeasible job never counts as the best, so never as an improvement (core/tuning/best.py).
    finished = [job for job in jobs if job['state'] == 'succeeded' and job['objective'] is not None
                and not job['infeasible']]
    finished.sort(key=lambda job: (job['endTime'] or '', job['index']))
    points, best = [], None
    for count, job in enumerate(finished, start=1):
        if objective.better(job['objective'], best and best['value']):
            best = {'finished': count, 'value': job['objective'], 'job': job['name']}
            points.append(best)
    return {'finished': len(finished), 'improvements': points}


def expected_best_of_random(values, counts, goal):
    """E[best of k draws] from the values, for each k of counts: random search's expected curve.

    Draws are with replacement from the observed values (the empirical distribution), the "expected validation
    performance" of Dodge et al. (2019): with the values sorted worst to best, E = sum_i v_i ((i/n)^k - ((i-1)/n)^k).
    """
    ordered = sorted(values, reverse=goal == 'min')
    n = len(ordered)
    result = []
    for k in counts:
        total = 0.0
        previous = 0.0
        for i, value in enumerate(ordered, start=1):
            current = (i / n) ** k
            total += value * (current - previous)
            previous = current
        result.append([k, total])
    return result


def _expected_curve(jobs, record, finished, memo=None):
    if record.sampling != 'random' or finished < 2:
        return None
    values = [job['objective'] for job in jobs if job['state'] == 'succeeded' and job['objective'] is not None]
    if finished <= EXPECTED_CURVE_POINTS:
        counts = list(range(1, finished + 1))
    else:  # evenly on a log scale of k, ends included: the curve changes fastest at small k
        counts = sorted({max(1, min(finished, round(math.exp(i * math.log(finished) / (EXPECTED_CURVE_POINTS - 1)))))
                         for i in range(EXPECTED_CURVE_POINTS)})
    if memo is None:
        return expected_best_of_random(values, counts, record.objective.goal)
    return memo.get('expected', [values, counts, record.objective.goal],
                    lambda: expected_best_of_random(values, counts, record.objective.goal))


def _scatter_medians(jobs, axis):
    """Median objective per category, or per one of 12 bins of the axis, over every job (the aggregate line)."""
    groups = {}
    if axis['kind'] == 'categorical':
        for job in jobs:
            value = job['values'].get(axis['name'])
            if value is not None and job['objective'] is not None:
                groups.setdefault(_text(value), []).append(job['objective'])
        return [[category, _quantile(sorted(groups[category]), 0.5), len(groups[category])]
                for category in axis['categories'] if category in groups]
    low, high = axis['min'], axis['max']
    if high <= low:
        return []
    transform = math.log10 if axis['kind'] == 'log' else (lambda v: v)
    t_low, t_high = transform(low), transform(high)
    bins = 12
    edges = [t_low + (t_high - t_low) * i / bins for i in range(1, bins)]
    for job in jobs:
        value = job['values'].get(axis['name'])
        if _is_number(value) and job['objective'] is not None and (axis['kind'] != 'log' or value > 0):
            groups.setdefault(bisect.bisect_right(edges, transform(value)), []).append(job['objective'])
    medians = []
    for index in sorted(groups):
        center = t_low + (t_high - t_low) * (index + 0.5) / bins
        medians.append([10 ** center if axis['kind'] == 'log' else center,
                        _quantile(sorted(groups[index]), 0.5), len(groups[index])])
    return medians


def _step_key(record):
    """The step's name for the plots: the key asked for, else the one every job's steps came from, else None."""
    if record.objective.step:
        return record.objective.step
    keys = {(trial.extra or {}).get(EXTRA_STEP_KEY) for trial in record.trials if trial.reports}
    return keys.pop() if len(keys) == 1 else None


class Memo:
    """The last result of each costly sweep-level summary (the importance, random search's expected curve) with the
    inputs it was made of. A live report (live.py) makes its data again at every change, and most changes (a
    running job's new lines, a job started) leave these inputs as they were: the result is then given again, a copy,
    instead of being computed again, so the data is the same as without a memo."""

    def __init__(self):
        self._last = {}

    def get(self, name, inputs, compute):
        key = json.dumps(inputs, sort_keys=True, default=str)
        last = self._last.get(name)
        if last is None or last[0] != key:
            last = (key, compute())
            self._last[name] = last
        return copy.deepcopy(last[1])


def _importance_of(jobs, axes, objective, pareto, memo):
    if memo is None:
        return report_importance(jobs, axes, objective, pareto)
    # What report_importance reads of the rows: their parameters, resource and counted value (a running job's
    # new lines change no counted value).
    rows = [[job['values'], job.get('resource'), counted_value(job['state'], job['objective'], job['stoppedEarly'])]
            for job in jobs]
    return memo.get('importance', [rows, axes, objective.as_dict(), pareto],
                    lambda: report_importance(jobs, axes, objective, pareto))


def report_data(record: SweepRecord, figures=None, run=None, memo=None) -> dict:
    """The report's data (JSON-ready) for a sweep record; `figures`: a `sweep run`'s figures
    (core/tuning/result.sweep_figures, as `run` and `status` show them), whose compute the summary shows; `run`: the
    run's outline its journal keeps (core/tuning/loop.SweepRun.outline: sampling settings, limits, the jobs a warm
    start inherited, why it ended), or None; `memo`: a Memo kept from one call to the next (a live report's)."""
    objective = record.objective
    trials = sorted(record.trials, key=lambda trial: (trial.index, trial.name))
    infeasible = _infeasible(figures)
    jobs = [_job_row(trial, objective, infeasible) for trial in trials]
    best = _best(trials, jobs, objective, infeasible)
    for job in jobs:
        job['mark'] = _mark(job, best and best['name'])
    axes = parameter_axes([job['values'] for job in jobs], record.parameters)
    objective_values = [job['objective'] for job in jobs if job['objective'] is not None]
    best_so_far = _best_so_far(jobs, objective)
    sampled_lines = _sampled_for(jobs, MAX_LINES, best, objective)
    sampled_points = _sampled_for(jobs, MAX_POINTS, best, objective)
    return {
        'kind': 'batchai-sweep-report',
        'version': DATA_VERSION,
        'sweep': record.name,
        'resourceGroup': record.resource_group,
        'workspace': record.workspace,
        'experiment': record.experiment,
        'generatedAt': record.generated_at,
        'objective': objective.as_dict(),
        'sampling': record.sampling,
        'stepKey': _step_key(record),
        # The local service's scheduler whose ids the jobs' schedulerJobId are ('slurm', 'azure-batch'), else None.
        'scheduler': next((t.extra.get(EXTRA_SCHEDULER) for t in trials if t.extra.get(EXTRA_SCHEDULER)), None),
        'run': run,
        'summary': {
            'jobs': len(jobs),
            'finished': sum(1 for job in jobs if job['state'] in FINISHED_STATES),
            'counts': summarize_rows(jobs)['counts'],  # as `status` counts them
            'decisions': _decision_counts(jobs),
            'stoppedEarly': sum(1 for job in jobs if job['stoppedEarly']),
            'withObjective': len(objective_values),
            'best': None if best is None else {'name': best['name'], 'value': best['objective'],
                                               'parameters': best['parameters'], 'lastStep': best['lastStep']},
            'objectiveRange': [min(objective_values), max(objective_values)] if objective_values else None,
            'compute': _compute(jobs, record.generated_at) if figures is None else _run_compute(figures),
            'figures': figures,
            'time': _time_span(jobs),
            'decided': any(job['decision'] for job in jobs),
            # The --code snapshots the jobs ran (one for a sweep: docs/code.md), sorted.
            'code': sorted({job['code'] for job in jobs if job['code']}),
        },
        'parameters': axes,
        # What mattered, per objective (importance.py); a run's several objectives from its Pareto figures.
        'importance': _importance_of(jobs, axes, objective, (figures or {}).get('pareto'), memo),
        'plots': {
            'learningCurves': _learning_curves(jobs, best, objective),
            'parallelCoordinates': {'drawn': sampled_lines, 'jobs': len(objective_values)},
            'objectiveVsParameter': {
                'drawn': sampled_points, 'jobs': len(objective_values),
                'medians': {axis['name']: _scatter_medians(jobs, axis) for axis in axes}},
            'bestSoFar': dict(best_so_far, expectedRandom=_expected_curve(jobs, record, best_so_far['finished'],
                                                                          memo)),
        },
        'jobs': jobs,
    }
