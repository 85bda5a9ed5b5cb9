"""Warm start: ``sampling.warmStart: [SOURCE, ...]``, the finished jobs of earlier sweeps as the model's first results.

A source is an earlier sweep of the same experiment (its name) or a file of its exported results: what
`az batchai sweep metrics -o json` prints (a list of rows: name, state, parameters, metric, metricName) or
`az batchai sweep report -o json` prints (its data: objective, jobs with parameters, state, objective, reports and
resource). An entry ending in ``.json`` or holding a path separator is a file (relative to the sweep file's folder,
as ``job:`` is); any other is a sweep name.

A job is inherited when it ran to the end (succeeded) or was stopped early (terminated: in a sweep only its rules
terminate jobs) with a finite value of the objective, and each parameter of this sweep has a value in it that this sweep's parameter can take: a number within a numeric parameter's range (on its
grid for INTEGER or a step), one of a discrete parameter's values. What does not match is said, once per source and
reason, and skipped: a parameter this sweep has and the job has not (the job is skipped), a value of the wrong type
or out of range (the job is skipped), a parameter the job has and this sweep has not (ignored: the job still
teaches where the rest match), a source measured by another metric (the source is skipped). Nothing is run again:
the inherited jobs are no jobs of this sweep; they are results the sampler learns from (Trials with negative indices,
older than the sweep's own jobs) that teach as the sweep's own do (a stopped job with its last value, or under a
multi-fidelity model its values at the rungs it crossed), and in a finite space their configurations are never suggested again.

A sweep with several objectives or constraints needs more of a job than its first objective: a value of each other
objective and constraint metric (``extra_metrics``), read from an earlier sweep's logs, from a report's Pareto figures
or from a front's rows; a job without them (an export of a single-objective sweep) is said and skipped, since MOTPE
could neither rank it on a front nor know it feasible (a job stopped early teaches by its first objective, as the
sweep's own do).

Everything here is a function of the sources' contents: a resumed run inherits the same jobs in the same order.
"""
import json
import math
import os
from collections import Counter

from ..errors import SpecError
from .samplers.space import CATEGORICAL, dimensions
from .trial import Report, Trial

# Where an inherited job's value has no step (a metrics row): a step before every rung, so that it counts only as
# the value of a job that ran to the end.
UNKNOWN_STEP = 0.0
REPORT_KIND = 'batchai-sweep-report'
# An exported results file may be far larger than a sweep file (every job, every report): JSON only, up to this size.
MAX_RESULTS_BYTES = 256 * 1024 * 1024
# The states of a job that taught something: it ran to the end, or a rule stopped it (terminated) after reports.
TAUGHT = ('succeeded', 'terminated')


def is_file_source(entry):
    return entry.lower().endswith('.json') or '/' in entry or os.sep in entry


def file_path(entry, sweep_file):
    return entry if os.path.isabs(entry) else os.path.join(os.path.dirname(os.path.abspath(sweep_file)), entry)


# ---- reading a source into records ---------------------------------------------------------------------------------

class Record:  # pylint: disable=too-few-public-methods
    """One job of a source: name, state, parameters, reports ((step, value), ...), resource, metric name, and its
    other metrics ({name: value}: a sweep's other objectives and constraints, where the source has them)."""

    # pylint: disable=too-many-arguments
    def __init__(self, name, state, parameters, reports, resource=None, metric=None, metrics=None):
        self.name, self.state, self.parameters = name, state, dict(parameters or {})
        self.reports, self.resource, self.metric = tuple(reports), resource, metric
        self.metrics = {k: float(v) for k, v in (metrics or {}).items() if _finite(v)}


