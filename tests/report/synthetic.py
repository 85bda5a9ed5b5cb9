"""Synthetic sweeps for the report's tests and benchmark: deterministic learning curves per configuration.

A job's curve rises towards a ceiling set by its parameters (learning rate best near 0.1 on a log scale, more units
better, one optimizer better than the other), with noise from a seeded generator, so the best configuration is
known and the same on every run.
"""
import datetime
import math
import random

from azext_batchai_sweep.core.report.collect import sweep_record
from azext_batchai_sweep.core.report.model import (EXTRA_DECISION, EXTRA_DURATION, EXTRA_END, EXTRA_START, Objective,
                                                   ParameterInfo)
from azext_batchai_sweep.core.tuning.trial import Report, Trial

START = datetime.datetime(2026, 11, 23, 9, 0, tzinfo=datetime.timezone.utc)


def ceiling(params):
    lr = params['LEARNING_RATE']
    return 0.95 - 0.08 * (math.log10(lr) + 1) ** 2 - 0.4 / params['UNITS'] - (0.03 if params['OPT'] == 'sgd' else 0)


def synthetic_trials(count, epochs=20, seed=0, stop_share=0.2, fail_share=0.05, running=0):
    rng = random.Random(seed)
    trials = []
    for index in range(count):
        params = {'LEARNING_RATE': 10 ** rng.uniform(-4, 0), 'UNITS': rng.choice([4, 8, 16, 32, 64]),
                  'OPT': rng.choice(['adam', 'sgd'])}
        top = ceiling(params)
        stopped = rng.random() < stop_share
        failed = not stopped and rng.random() < fail_share
        last = epochs if not (stopped or failed) else rng.randint(2, max(2, epochs // 2))
        is_running = index >= count - running
        if is_running:
            last = rng.randint(2, epochs - 1)
            stopped = failed = False
        reports = tuple(Report(float(e), round(top * (1 - math.exp(-e / 4)) + rng.gauss(0, 0.01), 4))
                        for e in range(1, last + 1))
        start = START + datetime.timedelta(seconds=index * 7)
        duration = 3.0 * last
        decision = None
        state = 'succeeded'
        if stopped:
            state = 'terminated'
            decision = {'action': 'stopped', 'rule': 'bandit', 'step': float(last), 'rung': None, 'bracket': None,
                        'reason': 'stopped at epoch {} by bandit: {:.2f} < {:.2f} / 1.1'.format(
                            last, reports[-1].value, 0.9)}
        elif failed:
            state = 'failed'
        if is_running:
            state, decision = 'running', None
        extra = {EXTRA_START: start.isoformat(),
                 EXTRA_END: None if is_running else (start + datetime.timedelta(seconds=duration)).isoformat(),
                 EXTRA_DURATION: None if is_running else duration, EXTRA_DECISION: decision}
        trials.append(Trial(name='syn-{:05d}'.format(index), index=index, params=params, state=state, reports=reports,
                            stopped_early=stopped, extra=extra))
    return trials


def synthetic_record(count, epochs=20, sampling='random', **kwargs):
    return sweep_record('synthetic', Objective(metric='val_accuracy', goal='max', step='epoch'),
                        synthetic_trials(count, epochs=epochs, **kwargs), resource_group='rg', workspace='ws',
                        experiment='exp', sampling=sampling,
                        parameters=[ParameterInfo('LEARNING_RATE', 'numeric', 'LOG'),
                                    ParameterInfo('UNITS', 'discrete'), ParameterInfo('OPT', 'discrete')],
                        generated_at='2026-11-23T12:00:00+00:00')
