"""`az batchai sweep run`: the controller's loop against the service, crash-safe.

Each poll: the states of the sweep's jobs (one listing of the experiment at the start and every so often, else a
GET of each job the run knows to be active: SweepRun._full_listing_due), the new bytes of the running jobs' logs
(core/tuning/logs.py), then the controller's actions: terminate the jobs a rule stopped, submit the next jobs (one
PUT each, in order) and end when the sweep is over (once a whole listing agrees).

Nothing the loop needs lives only in this process. A job's place in the sweep is in its environment
(BATCHAI_SWEEP_INDEX, and for Hyperband BATCHAI_SWEEP_RESOURCE/BRACKET/RUNG/SLOT/PARENT), its name is a hash of
what it is (the parameter values; for Hyperband also bracket and slot), and the samplers derive their next jobs
from the jobs on the service. So a controller killed at any point (Ctrl-C, SIGKILL, a closed Cloud Shell) is
resumed by running the same command again: it lists the jobs, reads their logs, and goes on; a job whose PUT was
sent just before the kill has the same name the second time, so it is never created twice. The journal (JSON
Lines in the az config directory: core/tuning/journal.py) caches the logs already read to their end and the
decisions with their reasons; without it a re-run reads the logs again, and a job Batch AI reports terminated counts
as stopped by the controller.
"""
import datetime
import json
import logging
import os
import time
from dataclasses import replace

from ..service.listing import being_deleted, env_of, get_job, list_jobs, parameters_of, state_of, sweep_name_of
from ..service.parallel import run_parallel
from ..service.identity import SWEEP_SEED_VAR, add_digest, body_digest
from ..spec.naming import canonical_json, name_from_digest, sanitize_prefix, sweep_salt, values_digest
from ..service.retry import RetrySettings, describe_error
from ..service.stop import terminate_job, wait_until_stopped
from ..service.submit import create_job
from ..spec.substitution import CompiledTemplate
from .bayesian_settings import objectives_of
from .controller import (END_EXHAUSTED, END_MAX_TOTAL, END_REASONS, END_STOPPED, END_UNREPORTED, REPORTS_JUDGED,
                         Controller, Limits, as_seen)
from .decision import STOPPED, TIMEOUT, Decision
from .journal import Journal
from .logs import LogFollower
from .objectives import Objectives
from .reports import metrics_unreported, objective_unreported
from .policies import make_policy
from .result import summarize_run, sweep_figures, tuning_row
from .samplers import make_sampler
from .trial import Suggestion, Trial

logger = logging.getLogger(__name__)

ENV_INDEX = 'BATCHAI_SWEEP_INDEX'
ENV_RESOURCE = 'BATCHAI_SWEEP_RESOURCE'
ENV_BRACKET = 'BATCHAI_SWEEP_BRACKET'
ENV_RUNG = 'BATCHAI_SWEEP_RUNG'
ENV_SLOT = 'BATCHAI_SWEEP_SLOT'
ENV_PARENT = 'BATCHAI_SWEEP_PARENT'
ENV_PARENT_OUTPUT = 'BATCHAI_SWEEP_PARENT_OUTPUT_'
# The run's objective and rules, in every job: `status` and `metrics` read them from the service without the journal.
ENV_OBJECTIVE = 'BATCHAI_SWEEP_OBJECTIVE'
ENV_TUNING = 'BATCHAI_SWEEP_TUNING'
# A sweep's objectives and constraints (core/tuning/objectives.py), in every job of a run that has them (only then).
ENV_OBJECTIVES = 'BATCHAI_SWEEP_OBJECTIVES'
# The journal's list of the jobs a run's --stop-on-exit stopped on its way out (_run.remember_stopped_on_exit): not
# judged, so the resumed run re-runs them (from their first step) rather than counting them as stopped early.
STOPPED_ON_EXIT = 'stoppedOnExit'
# What a poll reads (issue 44): one GET costs az's CPU as much as listing 30-50 jobs (the SDK pipeline's fixed cost
# per request against 0.08 ms a listed job: bench/NOTES.md), so a poll GETs the active jobs alone when the sweep
# has LISTED_JOBS_PER_GET times more jobs than that, and lists everything at least every
# len(jobs) / FULL_LISTING_JOBS_PER_POLL polls (never more often than every FULL_LISTING_MIN_POLLS while GETs cost
# less).
LISTED_JOBS_PER_GET = 32
FULL_LISTING_JOBS_PER_POLL = 100
FULL_LISTING_MIN_POLLS = 30
# The journal's figures (best, counts, compute: a pass over every job) are computed at every poll up to this many
# jobs, and every len(jobs) / FIGURES_JOBS_PER_POLL polls beyond (always at the end): status shows figures that
# old while a run of more jobs goes on; the rows are always current.
FIGURES_JOBS_PER_POLL = 1000
PENDING_STATES = frozenset({'queued', 'running', 'terminating'})
# A job a poll stops keeps its place under maxConcurrentJobs until it has ended: the poll creates the jobs that take
# those places once it has seen them end (a GET of each, every STOPPED_CHECK_SECONDS, doubling), waiting at most
# STOPPED_WAIT_SECONDS (or the poll interval, when shorter); a place still held then is filled at a later poll.
STOPPED_WAIT_SECONDS = 1.0
STOPPED_CHECK_SECONDS = 0.01


# ---- jobs as the controller sees them ----------------------------------------------------------------------------

# The execution state, with 'terminated' for a job Batch AI reports failed because it was terminated.
job_state = state_of


def _number(text):
    if text is None:
        return None
    value = float(text)
    return int(value) if value.is_integer() else value


def _int(text):
    return int(text) if text not in (None, '') else None