def read_results_file(path, where):
    """The records of an exported results file (JSON), or a SpecError naming the file and what was expected."""
    from ..spec.bounded_read import TooLarge, read_regular_file
    try:
        # Regular files only, never more than the limit: a FIFO or /dev/zero never hangs `run --plan-only`.
        document = json.loads(read_regular_file(path, MAX_RESULTS_BYTES).decode('utf-8'), parse_int=_json_int)
    except TooLarge:
        raise SpecError('{}: expected a results file of at most {} MiB'.format(path, MAX_RESULTS_BYTES >> 20),
                        path=where) from None
    except OSError as ex:
        raise SpecError('{}: expected a readable warm-start results file ({})'.format(path, ex.strerror or ex),
                        path=where) from None
    except RecursionError:
        raise SpecError('{}: expected a results file that does not nest so deep'.format(path), path=where) from None
    except ValueError as ex:  # not JSON, or not UTF-8
        raise SpecError('{}: expected valid JSON ({})'.format(path, ex), path=where) from None
    try:
        return records_from_document(document, path, where)
    except (TypeError, AttributeError, KeyError, OverflowError, ValueError, RecursionError) as ex:
        # Whatever else a hand-edited file holds where a number, an object or a list belongs: said, never a traceback.
        raise SpecError('{}: expected the JSON of `az batchai sweep metrics -o json` or `az batchai sweep report -o '
                        'json` ({}: {})'.format(path, type(ex).__name__, ex), path=where) from None


def _json_int(text):
    """An integer of the file, refused (ValueError: not valid JSON here) when no float holds it: metrics and report
    never write one, and every number of a results file is compared as a float."""
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise ValueError('a number no float holds: {}...'.format(text[:20])) from None
    return value


def records_from_document(document, source, where):
    """The records of an exported results file (already parsed), or a SpecError saying what was expected."""
    def bad(what):
        return SpecError('expected {} ({}): {}'.format(
            'the JSON of `az batchai sweep metrics -o json` (a list of rows) or `az batchai sweep report -o json`',
            source, what), path=where)
    if isinstance(document, dict) and document.get('kind') == REPORT_KIND:
        objective = document.get('objective')
        if objective is not None and not isinstance(objective, dict):
            raise bad('its objective is a {}, not an object'.format(type(objective).__name__))
        metric = (objective or {}).get('metric')
        if metric is not None and not isinstance(metric, str):
            raise bad('its objective.metric is a {}, not a name'.format(type(metric).__name__))
        rows = document.get('jobs')
        if not isinstance(rows, list):
            raise bad('a report without its jobs')
        metrics = _front_values(document)
        records = []
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get('parameters'), dict):
                raise bad('a job without its parameters')
            _check_names(row, bad)
            reports = [(step, value) for step, value in _pairs(row.get('reports'))]
            if not reports and _finite(row.get('objective')):
                reports = [(UNKNOWN_STEP, row['objective'])]
            records.append(Record(str(row.get('name')), row.get('state'), row['parameters'], reports,
                                  _number(row.get('resource')), metric, metrics.get(row.get('name'))))
        return records
    if isinstance(document, list):
        records = []
        for row in document:
            if isinstance(row, dict):
                _check_names(row, bad)
            if isinstance(row, dict) and isinstance(row.get('values'), dict) and row['values'] \
                    and isinstance(row.get('parameters'), dict) and 'metric' not in row:
                records.append(_front_record(row))
                continue
            if not isinstance(row, dict) or 'metric' not in row or not isinstance(row.get('parameters'), dict):
                raise bad('a row without its metric or parameters')
            reports = [(UNKNOWN_STEP, row['metric'])] if _finite(row['metric']) else []
            records.append(Record(str(row.get('name')), row.get('state'), row['parameters'], reports, None,
                                  row.get('metricName')))
        return records
    raise bad('got a {}'.format(type(document).__name__))


def _check_names(row, bad):
    """A job's name and state are strings (a state may be absent)."""
    if not isinstance(row.get('name'), str):
        raise bad('a job whose name is a {}, not a string'.format(type(row.get('name')).__name__))
    if row.get('state') is not None and not isinstance(row['state'], str):
        raise bad('job {}: its state is a {}, not a string'.format(row['name'], type(row['state']).__name__))


