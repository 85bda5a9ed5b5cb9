"""The parameters' axes of the report and of the importance: each parameter's kind (log, linear or categorical) and
range, from the jobs' values and, where a plan file is known, the scale the sweep file gave it."""
import json
import math

LOG_RATIO = 100.0  # without a plan, a positive numeric parameter spanning this ratio gets a log axis


def flat_values(parameters):
    """Parameter values as one level: a dict parameter's keys become NAME.KEY, as in the tables."""
    flat = {}
    for name, value in (parameters or {}).items():
        if isinstance(value, dict):
            for key, item in value.items():
                flat['{}.{}'.format(name, key)] = item
        else:
            flat[name] = value
    return flat


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def category_text(value):
    """A categorical value as an axis names it: a string as it is, anything else as its JSON."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _axis(name, values, info):
    """One parameter's axis: {name, kind: log|linear|categorical, min, max} or {..., categories}."""
    present = [v for v in values if v is not None]
    if present and all(is_number(v) for v in present):
        low, high = min(present), max(present)
        scale = (info.scale or '').upper() if info is not None else ''
        if low > 0 and (scale == 'LOG' or (not scale and high / low >= LOG_RATIO)):
            return {'name': name, 'kind': 'log', 'min': low, 'max': high}
        return {'name': name, 'kind': 'linear', 'min': low, 'max': high}
    categories = sorted({category_text(v) for v in present}, key=lambda t: (not _looks_numeric(t), _number_or(t), t))
    return {'name': name, 'kind': 'categorical', 'categories': categories}


def _looks_numeric(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _number_or(text):
    try:
        return float(text)
    except ValueError:
        return 0.0


def parameter_axes(value_dicts, infos=()):
    """The axis of every parameter of the jobs (their flat values), in the plan's order where there is one (the
    sweep file's), then any other in first-seen order.

    :param infos: the plan's model.ParameterInfo (name, type, scale) per parameter; empty: inferred from the values.
    """
    names = {}
    for info in infos:
        for values in value_dicts:
            for name in values:
                if name == info.name or name.startswith(info.name + '.'):
                    names.setdefault(name, None)
    for values in value_dicts:
        for name in values:
            names.setdefault(name, None)
    by_name = {info.name: info for info in infos}
    return [_axis(name, [values.get(name) for values in value_dicts], by_name.get(name.split('.', 1)[0]))
            for name in names]
