"""The report as one self-contained HTML document: inline CSS, inline SVG plots and a short inline script.

The page's Content-Security-Policy forbids every fetch (`default-src 'none'`): whatever a parameter value or a job
name holds, the browser loads nothing from anywhere. Plots are SVG drawn here, so they show without the script;
the script only sorts and pages the job table (its rows are the JSON in `#report-table-data`) and highlights a
job in every plot while the pointer is on it.
"""
import datetime
import json

from ..units import duration_text, percent_text, value_label
from . import plots
from .importance_chart import importance_bars
from .pareto import pareto_css, pareto_section
from .svg import esc, fmt

TABLE_PAGE = 100
# The job table's column of each job's id at the local service's scheduler, by scheduler: what that id is there (the
# processes scheduler has none, so no column). An id from a scheduler the report does not know: 'scheduler job'.
SCHEDULER_ID_LABELS = {'slurm': 'Slurm job', 'azure-batch': 'Batch task'}

CSS = """
:root { --fg: #1d2330; --muted: #5b6473; --line: #d9dde3; --best: #d62728; --stopped: #f28e2b;
        --failed: #6d6d6d; --running: #a9a9a9; --finished: #4c78a8; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); margin: 0; background: #f6f7f9; }
main { max-width: 1000px; margin: 0 auto; padding: 20px; }
h1 { font-size: 22px; margin: 0 0 2px; }
h2 { font-size: 17px; margin: 0 0 4px; }
.sub, .note, figcaption { color: var(--muted); }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px; margin: 14px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(176px, 1fr)); gap: 10px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; min-width: 0;
        overflow-wrap: break-word; }
.card code { overflow-wrap: anywhere; } .nw { white-space: nowrap; }
.card h3 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 0 0 4px; }
.big { font-size: 20px; font-weight: 600; }
.chip { display: inline-block; padding: 1px 8px; border-radius: 10px; margin: 2px 4px 2px 0; background: #eef0f3; }
.chip.inherited { background: #efe6f7; }
.chip.succeeded { background: #e3efe4; } .chip.failed { background: #f6e0e0; } .chip.running { background: #e6eef8; }
dl { display: grid; grid-template-columns: auto 1fr; gap: 0 10px; margin: 4px 0 0; }
dt { color: var(--muted); } dd { margin: 0; font-family: ui-monospace, Menlo, Consolas, monospace; }
svg.plot { display: block; max-width: 100%; height: auto; font-size: 11px; }
svg text { fill: var(--fg); }
.axis line, .tick { stroke: #8a919c; stroke-width: 1; }
.grid { stroke: #eceef1; }
.axis-title, .panel-title { font-weight: 600; font-size: 12px; }
.halo { paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.curve { fill: none; stroke-width: 1.3; stroke-opacity: .75; }
circle.curve-dot { stroke: none; fill-opacity: .8; } circle.curve-dot.mark-finished { fill: var(--finished); }
circle.curve-dot.mark-stopped { fill: var(--stopped); } circle.curve-dot.mark-failed { fill: var(--failed); }
circle.curve-dot.mark-running { fill: var(--running); } circle.curve-dot.mark-best { fill: var(--best); }
.curve.mark-finished, line.mark-finished { stroke: var(--finished); stroke-opacity: .45; }
.curve.mark-running, line.mark-running { stroke: var(--running); stroke-dasharray: 2 3; }
.curve.mark-failed, line.mark-failed { stroke: var(--failed); stroke-dasharray: 2 2; stroke-opacity: .9; }
.curve.mark-stopped, line.mark-stopped { stroke: var(--stopped); stroke-dasharray: 6 3; stroke-opacity: .95; }
.curve.mark-best, line.mark-best { stroke: var(--best); stroke-width: 3; stroke-opacity: 1; }
.legend line { stroke-width: 2.5; }
.end-stopped { stroke: var(--stopped); stroke-width: 2; fill: none; }
.end-failed { fill: var(--failed); } .end-best { fill: var(--best); stroke: #fff; stroke-width: 1.5; }
.band { fill: #4c78a8; fill-opacity: .12; stroke: none; }
.median { fill: none; stroke: #222; stroke-width: 1.5; stroke-dasharray: 5 3; }
line.median { stroke-dasharray: 5 3; }
.pc-line { fill: none; stroke-width: 1.2; stroke-opacity: .7; }
.pc-line.mark-best { stroke: var(--best) !important; stroke-width: 3.5; stroke-opacity: 1; }
.pc-axis > line { stroke: #444; stroke-width: 1.2; }
.dot { fill-opacity: .7; stroke: #fff; stroke-width: .6; }
.dot.mark-finished { fill: var(--finished); } .dot.mark-running { fill: var(--running); }
.dot.mark-failed { fill: var(--failed); } .dot.mark-stopped { fill: var(--stopped); }
.dot.mark-best { fill: var(--best); fill-opacity: 1; stroke: #000; stroke-width: 1; }
.stairs { fill: none; stroke: var(--best); stroke-width: 2.2; }
line.stairs { stroke: var(--best); }
.expected { fill: none; stroke: #555; stroke-width: 1.6; stroke-dasharray: 6 4; }
line.expected { stroke: #555; }
.importance-bar { fill: #4c78a8; } .importance-interval { stroke: #222; stroke-width: 1.4; fill: none; }
.importance-value { font-variant-numeric: tabular-nums; }
.hl { stroke-width: 4 !important; stroke-opacity: 1 !important; fill-opacity: 1 !important; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { cursor: pointer; user-select: none; background: #f0f2f5; position: sticky; top: 0; }
th[aria-sort="ascending"]::after { content: " \\25B2"; } th[aria-sort="descending"]::after { content: " \\25BC"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.wrap { white-space: normal; min-width: 200px; max-width: 320px; font-size: 12px; }
tr.mark-best td { background: #fde8e8; font-weight: 600; }
tr.mark-stopped td:nth-child(3) { color: #b35c00; } tr.mark-failed td:nth-child(3) { color: #a11; }
tr.hl td { background: #fff3c4; }
tr.sel td { background: #d8ecff; } tr { cursor: pointer; }
.sel { stroke-width: 4 !important; stroke-opacity: 1 !important; fill-opacity: 1 !important; }
.table-wrap { max-height: 640px; overflow: auto; border: 1px solid var(--line); }
.pager { margin: 8px 0 0; display: flex; gap: 8px; align-items: center; }
.pager button { font: inherit; padding: 2px 10px; }
"""

