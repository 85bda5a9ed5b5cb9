"""The report's Pareto section, for a `sweep run` with several objectives and/or constraints (its figures' ``pareto``,
core/tuning/front.py): the front drawn (2 objectives: every job as a dot, the front's jobs joined by a staircase; 3
and more: parallel coordinates of the front, one axis per objective), and a table of the jobs by dominance rank, the
infeasible ones greyed with the constraints they broke.

Kept apart from html.py and plots.py: html.render_html adds :func:`pareto_section`, which is '' for any other sweep.
"""
from .svg import Linear, c, esc, fmt, polyline_points

WIDTH, HEIGHT = 760, 380
LEFT, RIGHT, TOP, BOTTOM = 70, 30, 24, 50
PARETO_CSS = ('#pareto .front-line { fill: none; stroke: #2a6fdb; stroke-width: 2; } '
              '#pareto .dot.front { fill: #2a6fdb; } #pareto .dot.ranked { fill: #9bb7e0; } '
              '#pareto .dot.infeasible { fill: none; stroke: #aaa; } '
              '#pareto .pc-line { fill: none; stroke: #2a6fdb; stroke-opacity: 0.7; stroke-width: 1.5; } '
              '#pareto .axis { stroke: #555; } #pareto text { font-size: 11px; fill: #333; } '
              '#pareto tr.infeasible td { color: #999; } #pareto tr.front td:first-child { font-weight: bold; }')


def _svg(body, label):
    return ('<svg class="plot pareto" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" '
            'height="{h}" role="img" aria-label="{label}">{body}</svg>').format(w=WIDTH, h=HEIGHT, label=esc(label),
                                                                              body=body)


def _title(entry, names):
    values = ', '.join('{} {}'.format(n, fmt((entry.get('values') or {}).get(n))) for n in names)
    extra = '; breaks {}'.format(entry['failed']) if entry.get('failed') else ''
    return '<title>{}</title>'.format(esc('{}: {}{}'.format(entry['name'], values, extra)))


def _scale(values, start, end):
    return Linear(min(values), max(values), start, end)


