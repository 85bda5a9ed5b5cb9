"""The report's plots, each an inline SVG string drawn from the report's data (data.py), nothing else.

Every element that stands for a job carries `data-job="<name>"` and a `<title>` (the browser's hover text: the
job, its state, its value and the decision taken about it), so a reader hovers for details and the page's script
highlights the same job in every plot. Classes name what is drawn (`curve`, `pc-line`, `dot`, `axis`...) and how
the job is marked (`mark-best`, `mark-stopped`, `mark-failed`, `mark-running`, `mark-finished`).
"""
import hashlib
import math

from ..floats import clamped, fraction
from .svg import Linear, Log, c, colour, esc, fmt, gradient_stops, polyline_points, scale_for, thin

WIDTH = 960
MARGIN = {'left': 70, 'right': 24, 'top': 24, 'bottom': 50}
MAX_CURVE_POINTS = 150
MARK_ORDER = ('finished', 'running', 'failed', 'stopped', 'best')
MARK_LABELS = {'best': 'best job', 'stopped': 'stopped early (a decision)', 'failed': 'failed or terminated',
               'running': 'queued or running',
               'finished': 'ran to the end'}


def _svg(width, height, body, label, css_class):
    return ('<svg class="plot {cls}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" '
            'height="{h}" role="img" aria-label="{label}">{body}</svg>').format(
                cls=css_class, w=width, h=height, label=esc(label), body=body)


# A job's title text by what it is made of (its repr: 1, 1.0 and True are told apart), kept from one plot to the
# next and from one report to the next: each job is in several plots, and a live report (live.py) draws its plots
# again at every change while most jobs did not change. Bounded: emptied when full.
_TITLES = {}
_TITLES_KEPT = 100000


def _job_title(job, objective_label):
    key = repr((objective_label, job['name'], job['state'], job['objective'], job['lastStep'], job.get('decision'),
                job['stoppedEarly'], job.get('resource'), job.get('parent'), job.get('error'),
                list(job['values'].items())))
    title = _TITLES.get(key)
    if title is None:
        if len(_TITLES) >= _TITLES_KEPT:
            _TITLES.clear()
        title = _TITLES[key] = _make_job_title(job, objective_label)
    return title


def _make_job_title(job, objective_label):
    lines = ['{} ({})'.format(job['name'], job['state'])]
    if job['objective'] is not None:
        lines.append('{} = {}{}'.format(objective_label, fmt(job['objective']),
                                        ' at step {}'.format(fmt(job['lastStep'])) if job['lastStep'] else ''))
    decision = job.get('decision') or {}
    if decision.get('reason'):
        lines.append(decision['reason'])
    elif job['stoppedEarly']:
        lines.append('stopped early')
    if job.get('resource') is not None:
        lines.append('resource = {}{}'.format(fmt(job['resource']),
                                             ', continues ' + job['parent'] if job.get('parent') else ''))
    if job.get('error'):
        lines.append('not read: ' + job['error'])
    lines.extend('{} = {}'.format(name, fmt(value)) for name, value in job['values'].items())
    return '<title>{}</title>'.format(esc('\n'.join(lines)))


def _axis_x(scale, y, left, right, label, ticks=None, tick_labels=None):
    parts = ['<g class="axis axis-x">', '<line x1="{}" y1="{}" x2="{}" y2="{}"/>'.format(c(left), c(y), c(right), c(y))]
    for value in ticks if ticks is not None else scale.ticks():
        x = scale(value)
        if left - 0.5 <= x <= right + 0.5:
            text = tick_labels(value) if tick_labels else fmt(value)
            parts.append('<line class="tick" x1="{0}" y1="{1}" x2="{0}" y2="{2}"/><text x="{0}" y="{3}" '
                         'text-anchor="middle">{4}</text>'.format(c(x), c(y), c(y + 5), c(y + 18), esc(text)))
    parts.append('<text class="axis-title" x="{}" y="{}" text-anchor="middle">{}</text>'.format(
        c((left + right) / 2), c(y + 38), esc(label)))
    parts.append('</g>')
    return ''.join(parts)


