"""Trials built by hand for the tuning tests."""
from azext_batchai_sweep.core.tuning.trial import Report, Trial


def trial(name, values, state='running', index=0, steps=None, **kwargs):
    steps = steps or range(1, len(values) + 1)
    return Trial(name=name, index=index, params=kwargs.pop('params', {'X': name}), state=state,
                 reports=tuple(Report(step=float(s), value=float(v)) for s, v in zip(steps, values)), **kwargs)
