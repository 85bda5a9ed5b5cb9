"""The outcome of a sweep run, and the per-job rows `status` shows: pure functions of the trials and decisions."""
from collections import Counter

from .decision import NOT_PROMOTED, STOPPED, fmt
from .final import final_trials, ran_to_end
from .job_value import counted_reports, job_value, steps_run

CONTINUED = 'ran to the end'


def best_trial(trials, goal, objectives=None):
    """The best job among final_trials (the feasible ones, with constraints: core/tuning/objectives.py), by the one
    rule of core/tuning/best.py (ties: the first by name, as `metrics` ranks them and `status` lists them);
    None without one."""
    from .best import best_of
    feasible = objectives.feasible if objectives is not None and objectives.constraints else (lambda t: True)
    return best_of(final_trials(trials), goal, lambda t: t.last, feasible=feasible, tie=lambda t: t.name)


def job_steps(trials):
    """(used, full): reports made, and what running every configuration to the end would have made.

    A report is one step of work (an epoch), counted as the job's log shows it (a stopped job's steps after its
    decision included: they ran). The full run of a configuration reaches the largest step a job that
    ran to the end reached; a configuration is its parameter values (a Hyperband promotion is the same one, and
    resumes from its parent: it reports only the steps it adds).
    """
    used = sum(steps_run(t) for t in trials)  # what the logs show: a stopped job's steps after its decision ran too
    ended = [t for t in trials if ran_to_end(t)]
    if not ended:
        return used, used
    # Integers (exact at any size): a job may report any finite step, 1e308 included.
    per_config = max(max(0, int(max(r.step for r in t.reports))) if t.reports else 0 for t in ended)
    configurations = {_key(t) for t in trials}
    return used, max(used, per_config * len(configurations))


def _key(trial):
    return tuple(sorted((k, str(v)) for k, v in trial.params.items()))


def _plain(number):
    """A whole float as an int (epoch 3, not 3.0); past 2**53 a float is no exact count, and stays a float."""
    return int(number) if isinstance(number, float) and number.is_integer() and abs(number) <= 2 ** 53 else number


def tuning_row(trial, decision, goal, step_label):
    """What `status` adds to a job's row: latest (the job's value, core/tuning/job_value.py) and best objective of
    its judged steps, its last judged step, the decision with rule and numbers."""
    reports = counted_reports(trial.reports, decision)
    values = [r.value for r in reports]
    best = (max(values) if goal == 'max' else min(values)) if values else None
    row = {'latest': job_value(trial.reports, decision), 'best': best,
           'step': _plain(reports[-1].step) if reports else None,
           'stepLabel': step_label, 'decision': decision.kind if decision else None,
           'rule': decision.rule if decision else None, 'reason': decision.text if decision else None,
           'bracket': trial.bracket, 'rung': trial.rung, 'resource': trial.resource, 'parent': trial.parent}
    if decision is None and ran_to_end(trial):
        row['decision'] = CONTINUED
    return row


def sweep_figures(trials, decisions, goal, step_label='step', job_seconds=None, objectives=None, metric=None):
    """A sweep's figures, the one answer `run`, `status`, `metrics` and `report` show: the best job, counts by state
    and by decision, compute used and saved.

    :param trials: every job of the sweep as the rules see it (controller.as_seen: a stopped job's reports up to its
        decision's step, stopped_early set), each job's latest attempt only.
    :param decisions: {job name: Decision}: the controller's stops and the sampler's own (Hyperband's promotions).
    :param objectives: a sweep's objectives and constraints (core/tuning/objectives.py), or None: the best is a
        feasible job (by the first objective), and the figures add the Pareto front (core/tuning/front.py).
    :param metric: the objective's metric name, the label of every job's value (core/units.value_label).
    """
    best = best_trial(trials, goal, objectives)
    used, full = job_steps(trials)
    if not any(d is not None and d.kind in (STOPPED, NOT_PROMOTED) for d in decisions.values()):
        full = used  # "saved" counts only what a decision cut: with nothing stopped, nothing was saved
    by_decision = Counter()
    for t in trials:
        decision = decisions.get(t.name)
        by_decision[decision.kind if decision else (CONTINUED if ran_to_end(t) else t.state)] += 1
    figures = {
        'goal': goal,
        'metric': metric,
        'best': None if best is None else {
            'name': best.name, 'objective': best.last, 'step': _plain(best.reports[-1].step), 'resource': best.resource,
            'parameters': best.params},
        'jobs': len(trials),
        'counts': dict(Counter(t.state for t in trials)),
        'decisions': dict(by_decision),
        'compute': {'jobSteps': used, 'jobStepsFull': full, 'jobStepsSaved': full - used,
                    'savedPercent': round(100 * (full - used) / full, 1) if full else 0.0,
                    'stepLabel': step_label, 'jobSeconds': job_seconds},
    }
    if objectives is not None:
        from .front import front_figures
        figures['pareto'] = front_figures(final_trials(trials), trials, objectives)
    return figures


def summarize_run(trials, decisions, goal, end, end_text, step_label='step', job_seconds=None, objectives=None,
                  metric=None):
    """The result of `sweep run`: why it ended, and the sweep's figures (sweep_figures)."""
    return dict({'ended': end, 'endedBecause': end_text},
                **sweep_figures(trials, decisions, goal, step_label, job_seconds, objectives, metric))


def best_phrase(metric, value, name):
    """'best val_accuracy 0.9 (lr-0af3...)': the sweep's best job and its value, labelled as every command labels a
    job's value (core/units.value_label), in `run`'s, `status`'s, `metrics`' and `report`'s lines on stderr."""
    from ..units import value_label
    return 'best {} {} ({})'.format(value_label(metric), fmt(value), name)


def describe_figures(figures):
    """The figures in one line: jobs, best, compute (what `run`, `status` and `metrics` print on stderr)."""
    from ..units import percent_text
    best = figures['best']
    compute = figures['compute']
    found = best_phrase(figures.get('metric'), best['objective'], best['name']) if best else \
        'no best job (no objective, or no job ran to the end with a value)'
    return '{} jobs; {}; {} of {} job-steps run, {} saved'.format(
        figures['jobs'], found, compute['jobSteps'], compute['jobStepsFull'], percent_text(compute['savedPercent']))


def describe(result):
    """One line for stderr at the end of a run."""
    text = describe_figures(result)
    jobs, rest = text.split('; ', 1)
    return '{}; ended: {}; {}'.format(jobs, result['endedBecause'], rest)
