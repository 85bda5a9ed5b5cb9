"""The controller: observations in, actions out.

Each poll, the command gives the controller every job of the sweep as the service reports it (a list of
:class:`~.trial.Trial`) and the time since the sweep's first job was created; the controller answers with the jobs to
terminate (each with its :class:`~.decision.Decision`), the jobs to submit (the sampler's suggestions, within the
limits) and whether the sweep has ended and why. It touches no service: ``sweep run`` (core/tuning/loop.py) does
the requests, which is what lets the algorithms be tested on synthetic curves and benchmarked in-process.

The only memory the controller keeps between polls is which reports it has judged and the decisions it took; both
are cached in the run's journal, and losing them loses nothing the service does not hold (a job's state says it was
terminated; the synchronous samplers derive everything from the finished jobs' results).
"""
import logging
from dataclasses import dataclass, field, replace
from typing import Optional

from .decision import TIMEOUT, Decision
# Decision.numbers key: how many of the job's reports it had made when it was stopped (the reports it counts with).
from .job_value import REPORTS_JUDGED, REPORTS_RUN, judged_reports

logger = logging.getLogger(__name__)

# Why a sweep ends.
END_EXHAUSTED = 'exhausted'        # the sampler has nothing more to run, and every job has finished
END_MAX_TOTAL = 'maxTotalJobs'     # the budget of jobs is spent, and every job has finished
END_TIMEOUT = 'timeout'            # timeoutMinutes passed: the running jobs were terminated
END_STOPPED = 'stopped'            # someone else terminated the sweep's jobs (az batchai sweep stop)
END_UNREPORTED = 'objectiveNotReported'  # strict: the jobs' output shows the objective is misnamed
END_STOP_AT = 'stopAt'             # the best objective reached limits.stopAt: the running jobs were terminated
END_PLATEAU = 'plateau'            # limits.noImprovementJobs jobs in a row brought no better best: likewise
UNLIMITED = 1 << 30
END_REASONS = {
    END_EXHAUSTED: 'every job the sampler had to run has finished',
    END_MAX_TOTAL: 'maxTotalJobs jobs were submitted and all have finished',
    END_TIMEOUT: 'the sweep reached timeoutMinutes; its running jobs were terminated',
    END_UNREPORTED: 'the jobs print no value of the objective (strict): the sweep was stopped at once',
    END_STOP_AT: 'the best objective reached limits.stopAt; its running jobs were terminated',
    END_PLATEAU: 'limits.noImprovementJobs jobs in a row ran to the end without a better best; its running jobs '
                 'were terminated',
    END_STOPPED: 'jobs of the sweep were terminated by someone else (az batchai sweep stop): nothing more was '
                 'submitted; run the same command again to go on',
}


@dataclass
class Limits:
    """The sweep file's limits (None: no limit). Durations are minutes and may be fractions."""
    max_total_jobs: Optional[int] = None
    max_concurrent_jobs: Optional[int] = None
    timeout_minutes: Optional[float] = None
    job_timeout_minutes: Optional[float] = None
    stop_at: Optional[float] = None           # end once the best objective reaches it
    no_improvement_jobs: Optional[int] = None  # end once this many jobs in a row ran to the end without a better best

    def as_dict(self):
        """The limits set, under the sweep file's names (for --plan-only and the report)."""
        named = (('maxTotalJobs', self.max_total_jobs), ('maxConcurrentJobs', self.max_concurrent_jobs),
                 ('timeoutMinutes', self.timeout_minutes), ('jobTimeoutMinutes', self.job_timeout_minutes),
                 ('stopAt', self.stop_at), ('noImprovementJobs', self.no_improvement_jobs))
        return {key: value for key, value in named if value is not None}


@dataclass
class Actions:
    """What the controller wants done after one observation."""
    terminate: list = field(default_factory=list)   # Decisions, one per job to terminate
    submit: list = field(default_factory=list)      # Suggestions, in the order to submit them
    end: Optional[str] = None                       # one of END_REASONS once the sweep is over
    notes: list = field(default_factory=list)       # (job name, text, report n): a policy let a job go on (ASHA)
    # How many of the last `submit` take the places of jobs `terminate` stops (free_stopped): created only once those
    # jobs have ended, since a terminating job still holds its place under maxConcurrentJobs.
    replacing: int = 0


