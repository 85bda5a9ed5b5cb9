"""spelling.py: Batch's enum values compared without case, and its timestamps (seven fractional digits, trailing
zeros trimmed, as the recordings show them) parsed on every Python azure-cli supports (issue 48 item 4)."""
import datetime
import re

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import spelling, states
from tests.azurebatch.recorded_batch import interaction

UTC = datetime.timezone.utc


def fromisoformat_310(text):
    """What Python 3.10's datetime.fromisoformat accepts of a Batch time (after the usual 'Z' -> '+00:00'): a
    fraction of exactly 3 or 6 digits, or none (its documented format, YYYY-MM-DD[*HH[:MM[:SS[.fff[fff]]]]])."""
    fraction = re.search(r':\d\d\.(\d+)', text)
    if fraction and len(fraction.group(1)) not in (3, 6):
        raise ValueError('Invalid isoformat string: {!r}'.format(text))
    return datetime.datetime.fromisoformat(text)


@pytest.mark.parametrize('text, expected', [
    ('2024-03-01T10:00:21.0096445Z', datetime.datetime(2024, 3, 1, 10, 0, 21, 9644, tzinfo=UTC)),
    ('2024-03-21T23:08:09.26185Z', datetime.datetime(2024, 3, 21, 23, 8, 9, 261850, tzinfo=UTC)),
    ('2024-03-22T20:21:00.1117Z', datetime.datetime(2024, 3, 22, 20, 21, 0, 111700, tzinfo=UTC)),
    ('2024-03-22T20:21:00Z', datetime.datetime(2024, 3, 22, 20, 21, 0, tzinfo=UTC)),
    ('2024-03-22T20:21:00.5Z', datetime.datetime(2024, 3, 22, 20, 21, 0, 500000, tzinfo=UTC)),
    ('2026-11-26T10:00:00.123456+00:00', datetime.datetime(2026, 11, 26, 10, 0, 0, 123456, tzinfo=UTC)),
    ('2026-11-26T12:00:00.1234567+02:00', datetime.datetime(2026, 11, 26, 10, 0, 0, 123456, tzinfo=UTC)),
    ('2026-11-26T10:00:00', datetime.datetime(2026, 11, 26, 10, 0, 0, tzinfo=UTC)),
])
def test_batch_times_parse_to_the_microsecond(text, expected):
    assert spelling.parse_time(text) == expected


def test_the_recorded_times_are_what_python_3_10_refuses():
    """The recorded stamps have 4, 5 and 7 fractional digits: 3.10's fromisoformat refuses them (the failure of
    issue 48 item 4), parse_time reads them, and agrees with this Python's own parser where it has one."""
    recorded = interaction('powershell_2024', 'task list, terminated')['response']['value']
    stamps = [t['executionInfo']['endTime'] for t in recorded] + [
        interaction('powershell_2024', 'pool get, resizing')['response']['lastModified']]
    assert stamps == ['2024-03-21T23:08:08.8068407Z', '2024-03-21T23:08:09.26185Z', '2024-03-22T20:21:00.1117Z']
    for stamp in stamps:
        with pytest.raises(ValueError):
            fromisoformat_310(stamp.replace('Z', '+00:00'))
        parsed = spelling.parse_time(stamp)
        assert parsed.tzinfo is not None
        try:
            native = datetime.datetime.fromisoformat(stamp.replace('Z', '+00:00'))
        except ValueError:  # Python 3.10
            continue
        assert parsed == native.replace(microsecond=parsed.microsecond) and \
            abs(parsed - native) < datetime.timedelta(microseconds=1)


def test_states_read_the_recorded_times_with_only_3_10s_parser(monkeypatch):
    """The readers never hand a Batch time to fromisoformat: with 3.10's behaviour in its place, the recorded
    terminated tasks and a run past its wall clock still read right."""
    class Strict(datetime.datetime):
        @classmethod
        def fromisoformat(cls, date_string):
            return fromisoformat_310(date_string)
    monkeypatch.setattr(datetime, 'datetime', Strict)
    task = interaction('powershell_2024', 'task list, terminated')['response']['value'][1]
    assert states.outcome(task)[0] == 'failed'
    late = {'state': 'completed', 'constraints': {'maxWallClockTime': 'PT10S'},
            'executionInfo': {'startTime': '2024-03-01T10:00:09.26185Z', 'endTime': '2024-03-01T10:00:21.0096445Z',
                              'exitCode': -1, 'result': 'Failure',
                              'failureInfo': {'category': 'UserError', 'code': 'TaskWallClockTimeout'}}}
    assert states.outcome(late)[2][0]['code'] == 'MaxWallClockTimeExceeded'


@pytest.mark.parametrize('bad', ['yesterday', '2024-03-01', '2024-03-01T10:00:21.5Zjunk', '10:00:21Z'])
def test_anything_else_is_refused(bad):
    with pytest.raises(ValueError):
        spelling.parse_time(bad)


@pytest.mark.parametrize('value, expected, same', [
    ('Success', 'success', True), ('ServerError', 'servererror', True), ('standard_d2s_v3', 'Standard_D2s_v3', True),
    ('Spread', 'spread', True), ('Zonal', 'zonal', True), ('success', 'servererror', False), (None, 'success', False),
])
def test_enums_and_sizes_compare_without_case(value, expected, same):
    assert spelling.same(value, expected) is same
    assert spelling.same(value, 'x', expected) is same