SCRIPT = """
(function () {
  'use strict';
  // Kept across a live update that replaces the table (live.js): the reader's sorting, page and selected job.
  var sortColumn = null, descending = false, page = 0, selected = null;
  var table, body, heads, info, order, size;
  function compare(a, b) {
    var x = a[sortColumn], y = b[sortColumn];
    if (x === null || x === undefined) { return (y === null || y === undefined) ? 0 : 1; }
    if (y === null || y === undefined) { return -1; }
    var r = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
    return descending ? -r : r;
  }
  function render() {
    var pages = Math.max(1, Math.ceil(order.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    var rows = order.slice(page * size, (page + 1) * size);
    var fragment = document.createDocumentFragment();
    rows.forEach(function (row) {
      var tr = document.createElement('tr');
      tr.className = 'mark-' + row[table.markColumn];
      tr.setAttribute('data-job', row[1]);
      table.columns.forEach(function (column, i) {
        if (column.hidden) { return; }
        var td = document.createElement('td');
        var value = row[i];
        td.textContent = (value === null || value === undefined) ? '' : (column.format ? format(value) : value);
        if (column.numeric) { td.className = 'num'; } else if (column.wrap) { td.className = 'wrap'; }
        tr.appendChild(td);
      });
      fragment.appendChild(tr);
    });
    body.replaceChildren(fragment);
    info.textContent = 'rows ' + (order.length ? page * size + 1 : 0) + '-' +
      Math.min(order.length, (page + 1) * size) + ' of ' + order.length;
    heads.forEach(function (th) {
      var i = Number(th.getAttribute('data-column'));
      if (i === sortColumn) { th.setAttribute('aria-sort', descending ? 'descending' : 'ascending'); }
      else { th.removeAttribute('aria-sort'); }
    });
    reselect();
  }
  function format(value) {
    if (typeof value !== 'number') { return value; }
    if (Number.isInteger(value)) { return String(value); }
    return Number(value.toPrecision(5)).toString();
  }
  function setupTable() {
    var source = document.getElementById('report-table-data');
    if (!source) { return; }
    table = JSON.parse(source.textContent);
    body = document.querySelector('#job-table tbody');
    heads = document.querySelectorAll('#job-table th');
    info = document.getElementById('page-info');
    size = table.pageSize;
    if (sortColumn === null || sortColumn >= table.columns.length) {
      sortColumn = table.sort[0];
      descending = table.sort[1];
    }
    order = table.rows.slice();
    heads.forEach(function (th) {
      th.addEventListener('click', function () {
        var i = Number(th.getAttribute('data-column'));
        descending = (i === sortColumn) ? !descending : false;
        sortColumn = i;
        order.sort(compare);
        page = 0;
        render();
      });
    });
    document.getElementById('page-prev').addEventListener('click', function () { page -= 1; render(); });
    document.getElementById('page-next').addEventListener('click', function () { page += 1; render(); });
    order.sort(compare);
    render();
  }
  var lit = [];
  function light(name) {
    lit.forEach(function (el) { el.classList.remove('hl'); });
    lit = [];
    if (!name) { return; }
    document.querySelectorAll('[data-job]').forEach(function (el) {
      if (el.getAttribute('data-job') === name) { el.classList.add('hl'); lit.push(el); }
    });
  }
  // A click on a job (a row, a curve, a dot) selects it in every plot and the table until clicked again.
  function reselect() {
    document.querySelectorAll('.sel').forEach(function (el) { el.classList.remove('sel'); });
    if (selected === null) { document.documentElement.removeAttribute('data-selected'); return; }
    document.documentElement.setAttribute('data-selected', selected);
    document.querySelectorAll('[data-job]').forEach(function (el) {
      if (el.getAttribute('data-job') === selected) { el.classList.add('sel'); }
    });
  }
  document.addEventListener('mouseover', function (event) {
    var target = event.target.closest ? event.target.closest('[data-job]') : null;
    light(target ? target.getAttribute('data-job') : null);
  });
  document.addEventListener('click', function (event) {
    var target = event.target.closest ? event.target.closest('[data-job]') : null;
    if (!target) { return; }
    var name = target.getAttribute('data-job');
    selected = (selected === name) ? null : name;
    reselect();
  });
  window.sweepReport = {setupTable: setupTable, reselect: reselect, light: function () { lit = []; }};
  setupTable();
  document.documentElement.setAttribute('data-ready', 'true');
})();
"""


