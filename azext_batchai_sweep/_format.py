# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Table transformers (`-o table`): lists of OrderedDict rows, title-case headers, '' for a missing value.

A table is for reading at a terminal: a sweep with two parameters fits 100 columns. Numbers are shown with at most
6 significant digits, times as `MM-DD HH:MM` (UTC), durations, sizes and shares with their unit (core/units.py),
long texts are cut; `-o json` keeps everything at full precision. A job's value is headed by the objective's metric
(core/units.value_label) in every command's table.
"""
import os
from collections import OrderedDict

from .core.units import duration_text, percent_text, value_label

# A `failed: <error>` result cell: enough to recognise the error; the JSON output has all of it.
MAX_RESULT_WIDTH = 60


class _AsWritten(str):
    """A column header that keeps its case: knack's table output upper-cases every header's first character
    (`x[0].upper() + x[1:]`), which turns a metric `val_acc` into `Val_acc` and a parameter `lr` into `Lr`; the
    metric's and the parameters' own names must read as the jobs print them."""

    def __getitem__(self, index):
        return _AsWritten(str.__getitem__(self, index))

    def upper(self):
        return str(self)


def sweep_create_table_format(result):
    """One row per planned job: its name, then a column per parameter (`NAME.KEY` for a dict parameter's keys)."""
    return [_planned_job_row(job) for job in result['jobs']]


def _planned_job_row(job):
    row = OrderedDict()
    row['Name'] = job['name']
    for name, value in job['parameters'].items():
        if isinstance(value, dict):
            for key, item in value.items():
                row[_AsWritten('{}.{}'.format(name, key))] = _cell(item)
        else:
            row[_AsWritten(name)] = _cell(value)
    return row


def _cell(value):
    if value is None:
        return ''
    return _short_float(value) if isinstance(value, float) else str(value)


def _short_float(value):
    """At most 6 significant digits: repr() when it has no more (0.001 stays 0.001, 1e-05 stays 1e-05, 3.0 stays
    3.0), else the value rounded (0.00031622776601683794 becomes 0.000316228)."""
    short = '{:.6g}'.format(value)
    try:
        return repr(value) if float(short) == value else short
    except ValueError:  # nan, inf
        return short


def _short_time(text):
    """`2026-11-23T20:17:51.123+00:00` as `11-23 20:17` (the table's Start (UTC); the JSON has the full time)."""
    if not text or len(text) < 16 or text[10] != 'T':
        return _text(text)
    return '{} {}'.format(text[5:10], text[11:16])


def _cut(text, width=MAX_RESULT_WIDTH):
    text = _text(text)
    return text if len(text) <= width else text[:width - 3] + '...'


def _short_path(path):
    """A path relative to the working directory when that is shorter (the table's Destination)."""
    if not path:
        return ''
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return relative if len(relative) < len(path) else path


def _with_parameters(row, parameters):
    """The row followed by one column per parameter, the same columns as create's table."""
    for key, value in _planned_job_row({'name': None, 'parameters': parameters or {}}).items():
        if key != 'Name':
            row[key] = value
    return row


def _text(value):
    return '' if value is None else str(value)


def _parameter_names(rows):
    """Every parameter of the rows, in first-seen order: a job missing one gets '' rather than a shifted column."""
    names = {}
    for row in rows:
        for name in row.get('parameters') or {}:
            names.setdefault(name, None)
    return list(names)


def _aligned_parameters(rows):
    names = _parameter_names(rows)
    return [{name: (row.get('parameters') or {}).get(name) for name in names} for row in rows]


def sweep_submit_table_format(result):
    row = OrderedDict()
    row['Sweep'] = result['sweep']
    row['Total'] = result['total']
    row['Submitted'] = result['submitted']
    row['Already Present'] = result['alreadyPresent']
    row['Not Submitted'] = len(result['notSubmitted'])
    if 'counts' in result:  # after --wait: the states the jobs ended in (only those, so the row fits)
        for state, count in result['counts'].items():
            if count:
                row[state.title()] = count
    return [row]


def sweep_status_table_format(result):
    """One row per job with a column per parameter; or, for `--job --tail`, one row per line of output."""
    if isinstance(result, list):
        from .core.outputs.terminal import escape_controls  # a job's text never acts on the terminal
        return [OrderedDict([('Line', escape_controls(line))]) for line in result]
    jobs = result['jobs']
    label = _value_header((result.get('figures') or {}).get('metric'))
    rows = []
    for job, parameters in zip(jobs, _aligned_parameters(jobs)):
        row = OrderedDict()
        row['Name'] = job['name']
        row['State'] = _text(job['state'])
        if job.get('tuning'):
            # A sweep run's jobs: their objective and decisions instead of exit code and times (-o json has all).
            rows.append(_with_parameters(_tuning_cells(row, job['tuning'], label), parameters))
            continue
        row['Exit'] = _text(job['exitCode'])  # not 'Exit Code': with two parameters the row must fit 100 columns
        row['Start (UTC)'] = _short_time(job['startTime'])  # the zone said: a bare 20:17 reads as local time
        row['Duration'] = duration_text(job['durationSeconds'])
        rows.append(_with_parameters(row, parameters))
    # A stopped job's decision says its numbers ("stopped: val_accuracy 0.61 < median 0.8 at epoch 7"): the table cuts
    # it, to no less than 14 characters, to fit TABLE_WIDTH (-o json keeps it whole). A short decision ("ran to the end")
    # is never cut, nor a name, which other commands take: long names and parameters may still go past 100 columns.
    return _fit(rows, _STATUS_FLEXIBLE, to_headers=False) if rows else rows


def sweep_run_table_format(result):
    """One row: why the sweep ended, the best job, counts, compute saved."""
    if 'firstJobs' in result:  # --plan-only: the first jobs it would submit, as `create --plan-only` lists its jobs
        return [_planned_job_row(job) for job in result['firstJobs']]
    if len((result.get('pareto') or {}).get('objectives') or ()) > 1:  # several objectives: the Pareto front
        return pareto_table(result['pareto']['front'])
    best = result.get('best') or {}
    compute = result.get('compute') or {}
    row = OrderedDict()
    row['Sweep'] = result['sweep']
    row['Ended'] = _text(result['ended'])
    row['Jobs'] = result['jobs']
    row['Best Job'] = _text(best.get('name'))
    row[_value_header(result.get('metric'))] = _cell(best.get('objective'))
    decisions = result.get('decisions') or {}
    row['Stopped'] = decisions.get('stopped', 0)
    if decisions.get('not promoted'):  # Hyperband's cut, which the savings come from: said beside Stopped (0)
        row['Not Promoted'] = decisions['not promoted']
    row['Job-Steps'] = '{}/{}'.format(compute.get('jobSteps'), compute.get('jobStepsFull'))
    row['Saved'] = percent_text(compute.get('savedPercent'))
    return [row]


# The tables' own headers beside a job's value: a metric named like one of them would take its column.
_FIXED_HEADERS = frozenset(('Name', 'State', 'Step', 'Best', 'Pareto', 'B/R', 'Decision', 'Sweep', 'Ended', 'Jobs',
                            'Best Job', 'Stopped', 'Not Promoted', 'Job-Steps', 'Saved', 'Report', 'Feasible',
                            'After Decision'))


def _value_header(metric):
    """The column of a job's value: the objective's metric as the jobs print it (core/units.value_label); a metric
    named like one of the table's own columns (`State`, `Best`) says it is the metric."""
    label = value_label(metric)
    return _AsWritten('metric ' + label if label in _FIXED_HEADERS else label)


def _tuning_cells(row, tuning, label):
    """The columns `sweep run` adds to status rows: its objective, step and decision; with several objectives or
    constraints, Pareto: `front` for a job on the Pareto front, its dominance rank otherwise, `infeasible`."""
    row['Step'] = _cell(tuning.get('step'))
    # The job's value (core/tuning/job_value.py), headed by the metric as everywhere; Best: its best judged step.
    row[label] = _short_float(tuning['latest']) if tuning.get('latest') is not None else ''
    if 'paretoRank' in tuning:
        # Several objectives rank a job by its place on the front, not by its first objective's best step (-o json
        # has tuning.best): Pareto takes Best's place, and the row keeps within 100 columns.
        row['Pareto'] = 'infeasible' if tuning.get('infeasible') else (
            'front' if tuning.get('onFront') else _text(tuning.get('paretoRank')))
    else:
        row['Best'] = _short_float(tuning['best']) if tuning.get('best') is not None else ''
    if tuning.get('bracket') is not None:
        row['B/R'] = '{}/{}'.format(tuning['bracket'], tuning['rung'])  # Hyperband's bracket and rung
    row['Decision'] = _text(tuning.get('reason') or tuning.get('decision'))
    return row


def sweep_resubmit_table_format(result):
    rows = [OrderedDict([('Job', name), ('Result', 'resubmitted')]) for name in result['resubmitted']]
    rows += [OrderedDict([('Job', item['job']), ('Result', _cut('skipped: ' + item['reason']))])
             for item in result['skipped']]
    rows += _failed_rows(result['failed'])
    return rows


def pareto_table(entries):
    """The Pareto front (core/tuning/front.py entries): one row per job, a column per objective, then parameters."""
    rows = []
    for entry, parameters in zip(entries, _aligned_parameters(entries)):
        row = OrderedDict()
        row['Name'] = entry['name']
        row['Rank'] = entry['rank']
        for metric, value in entry['values'].items():
            row[_AsWritten(metric)] = _cell(value)
        rows.append(_with_parameters(row, parameters))
    return rows


def sweep_metrics_table_format(result):
    if isinstance(result, dict) and 'importance' in result:
        return _importance_rows(result['importance'])
    if result and 'rank' in result[0] and 'values' in result[0]:  # a sweep with several objectives: its front
        return pareto_table(result)
    rows = []
    after = any('afterDecision' in job for job in result)
    for job, parameters in zip(result, _aligned_parameters(result)):
        row = OrderedDict()
        row['Name'] = job['name']
        row['State'] = _text(job['state'])
        row[_value_header(job.get('metricName'))] = _cell(job['metric'])
        if 'infeasible' in job:  # a `sweep run` with constraints: whether the job broke one
            row['Feasible'] = 'no' if job['infeasible'] else 'yes'
        if after:  # a stopped job's last value in its log, printed after the decision (not what it ranks by)
            row['After Decision'] = _cell(job.get('afterDecision'))
        rows.append(_with_parameters(row, parameters))
    return rows


def _importance_rows(entries):
    """metrics --importance: a row per parameter, the most important first: its share and 90% interval (and the
    objective, when a sweep has several)."""
    from .core.report.importance_chart import percent
    rows = []
    for entry in entries:
        for parameter in entry['parameters']:
            row = OrderedDict()
            if len(entries) > 1:
                row['Objective'] = _text(entry['objective'])
            row['Parameter'] = parameter['name']
            row['Importance'] = percent(parameter['importance'])
            row['Low'] = percent(parameter['low'])
            row['High'] = percent(parameter['high'])
            row['Jobs'] = entry['jobs']
            rows.append(row)
    return rows


def sweep_delete_table_format(result):
    return [OrderedDict([('Sweep', result['sweep']), ('Deleted', len(result['deleted'])),
                         ('Not Found', len(result['notFound'])), ('Failed', len(result['failed']))])]


def _failed_rows(failed):
    """One row per job the command failed on, with its error cut to fit (-o json has all of it)."""
    return [OrderedDict([('Job', item['job']), ('Result', _cut('failed: ' + item['error']))]) for item in failed]


def sweep_stop_table_format(result):
    """One row per job that was stopped, failed to stop or is still stopping; none when nothing was running."""
    rows = [OrderedDict([('Job', name), ('Result', 'stopped')]) for name in result['stopped']]
    rows += _failed_rows(result['failed'])
    rows += [OrderedDict([('Job', name), ('Result', 'still stopping')]) for name in result['stillStopping']]
    return rows


def sweep_download_table_format(result):
    return [OrderedDict([('Sweep', result['sweep']), ('Jobs', result['jobs']), ('Files', result['files']),
                         ('Bytes', result['bytes']), ('Skipped', result['skipped']),
                         ('Failed', len(result['failed'])), ('Destination', _short_path(result['destination']))])]


def sweep_report_table_format(result):
    """One row: the sweep, its job counts, the best job and where the report was written."""
    summary = result['summary']
    best = summary['best'] or {}
    row = OrderedDict()
    row['Sweep'] = result['sweep']
    row['Jobs'] = summary['jobs']
    for state, count in summary['counts'].items():
        if count:
            row[state.title()] = count
    row['Best Job'] = _text(best.get('name'))
    row[_value_header((result.get('objective') or {}).get('metric'))] = _cell(best.get('value'))
    row['Report'] = result['reportFile']
    return [row]


# `local start|status|stop -o table`: every row fits TABLE_WIDTH columns, for every scheduler; `-o json` has every
# field. The table says whether the service runs (and is the commands' target), where (start), on what ("Runs On":
# the Slurm partition and cluster, the Batch account and its pool allocation mode, the GPUs), the Batch pools and the
# data dir. Kept for json only: the workspace, cluster and resource group (start says them on stderr), the Files
# endpoint (show-connection-string gives it), the pid, the token file, the Batch endpoint and pool prefix,
# poolsReadAt, each pool's Batch id and allocation state.
TABLE_WIDTH = 100
_LOCAL_COLUMNS = (('running', 'Running'), ('targeted', 'Targeted'), ('stopped', 'Stopped'), ('endpoint', 'Endpoint'),
                  ('scheduler', 'Scheduler'), ('runsOn', 'Runs On'), ('pools', 'Pools'), ('dataDir', 'Data Dir'))
# Cut to fit, in this order: each first down to its floor, then, if still too wide, down to its header's width.
_LOCAL_FLEXIBLE = (('Data Dir', 24), ('Runs On', 24), ('Pools', 24), ('Cluster', 12))
_STATUS_FLEXIBLE = (('Decision', 14),)  # 'ran to the end' whole; 'stopped: va...'


def local_service_table_format(result):
    """local start|status|stop in TABLE_WIDTH columns. `local status` of an Azure Batch service: one row per pool
    (its cluster, nodes and next autoscale evaluation), the service's cells on the first; else a single row (stop
    sums up the pools in one cell, those holding nodes first)."""
    values = dict(result, runsOn=_runs_on(result))
    if 'running' in result and 'pools' in result:
        return _fit(_status_pool_rows(values), _LOCAL_FLEXIBLE)
    if 'running' in result:
        values.pop('endpoint', None)  # status: the endpoint is start's (and json's)
    row = OrderedDict((title, _pools_cell(values[key]) if key == 'pools' else _text(values[key]))
                      for key, title in _LOCAL_COLUMNS if key in values and (key != 'runsOn' or values[key]))
    if row.get('Data Dir'):
        row['Data Dir'] = _home_path(row['Data Dir'])
    return _fit([row], _LOCAL_FLEXIBLE)


def _status_pool_rows(values):
    """`local status` of an Azure Batch service: Running, Targeted, Runs On on the first row, then each pool's
    Cluster, Nodes and Next Evaluation ('about 14:05 UTC'; empty for a pool without autoscale)."""
    pools = sorted(values['pools'], key=lambda p: not p.get('nodes')) or [{'cluster': 'none'}]
    rows = []
    for index, pool in enumerate(pools):
        row = OrderedDict((title, _text(values.get(key)) if index == 0 else '') for key, title in (
            ('running', 'Running'), ('targeted', 'Targeted'), ('runsOn', 'Runs On')))
        row['Cluster'] = _text(pool.get('cluster'))
        row['Nodes'] = _text(pool.get('nodes'))
        row['Next Evaluation'] = _text(pool.get('nextEvaluation'))
        rows.append(row)
    return rows


def _runs_on(result):
    """What the scheduler runs jobs on, in a few words (the part a cut keeps first): the Slurm partition (its
    cluster), the Batch account (its pool allocation mode), the GPUs of the processes scheduler."""
    if result.get('slurmCluster') or result.get('partition'):
        return '{} ({})'.format(result.get('partition') or 'default partition', result.get('slurmCluster') or '?')
    if result.get('batchAccount'):
        return '{} ({})'.format(result['batchAccount'], result.get('poolAllocationMode') or '?')
    if result.get('gpus'):
        return '{} GPU{}'.format(result['gpus'], '' if result['gpus'] == 1 else 's')
    return ''


def _pools_cell(pools):
    """The Batch pools of `local stop` in one cell: 'cluster=nodes' each, those holding nodes first."""
    pools = sorted(pools or [], key=lambda p: not p.get('nodes'))
    return ', '.join('{}={}'.format(p.get('cluster'), p.get('nodes')) for p in pools) or 'none'


def _home_path(path):
    """`~/...` for a path under the home folder, as a shell shows it."""
    home = os.path.expanduser('~')
    return '~' + path[len(home):] if home not in ('', '/') and (path + '/').startswith(home + '/') else path


def _column_widths(rows):
    """{title: width} of knack's table of these rows: each column as wide as its longest cell or its header plus 2."""
    return {title: max([len(title) + 2] + [len(str(row.get(title, ''))) for row in rows]) for title in rows[0]}


def _fit(rows, flexible, width=TABLE_WIDTH, to_headers=True):
    """Cut the `flexible` columns ((title, floor), in that order) until the rows fit `width` columns (2 spaces
    between columns): each down to its floor first, then (to_headers) each down to its header's width. A path keeps
    its end (the folder's own name), a list of pools whole items ('+3 more'), any other text its start."""
    widths = _column_widths(rows)
    excess = sum(widths.values()) + 2 * (len(widths) - 1) - width
    for stage in ((0, 1) if to_headers else (0,)):
        for title, floor in flexible:
            if excess <= 0 or title not in widths:
                continue
            cut = min(excess, max(0, widths[title] - max(len(title) + 2, floor if stage == 0 else 0)))
            widths[title] -= cut
            excess -= cut
    for row in rows:
        for title, _ in flexible:
            if title in row:
                row[title] = _cut_cell(title, row[title], widths[title])
    return rows


def _cut_cell(title, cell, length):
    if len(cell) <= length:
        return cell
    if title == 'Data Dir':
        return '...' + cell[len(cell) - length + 3:]
    if title == 'Pools':
        items = cell.split(', ')
        for kept in range(len(items) - 1, 0, -1):
            text = '{} +{} more'.format(', '.join(items[:kept]), len(items) - kept)
            if len(text) <= length:
                return text
    return _cut(cell, length)