class Controller:
    """Limits + an early-termination policy (or None) + a sampler.

    :ivar judged: {job name: how many of its reports have been judged}.
    :ivar decisions: {job name: the Decision that terminated it}.
    """

    def __init__(self, sampler, policy=None, limits=None, judged=None, decisions=None, goal=None, objectives=None):
        self.sampler, self.policy, self.limits = sampler, policy, limits or Limits()
        self.objectives = objectives  # constraints: an infeasible job never counts for the result limits
        self.goal = goal or getattr(sampler, 'goal', None) or 'max'
        self.judged = dict(judged or {})
        self.decisions = dict(decisions or {})
        self._seen = {}  # {job name: (the trial, its decision, as_seen of it)}: reused while both are the same

    def as_seen_by_policies(self, trials):
        """The trials as the rules must see them (see as_seen). A trial object seen before with the same decision
        gives the same answer without a copy (a finished job's Trial is reused from poll to poll: core/tuning/loop.py),
        so a poll does not copy every job a rule stopped (issue 44)."""
        memo, decisions, seen = self._seen, self.decisions, []
        for trial in trials:
            decision = decisions.get(trial.name)
            if decision is None and trial.state != 'terminated':
                seen.append(trial)
                continue
            known = memo.get(trial.name)
            if known is None or known[0] is not trial or known[1] is not decision:
                known = memo[trial.name] = (trial, decision, as_seen([trial], decisions)[0])
            seen.append(known[2])
        return seen

    def step(self, trials, elapsed_seconds=0.0, free_stopped=False):
        """The actions for one observation of the sweep (every job, in index order).

        free_stopped: the jobs this step terminates are terminated before its jobs are submitted (as `sweep run`
        does), so the sampler sees them as the next observation will (terminated, with the reports they were judged
        on) and their places are given to new jobs now (`actions.replacing` of them), which the run creates as soon
        as the stopped jobs have ended: filled at the poll that stops them, not one poll later, which kept slots idle
        (issue 44). The simulation (core/tuning/simulation.py) frees them at its next tick."""
        observed = trials
        trials = self.as_seen_by_policies(trials)
        actions = Actions()
        pending = [t for t in trials if t.pending]
        limits = self.limits

        if limits.timeout_minutes is not None and elapsed_seconds >= limits.timeout_minutes * 60:
            self._end_now(pending, actions, END_TIMEOUT, 'terminated by the sweep\'s timeoutMinutes ({:g} minutes)'
                          .format(limits.timeout_minutes), {'timeoutMinutes': limits.timeout_minutes})
            return actions
        good_enough = results_end(trials, limits, self.goal, self.objectives)
        if good_enough is not None:
            end, text, numbers = good_enough
            self._end_now(pending, actions, end, 'terminated: ' + text, numbers)
            return actions

        if self.policy is not None:
            for trial in pending:
                if trial.state != 'running' or trial.name in self.decisions:
                    continue
                for n in self.policy.evaluation_points(trial):
                    if n <= self.judged.get(trial.name, 0):
                        continue
                    self.judged[trial.name] = n  # judged once: a re-run never repeats a decision, nor its error
                    decision = self._judge(trial, n, trials)
                    if decision is not None:
                        decision.numbers.setdefault(REPORTS_JUDGED, n)
                        self.decisions[trial.name] = decision
                        actions.terminate.append(decision)
                        break
                    note = self._kept(trial, n, trials)
                    if note:
                        actions.notes.append((trial.name, note, n))

        held = len(pending)  # the places taken now, the jobs stopped at this step's included
        if free_stopped and actions.terminate:
            trials = self._after_terminate(observed, actions.terminate)
            pending = [t for t in trials if t.pending]
        free = None if limits.max_concurrent_jobs is None else limits.max_concurrent_jobs - len(pending)
        budget = None if limits.max_total_jobs is None else limits.max_total_jobs - len(trials)
        bounds = [bound for bound in (free, budget) if bound is not None]
        count = min(bounds) if bounds else UNLIMITED  # no limit at all: everything the sampler has now
        if count > 0:
            actions.submit = list(self.sampler.suggest(trials, count))[:count]
            if free is not None:
                actions.replacing = max(0, len(actions.submit) - max(0, limits.max_concurrent_jobs - held))

        if not pending and not actions.submit:
            actions.end = END_MAX_TOTAL if budget is not None and budget <= 0 else END_EXHAUSTED
        return actions

    def _after_terminate(self, observed, terminated):
        """The trials as the rules see them once the jobs of `terminated` (this step's decisions) have gone."""
        gone = {decision.job for decision in terminated}
        return [replace(t, state='terminated') if t.name in gone else t for t in self.as_seen_by_policies(observed)]

    def _end_now(self, pending, actions, end, text, numbers):
        """End the sweep: terminate its running jobs (a decision each, rule `limits`), submit nothing more."""
        for trial in pending:
            if trial.state != 'terminating' and trial.name not in self.decisions:
                decision = Decision(job=trial.name, kind=TIMEOUT, rule='limits', step=_last_step(trial), text=text,
                                    numbers=dict(numbers))
                self.decisions[trial.name] = decision
                actions.terminate.append(decision)
        actions.end = end

    def _judge(self, trial, n, trials):
        """The policy's decision, or None when it failed on this job's data: the error is logged with the job's name
        and the sweep goes on (a job's output must never end a sweep, nor every re-run of it)."""
        try:
            return self.policy.judge(trial, n, trials)
        except Exception as ex:  # pylint: disable=broad-except
            logger.warning('job %s: the %s decision at its report %d failed and was skipped (%s: %s)', trial.name,
                           self.policy.name, n, type(ex).__name__, ex)
            return None

    def _kept(self, trial, n, trials):
        """What the policy says of a job it let go on at its n-th report (ASHA's promotions), judged on the same view
        as the decision; None when it has nothing to say or fails on the job's data (logged: only a message is lost)."""
        try:
            own, seen = self.policy.view(trial, n, trials)
            return self.policy.kept(own, n, seen)
        except Exception as ex:  # pylint: disable=broad-except
            logger.warning('job %s: what %s says of its report %d was skipped (%s: %s)', trial.name, self.policy.name,
                           n, type(ex).__name__, ex)
            return None


