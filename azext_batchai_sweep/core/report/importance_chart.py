"""The report's "What mattered" chart: one horizontal bar per parameter, the most important at the top, its share of
the importance (core/report/importance.py) with its bootstrap interval as a whisker. Drawn with the plots' helpers,
so it looks and scales like them; one chart per objective."""
from .plots import MARGIN, WIDTH, _axis_x, _short, _svg
from .svg import Linear, c, esc, fmt

ROW = 26          # a bar's row, in pixels
LABELS = 190      # the parameter names' column


def percent(share):
    """A share as the chart and the table print it: 41%, 3.5%, <0.1%."""
    if share is None:
        return ''
    if 0 < share < 0.001:
        return '<0.1%'
    return '{}%'.format(fmt(round(share * 100, 1 if share < 0.1 else 0)))


def importance_bars(entry):
    """The SVG for one objective's importance entry, or None when there is nothing to draw (too few jobs)."""
    rows = entry['parameters']
    if entry['tooFewJobs'] or entry.get('nothingRanked') or not rows:
        return None
    top, left, right = MARGIN['top'], MARGIN['left'] + LABELS - 70, WIDTH - MARGIN['right'] - 60
    bottom = top + ROW * len(rows)
    height = bottom + MARGIN['bottom']
    reach = max([1e-9] + [row['importance'] for row in rows] + [row['high'] or 0.0 for row in rows])
    x = Linear(0.0, min(1.0, reach * 1.05), left, right)
    parts = ['<line class="grid" x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>'.format(c(x(value)), c(top), c(bottom))
             for value in x.ticks(5) if value > 0]
    parts.append(_axis_x(x, bottom, left, right, 'share of the importance (PED-ANOVA, the bars sum to 100%)',
                         ticks=x.ticks(5), tick_labels=percent))
    for i, row in enumerate(rows):
        y = top + i * ROW
        title = '{}: {} of the importance for {}; 90% interval {} to {} (the best {} of {} jobs)'.format(
            row['name'], percent(row['importance']), entry.get('objective') or 'the objective', percent(row['low']),
            percent(row['high']), entry['topJobs'], entry['jobs'])
        parts.append('<g class="importance-row" data-parameter="{}"><title>{}</title>'.format(esc(row['name']),
                                                                                            esc(title)))
        parts.append('<text x="{}" y="{}" text-anchor="end">{}</text>'.format(c(left - 8), c(y + ROW / 2 + 4),
                                                                             esc(_short(row['name'], 26))))
        parts.append('<rect class="importance-bar" x="{}" y="{}" width="{}" height="{}"/>'.format(
            c(left), c(y + 5), c(max(0.0, x(row['importance']) - left)), c(ROW - 10)))
        if row['low'] is not None:
            middle = y + ROW / 2
            parts.append('<path class="importance-interval" d="M{0} {1}H{2}M{0} {3}V{4}M{2} {3}V{4}"/>'.format(
                c(x(row['low'])), c(middle), c(x(row['high'])), c(middle - 5), c(middle + 5)))
        parts.append('<text class="importance-value" x="{}" y="{}">{}</text></g>'.format(
            c(max(x(row['importance']), x(row['high'] or 0.0)) + 6), c(y + ROW / 2 + 4),
            esc(percent(row['importance']))))
    return _svg(WIDTH, height, ''.join(parts), 'What mattered for {}: parameter importance'.format(
        entry.get('objective') or 'the objective'), 'importance')
