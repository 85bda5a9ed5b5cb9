"""The controller on synthetic learning curves, in-process: a virtual cluster where every running job reports one
step per tick. Used by the unit tests and by bench/tuning.py to measure the compute the policies and Hyperband save
without a service (the real loop, core/tuning/loop.py, feeds the controller the same Trials from the service).
"""
from dataclasses import replace

from .trial import Report, Trial


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