def as_seen(trials, stops):
    """The trials as the rules (and the sweep's figures) see them: a job terminated by a decision (`stops`: {name:
    Decision}) is marked stopped early and counts with the reports it had made when it was judged (or, for a decision
    without that count, those up to the decision's step): a job may print a few more before it is gone; a job that
    Batch AI reports terminated counts as stopped early (only the controller terminates a running sweep's jobs, and a
    lost journal must not turn its decisions into jobs that taught nothing)."""
    seen = []
    for trial in trials:
        decision = stops.get(trial.name)
        if decision is not None:
            # What ran still counts as run (the job-steps used): every report its log shows, the later ones too.
            trial = replace(trial, reports=judged_reports(trial.reports, decision), stopped_early=True,
                            extra=dict(trial.extra, **{REPORTS_RUN: len(trial.reports)}))
        elif trial.state == 'terminated':
            trial = replace(trial, stopped_early=True)
        seen.append(trial)
    return seen


def results_end(trials, limits, goal, objectives=None):
    """(end reason, text, numbers) when the jobs that ran to the end make the sweep good enough, else None: the best
    objective reached limits.stopAt, or limits.noImprovementJobs jobs in a row (in submission order) ran to the end
    without a better best than the jobs before them. A pure function of what the service reports, so a resumed run
    ends where an uninterrupted one would. With constraints (objectives), an infeasible job counts as none."""
    if limits.stop_at is None and limits.no_improvement_jobs is None:
        return None
    from .final import ran_to_end
    from .result import best_trial
    if objectives is not None and objectives.constraints:
        trials = [t for t in trials if not ran_to_end(t) or objectives.feasible(t)]
    better = (lambda a, b: a > b) if goal == 'max' else (lambda a, b: a < b)
    if limits.stop_at is not None:
        best = best_trial(trials, goal)
        if best is not None and (best.last == limits.stop_at or better(best.last, limits.stop_at)):
            return END_STOP_AT, 'the best objective, {:g} ({}), reached limits.stopAt ({:g})'.format(
                best.last, best.name, limits.stop_at), {'stopAt': limits.stop_at, 'best': best.last}
    if limits.no_improvement_jobs is not None:
        finished = sorted((t for t in trials if ran_to_end(t) and t.last is not None and t.last == t.last),
                          key=lambda t: t.index)
        best, since = None, 0
        for trial in finished:
            if best is None or better(trial.last, best):
                best, since = trial.last, 0
            else:
                since += 1
        if best is not None and since >= limits.no_improvement_jobs:
            return END_PLATEAU, '{} jobs in a row ran to the end without a better best than {:g} ' \
                '(limits.noImprovementJobs)'.format(since, best), {'noImprovementJobs': limits.no_improvement_jobs,
                                                                    'best': best}
    return None


def _last_step(trial):
    return trial.reports[-1].step if trial.reports else None
