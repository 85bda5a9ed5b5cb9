"""Small SVG building blocks: scales, tick values, a colour map, number formats and escaping.

Hand-written rather than a charting library: the report must open with nothing fetched and the extension installs
nothing beyond what az ships, and these few hundred lines draw everything the report needs.
"""
import math
from xml.sax.saxutils import escape as _escape

from ..floats import clamped, fraction


def esc(text):
    """Text (or an attribute value, in double quotes) safe inside SVG/HTML."""
    return _escape(str(text), {'"': '&quot;', "'": '&#39;'})


def fmt(value, digits=4):
    """A number as short text: 0.8123, 1.2e-05, 12000, 3."""
    if value is None:
        return ''
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if value == 0:
        return '0'
    if float(value).is_integer() and abs(value) < 1e7:
        return str(int(value))
    text = '{:.{}g}'.format(value, digits)
    return text.replace('e-0', 'e-').replace('e+0', 'e').replace('e+', 'e')


def c(value):
    """A coordinate: 1 decimal is below a pixel's tenth, and keeps large plots' files small."""
    return '{:.1f}'.format(value).rstrip('0').rstrip('.') if value == value else '0'


class Linear:
    """Any finite range (a job may report 1e308 and -1e308, or two values a 5e-324 apart)."""

    def __init__(self, low, high, start, end):
        if high == low:  # one value: centre it (a pad of 1 vanishes next to 1e308: then a millionth of it)
            pad = max(1.0, abs(low) * 1e-6)
            low, high = clamped(low - pad), clamped(high + pad)
        self.low, self.high, self.start, self.end = low, high, start, end

    def __call__(self, value):
        return self.start + fraction(value, self.low, self.high) * (self.end - self.start)

    def ticks(self, count=5, integer=False):
        return nice_ticks(self.low, self.high, count, integer)


class Log:
    def __init__(self, low, high, start, end):
        low, high = max(low, 1e-300), max(high, 1e-300)
        if high == low:
            low, high = low / 10, high * 10
        self.low, self.high, self.start, self.end = math.log10(low), math.log10(high), start, end

    def __call__(self, value):
        value = math.log10(max(value, 1e-300))
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)

    def ticks(self, count=5):
        first, last = math.floor(self.low), math.ceil(self.high)
        decades = [10.0 ** e for e in range(first, last + 1) if self.low - 1e-9 <= e <= self.high + 1e-9]
        if len(decades) >= 2:
            step = max(1, math.ceil(len(decades) / count))
            return decades[::step]
        # Less than a decade: a few values evenly spaced in log, rounded for the eye.
        return [float('{:.2g}'.format(10 ** (self.low + (self.high - self.low) * i / 3))) for i in range(4)]


class Band:
    """Categories at evenly spaced positions (each category's centre)."""

    def __init__(self, categories, start, end):
        self.categories = list(categories)
        self.index = {category: i for i, category in enumerate(self.categories)}
        self.start, self.end = start, end

    def __call__(self, category):
        n = len(self.categories)
        i = self.index.get(category, 0)
        return self.start + (i + 0.5) / n * (self.end - self.start) if n else self.start

    @property
    def step(self):
        return abs(self.end - self.start) / max(1, len(self.categories))


def nice_ticks(low, high, count=5, integer=False):
    """Round tick values covering [low, high]: steps of 1, 2 or 5 times a power of ten; `integer` (an axis of whole
    steps, such as epochs): whole steps of at least 1, never a tick at epoch 0.5."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high / 2 - low / 2) / max(1, count) * 2  # the halves: high - low may overflow
    if integer:
        raw = max(raw, 1.0)
    if not 0 < raw < math.inf or raw < abs(low) * 1e-12 or raw < abs(high) * 1e-12:
        return [low, high]  # a range of a few ulps (or subnormal): no round values inside it
    power = 10.0 ** math.floor(math.log10(raw))
    factors = (1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)
    step = next(m * power for m in factors if m * power >= raw)
    first = math.ceil(low / step - 1e-9)
    ticks = []
    for i in range(2 * count + 2):  # bounded: value += step could stand still next to a huge value
        value = (first + i) * step
        if not math.isfinite(value) or value > high + step * 1e-9:
            break
        tick = float('{:.12g}'.format(value))
        if not ticks or tick != ticks[-1]:
            ticks.append(tick)
    return ticks or [low, high]


def scale_for(axis, start, end):
    """The scale of a parameter axis from report data (kind log, linear or categorical)."""
    if axis['kind'] == 'categorical':
        return Band(axis['categories'], start, end)
    if axis['kind'] == 'log':
        return Log(axis['min'], axis['max'], start, end)
    return Linear(axis['min'], axis['max'], start, end)


# Viridis, 9 stops: perceptually even, readable in grey and by colour-blind readers.
_VIRIDIS = ((68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141), (39, 173, 129),
            (92, 200, 99), (170, 220, 50), (253, 231, 37))


def colour(t):
    """The colour at t in [0, 1] of the map (0: worst, 1: best), as #rrggbb."""
    t = 0.0 if t != t else min(1.0, max(0.0, t))
    position = t * (len(_VIRIDIS) - 1)
    i = min(int(position), len(_VIRIDIS) - 2)
    f = position - i
    rgb = [round(a + (b - a) * f) for a, b in zip(_VIRIDIS[i], _VIRIDIS[i + 1])]
    return '#{:02x}{:02x}{:02x}'.format(*rgb)


def gradient_stops():
    return ''.join('<stop offset="{}%" stop-color="{}"/>'.format(round(100 * i / (len(_VIRIDIS) - 1)), colour(
        i / (len(_VIRIDIS) - 1))) for i in range(len(_VIRIDIS)))


def polyline_points(points):
    return ' '.join('{},{}'.format(c(x), c(y)) for x, y in points)


def thin(points, limit):
    """At most about `limit` points of a line, keeping its first and last and each bucket's lowest and highest
    (a decimated line keeps its peaks: the eye reads a learning curve by them)."""
    if len(points) <= limit:
        return points
    buckets = max(1, limit // 2 - 1)
    size = (len(points) - 2) / buckets
    kept = [points[0]]
    for b in range(buckets):
        chunk = points[1 + int(b * size):1 + int((b + 1) * size)]
        if not chunk:
            continue
        low = min(chunk, key=lambda p: p[1])
        high = max(chunk, key=lambda p: p[1])
        kept.extend(sorted((low, high), key=lambda p: p[0]) if low is not high else [low])
    kept.append(points[-1])
    return kept