def trial_of(job, reports, resource_name=None, position=0, metrics=None):
    """A Trial from a listed job and the reports (and extra metrics) read from its log."""
    env = env_of(job)
    params = parameters_of(job)
    if resource_name:
        params.pop(resource_name, None)
    index = _int(env.get(ENV_INDEX))
    return Trial(name=job.name, index=index if index is not None else 1_000_000 + position, params=params,
                 state=job_state(job), reports=tuple(reports), resource=_number(env.get(ENV_RESOURCE)),
                 parent=env.get(ENV_PARENT) or None, bracket=_int(env.get(ENV_BRACKET)),
                 rung=_int(env.get(ENV_RUNG)), slot=_int(env.get(ENV_SLOT)), metrics=dict(metrics or {}))


def output_paths(job):
    """{output directory id: the path of the job's output directory}, as the job saw it ($AZ_BATCHAI_* kept)."""
    props = job._raw.get('properties') or {}  # pylint: disable=protected-access
    segment = props.get('jobOutputDirectoryPathSegment') or ''
    paths = {}
    for entry in props.get('outputDirectories') or ():
        path = '{}/{}/outputs'.format(entry.get('pathPrefix', '').rstrip('/'), segment)
        if entry.get('pathSuffix'):
            path += '/' + entry['pathSuffix'].strip('/')
        paths[entry['id']] = path
    return paths


class JobFactory:
    """Suggestions -> (name, job create body): the sweep's template rendered as `create` renders it (the same name
    for the same parameter values, BATCHAI_SWEEP_SEED, BATCHAI_SWEEP_JOB_DIGEST), plus the variables that place the
    job in the run."""

    def __init__(self, definition, sweep_name, prepare_body=None):
        specs = list(definition.parameters)
        self.resource_name = None
        if definition.resource_spec is not None:
            specs.append(definition.resource_spec)
            self.resource_name = definition.resource_spec.name
        self.prefix = sanitize_prefix(definition.job_name_prefix or sweep_name)
        self.salt = sweep_salt(sweep_name)
        seed = definition.sampling.get('seed')
        environment = {SWEEP_SEED_VAR: str(seed)} if seed is not None else None
        self.template = CompiledTemplate({'properties': definition.template}, specs, sweep_name=sweep_name,
                                         environment=environment)
        self.prepare_body = prepare_body or (lambda body: body)
        self.constant = {}
        if definition.objective:
            self.constant[ENV_OBJECTIVE] = canonical_json(definition.objective)
        if definition.objective_set:
            self.constant[ENV_OBJECTIVES] = canonical_json(definition.objective_set)
        tuning = {'sampling': dict(definition.sampling)}
        if definition.early_termination:
            tuning['earlyTermination'] = definition.early_termination
        self.constant[ENV_TUNING] = canonical_json(tuning)

    def values(self, suggestion):
        values = dict(suggestion.params)
        if self.resource_name is not None:
            values[self.resource_name] = suggestion.resource
        return values

    def name(self, suggestion):
        values = self.values(suggestion)
        if suggestion.bracket is None:
            identity = canonical_json(values)  # the name `create`/`submit` give the same parameter values
        else:
            identity = canonical_json({'bracket': suggestion.bracket, 'slot': suggestion.slot, 'values': values})
        return name_from_digest(self.prefix, values_digest(identity, self.salt))

    def body(self, suggestion, index, parent_job=None):
        values = self.values(suggestion)
        text = self.template.render_json(values, canonical_json(values))
        body = add_digest(json.loads(text), body_digest(text))
        env = body['properties'].setdefault('environmentVariables', [])
        extra = dict(self.constant)
        extra[ENV_INDEX] = index
        if suggestion.resource is not None:
            extra[ENV_RESOURCE] = suggestion.resource
        for key, value in ((ENV_BRACKET, suggestion.bracket), (ENV_RUNG, suggestion.rung),
                           (ENV_SLOT, suggestion.slot), (ENV_PARENT, suggestion.parent)):
            if value is not None:
                extra[key] = value
        if parent_job is not None:
            for directory, path in output_paths(parent_job).items():
                extra[ENV_PARENT_OUTPUT + directory] = path
        env.extend({'name': name, 'value': str(value)} for name, value in extra.items())
        return self.prepare_body(body)


# ---- what the journal (core/tuning/journal.py) and the service say of a run ----------------------------------------

def view_from_service(client, resource_group, workspace, experiment, jobs, retry=None, known=None):
    """(status rows, the sweep's figures) of a run's jobs rebuilt from the service alone (its journal is on another
    machine, lost, or older than a job's attempt): the objective and rules the jobs carry, their logs read once,
    Hyperband's decisions derived again (they depend on the finished jobs only). A job the run terminated is shown as
    stopped early, without the numbers of its rule (those are in the journal: `known`, {name: Decision} of the
    journal for the jobs whose attempt it saw). ({}, None) for jobs that did not come from `sweep run`."""
    objective = objective_from_service(jobs)
    if objective is None:
        return {}, None
    envs = [env_of(job) for job in jobs]
    tuning = json.loads(next((env[ENV_TUNING] for env in envs if env.get(ENV_TUNING)), '{}'))
    sampling = tuning.get('sampling') or {}
    goal, step_label = objective['goal'], objective.get('step') or 'report'
    objectives = objectives_from_service(jobs, objective)
    follower = LogFollower(client, resource_group, workspace, experiment, objective, retry=retry,
                           extra_metrics=objectives.extra_metrics() if objectives else ())
    follower.update([(job.name, job_state(job)) for job in jobs])
    resource = sampling.get('resource') if sampling.get('type') == 'hyperband' else None
    trials = [trial_of(job, follower.reports(job.name), resource, i, follower.metrics(job.name))
              for i, job in enumerate(jobs)]
    rule = (tuning.get('earlyTermination') or {}).get('policy') or 'the run'
    stops = {name: d for name, d in (known or {}).items() if d.kind in (STOPPED, TIMEOUT)}
    for t in trials:
        if t.state == 'terminated' and t.name not in stops:
            stops[t.name] = Decision(job=t.name, kind=STOPPED, rule=rule, step=t.reports[-1].step if t.reports
                                     else None, text='stopped by {} (the numbers are in the journal of the '
                                     'machine that ran the sweep)'.format(rule))
    seen = as_seen(trials, stops)
    decisions = {}
    if resource:
        from .samplers.hyperband import HyperbandSampler
        decisions = HyperbandSampler([], goal, sampling['minResource'], sampling['maxResource'],
                                     sampling.get('eta', 3), sampling.get('seed'), resource=resource,
                                     iterations=sampling.get('iterations', 1)).explain(seen)
    decisions.update(stops)
    rows = tuning_rows(seen, decisions, goal, step_label, objectives)
    seconds = round(sum(_seconds(job) for job in jobs), 3)
    return rows, sweep_figures(seen, decisions, goal, step_label, job_seconds=seconds, objectives=objectives,
                               metric=objective.get('metric'))


