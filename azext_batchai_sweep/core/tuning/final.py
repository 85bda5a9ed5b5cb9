"""The jobs that count for the best job and the Pareto front (result.py, front.py): those that ran to the end with a
value, at Hyperband's largest resource.

Kept apart from result.py so that front.py, which result.py calls, and the samplers read it without importing
result.py back.
"""


def ran_to_end(trial):
    return trial.state == 'succeeded' and not trial.stopped_early


def final_trials(trials):
    """The jobs that ran to the end with a value, at the largest resource (Hyperband): the candidates for best."""
    finished = [t for t in trials if ran_to_end(t) and t.last is not None]
    top = max((t.resource for t in finished if t.resource is not None), default=None)
    if top is not None:
        finished = [t for t in finished if t.resource == top]
    return finished