def _axis_y(scale, x, top, bottom, label, grid_to=None):
    parts = ['<g class="axis axis-y">', '<line x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>'.format(c(x), c(top), c(bottom))]
    for value in scale.ticks():
        y = scale(value)
        if top - 0.5 <= y <= bottom + 0.5:
            if grid_to is not None:
                parts.append('<line class="grid" x1="{0}" y1="{1}" x2="{2}" y2="{1}"/>'.format(c(x), c(y), c(grid_to)))
            parts.append('<line class="tick" x1="{0}" y1="{1}" x2="{2}" y2="{1}"/><text x="{3}" y="{4}" '
                         'text-anchor="end">{5}</text>'.format(c(x - 5), c(y), c(x), c(x - 8), c(y + 4),
                                                               esc(fmt(value))))
    parts.append('<text class="axis-title" transform="translate({},{}) rotate(-90)" text-anchor="middle">{}</text>'
                 .format(c(x - 52), c((top + bottom) / 2), esc(label)))
    parts.append('</g>')
    return ''.join(parts)


def _objective_scale(values, top, bottom):
    low, high = min(values), max(values)
    pad = (high / 2 - low / 2) * 0.1 or abs(high) * 0.05 or 1.0  # (high - low) * 0.05; the halves never overflow
    return Linear(clamped(low - pad), clamped(high + pad), bottom, top)


def _goodness(data):
    """value -> t in [0, 1], 1 the best: the colour of a job in the plots coloured by the objective."""
    value_range = data['summary']['objectiveRange']
    goal = data['objective']['goal']
    if not value_range or value_range[1] == value_range[0]:
        return lambda value: 1.0
    low, high = value_range

    def t(value):
        share = fraction(value, low, high)
        return share if goal == 'max' else 1.0 - share
    return t


def _legend(items, x, y):
    """items: (css class, label, count); drawn as a row of swatches."""
    parts = ['<g class="legend">']
    for css, label, count in items:
        text = '{} ({})'.format(label, count) if count is not None else label
        parts.append('<line class="{}" x1="{}" y1="{}" x2="{}" y2="{}"/><text x="{}" y="{}">{}</text>'.format(
            css, c(x), c(y), c(x + 22), c(y), c(x + 28), c(y + 4), esc(text)))
        x += 40 + 7 * len(text)
    parts.append('</g>')
    return ''.join(parts)


def learning_curves(data):
    """Objective against step, one line per drawn job; the band of all jobs when only a sample is drawn."""
    plot = data['plots']['learningCurves']
    if not plot['available']:
        return None
    jobs = {job['name']: job for job in data['jobs']}
    drawn = [jobs[name] for name in plot['drawn']]
    label = data['objective']['metric'] or 'objective'
    height = 420
    top, bottom = MARGIN['top'] + 24, height - MARGIN['bottom']
    left, right = MARGIN['left'], WIDTH - MARGIN['right']
    steps = [step for job in drawn for step, _ in job['reports']]
    values = [value for job in drawn for _, value in job['reports']]
    band = plot['band'] or []
    steps += [row[0] for row in band]
    values += [v for row in band for v in row[1:] if v is not None]
    x = Linear(min(steps), max(steps), left, right)
    y = _objective_scale(values, top, bottom)
    whole = all(float(step).is_integer() for step in steps)  # epochs: whole ticks only
    parts = [_axis_y(y, left, top, bottom, label, grid_to=right),
             _axis_x(x, bottom, left, right, _step_label(data), ticks=x.ticks(integer=whole))]
    if band:
        upper = [(x(row[0]), y(row[3])) for row in band]
        lower = [(x(row[0]), y(row[1])) for row in reversed(band)]
        parts.append('<polygon class="band" points="{}"><title>{}</title></polygon>'.format(
            polyline_points(upper + lower), esc('10% to 90% of all {} jobs at each step'.format(plot['jobs']))))
        parts.append('<polyline class="median" points="{}"><title>median of all {} jobs</title></polyline>'.format(
            polyline_points([(x(row[0]), y(row[2])) for row in band]), plot['jobs']))
    order = {mark: i for i, mark in enumerate(MARK_ORDER)}
    for job in sorted(drawn, key=lambda j: order[j['mark']]):
        points = thin([(x(step), y(value)) for step, value in job['reports']], MAX_CURVE_POINTS)
        title = _job_title(job, label)
        if len(points) == 1:  # a single report: a dot on the step it was made at
            parts.append('<circle class="curve curve-dot mark-{}" data-job="{}" cx="{}" cy="{}" r="2.5">{}</circle>'
                         .format(job['mark'], esc(job['name']), c(points[0][0]), c(points[0][1]), title))
        else:
            parts.append('<polyline class="curve mark-{}" data-job="{}" points="{}">{}</polyline>'.format(
                job['mark'], esc(job['name']), polyline_points(points), title))
        end_x, end_y = points[-1]
        if job['mark'] == 'stopped':
            # At the step the decision was taken, where it says (a job goes on printing until it is terminated).
            step = (job.get('decision') or {}).get('step')
            at = [r for r in job['reports'] if step is not None and r[0] <= step]
            if at:
                end_x, end_y = x(at[-1][0]), y(at[-1][1])
            parts.append('<path class="end end-stopped" data-job="{}" d="M{} {}l8 8m0 -8l-8 8">{}</path>'.format(
                esc(job['name']), c(end_x - 4), c(end_y - 4), title))
        elif job['mark'] in ('failed', 'best'):
            parts.append('<circle class="end end-{}" data-job="{}" cx="{}" cy="{}" r="{}">{}</circle>'.format(
                job['mark'], esc(job['name']), c(end_x), c(end_y), 5 if job['mark'] == 'best' else 3.5, title))
    counts = {}
    for job in drawn:
        counts[job['mark']] = counts.get(job['mark'], 0) + 1
    items = [('curve mark-' + mark, MARK_LABELS[mark], counts[mark]) for mark in reversed(MARK_ORDER)
             if counts.get(mark)]
    if band:
        items.append(('median', 'median of all jobs, 10-90% band', None))
    parts.append(_legend(items, left, MARGIN['top'] + 4))
    return _svg(WIDTH, height, ''.join(parts), 'Learning curves: {} against step'.format(label), 'learning-curves')