def _when(text):
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except ValueError:
        return text
    return moment.strftime('%Y-%m-%d %H:%M:%S %Z').strip()


# A hyphenated word a card must not break at its hyphen (a narrow card would show "job-" and "steps").
JOB_STEPS = '<span class="nw">job-steps</span>'


def _card(title, body):
    return '<div class="card"><h3>{}</h3>{}</div>'.format(esc(title), body)


def _summary(data):
    summary = data['summary']
    objective = data['objective']
    label = value_label(objective['metric'])
    goal_text = 'higher is better' if objective['goal'] == 'max' else 'lower is better'
    how = ('<code>{}=</code> lines'.format(esc(objective['metric'])) if objective['metric']
           else 'lines matching <code>{}</code>'.format(esc(objective['regex'])))
    where = objective['file'] if objective['outputDirectoryId'] == 'stdouterr' else '{}/{}'.format(
        objective['outputDirectoryId'], objective['file'])
    step = data.get('stepKey') or objective['step'] or 'the report\'s number'
    cards = [_card('Objective', '<div class="big">{}</div><div>{} ({})</div><div class="note">{} of {}; step: {}'
                                '</div>'.format(esc(label), goal_text, esc(objective['goal']), how, esc(where),
                                                esc(step)))]
    chips = ''.join('<span class="chip {0}">{0} {1}</span>'.format(esc(state), count)
                    for state, count in summary['counts'].items() if count)
    decided = ''
    if summary['decisions']:
        decided = '<div class="note">decisions: {}</div>'.format(esc(', '.join(
            '{} {}'.format(count, action) for action, count in sorted(summary['decisions'].items()))))
    code = ''
    if summary.get('code'):  # (the snapshot's first 12 hex digits, as az prints it; the full hash on hover)
        code = '<div class="note code-snapshot">code snapshot: {}</div>'.format(', '.join(
            '<code title="{0}">{1}</code>'.format(esc(digest), esc(digest[:12])) for digest in summary['code']))
    cards.append(_card('Jobs', '<div class="big">{}</div><div>{}</div>{}<div class="note">sampling: {}</div>{}'
                             ''.format(summary['jobs'], chips or 'no jobs', decided,
                                       esc(data['sampling'] or 'unknown (no plan file)'), code)))
    best = summary['best']
    if best:
        params = ''.join('<dt>{}</dt><dd>{}</dd>'.format(esc(name), esc(fmt(value) if not isinstance(value, dict)
                                                                         else json.dumps(value, sort_keys=True)))
                         for name, value in best['parameters'].items())
        cards.append(_card('Best job', '<div class="big best-value">{}</div><div class="best-name"><code>{}</code>'
                                       '</div><dl>{}</dl>'.format(esc(fmt(best['value'])), esc(best['name']),
                                                                  params)))
    else:
        cards.append(_card('Best job', '<div class="note">no job has run to the end with a value yet</div>'))
    compute = summary['compute']
    saved = ('<div>saved by early termination: {} {} ({}), about {} of compute</div>'.format(
        fmt(compute['savedJobSteps']), JOB_STEPS, percent_text(100 * compute['savedFraction']),
        duration_text(compute['savedJobSeconds']))
             if compute['savedJobSteps'] else '<div class="note">no job was stopped early</div>')
    cards.append(_card('Compute', '<div class="big">{}</div><div>{} {}</div>{}'.format(
        duration_text(compute['jobSeconds']) + ' of jobs', fmt(compute['jobSteps']), JOB_STEPS, saved)))
    span = summary['time']
    ran = '<div>from {}</div>'.format(esc(_when(span['firstStart']) or 'not started'))
    ran += ('<div>still running</div>' if span['stillRunning']
            else '<div>to {}</div>'.format(esc(_when(span['lastEnd']) or '')))
    cards.append(_card('When', ran + '<div class="note">report of {}</div>'.format(esc(_when(data['generatedAt'])))))
    run = _run_card(data.get('run'))
    if run:
        cards.append(run)
    where = ' / '.join(esc(part) for part in (data['resourceGroup'], data['workspace'], data['experiment']) if part)
    return ('<header><h1>Sweep {}</h1><div class="sub">{}</div></header><section id="summary">'
            '<h2>Summary</h2><div class="cards">{}</div></section>'.format(esc(data['sweep']), where, ''.join(cards)))


