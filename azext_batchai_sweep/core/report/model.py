"""What a report is drawn from: the sweep's identity, its objective, and its jobs as core.tuning Trials.

A job is a :class:`~azext_batchai_sweep.core.tuning.trial.Trial` (the vocabulary the adaptive-sweep controller
shares), so the report reads the same jobs, intermediate values and decisions the controller does. What only the
report needs rides in ``Trial.extra``: the job's times and exit code (EXTRA_* keys) and the controller's decision
about it (``extra['decision']``, a :class:`Decision` as a dict), which is None for a sweep no controller steered.
"""
from dataclasses import dataclass, field
from typing import List, Optional

GOALS = ('max', 'min')

# Keys of Trial.extra the report reads.
EXTRA_START = 'startTime'
EXTRA_END = 'endTime'
EXTRA_DURATION = 'durationSeconds'
EXTRA_EXIT_CODE = 'exitCode'
EXTRA_DECISION = 'decision'
EXTRA_ERROR = 'error'
EXTRA_SAMPLING = 'sampling'  # the sampling type a `sweep run` job carries, else None
EXTRA_SCHEDULER_JOB_ID = 'schedulerJobId'  # the job's id at the local service's scheduler (Slurm, Batch), else None
EXTRA_SCHEDULER = 'scheduler'  # with that id: the scheduler that gave it ('slurm', 'azure-batch'), else None
EXTRA_STEP_KEY = 'stepKey'    # the key the job's steps were read from (epoch...), None when numbered
EXTRA_CODE = 'code'  # the hash of the --code snapshot the job ran (core/code/), else None


@dataclass
class Objective:
    """How the objective was read and which way is better.

    :ivar metric: the metric's name (Katib `name=value`), or None with a regex.
    :ivar regex: the regular expression that found it, or None.
    :ivar goal: "max" or "min".
    :ivar step: the step key asked for (e.g. "epoch"), or None (detected per job).
    :ivar file: the file it was read from, in output directory `output_directory_id`.
    """
    metric: Optional[str] = None
    regex: Optional[str] = None
    goal: str = 'max'
    step: Optional[str] = None
    file: str = 'stdout.txt'
    output_directory_id: str = 'stdouterr'

    @property
    def label(self):
        return self.metric or 'objective'

    def better(self, a, b):
        """True when value a is strictly better than b (b may be None)."""
        if a is None:
            return False
        return b is None or (a > b if self.goal == 'max' else a < b)

    def as_dict(self):
        return {'metric': self.metric, 'regex': self.regex, 'goal': self.goal, 'step': self.step,
                'file': self.file, 'outputDirectoryId': self.output_directory_id}


@dataclass
class Decision:
    """What the adaptive-sweep controller decided about a job, as `status` shows it.

    :ivar action: "stopped" (terminated by a policy), "promoted" (continued with more resource), "kept"...
    :ivar rule: the policy or sampler that decided ("bandit", "median", "truncation", "asha", "hyperband").
    :ivar reason: the rule with its numbers, e.g. "stopped at epoch 5 by bandit: 0.71 < 0.78 / 1.1".
    :ivar step: the step the decision was taken at, or None.
    :ivar rung, bracket: Hyperband/ASHA's rung and bracket, or None.
    """
    action: str
    rule: Optional[str] = None
    reason: str = ''
    step: Optional[float] = None
    rung: Optional[int] = None
    bracket: Optional[int] = None

    def as_dict(self):
        return {'action': self.action, 'rule': self.rule, 'reason': self.reason, 'step': self.step,
                'rung': self.rung, 'bracket': self.bracket}


@dataclass
class ParameterInfo:
    """What the sweep file said about a parameter, where it is known (a plan file): its type and scale."""
    name: str
    type: Optional[str] = None      # numeric, discrete, dict, file
    scale: Optional[str] = None     # LINEAR, LOG, RANDOM_UNIFORM for numeric parameters


@dataclass
class SweepRecord:  # pylint: disable=too-many-instance-attributes
    """A sweep as the service holds it, plus what the plan file says (sampling, parameter scales) when known.

    :ivar trials: every job of the sweep (core.tuning.trial.Trial), in submission order.
    :ivar sampling: "grid", "random", "hyperband"... or None when unknown.
    :ivar parameters: ParameterInfo per parameter the plan declares (empty: inferred from the values).
    """
    name: str
    objective: Objective
    trials: list
    resource_group: Optional[str] = None
    workspace: Optional[str] = None
    experiment: Optional[str] = None
    sampling: Optional[str] = None
    parameters: List[ParameterInfo] = field(default_factory=list)
    generated_at: Optional[str] = None
