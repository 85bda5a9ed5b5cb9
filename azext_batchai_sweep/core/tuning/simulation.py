"""The controller on synthetic learning curves, in-process: a virtual cluster where every running job reports one
step per tick. Used by the unit tests and by bench/ to measure the samplers and policies without a service (the real
loop, core/tuning/loop.py, feeds the controller the same Trials from the service).

Offline benchmarks build the controller from a sweep file's sections, as `sweep run` does::

    controller = sweep_controller(specs, {'type': 'hyperband', 'sampler': 'bayesian', 'resource': 'EPOCHS',
                                          'minResource': 1, 'maxResource': 27, 'seed': 3},
                                  goal='min', limits=Limits(max_concurrent_jobs=4))
    trials, ticks, end = simulate(controller, curve)

and warm start one from an earlier run's trials with ``warm_start({'task-a': trials_a}, specs)``.
"""
from dataclasses import replace
from types import SimpleNamespace

from .controller import Controller, Limits
from .trial import Report, Trial


def sweep_controller(specs, sampling, goal='max', early_termination=None, limits=None, inherited=(),
                     step_label='step', objective_set=None):
    """A Controller built as `sweep run` builds it from the sweep file's sections.

    :param specs: the parameter specs (core/spec/params.py objects, e.g. NumParamSpec('LR', 1e-4, 1e-1, 'REAL', 'LOG')).
    :param sampling: the sampling section as written (type, seed, and each sampler's keys: Hyperband's sampler,
        startupJobs, randomFraction; bayesian's count, startupJobs, multiFidelity, randomFraction).
    :param early_termination: the earlyTermination section as written, or None.
    :param limits: a controller.Limits (maxTotalJobs, maxConcurrentJobs...), or None.
    :param inherited: warm-start Trials (warm_start()), or ().
    :param objective_set: the sweep file's several objectives and/or constraints ({'objectives': [{metric, goal}, ...],
        'constraints': [...]}) as the jobs carry them, or None (one objective: `goal`).
    :raises SpecError: for a section `sweep run` would refuse (the same checks, without a file name).
    """
    from ..spec.sweepfile import resolve_sampling
    from .bayesian_settings import check_model_settings, objectives_of
    from .policies import make_policy
    from .samplers import make_sampler
    written = dict(sampling)
    resolved = resolve_sampling(written)
    if resolved['seed'] is None:
        resolved['seed'] = 0
    policy = dict(early_termination) if early_termination else None
    check_model_settings(written, resolved, policy, None)
    definition = SimpleNamespace(parameters=list(specs), sampling=resolved, early_termination=policy,
                                 objective={'goal': goal, 'step': step_label}, inherited=list(inherited),
                                 objective_set=objective_set)
    limits = limits or Limits()
    return Controller(make_sampler(definition, goal, limits), make_policy(policy, goal, step_label), limits,
                      goal=goal, objectives=objectives_of(definition))


def warm_start(sources, specs, resource_name=None, extra_metrics=()):
    """The Trials a warm start inherits from earlier runs' trials ({source name: [Trial]}), matched against `specs`
    as `sweep run` matches an earlier sweep's jobs (core/tuning/warmstart.py); returns (trials, messages)."""
    from .warmstart import inherit, records_from_trials
    inheritance = inherit([(name, records_from_trials(trials, None)) for name, trials in sources.items()], specs,
                          resource_name=resource_name, extra_metrics=extra_metrics)
    return inheritance.trials, inheritance.messages()


def simulate(controller, curve, max_ticks=100000, start_delay=0, restarts=None):
    """Run a sweep to its end; returns (trials, ticks, end reason).

    :param restarts: {tick: factory}: at that tick the controller is replaced by ``factory()``, a new one that
        knows nothing but the trials (a killed `sweep run` started again without its journal).

    :param curve: curve(params) -> list of the objective's values at steps 1, 2, ... (the full run).
    :param start_delay: ticks a submitted job waits before its first step (queueing).
    Hyperband promotions resume from their parent (steps parent resource + 1 .. resource), as a checkpointing
    script does; other jobs run steps 1 .. their resource (or the whole curve).
    """
    trials, progress = [], {}
    for tick in range(max_ticks):
        if restarts and tick in restarts:
            controller = restarts[tick]()
        actions = controller.step(trials, elapsed_seconds=float(tick))
        stop = {d.job for d in actions.terminate}
        trials = [replace(t, state='terminated') if t.name in stop else t for t in trials]
        for suggestion in actions.submit:
            index = len(trials)
            start = 0
            if suggestion.parent is not None:
                start = next(t.resource for t in trials if t.name == suggestion.parent) or 0
            trials.append(Trial(name='j{:04d}'.format(index), index=index, params=dict(suggestion.params),
                                state='queued', resource=suggestion.resource, parent=suggestion.parent,
                                bracket=suggestion.bracket, rung=suggestion.rung, slot=suggestion.slot))
            progress[trials[-1].name] = (start, -start_delay)
        if actions.end:
            return trials, tick, actions.end
        advanced = []
        for t in trials:
            if not t.pending or t.state == 'terminating':
                advanced.append(t)
                continue
            start, done = progress[t.name]
            done += 1
            progress[t.name] = (start, done)
            if done <= 0:
                advanced.append(t)
                continue
            values = curve(t.params)
            end = int(t.resource) if t.resource is not None else len(values)
            step = start + done
            reports = t.reports + (Report(step=float(step), value=values[step - 1]),)
            advanced.append(replace(t, state='succeeded' if step >= end else 'running', reports=reports))
        trials = advanced
    return trials, max_ticks, None