def tuning_rows(seen, decisions, goal, step_label, objectives, memo=None):
    """{job name: tuning_row}, with the Pareto marks (core/tuning/front.py) of a sweep with objectives/constraints.

    :param memo: {job name: (trial, decision, row)} kept by a caller that asks at every poll: a job whose trial and
        decision are the same objects as last time keeps its row (never changed in place: the journal compares rows
        by identity, core/tuning/journal.py).
    """
    if memo is None:
        rows = {t.name: tuning_row(t, decisions.get(t.name), goal, step_label) for t in seen}
    else:
        rows = {}
        for t in seen:
            decision = decisions.get(t.name)
            known = memo.get(t.name)
            if known is None or known[0] is not t or known[1] is not decision:
                known = memo[t.name] = (t, decision, tuning_row(t, decision, goal, step_label))
            rows[t.name] = known[2]
    if objectives is not None:
        from .front import front_rows
        for name, marks in front_rows(seen, objectives).items():
            rows[name] = dict(rows[name], **marks)
    return rows


def attempt_of(job):
    """What tells two attempts of a job apart: its creationTime (resubmit deletes a job and creates it again under
    its name)."""
    return (job._raw.get('properties') or {}).get('creationTime')  # pylint: disable=protected-access


def run_view(client, resource_group, workspace, experiment, jobs, journal_path, retry=None):
    """(status rows, figures) of a `sweep run`'s jobs: the journal's when it saw every job's current attempt, else
    rebuilt from the service with the journal's decisions (and their numbers) for the attempts it did see; ({},
    None) for a sweep no controller ran."""
    journal = Journal(journal_path) if journal_path and os.path.exists(journal_path) else None
    data = journal.data if journal is not None else {}
    attempts = data.get('attempts') or {}
    current = {job.name: attempt_of(job) for job in jobs}
    if data.get('rows') and data.get('figures') and current and all(
            attempts.get(name) == attempt and name in data['rows'] for name, attempt in current.items()):
        return data['rows'], data['figures']
    known = {name: d for name, d in (journal.decisions if journal is not None else {}).items()
             if attempts.get(name) is not None and attempts.get(name) == current.get(name)}
    return view_from_service(client, resource_group, workspace, experiment, jobs, retry=retry, known=known)


def run_outline(journal_path):
    """The outline of the run (SweepRun.outline) its journal keeps, or None."""
    if not journal_path or not os.path.exists(journal_path):
        return None
    return Journal(journal_path).data.get('run')


def objective_from_service(jobs):
    """The objective a run's jobs carry, or None."""
    raw = next((raw for raw in (env_of(job).get(ENV_OBJECTIVE) for job in jobs) if raw), None)
    return json.loads(raw) if raw else None


def objectives_from_service(jobs, objective):
    """The objectives and constraints a run's jobs carry (an objectives.Objectives), or None for a run without."""
    raw = next((raw for raw in (env_of(job).get(ENV_OBJECTIVES) for job in jobs) if raw), None)
    return Objectives.from_spec(json.loads(raw), objective) if raw else None


# ---- the loop ----------------------------------------------------------------------------------------------------

def decision_lines(actions):
    """A poll's decisions (Actions: the stops and what a policy let go on) as the progress lines, in the order the
    rules took them: by the report judged (a job let go on at its first rung before it was stopped at its second),
    then by job; the sweep's own ends (timeout, stopAt) last."""
    said = [(d.numbers.get(REPORTS_JUDGED, float('inf')), d.job, d.text) for d in actions.terminate]
    said += [(n, name, text) for name, text, n in actions.notes]
    return ['{}: {}'.format(name, text) for _, name, text in sorted(said, key=lambda line: (line[0], line[1]))]


def _created(job):
    text = (job._raw.get('properties') or {}).get('creationTime')  # pylint: disable=protected-access
    if not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace('Z', '+00:00')).timestamp()
    except ValueError:
        return None


def _trial_order(trial):
    return trial.index, trial.name


def _seconds(job):
    info = (job._raw.get('properties') or {}).get('executionInfo') or {}  # pylint: disable=protected-access
    try:
        start = datetime.datetime.fromisoformat(info['startTime'].replace('Z', '+00:00'))
        end = datetime.datetime.fromisoformat(info['endTime'].replace('Z', '+00:00'))
    except (KeyError, AttributeError, ValueError):
        return 0.0
    return max(0.0, (end - start).total_seconds())