def _front_values(document):
    """{job name: {metric: value}}: every objective's value of the jobs of a report of a sweep with several
    objectives (its Pareto figures rank every feasible job that ran to the end), else {}."""
    pareto, where = document, []
    for key in ('summary', 'figures', 'pareto'):
        pareto = pareto.get(key)
        where.append(key)
        if pareto is None:
            return {}
        if not isinstance(pareto, dict):
            raise ValueError('{} is a {}, not an object'.format('.'.join(where), type(pareto).__name__))
    entries = []
    for key in ('ranked', 'infeasible'):
        listed = pareto.get(key)
        if listed is not None and not isinstance(listed, list):
            raise ValueError('summary.figures.pareto.{} is a {}, not a list'.format(key, type(listed).__name__))
        entries += [e for e in listed or () if isinstance(e, dict)]
    return {e.get('name'): e['values'] for e in entries if isinstance(e.get('values'), dict)
            and isinstance(e.get('name'), str)}


def _front_record(row):
    """A row of `metrics -o json` on a sweep with several objectives (a job of its Pareto front: name, rank, values
    by objective, first objective first, parameters): a job that ran to the end."""
    first, value = next(iter(row['values'].items()))
    return Record(str(row.get('name')), 'succeeded', row['parameters'],
                  [(UNKNOWN_STEP, value)] if _finite(value) else [], None, first, row['values'])


def _pairs(items):
    for item in items if isinstance(items, list) else ():
        if isinstance(item, (list, tuple)) and len(item) == 2 and _finite(item[0]) and _finite(item[1]):
            yield float(item[0]), float(item[1])


