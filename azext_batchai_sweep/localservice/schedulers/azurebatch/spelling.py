"""Batch's answers as the real service spells them: enum values and VM sizes compared without case, times parsed
with the service's seven fractional digits.

The spec's enums are lowercase, but the real service answers some of them capitalised (`"status": "Success"` of a
task collection add, `ServerError`/`ClientError`, `nodeFillType: "Spread"`, `"Zonal"`) and a pool's `vmSize`
lower-cased (`standard_d2s_v3`); the SDK az ships passes them on as they came (tests/azurebatch/recorded/, the
table in docs/azure-batch-double.md). Every comparison of such a value goes through `same` or `folded`.

Times: the service writes seven fractional digits with the trailing zeros trimmed (`10:00:21.0096445Z`,
`10:00:09.26185Z`, `10:00:09Z`); Python 3.10's `datetime.fromisoformat` takes only 3 or 6 digits and no `Z`, so
`parse_time` reads them itself (to the microsecond) on every Python azure-cli supports.
"""
import datetime
import re


def folded(value):
    """`value` as compared: lower case (None stays None)."""
    return None if value is None else str(value).lower()


def same(value, *expected):
    """Whether a Batch enum value or VM size is one of `expected`, whatever the case of either."""
    return folded(value) in {folded(e) for e in expected}


_TIME = re.compile(r'(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?\s*(Z|[+-]\d\d:?\d\d)?$',
                   re.IGNORECASE)


def parse_time(text):
    """A Batch timestamp (ISO 8601, any number of fractional digits, `Z` or an offset; none: UTC) as an aware
    datetime, to the microsecond (digits past the sixth are dropped); None for an empty value. ValueError for
    anything else."""
    if not text:
        return None
    match = _TIME.match(str(text).strip())
    if not match:
        raise ValueError('not a Batch timestamp: {!r}'.format(text))
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    offset = datetime.timedelta(0)
    if zone and zone.upper() != 'Z':
        digits = zone[1:].replace(':', '')
        offset = datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        offset = -offset if zone[0] == '-' else offset
    return datetime.datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                             int((fraction or '0')[:6].ljust(6, '0')), tzinfo=datetime.timezone(offset))
