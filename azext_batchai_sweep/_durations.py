# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Durations on the command line: `90s`, `15m`, `2h`, `1.5h`, `1h30m` on every --timeout and --interval.

A plain number keeps the unit each option always had (run's --timeout: minutes, as limits.timeoutMinutes; every
other option: seconds), so scripts written for earlier versions mean the same thing.
"""
import argparse
import re

UNITS = {'s': 1.0, 'm': 60.0, 'h': 3600.0, 'd': 86400.0}
_PART = re.compile(r'(\d+(?:\.\d*)?|\.\d+)([smhd])')
_NUMBER = re.compile(r'^(\d+(?:\.\d*)?|\.\d+)$')


def parse_seconds(text, plain_unit='s'):
    """Seconds of `text`: a number in `plain_unit`, or numbers each followed by s, m, h or d (`1h30m`)."""
    value = str(text).strip().lower()
    if _NUMBER.match(value):
        return float(value) * UNITS[plain_unit]
    parts = _PART.findall(value)
    if not parts or ''.join(number + unit for number, unit in parts) != value:
        raise ValueError(text)
    return sum(float(number) * UNITS[unit] for number, unit in parts)


def _duration_type(plain_unit, result_unit):
    unit_name = {'s': 'seconds', 'm': 'minutes'}[plain_unit]

    def duration(text):
        try:
            return parse_seconds(text, plain_unit) / UNITS[result_unit]
        except ValueError:
            raise argparse.ArgumentTypeError(
                'expected a duration: a number of {}, or a number with a unit such as 90s, 15m, 2h or 1h30m; '
                'got {!r}'.format(unit_name, text)) from None
    return duration


# argparse `type=` of the options: the value the command gets, in the option's historical unit.
seconds = _duration_type('s', 's')
minutes = _duration_type('m', 'm')