def _finite(value):
    """A number a float holds: a 400-digit integer (valid JSON) is not one."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _number(value):
    return float(value) if _finite(value) else None


def records_from_trials(trials, metric):
    """The records of an earlier sweep read from the service (its jobs as loop.trial_of builds them)."""
    return [Record(t.name, t.state if not t.stopped_early else 'terminated', t.params,
                   [(r.step, r.value) for r in t.reports], t.resource, metric, t.metrics) for t in trials]


# ---- matching ------------------------------------------------------------------------------------------------------

class Inheritance:
    """What a warm start inherited: the Trials, and per source what was inherited and skipped, and why."""

    def __init__(self):
        self.trials = []
        self.sources = []

    def messages(self):
        """The lines to say (az's logger), one per source and per reason."""
        lines = []
        for source in self.sources:
            lines.append('warmStart {}: {} finished job(s) inherited, {} skipped'.format(
                source['source'], source['inherited'], source['skipped']))
            lines.extend('warmStart {}: {}'.format(source['source'], note) for note in source['notes'])
        return lines

    def summary(self):
        """JSON-ready: the sources, and each inherited job (source, name, parameters, objective, resource)."""
        return {'sources': [dict(s) for s in self.sources], 'inherited': len(self.trials),
                'jobs': [{'source': t.extra['source'], 'name': t.name, 'parameters': t.params, 'objective': t.last,
                          'resource': t.resource} for t in self.trials]}


def extra_metrics_of(definition):
    """The metrics besides the first objective that a sweep judges jobs by (its other objectives and its constraints'
    metrics): an inherited job needs a value of each."""
    from .bayesian_settings import objectives_of
    objectives = objectives_of(definition)
    return objectives.extra_metrics() if objectives is not None else ()


def inherit_for(definition, sources):
    """inherit() with a loaded sweep file's parameters, objective(s) and Hyperband resource (what `run` and
    --plan-only both match against)."""
    resource = definition.resource_spec.name if definition.resource_spec is not None else None
    return inherit(sources, definition.parameters, metric=(definition.objective or {}).get('metric'),
                   resource_name=resource, extra_metrics=extra_metrics_of(definition))


def _mismatch(dim, value):
    """Why a value does not fit this sweep's parameter (None when it does)."""
    if dim.kind != CATEGORICAL and dim.integer and _finite(value) and not float(value).is_integer():
        return 'has a value of {} that is not an integer (the parameter is INTEGER here)'.format(dim.name)
    if dim.to_internal(value) is not None:
        return None
    if dim.kind == CATEGORICAL:
        return 'has a value of {} that is not one of this sweep\'s values'.format(dim.name)
    if not _finite(value):
        return 'has a value of {} that is not a number (the parameter is numeric here)'.format(dim.name)
    if dim.log and value <= 0:
        return 'has a value of {} that is not positive (the parameter is LOG here)'.format(dim.name)
    return 'has a value of {} outside this sweep\'s range (or off its grid)'.format(dim.name)


def inherit(sources, specs, metric=None, resource_name=None, extra_metrics=()):
    """Match the records of each source against this sweep's parameters.

    :param sources: [(source text, [Record])], in the order of sampling.warmStart.
    :param metric: this sweep's objective metric (None: a regex; any source matches).
    :param resource_name: Hyperband's resource placeholder: a record's value of it is the job's resource.
    :param extra_metrics: the other objectives and the constraints' metrics of a sweep with several objectives or
        constraints (objectives.Objectives.extra_metrics): a job without a value of each is skipped (an export of a
        single-objective sweep has none: MOTPE could neither rank it on the front nor know it feasible).
    """
    inheritance = Inheritance()
    dims = dimensions(specs)
    names = {dim.name for dim in dims}
    found = []
    for source, records in sources:
        skipped, notes = Counter(), []
        taken = 0
        other_metric = {r.metric for r in records if r.metric and metric and r.metric != metric}
        if other_metric:
            notes.append('measured by {} and this sweep by {}: skipped'.format(', '.join(sorted(other_metric)), metric))
            inheritance.sources.append({'source': source, 'inherited': 0, 'skipped': len(records), 'notes': notes})
            continue
        extra = Counter()
        for record in records:
            params = dict(record.parameters)
            resource = record.resource
            if resource_name is not None and resource_name in params:
                value = params.pop(resource_name)
                resource = float(value) if _finite(value) and resource is None else resource
            if record.state not in TAUGHT or not record.reports or not _finite(record.reports[-1][1]):
                skipped['failed or reported no value of the objective'] += 1
                continue
            for name in params:
                if name not in names:
                    extra[name] += 1
            why = next(('has no parameter {}'.format(dim.name) for dim in dims if dim.name not in params), None)
            why = why or next((m for m in (_mismatch(dim, params[dim.name]) for dim in dims) if m), None)
            if why:
                skipped[why] += 1
                continue
            lacking = [name for name in extra_metrics if name not in record.metrics]
            # A job stopped early never reached its other objectives: it teaches by the first, as the sweep's own.
            if lacking and record.state != 'terminated':
                skipped['has no value of {} (a sweep with one objective does not log it)'.format(
                    ', '.join(lacking))] += 1
                continue
            values = {dim.name: params[dim.name] for dim in dims}
            found.append(Trial(name=record.name, index=0, params=values, state=record.state,
                               reports=tuple(Report(step=float(s), value=float(v)) for s, v in record.reports),
                               resource=resource, stopped_early=record.state == 'terminated',
                               extra={'source': source}, metrics=dict(record.metrics)))
            taken += 1
        notes.extend('{} job(s) {}: skipped'.format(n, why) for why, n in sorted(skipped.items()))
        notes.extend('parameter {} ({} job(s)) is not one of this sweep\'s: ignored'.format(name, n)
                     for name, n in sorted(extra.items()))
        inheritance.sources.append({'source': source, 'inherited': taken, 'skipped': sum(skipped.values()),
                                    'notes': notes})
    # Older than every job of the sweep, in the sources' order: -n .. -1.
    for position, trial in enumerate(found):
        trial.index = position - len(found)
    inheritance.trials = found
    return inheritance
