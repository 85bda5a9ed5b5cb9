"""The scheduler's timings from AZURE_BATCHAI_SWEEP_BATCH_TIMINGS (connect.timings_from_env): what the environment of
`local start` may set, and the message naming what is wrong."""
import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.connect import TIMINGS_ENV, timings_from_env


@pytest.mark.parametrize('text, expected', [
    ('', {}),
    ('poll=0.2', {'poll_seconds': 0.2}),
    (' poll=1, pools=2 ,files=3,unrunnable=3600 ', {'poll_seconds': 1.0, 'pools_seconds': 2.0, 'files_seconds': 3.0,
                                                    'unrunnable_seconds': 3600.0}),
])
def test_timings_named_in_the_environment(text, expected):
    assert timings_from_env({TIMINGS_ENV: text}) == expected
    assert timings_from_env({}) == {}


@pytest.mark.parametrize('item', ['poll', 'poll=', 'poll=fast', 'poll=0', 'poll=-1', 'pools=3601', 'tick=1'])
def test_a_wrong_item_is_named_with_what_is_allowed(item):
    with pytest.raises(ValueError) as raised:
        timings_from_env({TIMINGS_ENV: 'files=1,' + item})
    message = str(raised.value)
    assert "{} '{}'".format(TIMINGS_ENV, item) in message
    assert 'poll, pools, files, unrunnable' in message and 'at most 3600' in message
