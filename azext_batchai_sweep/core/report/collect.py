"""A sweep read back from the service for its report: each job (as `status` lists it) with its intermediate values
(every report of the metric in its log, read as `metrics` reads it, but all of it) as a Trial, and the record of the
sweep. The reading itself is live.LiveSweep's (one listing, then only what each log has beyond what was read): a
job whose log cannot be read keeps its state and parameters and gets no values, with the error said (never a crash).
"""
import datetime
import json

from ..service.listing import env_of, job_summary, parameters_of, state_of
from ..service.retry import describe_error
# The variables `sweep run` sets: a job's position in the sweep, the run's rules as JSON (its sampling among them),
# and for Hyperband its resource and the job it continues.
from ..tuning.loop import ENV_INDEX, ENV_PARENT, ENV_RESOURCE, ENV_TUNING
from ..tuning.trial import Report, Trial
from .model import (EXTRA_CODE, EXTRA_DECISION, EXTRA_DURATION, EXTRA_END, EXTRA_ERROR, EXTRA_EXIT_CODE,
                    EXTRA_SAMPLING, EXTRA_SCHEDULER, EXTRA_SCHEDULER_JOB_ID, EXTRA_START, EXTRA_STEP_KEY,
                    ParameterInfo, SweepRecord)


def _sampling(env):
    """The sampling type a `sweep run` job carries (grid, random, hyperband...), or None."""
    try:
        return ((json.loads(env.get(ENV_TUNING) or '{}') or {}).get('sampling') or {}).get('type')
    except (ValueError, AttributeError):
        return None


def _number(env, name, kind=int):
    try:
        return kind(env.get(name))
    except (TypeError, ValueError):
        return None


def trial_of(job, step_key, reports, *, error=None, decisions=None, scheduler_ids=None):
    """One job of the service as a Trial: its state, parameters, (step, value) reports and what the report shows."""
    summary = job_summary(job)
    env = env_of(job)
    decision = (decisions or {}).get(job.name)
    extra = {EXTRA_START: summary['startTime'], EXTRA_END: summary['endTime'],
             EXTRA_DURATION: summary['durationSeconds'], EXTRA_EXIT_CODE: summary['exitCode'],
             EXTRA_DECISION: decision, EXTRA_ERROR: describe_error(error) if error is not None else None,
             EXTRA_STEP_KEY: step_key, EXTRA_SAMPLING: _sampling(env),
             EXTRA_SCHEDULER_JOB_ID: (scheduler_ids or {}).get(job.name.lower()), EXTRA_CODE: summary.get('code')}
    if extra[EXTRA_SCHEDULER_JOB_ID]:  # what the id is (scheduler_ids.SchedulerMap): a Slurm job, a Batch task
        extra[EXTRA_SCHEDULER] = getattr(scheduler_ids, 'scheduler', None)
    return Trial(name=job.name, index=_number(env, ENV_INDEX), params=parameters_of(job), state=state_of(job),
                 reports=tuple(Report(step, value) for step, value in reports),
                 resource=_number(env, ENV_RESOURCE, float), parent=env.get(ENV_PARENT) or None,
                 stopped_early=bool(decision and decision.get('action') == 'stopped'), extra=extra)


def in_submission_order(trials):
    """The trials sorted as submitted, numbered 0, 1, 2...: the controller's index where it recorded one, else the
    start time, then the name."""
    trials.sort(key=lambda t: (t.index is None, t.index if t.index is not None else 0,
                               t.extra[EXTRA_START] or '~', t.name))
    for position, trial in enumerate(trials):
        trial.index = position
    return trials


def plan_details(header):
    """(sampling type, [ParameterInfo]) from a plan file's header, for what the service does not hold."""
    sampling = (header.get('sampling') or {}).get('type')
    parameters = [ParameterInfo(name=entry.get('name'), type=entry.get('type'), scale=entry.get('scale'))
                  for entry in header.get('parameters') or () if isinstance(entry, dict) and entry.get('name')]
    return sampling, parameters


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def sweep_record(name, objective, trials, *, resource_group=None, workspace=None, experiment=None, sampling=None,
                 parameters=None, generated_at=None):
    return SweepRecord(name=name, objective=objective, trials=trials, resource_group=resource_group,
                       workspace=workspace, experiment=experiment, sampling=sampling, parameters=parameters or [],
                       generated_at=generated_at or now_iso())