def _section(section_id, title, svg, caption, missing):
    body = svg if svg else '<p class="note missing">{}</p>'.format(esc(missing))
    return '<section id="{}"><h2>{}</h2><figure>{}<figcaption>{}</figcaption></figure></section>'.format(
        section_id, esc(title), body, esc(caption) if svg else '')


# The sampling settings the run card names (the type is on the Jobs card), in this order.
RUN_SETTINGS = ('sampler', 'multiFidelity', 'startupJobs', 'randomFraction', 'iterations', 'eta', 'minResource',
                'maxResource', 'count', 'seed')
RUN_LIMITS = ('stopAt', 'noImprovementJobs', 'maxTotalJobs', 'maxConcurrentJobs', 'timeoutMinutes')
MAX_INHERITED_ROWS = 200


def _run_card(run):
    """`sweep run`'s outline: why it ended, its sampler's settings and result limits, its warm-start sources."""
    if not run:
        return ''
    parts = []
    if run.get('ended'):
        parts.append('<div class="big ended">{}</div><div class="ended-because">{}</div>'.format(
            esc(run['ended']), esc(run.get('endedBecause') or '')))
    else:
        parts.append('<div class="note">not ended yet (or stopped before its end)</div>')
    sampling = run.get('sampling') or {}
    settings = ['{} {}'.format(key, _shown(sampling[key])) for key in RUN_SETTINGS if sampling.get(key) is not None]
    if settings:
        parts.append('<div class="note run-sampling">{}: {}</div>'.format(esc(sampling.get('type') or 'sampling'),
                                                                         esc(', '.join(settings))))
    limits = run.get('limits') or {}
    shown = ['{} {}'.format(key, fmt(limits[key])) for key in RUN_LIMITS if limits.get(key) is not None]
    if shown:
        parts.append('<div class="note run-limits">limits: {}</div>'.format(esc(', '.join(shown))))
    warm = run.get('warmStart')
    if warm:
        parts.append('<div class="note run-warm-start">warm start: {} job(s) inherited from {}</div>'.format(
            warm['inherited'], esc(', '.join('{} ({})'.format(s['source'], s['inherited']) for s in warm['sources']))))
    return _card('Run', ''.join(parts))


