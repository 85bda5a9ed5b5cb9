"""The vocabulary shared by the controller, the policies and the samplers.

A :class:`Trial` is one job of a sweep as the service reports it: its parameters (from the job's environment),
its state, and the intermediate values its output reported so far. Policies and samplers see nothing else, which
is what makes a killed ``sweep run`` resume with the same decisions: everything they read can be rebuilt from the
service.
"""
from dataclasses import dataclass, field
from typing import Optional, Tuple

# Batch AI's execution states, lower-cased as `status` shows them. A job being terminated still holds its slot, so
# it is pending (it counts toward maxConcurrentJobs); a job Batch AI reports failed with JobTerminated is 'terminated'.
PENDING_STATES = ('queued', 'running', 'terminating')
FINISHED_STATES = ('succeeded', 'failed', 'terminated')


@dataclass(frozen=True)
class Report:
    """One intermediate value a job reported: the objective at a step (an epoch, an iteration)."""
    step: float
    value: float


@dataclass
class Trial:  # pylint: disable=too-many-instance-attributes
    """One job of the sweep, as the service reports it.

    :ivar name: the job name.
    :ivar index: the job's position in the sweep's submission order (0, 1, ...), recorded in its environment;
        samplers order their history by it, so that a resumed controller sees the same history.
    :ivar params: the parameter values, as in the job's BATCHAI_SWEEP_PARAMS.
    :ivar state: one of PENDING_STATES or FINISHED_STATES.
    :ivar reports: the intermediate values in the order the job printed them.
    :ivar resource: the resource a Hyperband/ASHA job was given (its EPOCHS), else None.
    :ivar parent: the name of the job a promoted job continues, else None.
    :ivar stopped_early: True when the controller terminated the job by a policy decision.
    :ivar bracket: Hyperband: the bracket (its s, Li et al.), else None.
    :ivar rung: Hyperband: the rung within the bracket (0 for a new configuration), else None.
    :ivar slot: Hyperband: the configuration's position in its bracket (a promotion keeps its parent's), else None.
    :ivar metrics: {metric name: its last value in the job's log} for the metrics a sweep with several objectives or
        with constraints reads besides its first objective (core/tuning/objectives.py), else {}.
    """
    name: str
    index: int
    params: dict
    state: str
    reports: Tuple[Report, ...] = ()
    resource: Optional[float] = None
    parent: Optional[str] = None
    stopped_early: bool = False
    extra: dict = field(default_factory=dict)
    bracket: Optional[int] = None
    rung: Optional[int] = None
    slot: Optional[int] = None
    metrics: dict = field(default_factory=dict)

    @property
    def pending(self):
        return self.state in PENDING_STATES

    @property
    def last(self):
        """The latest intermediate value, or None."""
        return self.reports[-1].value if self.reports else None

    def objective(self):
        """The value a sampler learns from, or None when the job taught nothing.

        A succeeded job counts with its last report; a job stopped early by a policy counts with its last
        intermediate value (BOHB's rule: it is evidence that the configuration is poor); a failed job, a job
        terminated by the user and a job without any report count as nothing.
        """
        if self.state == 'succeeded' or (self.state == 'terminated' and self.stopped_early):
            return self.last
        return None


@dataclass(frozen=True)
class Suggestion:
    """A job a sampler wants submitted next.

    :ivar params: the parameter values (every parameter of the sweep).
    :ivar resource: for Hyperband/ASHA, the resource to give the job (fills the resource placeholder), else None.
    :ivar parent: for a promotion, the name of the job it continues, else None.
    :ivar note: why this job (for example "bracket 1, rung 2"), shown by `status`.
    :ivar bracket, rung, slot: Hyperband's coordinates of the job (see :class:`Trial`), else None.
    """
    params: dict
    resource: Optional[float] = None
    parent: Optional[str] = None
    note: str = ''
    bracket: Optional[int] = None
    rung: Optional[int] = None
    slot: Optional[int] = None


class Sampler:
    """What the controller asks a sampler; every sampler of core/tuning/samplers/ implements it.

    A sampler is built from the sweep's parameter specs (core/spec/params.py objects), its goal ("max" or "min") and its
    seed. ``suggest`` is a pure function of the sampler's settings and ``trials`` (every job of the sweep so far,
    finished and pending, in ``index`` order): called again with the same trials it returns the same suggestions,
    which is what lets a killed controller resume without changing the sweep.
    """

    def suggest(self, trials, count):
        """Up to ``count`` new jobs; fewer (or none) when the sampler is exhausted.

        :param trials: list of :class:`Trial`, in index order; pending ones are jobs still queued or running. A
            Trial's parameter dict is not changed in place once handed over (a job read again gets a new dict): a
            sampler asked again takes the dict it read before for the same parameters (samplers/tpe.py's history).
        :param count: how many jobs the controller may submit now (the free concurrency and budget).
        :returns: list of :class:`Suggestion`.
        """
        raise NotImplementedError

    def exhausted(self, trials):
        """True when no job will ever be suggested again (then the sweep ends once the pending jobs finish)."""
        raise NotImplementedError

    def explain(self, trials):  # pylint: disable=unused-argument
        """The decisions the sampler itself took about finished jobs ({name: Decision}), e.g. Hyperband's
        promotions; shown by `status` and the result of `sweep run`. Samplers that decide nothing return {}."""
        return {}
