"""core/outputs/download.read_new_bytes_of: how a followed log (sweep run's policies, the live report) reads what was
appended, on a real loopback HTTP server whose links expire (tests/loopback_http.py): a refused link (403, 404) is
renewed once and the read goes on from the same offset; any other error is the caller's; no link yet is None."""
import pytest
import requests

from azext_batchai_sweep.core.outputs.download import read_new_bytes_of
from azext_batchai_sweep.core.service.retry import RetrySettings
from tests.loopback_http import ScriptedHandler, serving

LOG = b'epoch=1 acc=0.5\nepoch=2 acc=0.7\n'
NO_RETRY = RetrySettings(max_retries=0)


class ExpiringLinks(ScriptedHandler):
    """/fresh answers the log with Range support; /expired 403, /gone 404, /broken 500."""

    def do_GET(self):  # pylint: disable=invalid-name
        codes = {'/expired': 403, '/gone': 404, '/broken': 500}
        if self.path in codes:
            self.reply(codes[self.path], b'no')
            return
        start = int(self.headers['Range'].split('=')[1].rstrip('-'))
        if start >= len(LOG):
            self.reply(416)
        else:
            self.reply(206, LOG[start:], {'Content-Range': 'bytes {}-{}/{}'.format(start, len(LOG) - 1, len(LOG))})


def _links(base, first):
    asked = []

    def link(renew=False):
        asked.append(renew)
        return base + ('/fresh' if renew else first)
    return link, asked


@pytest.mark.parametrize('first', ['/expired', '/gone'])
def test_a_refused_link_is_renewed_once_and_read_from_the_same_offset(first):
    with serving(ExpiringLinks) as base:
        link, asked = _links(base, first)
        assert read_new_bytes_of(link, 16, retry=NO_RETRY) == LOG[16:]
        assert asked == [False, True]


def test_a_fresh_link_is_read_without_renewal_and_nothing_new_is_empty():
    with serving(ExpiringLinks) as base:
        link, asked = _links(base, '/fresh')
        assert read_new_bytes_of(link, 0, retry=NO_RETRY) == LOG
        assert read_new_bytes_of(link, len(LOG), retry=NO_RETRY) == b''
        assert asked == [False, False]


def test_no_link_yet_is_none_and_a_renewal_that_finds_none_is_empty():
    assert read_new_bytes_of(lambda renew=False: None, 0) is None
    with serving(ExpiringLinks) as base:
        assert read_new_bytes_of(lambda renew=False: None if renew else base + '/expired', 0,
                                 retry=NO_RETRY) == b''


def test_other_errors_are_not_taken_for_an_expired_link():
    with serving(ExpiringLinks) as base:
        link, asked = _links(base, '/broken')
        with pytest.raises(requests.HTTPError):
            read_new_bytes_of(link, 0, retry=NO_RETRY)
        assert asked == [False]