def _shown(value):
    """A value as a cell shows it: numbers as decisions print them, booleans in YAML's words, the rest as JSON."""
    if value is None:
        return ''
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return fmt(value)
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _inherited(data):
    """The jobs a warm start inherited (not jobs of this sweep: results its sampler learned from), each marked."""
    warm = (data.get('run') or {}).get('warmStart')
    if not warm:
        return ''
    jobs = warm.get('jobs') or []
    names = sorted({name for job in jobs for name in job['parameters']})
    rows = ''.join('<tr class="inherited"><td><span class="chip inherited">inherited</span></td><td>{}</td>'
                   '<td><code>{}</code></td><td>{}</td><td>{}</td>{}</tr>'.format(
                       esc(job['source']), esc(job['name']), esc(_shown(job['objective'])), esc(_shown(job['resource'])),
                       ''.join('<td>{}</td>'.format(esc(_shown(job['parameters'].get(name)))) for name in names))
                   for job in jobs[:MAX_INHERITED_ROWS])
    notes = ''.join('<li>{}: {}</li>'.format(esc(source['source']), esc(note))
                    for source in warm['sources'] for note in source.get('notes') or ())
    more = ' The first {} are listed.'.format(MAX_INHERITED_ROWS) if len(jobs) > MAX_INHERITED_ROWS else ''
    return ('<section id="inherited"><h2>Inherited jobs (warm start)</h2><p class="note">{} finished job(s) of earlier '
            'sweeps the sampler learned from; they are not jobs of this sweep and were not run again.{}</p>{}'
            '<div class="table-wrap"><table id="inherited-table"><thead><tr><th>mark</th><th>from</th><th>job</th>'
            '<th>objective</th><th>resource</th>{}</tr></thead><tbody>{}</tbody></table></div></section>').format(
                warm['inherited'], more, '<ul class="note">{}</ul>'.format(notes) if notes else '',
                ''.join('<th>{}</th>'.format(esc(name)) for name in names), rows)


def _table_payload(data):
    """Columns and rows of the job table (rows as arrays, the page's script sorts and pages them)."""
    names = [axis['name'] for axis in data['parameters']]
    label = value_label(data['objective']['metric'])
    columns = [{'label': '#', 'numeric': True}, {'label': 'job'}, {'label': 'state'},
               {'label': 'decision', 'wrap': True},
               {'label': label, 'numeric': True, 'format': True},
               {'label': 'best ' + label, 'numeric': True, 'format': True},
               {'label': 'step', 'numeric': True, 'format': True},
               {'label': 'duration (s)', 'numeric': True, 'format': True}]
    columns += [{'label': name, 'format': True} for name in names]
    with_ids = any(job.get('schedulerJobId') for job in data['jobs'])
    if with_ids:  # Slurm: the id squeue, sacct and scontrol know the job by; Azure Batch: '<batch job>/<task>'
        columns.append({'label': SCHEDULER_ID_LABELS.get(data.get('scheduler'), 'scheduler job')})
    columns.append({'label': 'mark', 'hidden': True})
    rows = []
    for job in data['jobs']:
        decision = job['decision'] or {}
        reason = decision.get('reason') or decision.get('action') or ('stopped early' if job['stoppedEarly'] else '')
        if job.get('infeasible'):  # never the best (core/tuning/best.py): say which constraint it broke
            reason = '; '.join(part for part in (reason, 'infeasible: breaks ' + job['infeasible']) if part)
        row = [job['index'], job['name'], job['state'], reason, job['objective'], job['bestValue'], job['lastStep'],
               job['durationSeconds']]
        row += [_cell(job['values'].get(name)) for name in names]
        if with_ids:
            row.append(job.get('schedulerJobId'))
        row.append(job['mark'])
        rows.append(row)
    return {'columns': columns, 'rows': rows, 'sort': [4, data['objective']['goal'] == 'max'],
            'pageSize': TABLE_PAGE, 'markColumn': len(columns) - 1}