def _step_label(data):
    return data.get('stepKey') or 'report number (no step key on the report lines)'


def _pc_tick_labels(axis, scale):
    if axis['kind'] == 'categorical':
        categories = axis['categories']
        every = max(1, math.ceil(len(categories) / 20))
        return [(scale(cat), _short(cat)) for cat in categories[::every]]
    return [(scale(value), fmt(value)) for value in scale.ticks(5)]


def _short(text, limit=14):
    return text if len(text) <= limit else text[:limit - 1] + '\u2026'


def parallel_coordinates(data):
    """One vertical axis per parameter and one for the objective; one line per drawn job, coloured by objective."""
    axes = list(data['parameters'])
    if not axes or not data['summary']['objectiveRange']:
        return None
    label = data['objective']['metric'] or 'objective'
    low, high = data['summary']['objectiveRange']
    objective_axis = {'name': label, 'kind': 'linear', 'min': low, 'max': high, 'objective': True}
    axes.append(objective_axis)
    height = 440
    top, bottom = MARGIN['top'] + 40, height - MARGIN['bottom']
    left, right = MARGIN['left'] + 30, WIDTH - MARGIN['right'] - 120
    gap = (right - left) / max(1, len(axes) - 1)
    xs = [left + i * gap for i in range(len(axes))] if len(axes) > 1 else [(left + right) / 2]
    scales = [scale_for(axis, bottom, top) for axis in axes]
    goodness = _goodness(data)
    jobs = {job['name']: job for job in data['jobs']}
    drawn = [jobs[name] for name in data['plots']['parallelCoordinates']['drawn']]
    parts = ['<defs><linearGradient id="pc-gradient" x1="0" y1="1" x2="0" y2="0">{}</linearGradient></defs>'.format(
        gradient_stops())]
    best_line = None
    lines = []
    for job in drawn:
        points = []
        for axis, scale, x in zip(axes, scales, xs):
            value = job['objective'] if axis.get('objective') else job['values'].get(axis['name'])
            if value is None:
                break
            if axis['kind'] == 'categorical':
                value = value if isinstance(value, str) else _json_text(value)
            elif not isinstance(value, (int, float)) or isinstance(value, bool):
                break
            points.append((x, scale(value)))
        if len(points) != len(axes):
            continue
        element = '<polyline class="pc-line mark-{}" data-job="{}" stroke="{}" points="{}">{}</polyline>'.format(
            job['mark'], esc(job['name']), colour(goodness(job['objective'])), polyline_points(points),
            _job_title(job, label))
        if job['mark'] == 'best':
            best_line = element
        else:
            lines.append(element)
    parts.append('<g class="pc-lines">{}</g>'.format(''.join(lines)))
    if best_line:
        parts.append('<g class="pc-best">{}</g>'.format(best_line))
    for axis, scale, x in zip(axes, scales, xs):
        kind = 'objective' if axis.get('objective') else axis['kind']
        parts.append('<g class="axis pc-axis pc-axis-{}" data-axis="{}"><line x1="{}" y1="{}" x2="{}" y2="{}"/>'
                     .format(kind, esc(axis['name']), c(x), c(top), c(x), c(bottom)))
        for y, text in _pc_tick_labels(axis, scale):
            parts.append('<line class="tick" x1="{}" y1="{}" x2="{}" y2="{}"/><text class="halo" x="{}" y="{}" '
                         'text-anchor="end">{}</text>'.format(c(x - 4), c(y), c(x), c(y), c(x - 6), c(y + 4),
                                                                esc(text)))
        suffix = ' (log)' if axis['kind'] == 'log' else ''
        parts.append('<text class="axis-title" x="{}" y="{}" text-anchor="middle">{}</text></g>'.format(
            c(x), c(top - 14), esc(_short(axis['name'], 22) + suffix)))
    # The colour bar, better at the top.
    bar_x = WIDTH - MARGIN['right'] - 30
    best_value, worst_value = (high, low) if data['objective']['goal'] == 'max' else (low, high)
    parts.append('<g class="colour-bar"><rect x="{}" y="{}" width="14" height="{}" fill="url(#pc-gradient)"/>'
                 '<text x="{}" y="{}" text-anchor="middle">{}</text><text x="{}" y="{}" text-anchor="middle">{}'
                 '</text><text x="{}" y="{}" text-anchor="middle">better</text></g>'.format(
                     c(bar_x), c(top), c(bottom - top), c(bar_x + 7), c(top - 6), esc(fmt(best_value)),
                     c(bar_x + 7), c(bottom + 16), esc(fmt(worst_value)), c(bar_x + 7), c(top - 20)))
    total = data['plots']['parallelCoordinates']['jobs']
    note = 'lines: {} of {} jobs with a value'.format(len(lines) + (1 if best_line else 0), total)
    parts.append('<text class="note" x="{}" y="{}">{}</text>'.format(c(left - 30), c(height - 12), esc(note)))
    return _svg(WIDTH, height, ''.join(parts), 'Parallel coordinates of the parameters and {}'.format(label),
                'parallel-coordinates')