def front_scatter(pareto):
    """Two objectives: a dot per job (front, other feasible, infeasible hollow), the front joined."""
    names = [o['metric'] for o in pareto['objectives']]
    entries = [dict(e, kind='front' if e['rank'] == 0 else 'ranked') for e in pareto['ranked']]
    entries += [dict(e, kind='infeasible') for e in pareto['infeasible'] if e.get('values')]
    if not entries:
        return None
    xs = [e['values'][names[0]] for e in entries]
    ys = [e['values'][names[1]] for e in entries]
    x, y = _scale(xs, LEFT, WIDTH - RIGHT), _scale(ys, HEIGHT - BOTTOM, TOP)
    parts = ['<line class="axis" x1="{0}" y1="{1}" x2="{2}" y2="{1}"/>'.format(LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT),
             '<line class="axis" x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>'.format(LEFT, TOP, HEIGHT - BOTTOM)]
    for value in x.ticks():
        parts.append('<text x="{}" y="{}" text-anchor="middle">{}</text>'.format(c(x(value)), HEIGHT - BOTTOM + 16,
                                                                                   esc(fmt(value))))
    for value in y.ticks():
        parts.append('<text x="{}" y="{}" text-anchor="end">{}</text>'.format(LEFT - 6, c(y(value) + 4),
                                                                              esc(fmt(value))))
    goals = {o['metric']: o['goal'] for o in pareto['objectives']}
    parts.append('<text x="{}" y="{}" text-anchor="middle">{} ({})</text>'.format(
        (LEFT + WIDTH - RIGHT) // 2, HEIGHT - 10, esc(names[0]), goals[names[0]]))
    parts.append('<text x="14" y="{0}" transform="rotate(-90 14 {0})" text-anchor="middle">{1} ({2})</text>'.format(
        (TOP + HEIGHT - BOTTOM) // 2, esc(names[1]), goals[names[1]]))
    front = sorted((e['values'][names[0]], e['values'][names[1]]) for e in entries if e['kind'] == 'front')
    if len(front) > 1:
        parts.append('<polyline class="front-line" points="{}"/>'.format(
            polyline_points([(x(a), y(b)) for a, b in front])))
    for entry in sorted(entries, key=lambda e: e['kind'] == 'front'):  # the front's dots on top
        parts.append('<circle class="dot {}" data-job="{}" cx="{}" cy="{}" r="{}">{}</circle>'.format(
            entry['kind'], esc(entry['name']), c(x(entry['values'][names[0]])), c(y(entry['values'][names[1]])),
            5 if entry['kind'] == 'front' else 4, _title(entry, names)))
    return _svg(''.join(parts), 'Pareto front: {} against {}'.format(names[1], names[0]))


def front_parallel(pareto):
    """Three objectives or more: the front's jobs as lines through one axis per objective (better at the top)."""
    names = [o['metric'] for o in pareto['objectives']]
    goals = [o['goal'] for o in pareto['objectives']]
    front = pareto['front']
    if not front:
        return None
    step = (WIDTH - LEFT - RIGHT) / (len(names) - 1)
    axes = []
    parts = []
    for k, (name, goal) in enumerate(zip(names, goals)):
        values = [e['values'][name] for e in front]
        top, bottom = (TOP, HEIGHT - BOTTOM) if goal == 'max' else (HEIGHT - BOTTOM, TOP)
        scale = Linear(min(values), max(values), bottom, top)
        axes.append(scale)
        ax = LEFT + k * step
        parts.append('<line class="axis" x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>'.format(c(ax), TOP, HEIGHT - BOTTOM))
        parts.append('<text x="{}" y="{}" text-anchor="middle">{} ({})</text>'.format(c(ax), HEIGHT - 24, esc(name),
                                                                                     goal))
        for value in (min(values), max(values)):
            parts.append('<text x="{}" y="{}">{}</text>'.format(c(ax + 4), c(scale(value) + 4), esc(fmt(value))))
    for entry in front:
        points = [(LEFT + k * step, scale(entry['values'][name])) for k, (name, scale) in enumerate(zip(names, axes))]
        parts.append('<polyline class="pc-line" data-job="{}" points="{}">{}</polyline>'.format(
            esc(entry['name']), polyline_points(points), _title(entry, names)))
    return _svg(''.join(parts), 'Pareto front: parallel coordinates of {} objectives'.format(len(names)))


def _table(pareto):
    names = [o['metric'] for o in pareto['objectives']]
    heads = ''.join('<th>{}</th>'.format(esc(h)) for h in ['job', 'rank'] + names + ['constraints'])
    rows = []
    for entry in pareto['ranked']:
        cells = [entry['name'], 'front' if entry['rank'] == 0 else entry['rank']]
        cells += [fmt(entry['values'][n]) for n in names] + ['met' if pareto['constraints'] else '']
        rows.append('<tr class="{}">{}</tr>'.format('front' if entry['rank'] == 0 else 'ranked',
                                                     ''.join('<td>{}</td>'.format(esc(v)) for v in cells)))
    for entry in pareto['infeasible']:
        values = entry.get('values') or {}
        cells = [entry['name'], 'infeasible'] + [fmt(values.get(n)) for n in names] + ['breaks ' + entry['failed']]
        rows.append('<tr class="infeasible">{}</tr>'.format(''.join('<td>{}</td>'.format(esc(v)) for v in cells)))
    return ('<div class="table-wrap"><table id="pareto-table"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>'
            '</div>'.format(heads, ''.join(rows)))


def pareto_section(data):
    """The section's HTML, or '' for a sweep without several objectives or constraints."""
    pareto = ((data.get('summary') or {}).get('figures') or {}).get('pareto')
    if not pareto:
        return ''
    names = [o['metric'] for o in pareto['objectives']]
    constraints = '; '.join(_constraint_text(k) for k in pareto['constraints'])
    if len(names) == 2:
        plot = front_scatter(pareto)
        caption = ('One dot per job that ran to the end: the filled blue ones are the Pareto front (no other job is '
                   'at least as good in both objectives and better in one), joined; hollow grey ones broke a '
                   'constraint.')
    elif len(names) > 2:
        plot = front_parallel(pareto)
        caption = 'One line per job on the Pareto front, through one axis per objective (the better end at the top).'
    else:
        plot, caption = None, ''
    body = '<figure>{}<figcaption>{}</figcaption></figure>'.format(plot, esc(caption)) if plot else (
        '' if len(names) < 2 else '<p class="note missing">No job has run to the end with every objective yet.</p>')
    note = ('<p class="note">Jobs by dominance rank (front first){}; greyed jobs are infeasible and never the best '
            'nor on the front.</p>'.format(', constraints: ' + esc(constraints) if constraints else ''))
    title = 'Pareto front' if len(names) > 1 else 'Constraints'
    return '<section id="pareto"><h2>{}</h2>{}{}{}</section>'.format(title, body, note, _table(pareto))


def pareto_css(data):
    """The section's styles, for the report's one <style> element ('' when there is no section)."""
    return PARETO_CSS if ((data.get('summary') or {}).get('figures') or {}).get('pareto') else ''


def _constraint_text(constraint):
    bounds = []
    if constraint.get('min') is not None:
        bounds.append('>= {}'.format(fmt(constraint['min'])))
    if constraint.get('max') is not None:
        bounds.append('<= {}'.format(fmt(constraint['max'])))
    return '{} {}'.format(constraint['metric'], ' and '.join(bounds))