def _cell(value):
    if value is None or isinstance(value, (int, float, str)) and not isinstance(value, bool):
        return value
    return json.dumps(value, sort_keys=True)


def _script_json(value):
    """JSON that cannot end its <script> element or open a comment, whatever the strings in it hold."""
    return json.dumps(value, separators=(',', ':')).replace('<', '\\u003c').replace('>', '\\u003e').replace(
        '&', '\\u0026')


def _table(data):
    payload = _table_payload(data)
    heads = ''.join('<th data-column="{}">{}</th>'.format(i, esc(column['label']))
                    for i, column in enumerate(payload['columns']) if not column.get('hidden'))
    return ('<section id="jobs"><h2>Jobs</h2><p class="note">Click a column to sort; the best job is highlighted.'
            '</p><div class="table-wrap"><table id="job-table"><thead><tr>{}</tr></thead><tbody></tbody></table>'
            '</div><div class="pager"><button id="page-prev" type="button">previous</button><span id="page-info">'
            '</span><button id="page-next" type="button">next</button></div>'
            '<noscript><p class="note">The table needs JavaScript; `az batchai sweep report -o json` prints the same '
            'rows.</p></noscript>'
            '<script type="application/json" id="report-table-data">{}</script></section>'.format(
                heads, _script_json(payload)))


def _undecided(data):
    """Why no job carries a decision: a sampler that chose each job from the results so far (bayesian, or a `sweep
    run` without a policy) stopped none; a planned sweep (`submit`) ran every job as planned."""
    if data['summary'].get('figures') is not None or data.get('sampling') in ('bayesian', 'hyperband'):
        return 'No job was stopped early or promoted: each ran to its end.'
    return 'No controller decisions are recorded for this sweep: its jobs ran as planned.'


def _curves_caption(data):
    plot = data['plots']['learningCurves']
    text = ('One line per job: {} against step. A cross marks the step at which a decision stopped a job, a dot '
            'the end of a failed one; hover a line for the job, its value and the decision taken about it.'.format(
                data['objective']['metric'] or 'the objective'))
    if plot['band']:
        text += (' {} of {} jobs are drawn (the best, the stopped and failed ones, the top tenth and a fixed random '
                 'sample); the band and the dashed median cover every job.'.format(len(plot['drawn']), plot['jobs']))
    if not data['summary']['decided']:
        text += ' ' + _undecided(data)
    return text


def report_parts(data):
    """The document's parts in order (the header and summary, each section, the table): a live page replaces
    only those whose text changed (live.py)."""
    label = data['objective']['metric'] or 'objective'
    curves = plots.learning_curves(data)
    pc = plots.parallel_coordinates(data)
    scatter = plots.objective_vs_parameters(data)
    best = plots.best_so_far(data)
    pc_plot = data['plots']['parallelCoordinates']
    scatter_plot = data['plots']['objectiveVsParameter']
    no_values = 'No job has reported {} yet.'.format(label)
    return [
        _summary(data),
        _section('learning-curves', 'Learning curves', curves, _curves_caption(data),
                 'No learning curves: {}.'.format(data['plots']['learningCurves']['why'])),
        _section('parallel-coordinates', 'Parallel coordinates', pc,
                 'Each line is a job through its parameter values to its {}, coloured by it (yellow is best); LOG '
                 'parameters are on log axes, the others categories or linear. {}'.format(
                     label, _sampled_note(pc_plot, 'lines')),
                 no_values if data['parameters'] else 'The sweep has no parameters.'),
        _section('objective-vs-parameter', '{} against each parameter'.format(label), scatter,
                 'One dot per job; the dashed line is the median over every job, per category or value bin. {}'
                 .format(_sampled_note(scatter_plot, 'dots')),
                 no_values if data['parameters'] else 'The sweep has no parameters.'),
        _importance_section(data),
        _section('best-so-far', 'Best so far', best,
                 'The best {} among the jobs that ran to the end, against how many had finished.{}'.format(
                     label, ' The dashed line is what random search is expected to find with as many jobs, drawing '
                            'from these jobs\' values (Dodge et al., 2019).'
                     if data['plots']['bestSoFar'].get('expectedRandom') else ''),
                 'No job has run to the end with a value yet.'),
        pareto_section(data),  # several objectives or constraints only (core/report/pareto.py)
        _table(data),
        _inherited(data),
    ]