def _json_text(value):
    import json  # pylint: disable=import-outside-toplevel
    return json.dumps(value, sort_keys=True)


def _jitter(name, width):
    """A stable offset in [-width/2, width/2] for a job's dot on a categorical axis (same on every run)."""
    digest = hashlib.sha1(name.encode('utf-8')).digest()
    return (digest[0] / 255.0 - 0.5) * width


def objective_vs_parameters(data):
    """A small multiple per parameter: each drawn job's objective against the parameter, with the median line."""
    axes = data['parameters']
    if not axes or not data['summary']['objectiveRange']:
        return None
    label = data['objective']['metric'] or 'objective'
    jobs = {job['name']: job for job in data['jobs']}
    drawn = [jobs[name] for name in data['plots']['objectiveVsParameter']['drawn']]
    medians = data['plots']['objectiveVsParameter']['medians']
    columns = 3 if len(axes) >= 3 else len(axes)
    panel_w, panel_h = WIDTH // columns, 250
    rows = math.ceil(len(axes) / columns)
    low, high = data['summary']['objectiveRange']
    order = {mark: i for i, mark in enumerate(MARK_ORDER)}
    drawn.sort(key=lambda job: order[job['mark']])
    parts = []
    for i, axis in enumerate(axes):
        ox, oy = (i % columns) * panel_w, (i // columns) * panel_h
        left, right = ox + 62, ox + panel_w - 14
        top, bottom = oy + 26, oy + panel_h - 46
        x = scale_for(axis, left, right)
        y = _objective_scale([low, high], top, bottom)
        panel = ['<g class="panel" data-parameter="{}">'.format(esc(axis['name'])),
                 '<text class="panel-title" x="{}" y="{}">{}{}</text>'.format(
                     c(left), c(oy + 14), esc(axis['name']), ' (log)' if axis['kind'] == 'log' else '')]
        panel.append(_axis_y(y, left, top, bottom, label))
        if axis['kind'] == 'categorical':
            every = max(1, math.ceil(len(axis['categories']) / 8))
            panel.append(_axis_x(x, bottom, left, right, axis['name'], ticks=axis['categories'][::every],
                                 tick_labels=lambda cat: _short(cat, 10)))
        else:
            panel.append(_axis_x(x, bottom, left, right, axis['name'], ticks=x.ticks(4)))
        for job in drawn:
            value = job['values'].get(axis['name'])
            if value is None or job['objective'] is None:
                continue
            if axis['kind'] == 'categorical':
                px = x(value if isinstance(value, str) else _json_text(value)) + _jitter(job['name'], x.step * 0.5)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                px = x(value)
            else:
                continue
            panel.append('<circle class="dot mark-{}" data-job="{}" cx="{}" cy="{}" r="{}">{}</circle>'.format(
                job['mark'], esc(job['name']), c(px), c(y(job['objective'])), 5 if job['mark'] == 'best' else 3,
                _job_title(job, label)))
        line = medians.get(axis['name']) or []
        if len(line) >= 2:
            points = [(x(position), y(value)) for position, value, _ in line]
            panel.append('<polyline class="median" points="{}"><title>median of {} over every job</title></polyline>'
                         .format(polyline_points(points), esc(label)))
        panel.append('</g>')
        parts.append(''.join(panel))
    return _svg(WIDTH, rows * panel_h, ''.join(parts), '{} against each parameter'.format(label),
                'objective-vs-parameter')


def best_so_far(data):
    """The best value so far against the number of finished jobs (a staircase), and random search's expectation."""
    plot = data['plots']['bestSoFar']
    if not plot['improvements']:
        return None
    label = data['objective']['metric'] or 'objective'
    height = 340
    top, bottom = MARGIN['top'] + 24, height - MARGIN['bottom']
    left, right = MARGIN['left'], WIDTH - MARGIN['right']
    finished = plot['finished']
    expected = plot.get('expectedRandom') or []
    values = [point['value'] for point in plot['improvements']] + [v for _, v in expected]
    x = (Log(1, max(2, finished), left, right) if finished > 200 else Linear(1, max(2, finished), left, right))
    y = _objective_scale(values, top, bottom)
    parts = [_axis_y(y, left, top, bottom, 'best ' + label, grid_to=right),
             _axis_x(x, bottom, left, right, 'jobs finished (with a value), in order of their end',
                     ticks=None if finished > 200 else x.ticks(integer=True))]
    stairs = []
    for i, point in enumerate(plot['improvements']):
        if stairs:
            stairs.append((x(point['finished']), stairs[-1][1]))
        stairs.append((x(point['finished']), y(point['value'])))
        if i == len(plot['improvements']) - 1:
            stairs.append((x(finished), y(point['value'])))
    if expected:
        parts.append('<polyline class="expected" points="{}"><title>{}</title></polyline>'.format(
            polyline_points([(x(k), y(v)) for k, v in expected]),
            'random search, expected best of k jobs (from these jobs\' values)'))
    parts.append('<polyline class="stairs" points="{}"/>'.format(polyline_points(stairs)))
    jobs = {job['name']: job for job in data['jobs']}
    for point in plot['improvements']:
        job = jobs[point['job']]
        parts.append('<circle class="dot improvement mark-{}" data-job="{}" cx="{}" cy="{}" r="4">{}</circle>'.format(
            job['mark'], esc(job['name']), c(x(point['finished'])), c(y(point['value'])), _job_title(job, label)))
    items = [('stairs', 'best so far', None)]
    if expected:
        items.append(('expected', 'random search, expected', None))
    parts.append(_legend(items, left, MARGIN['top'] + 4))
    return _svg(WIDTH, height, ''.join(parts), 'Best {} so far against jobs finished'.format(label), 'best-so-far')
