"""Decisions: what the controller (or a policy, or a sampler) decided about a job, with the rule and the numbers.

Decisions are never silent: each one carries a sentence a person can check by hand, such as
"stopped at epoch 5 by bandit: 0.7 < 0.78 / 1.1", and the numbers behind it for tools.
"""
from dataclasses import dataclass, field
from typing import Optional

# Decision kinds.
STOPPED = 'stopped'          # an early-termination policy terminated the job
TIMEOUT = 'timeout'          # the sweep's timeoutMinutes ended the job
PROMOTED = 'promoted'        # Hyperband: the configuration goes on with more resource
NOT_PROMOTED = 'not promoted'  # Hyperband: the configuration stops at this rung
KINDS = (STOPPED, TIMEOUT, PROMOTED, NOT_PROMOTED)


@dataclass(frozen=True)
class Decision:
    """One decision about one job.

    :ivar job: the job's name.
    :ivar kind: one of KINDS.
    :ivar rule: who decided: a policy's name (bandit, median, truncation, asha), hyperband, or limits.
    :ivar text: the sentence shown to people, with the numbers.
    :ivar step: the step (epoch) the decision was taken at, when there is one.
    :ivar numbers: the values the rule compared, for tools (JSON-ready).
    """
    job: str
    kind: str
    rule: str
    text: str
    step: Optional[float] = None
    numbers: dict = field(default_factory=dict, compare=False, hash=False)

    def as_dict(self):
        return {'job': self.job, 'decision': self.kind, 'rule': self.rule, 'text': self.text, 'step': self.step,
                'numbers': dict(self.numbers)}

    @classmethod
    def from_dict(cls, data):
        return cls(job=data['job'], kind=data['decision'], rule=data['rule'], text=data['text'],
                   step=data.get('step'), numbers=data.get('numbers') or {})


def better(a, b, goal):
    """True when value a is strictly better than b for the goal ('max' or 'min')."""
    return a > b if goal == 'max' else a < b


def best_of(values, goal):
    return max(values) if goal == 'max' else min(values)


def fmt(value):
    """A number as people read it in a decision: at most 4 significant digits, no float noise."""
    if value is None:
        return '-'
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return '{:.4g}'.format(value)