# What a page allows itself: nothing from anywhere but its inline style and scripts (and, live, its data sidecar:
# the scripts carry a nonce, so a script the page itself inserts may load that one file and nothing else can run).
STATIC_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
LIVE_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; img-src data:"


def render_html(data, parts=None, live=None):
    """The whole report document for report data (data.report_data).

    :param parts: report_parts(data) already made, if any.
    :param live: for a live page (live.py), the HTML of its status line, its wrapped parts and its script
        (live.LiveDocument); None for a snapshot.
    """
    parts = report_parts(data) if parts is None else parts
    if live is None:
        csp, body, scripts = STATIC_CSP, ''.join(parts), '<script>{}</script>'.format(SCRIPT)
    else:
        csp = LIVE_CSP.format(nonce=live['nonce'])
        body = live['status'] + ''.join(live['parts'])
        scripts = '<script nonce="{nonce}">{script}</script>{extra}'.format(nonce=live['nonce'], script=SCRIPT,
                                                                           extra=live['script'])
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="generator" content="az batchai sweep report">'
            '<title>Sweep {title} report</title><style>{css}</style></head><body><main>{body}</main>'
            '{scripts}</body></html>\n').format(csp=csp, title=esc(data['sweep']), css=CSS + pareto_css(data),
                                                body=body, scripts=scripts)


def _resource_note(said):
    """Which of a Hyperband sweep's resources the importance compares jobs at (importance.at_one_resource)."""
    if not said:
        return ''
    return (' Jobs at {} {} only ({} with a value; {} at other {} left out: a value after fewer {} does not rank '
            'a configuration as one after more does).'.format(said['name'], fmt(said['value']), said['jobs'],
                                                            said['leftOut'], said['name'], said['name']))


def _importance_section(data):
    """What mattered: one chart per objective (importance_chart.py), or why there is none."""
    entries = data.get('importance') or []
    figures = []
    for entry in entries:
        label = entry.get('objective') or 'the objective'
        heading = '<h3>{}</h3>'.format(esc(label)) if len(entries) > 1 else ''
        svg = importance_bars(entry)
        if svg is None:
            figures.append('{}<p class="note missing">No importance for {}: {}.{}</p>'.format(
                heading, esc(label), esc(entry['message'] or 'no parameters'),
                esc(_resource_note(entry.get('resource')))))
            continue
        caption = ('How much each parameter mattered for reaching the best {} of the {} jobs with a value of {} '
                   '(PED-ANOVA: how differently the best jobs\' values of it are spread from all jobs\'), the '
                   'most important at the top; the whisker is the 90% interval over {} resamples of the jobs: '
                   'wide when few jobs finished. Each parameter on its own: an effect that only shows in a '
                   'combination of parameters is not seen.'.format(entry['topJobs'], entry['jobs'], label,
                                                                      entry['resamples']))
        caption += _resource_note(entry.get('resource'))
        figures.append('{}<figure>{}<figcaption>{}</figcaption></figure>'.format(heading, svg, esc(caption)))
    if not figures:
        return ''
    return '<section id="importance"><h2>What mattered</h2>{}</section>'.format(''.join(figures))


def _sampled_note(plot, what):
    if len(plot['drawn']) < plot['jobs']:
        return 'Drawn: {} {} of {} jobs with a value (the best, the top tenth, a fixed random sample).'.format(
            len(plot['drawn']), what, plot['jobs'])
    return ''