class SweepRun:  # pylint: disable=too-many-instance-attributes
    """One `sweep run`: call ``poll()`` until it returns the result (or ``run()``)."""

    def __init__(self, client, resource_group, workspace, experiment, sweep_name, definition, *, limits=None,
                 journal_path=None, prepare_body=None, retry=None, parallel=8, progress=None, clock=time.time,
                 strict=False, waiting=None, repeat_waiting=None):
        self.client, self.target, self.sweep_name = client, (resource_group, workspace, experiment), sweep_name
        self.definition = definition
        self.objective = definition.objective
        self.goal = self.objective['goal'] if self.objective else 'max'
        self.step_label = (self.objective or {}).get('step') or 'report'
        self.objectives = objectives_of(definition)
        self.retry = retry or RetrySettings()
        self.journal = Journal(journal_path)
        self.limits = limits or Limits()
        self.progress = progress or (lambda line: None)
        # Why queued jobs wait, from the scheduler (scheduler_ids.waiting_reader: Azure Batch's pools), said after the
        # counts when it changes, and again every `repeat_waiting` seconds while unchanged (a log without a terminal
        # shows that the wait is alive, and why).
        self.waiting, self.repeat_waiting = waiting, repeat_waiting
        self.inheritance = None
        if definition.sampling.get('warmStart'):
            self.inheritance = self.warm_start()
            definition.inherited = self.inheritance.trials
        self.controller = Controller(make_sampler(definition, self.goal, self.limits),
                                     make_policy(definition.early_termination, self.goal, self.step_label),
                                     self.limits, judged=self.journal.data['judged'],
                                     decisions=self.journal.decisions, goal=self.goal, objectives=self.objectives)
        self.factory = JobFactory(definition, sweep_name, prepare_body)
        self.follower = None
        if self.objective:
            self.follower = LogFollower(client, resource_group, workspace, experiment, self.objective,
                                        retry=self.retry, parallel=parallel, complete=self.journal.complete,
                                        warn=logger.warning,
                                        extra_metrics=self.objectives.extra_metrics() if self.objectives else ())
        self.clock, self.parallel, self.end = clock, parallel, None
        self.stopped_wait = STOPPED_WAIT_SECONDS
        self.reset_view()
        self.submitted = 0
        self.submitted_names = set()
        self._last_line = None
        self._waiting_said = None  # (the waiting lines last said, when)
        # strict (--strict, or the sweep file's objective.strict): a misnamed objective ends the sweep at once.
        self.strict = bool(strict or (self.objective or {}).get('strict'))
        self.unreported = None
        self._step_refused_said = False

    def reset_view(self):
        """Forget the run's view of its jobs (the next poll lists the whole experiment)."""
        # Between two listings (observe): the Trial of each job; (position, state, attempt) of each finished job
        # whose log was read to its end; the jobs known queued, running or terminating (a GET each at each poll),
        # created but not seen yet ({name: full listings that missed it}), finished with their logs not read to the
        # end; each job's position in creation order and its run time.
        self.trials, self.jobs = [], {}
        self._trial_by_name, self._trial_keys, self._positions, self._seconds = {}, {}, {}, {}
        self._active, self._unseen, self._incomplete = set(), {}, set()
        self._order = {}  # {name: its place in self.trials}
        self._polls_since_full = None  # None: the next poll lists the whole experiment
        self._last_full, self._first_created, self._next_position = True, None, 0
        self.observations, self.jobs_read = 0, 0  # what the run read: polls, jobs listed or got
        # What the journal's last save was built from (_save): rows, decisions' dicts, logs' entries by job.
        self._rows_memo, self._decision_dicts, self._complete_memo = {}, {}, {}
        self._figures_polls = None  # polls since the journal's figures were computed (None: at the next save)

    def warm_start(self):
        """The jobs sampling.warmStart inherits: its results files (read with the sweep file) and its sweeps (read
        from the service now, before any job is submitted), matched against this sweep's parameters."""
        from ..errors import SpecError
        from .warmstart import inherit_for, records_from_trials
        sources = []
        everything = None
        # A sweep with several objectives or constraints learns from jobs with every metric it judges by.
        extra = self.objectives.extra_metrics() if self.objectives is not None else ()
        for index, entry in enumerate(self.definition.sampling['warmStart']):
            if entry in self.definition.warm_start_files:
                sources.append((entry, self.definition.warm_start_files[entry]))
                continue
            where = 'sampling.warmStart[{}]'.format(index)
            if entry == self.sweep_name:
                raise SpecError('expected an earlier sweep, not this one ({}): its own jobs teach it already'.format(
                    entry), source=self.definition.source, path=where)
            if everything is None:
                everything = [job for job in list_jobs(self.client, *self.target, retry=self.retry)
                              if not being_deleted(job)]
            jobs = [job for job in everything if sweep_name_of(job) == entry]
            if not jobs:
                raise SpecError('expected a sweep of experiment {} or a results file (.json): no job of sweep {} is '
                                'there'.format(self.target[2], entry), source=self.definition.source, path=where)
            finished = [job for job in jobs if job_state(job) == 'succeeded']
            follower = LogFollower(self.client, *self.target, self.objective, retry=self.retry, warn=logger.warning,
                                   extra_metrics=extra)
            follower.update([(job.name, 'succeeded') for job in finished])
            resource = self.factory_resource_name()
            trials = [trial_of(job, follower.reports(job.name), resource, i, follower.metrics(job.name))
                      for i, job in enumerate(jobs)]
            earlier = objective_from_service(jobs) or {}
            sources.append((entry, records_from_trials(trials, earlier.get('metric'))))
        inheritance = inherit_for(self.definition, sources)
        for line in inheritance.messages():
            self.progress(line)
        return inheritance

    def factory_resource_name(self):
        spec = self.definition.resource_spec
        return spec.name if spec is not None else None

    def list_jobs(self):
        jobs = [job for job in list_jobs(self.client, *self.target, retry=self.retry)
                if sweep_name_of(job) == self.sweep_name
                and not being_deleted(job)]
        return jobs

    def _full_listing_due(self):
        """Whether this poll lists the whole experiment (else it GETs the jobs it knows to be active): at the start
        (or when asked: the sweep looks over, or its jobs were just terminated), when a listing costs less than a GET
        per active job, and at least once every len(jobs) / FULL_LISTING_JOBS_PER_POLL polls, which is how a job
        deleted, resubmitted or changed from outside among the finished ones is seen (a listing's cost is then spread
        over as many polls as it has jobs: a constant per poll, not one that grows with the sweep)."""
        if self._polls_since_full is None:
            return True
        watched = len(self._active) + len(self._unseen)
        if watched * LISTED_JOBS_PER_GET > len(self.jobs):
            return True
        return self._polls_since_full >= max(FULL_LISTING_MIN_POLLS, len(self.jobs) // FULL_LISTING_JOBS_PER_POLL)

    def _get_active(self):
        """{name: the job, or None when it is gone} of the jobs this run knows to be queued, running or terminating,
        and of the jobs it created and has not seen yet: one GET each (Batch AI's list has no filter)."""
        names = sorted(self._active | set(self._unseen))
        got = {}

        def on_result(name, job, exc):
            if exc is not None:  # not read this time: the run keeps what it knew of the job
                logger.warning('job %s: its state was not read this time: %s', name, describe_error(exc))
                return
            got[name] = None if job is None or being_deleted(job) else job  # as list_jobs sees it
        run_parallel(self._get, names, parallel=self.parallel, on_result=on_result)
        return got

    def _get(self, name):
        """One job as the service answers a GET of it (None when it is gone)."""
        return get_job(self.client, *self.target, name, retry=self.retry)

    def observe(self, full=False):
        """Read the sweep's jobs (a whole listing, or a GET of each active one: _full_listing_due) and the new log
        lines of the running and just finished ones, and build the trials (in index order). A job that has finished
        and whose log was read to its end keeps its Trial object from poll to poll (nothing of it can change), which
        the controller and the rules recognise without looking at it again (issue 44)."""
        everything = full or self._full_listing_due()
        previous = self._trial_by_name
        if everything:
            self.jobs = {}  # the last listing goes before the next one comes: one listing in memory (9 kB a job)
            jobs = self.list_jobs()
            listed = {job.name for job in jobs}
            self._polls_since_full = 0
            self.jobs = {job.name: job for job in jobs}
            # A job created and never listed twice in a row is not coming (a create the service dropped).
            self._unseen = {name: missed + 1 for name, missed in self._unseen.items()
                            if name not in listed and missed < 1}
            changed, gone = jobs, [name for name in previous if name not in listed]
            order = sorted(jobs, key=lambda j: (_created(j) or 0, j.name))
            self._positions = {job.name: position for position, job in enumerate(order)}
            self._next_position = len(order)
            self._trial_by_name, self._seconds = {}, {}
        else:
            self._polls_since_full += 1
            got = self._get_active()
            changed = [job for job in got.values() if job is not None]
            gone = [name for name, job in got.items() if job is None and name in self.jobs]
            for name in gone:
                del self.jobs[name]
            for job in changed:
                self.jobs[job.name] = job
                self._unseen.pop(job.name, None)
                if job.name not in self._positions:
                    self._positions[job.name] = self._next_position
                    self._next_position += 1
        self.observations += 1
        self.jobs_read += len(changed)
        self._last_full = everything
        self._new_attempts(changed)
        states = {job.name: job_state(job) for job in changed}
        # Finished, but the log not read to its end at the last poll (a failed read): read again.
        retry_logs = {name: job_state(self.jobs[name]) for name in self._incomplete
                      if name in self.jobs and name not in states}
        if self.follower is not None:
            self.follower.update(list(states.items()) + list(retry_logs.items()))
            refused = self.follower.parser.refused_step_text()
            if refused is not None and not self._step_refused_said:
                self._step_refused_said = True
                self.progress(refused)  # said once
        if everything:
            self._active, self._incomplete = set(), set()
        for name in gone:
            for held in (self._trial_by_name, self._seconds, self._positions, self._trial_keys):
                held.pop(name, None)
            self._active.discard(name)
            self._incomplete.discard(name)
        for job in changed + [self.jobs[name] for name in retry_logs]:
            state = states.get(job.name) or retry_logs[job.name]
            self._trial_by_name[job.name] = self._trial(job, state, previous.get(job.name))
            self._seconds[job.name] = _seconds(job)
            (self._active.add if state in PENDING_STATES else self._active.discard)(job.name)
            unread = (self.follower is not None and state not in PENDING_STATES
                      and job.name not in self.follower.complete)
            (self._incomplete.add if unread else self._incomplete.discard)(job.name)
        trials = self._ordered(everything or bool(gone), [job.name for job in changed] + list(retry_logs))
        created = [c for c in (_created(job) for job in changed) if c is not None]
        if everything:
            self._first_created = min(created) if created else None
        elif created:
            self._first_created = min(created + [self._first_created or created[0]])
        return trials, (self.clock() - self._first_created) if self._first_created is not None else 0.0

    def _ordered(self, rebuild, touched):
        """self.trials (index order) with the trials of the `touched` jobs put in: each in its place, and new jobs
        after the last when their index comes after it, so that a poll's work here follows the jobs that changed (a
        sort of every job at every poll before, issue 44); sorted whole after a listing, a job gone, or a job whose
        index changed (resubmitted from outside)."""
        trials, order, by_name = self.trials, self._order, self._trial_by_name
        added = []
        for name in [] if rebuild else touched:
            trial = by_name[name]
            place = order.get(name)
            if place is None:
                added.append(trial)
            elif trials[place].index == trial.index:
                trials[place] = trial
            else:
                rebuild = True
                break
        if not rebuild and added:
            added.sort(key=_trial_order)
            if trials and _trial_order(added[0]) < _trial_order(trials[-1]):
                rebuild = True
            else:
                for trial in added:
                    order[trial.name] = len(trials)
                    trials.append(trial)
        if rebuild:
            trials = self.trials = sorted(by_name.values(), key=_trial_order)
            self._order = {trial.name: place for place, trial in enumerate(trials)}
        return trials

    def _trial(self, job, state, known):
        """The job's Trial: the one of the last poll when the job had finished and its log was read to its end then
        and now, with the same position, state and attempt; else a new one."""
        complete = self.follower is None or job.name in self.follower.complete
        key = (self._positions.get(job.name, 0), state, attempt_of(job))
        if known is not None and complete and self._trial_keys.get(job.name) == key:
            return known
        reports = self.follower.reports(job.name) if self.follower else ()
        metrics = self.follower.metrics(job.name) if self.follower else None
        trial = trial_of(job, reports, self.factory.resource_name, key[0], metrics)
        if not trial.pending and complete:
            self._trial_keys[job.name] = key
        else:
            self._trial_keys.pop(job.name, None)
        if self.follower is not None and not trial.pending and not complete:
            # Finished, but its log was not read to the end (a failed read): the rules wait for it.
            trial = replace(trial, state='terminating')
        return trial

    def _new_attempts(self, jobs):
        """Forget what the journal holds of a job's earlier attempt (resubmit made it again under its name): its
        log read, its reports judged, its decision. The new attempt is judged and counted afresh."""
        attempts = self.journal.data.setdefault('attempts', {})
        for job in jobs:
            attempt = attempt_of(job)
            if attempts.get(job.name) not in (None, attempt):
                self.controller.decisions.pop(job.name, None)
                self.controller.judged.pop(job.name, None)
                if self.follower is not None:
                    self.follower.forget(job.name)
                announced = self.journal.data.get('announced') or []
                if job.name in announced:
                    announced.remove(job.name)
            if attempt:
                attempts[job.name] = attempt

    def poll(self):
        """One round; returns the result once the sweep has ended, else None."""
        seen_pending = {t.name for t in self.trials if t.pending} | self.submitted_names
        trials, elapsed = self.observe()
        if self.journal.data.get(STOPPED_ON_EXIT) and self._rerun_stopped_on_exit(trials):
            trials, elapsed = self.observe()
        stopped = [t.name for t in trials if t.state == 'terminated' and t.name in seen_pending
                   and t.name not in self.controller.decisions]
        if stopped:
            # Terminated under this run's eyes, not by it: the user stopped the sweep. Submit nothing more.
            self.progress('{} job(s) terminated by someone else ({}): the run ends'.format(
                len(stopped), ', '.join(stopped[:5])))
            self.end = END_STOPPED
            self._save(trials, final=True)
            return self.result()
        if self._objective_unreported(trials):
            self._save(trials, final=True)
            return self.result()
        actions = self.controller.step(trials, elapsed, free_stopped=True)
        # Decided but still running (a run killed between its decision and the terminate): terminate again.
        decided = [self.controller.decisions[t.name] for t in trials
                   if t.name in self.controller.decisions and t.state in ('queued', 'running')
                   and self.controller.decisions[t.name].kind in (STOPPED, TIMEOUT)]
        terminate = {d.job: d for d in decided}
        terminate.update({d.job: d for d in actions.terminate})
        explained = self._save(trials)  # the decisions are kept before they are acted on
        for line in decision_lines(actions):
            self.progress(line)
        self._announce(explained)
        self._terminate_all(terminate)  # before the submits: the places of the jobs stopped now are theirs
        self._submit(actions.submit, trials, replacing=actions.replacing,
                     stopping=[d.job for d in actions.terminate])
        self._report(trials)
        if actions.end in (END_EXHAUSTED, END_MAX_TOTAL) and not self._last_full:
            # Over, as far as the active jobs show: a whole listing says whether it is (a job created or resubmitted
            # from outside since the last one), then the same poll again.
            self._polls_since_full = None
            return self.poll()
        if actions.end:
            self.end = actions.end
            # The result counts what the service holds: the jobs just terminated (the timeout's) as terminated, and
            # every stopped job with the steps its whole log shows (it may print a few after its decision).
            settling = sorted(set(terminate) | {t.name for t in trials if t.state == 'terminating'})
            if settling:
                trials = self._settle(settling)
            self._save(trials, final=True)
            return self.result()
        return None

    def _rerun_stopped_on_exit(self, trials):
        """Re-run the jobs the last run's --stop-on-exit stopped on its way out: deleted and created again under
        their names with the same definition (index, Hyperband's place, parent), as an uninterrupted run would have
        let them run. Each is dropped from the journal once created (a job already gone is left to the sampler).
        True when a job was created again."""
        from ..service.delete import delete_job
        owed = self.journal.data[STOPPED_ON_EXIT]
        by_name = {t.name: t for t in trials}
        rerun = False
        for name in list(owed):
            trial = by_name.get(name)
            if trial is not None and trial.state == 'terminating':
                continue  # still stopping (or its log not read to the end yet): at a later poll
            if trial is not None and trial.state == 'terminated' and name not in self.controller.decisions:
                suggestion = Suggestion(params=dict(trial.params), resource=trial.resource, parent=trial.parent,
                                        bracket=trial.bracket, rung=trial.rung, slot=trial.slot)
                body = self.factory.body(suggestion, trial.index, self.jobs.get(trial.parent))
                delete_job(self.client, *self.target, name, retry=self.retry, wait=True, interval=0.5)
                create_job(self.client, *self.target, name, body, retry=self.retry)
                self.submitted_names.add(name)
                self._unseen.setdefault(name, 0)
                last = trial.reports[-1].step if trial.reports else None
                self.progress('{}: run again from its start: the last run stopped it on its way out (--stop-on-exit)'
                              '{}, before any rule judged it'.format(
                                  name, ' at {} {}'.format(self.step_label, last) if last is not None else ''))
                rerun = True
            owed.remove(name)
            self.journal.save()
        return rerun

    def _settle(self, names, timeout=60.0):
        """Wait (at most `timeout` seconds) until the jobs just terminated have left queued and running, then look
        at the sweep once more; a job still stopping then is counted as terminating (see result)."""
        wait_until_stopped(self.client, *self.target, self.sweep_name, names, retry=self.retry,
                           interval=0.5, timeout=timeout)
        trials, _ = self.observe(full=True)
        return trials

    def _objective_unreported(self, trials):
        """Say at once when the jobs' output shows no job will ever report the objective (a misnamed metric, a
        regex that matches nothing); strict: terminate the sweep's jobs and end it. True when it ends."""
        if self.follower is None or self.unreported is not None:
            return False
        why = objective_unreported(self.objective, self.follower.readers, self.follower.complete)
        other = None
        if why is None:  # every other objective and constraint is checked like the first (issue 41)
            succeeded = {t.name for t in trials if t.state == 'succeeded' and t.name in self.follower.complete}
            why = other = metrics_unreported(self.objectives, self.follower.readers, succeeded)
        if why is None:
            return False
        self.unreported = why
        if not self.strict:
            self.progress('{}. {}: stop the sweep ("az batchai sweep stop") and fix {} (see "az batchai sweep run '
                          '-h"), or run with --strict to stop at once.'.format(
                              why, 'No rule can judge a job without it' if other is None else
                              'No job can be on the Pareto front or feasible without it',
                              'the objective' if other is None else 'that metric in the sweep file'))
            return False
        self.progress('{}: stopping the sweep (strict)'.format(why))
        for t in trials:
            if t.pending and t.state != 'terminating' and t.name not in self.controller.decisions:
                self.controller.decisions[t.name] = Decision(
                    job=t.name, kind=STOPPED, rule='objective', step=t.reports[-1].step if t.reports else None,
                    text='stopped: the objective is not reported ({})'.format(why))
                self._terminate(t.name)
        self.end = END_UNREPORTED
        return True

    def run(self, poll_interval, sleep=time.sleep, should_stop=None, on_poll=None):
        self.stopped_wait = min(STOPPED_WAIT_SECONDS, poll_interval)
        while True:
            result = self.poll()
            if on_poll is not None:
                on_poll(self)
            if result is not None:
                return result
            if should_stop is not None and should_stop():
                return None
            sleep(poll_interval)

    def _terminate(self, name):
        terminate_job(self.client, *self.target, name, retry=self.retry)

    def _in_parallel(self, call, items, on_done):
        """call(item) for each item on the run's threads (a poll's terminates, its creates: each a request that
        waits on the service, ~10 ms, which one after another held the next poll back by a third of a second at 32
        slots); on_done(item) on this thread for each that succeeded; then the first failure is raised, as the
        calls one by one raised it (the others are done: a re-run finds them)."""
        failures = []

        def on_result(item, _result, exc):
            if exc is not None:
                failures.append(exc)
            else:
                on_done(item)
        run_parallel(call, items, parallel=self.parallel, on_result=on_result)
        if failures:
            raise failures[0]

    def _terminate_all(self, names):
        self._in_parallel(self._terminate, list(names), lambda name: None)

    def _submit(self, suggestions, trials, replacing=0, stopping=()):
        """Create the suggested jobs; the last `replacing` take the places of the jobs `stopping` (terminated at this
        poll): as many of them are created as those jobs have ended (_ended), the others are left to a later poll
        (the sampler suggests them again: it is a function of the jobs it is shown)."""
        present = {t.name for t in trials}
        next_index = max([t.index for t in trials if t.index < 1_000_000] + [-1]) + 1
        jobs, later = [], []
        for position, suggestion in enumerate(suggestions):
            name = self.factory.name(suggestion)
            if name in present:
                continue  # never twice (a sampler that suggests a job already there)
            (later if position >= len(suggestions) - replacing else jobs).append(
                (name, self.factory.body(suggestion, next_index, self.jobs.get(suggestion.parent)), suggestion.note))
            present.add(name)
            next_index += 1

        def create(job):
            create_job(self.client, *self.target, job[0], job[1], retry=self.retry)

        def created(job):
            logger.info('submitted %s (%s)', job[0], job[2])
            self.submitted += 1
            self.submitted_names.add(job[0])
            self._unseen.setdefault(job[0], 0)
        self._in_parallel(create, jobs, created)
        if later:
            ended = self._ended(stopping, len(later))
            if ended < len(later):
                logger.info('%d job(s) wait for a later poll: %d stopped job(s) still ending', len(later) - ended,
                            len(stopping) - ended)
            self._in_parallel(create, later[:ended], created)

    def _ended(self, names, enough):
        """How many of the jobs `names` (just terminated) have left queued, running and terminating: a GET of each
        still pending, again until `enough` have or self.stopped_wait has passed."""
        pending, interval = set(names), STOPPED_CHECK_SECONDS
        deadline = time.monotonic() + self.stopped_wait

        def on_result(name, job, exc):
            if exc is None and (job is None or job_state(job) not in PENDING_STATES):
                pending.discard(name)
        while True:
            # GETs of the few jobs stopped, not the sweep's listing that stop.wait_until_stopped reads (10,000 jobs)
            run_parallel(self._get, sorted(pending), parallel=self.parallel, on_result=on_result)
            ended = len(names) - len(pending)
            if ended >= enough or time.monotonic() >= deadline:
                return ended
            time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
            interval = min(interval * 2, 0.2)

    def _announce(self, explained):
        """The sampler's decisions (Hyperband's promotions and the jobs it does not promote: `explained`, what
        _save got of it) on stderr as a policy's stops are, each once: the journal keeps which were shown, so a
        resumed run does not repeat them."""
        shown = self.journal.data.setdefault('announced', [])
        known = set(shown)
        for name in sorted(explained, key=lambda n: (explained[n].step or 0, n)):
            if name not in known and name not in self.controller.decisions:
                self.progress('{}: {}'.format(name, explained[name].text))
                shown.append(name)
        if len(shown) > len(known):
            self.journal.save()

    def decisions(self, trials, explained=None):
        """Every decision about the trials: the sampler's own (Hyperband's: `explained`, when known) and the
        controller's stops."""
        if explained is None:
            explained = self.controller.sampler.explain(self.controller.as_seen_by_policies(trials))
        decisions = dict(explained)
        decisions.update(self.controller.decisions)
        return decisions

    def _save(self, trials, final=False):
        """Write the journal: what changed since the last save (core/tuning/journal.py). Each job's entry is built
        again only when its Trial or its decision is another object than at the last save, so a poll's work here
        follows the jobs that changed, not the sweep's size; the figures (a pass over every job) as
        FIGURES_JOBS_PER_POLL says, and whenever the run ends (`final`). Returns what the sampler explains of the
        trials (its own decisions), for _announce: the trials as the rules see them are built once for both."""
        data = self.journal.data
        data['judged'] = dict(self.controller.judged)
        data['decisions'] = {name: self._as_dict(d) for name, d in self.controller.decisions.items()}
        if self.follower is not None:
            data['complete'] = self._complete_entries()
        seen = self.controller.as_seen_by_policies(trials)
        explained = self.controller.sampler.explain(seen)
        decisions = self.decisions(trials, explained)
        data['rows'] = tuning_rows(seen, decisions, self.goal, self.step_label, self.objectives, memo=self._rows_memo)
        polls = self._figures_polls
        if final or polls is None or polls + 1 >= len(trials) // FIGURES_JOBS_PER_POLL or 'figures' not in data:
            data['figures'] = sweep_figures(seen, decisions, self.goal, self.step_label,
                                            job_seconds=self._job_seconds(), objectives=self.objectives,
                                            metric=(self.objective or {}).get('metric'))
            self._figures_polls = 0
        else:
            self._figures_polls = polls + 1
        data['objective'] = self.objective
        data['spec'] = self.definition.source  # the sweep file, named when another one is run under this name
        data['run'] = self.outline()
        self.journal.save()
        return explained

    def _as_dict(self, decision):
        known = self._decision_dicts.get(decision.job)
        if known is None or known[0] is not decision:
            known = self._decision_dicts[decision.job] = (decision, decision.as_dict())
        return known[1]

    def _complete_entries(self):
        """The journal's {job: its log's entry} of the logs read to their end, each built once per reader."""
        entries, memo, readers = {}, self._complete_memo, self.follower.readers
        for name in self.follower.complete:
            reader = readers.get(name)
            if reader is None:
                continue
            known = memo.get(name)
            if known is None or known[0] is not reader or known[1] != reader.offset:
                known = memo[name] = (reader, reader.offset, self._complete_entry(reader))
            entries[name] = known[2]
        return entries

    def outline(self):
        """What the report says of the run beside its figures: the sampling settings, the jobs a warm start
        inherited, and why the run ended (once it has)."""
        # the limits the run held (the command's options over the file's)
        outline = {'sampling': dict(self.definition.sampling), 'limits': self.limits.as_dict()}
        if self.inheritance is not None:
            outline['warmStart'] = self.inheritance.summary()
        if self.end is not None:
            outline['ended'], outline['endedBecause'] = self.end, END_REASONS[self.end]
        return outline

    def _complete_entry(self, reader):
        entry = {'offset': reader.offset, 'reports': [[r.step, r.value] for r in reader.reports]}
        if self.objectives is not None:
            entry['metrics'] = dict(reader.metrics)
        return entry

    def _report(self, trials):
        counts = {}
        for t in trials:
            counts[t.state] = counts.get(t.state, 0) + 1
        stopped = sum(1 for d in self.controller.decisions.values() if d.kind == STOPPED)
        line = 'Sweep {}: {} job(s): {}{}'.format(
            self.sweep_name, len(trials), ', '.join('{} {}'.format(n, s) for s, n in sorted(counts.items())),
            '; {} stopped early'.format(stopped) if stopped else '')
        if trials and line != self._last_line:
            self.progress(line)
            self._last_line = line
        self._report_waiting(trials)

    def _report_waiting(self, trials):
        """Why the queued jobs wait, as the scheduler says (only a local service on Azure Batch says anything):
        said when it changes, and again every `repeat_waiting` seconds while jobs wait."""
        if self.waiting is None:
            return
        lines = self.waiting([{'name': t.name, 'state': t.state} for t in trials])
        if not lines:
            self._waiting_said = None
            return
        now, said = self.clock(), self._waiting_said
        if said is None or lines != said[0] or (self.repeat_waiting is not None
                                                and now - said[1] >= self.repeat_waiting):
            for line in lines:
                self.progress(line)
            self._waiting_said = (lines, now)

    def _job_seconds(self):
        return round(sum(self._seconds.values()), 3)

    def result(self):
        # A job terminated by a decision that the service still reports queued or running is on its way out: it is
        # no longer one the sweep runs.
        trials = [replace(t, state='terminating') if t.name in self.controller.decisions
                  and t.state in ('queued', 'running') else t
                  for t in self.controller.as_seen_by_policies(self.trials)]
        result = summarize_run(trials, self.decisions(self.trials), self.goal, self.end, END_REASONS[self.end],
                               self.step_label, job_seconds=self._job_seconds(), objectives=self.objectives,
                               metric=(self.objective or {}).get('metric'))
        result['sweep'] = self.sweep_name
        if self.inheritance is not None:
            summary = self.inheritance.summary()
            result['warmStart'] = {'sources': summary['sources'], 'inherited': summary['inherited']}
        if self.unreported is not None:
            result['objectiveNotReported'] = self.unreported
        if self.follower is not None:
            result['logBytesRead'] = self.follower.bytes_read
        return result
