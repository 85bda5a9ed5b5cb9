"""A report reads only what changed since the last one (core/report/log_cache.py through live.LiveSweep): a second
report of an unchanged sweep reads no log byte, a grown log is read from where the last report stopped, and a log
rewritten, cut shorter or belonging to a job created again is read from its start, so the values are always those
of reading every log whole.

The logs of the first tests are served by a loopback HTTP server with Range support (tests/loopback_http.py), as the
service serves them, so that a test can make one grow or change between two reads; the others read a real sweep on
the local service (tests/report/conftest.py)."""
import glob
import json
import os

import pytest

from azext_batchai_sweep.core.outputs.metrics import MetricExtractor
from azext_batchai_sweep.core.report.snapshot import make_report
from azext_batchai_sweep.core.report.intermediate import ReportReader
from azext_batchai_sweep.core.report.live import LiveSweep
from azext_batchai_sweep.core.report.log_cache import LogCache
from azext_batchai_sweep.core.report.model import Objective
from azext_batchai_sweep.core.service.retry import RetrySettings
from tests.loopback_http import ScriptedHandler, serving

OBJECTIVE = Objective(metric='val_accuracy')
LINES = [b'epoch=%d loss=0.%d val_accuracy=0.%d\n' % (e, 90 - e, 40 + e) for e in range(1, 40)]


class Logs(ScriptedHandler):
    """GET /<name>: the log `files[name]` with Range support (206, or 416 past its end); `asked` records each Range."""
    files = {}
    asked = []

    def do_GET(self):  # pylint: disable=invalid-name
        data = self.files[self.path.lstrip('/')]
        start = int(self.headers['Range'].split('=')[1].rstrip('-'))
        self.asked.append((self.path.lstrip('/'), start))
        if start >= len(data):
            self.reply(416)
        else:
            self.reply(206, data[start:], {'Content-Range': 'bytes {}-{}/{}'.format(start, len(data) - 1, len(data))})


@pytest.fixture(name='logs')
def _logs():
    Logs.files, Logs.asked = {}, []
    with serving(Logs) as base:
        yield base


def _values(data):
    return ReportReader(MetricExtractor(metric_name='val_accuracy')).read_text(data.decode())


def _look(base, cache, name, final=False, created='t0', objective=OBJECTIVE):
    """One read of job `name`'s log by a fresh LiveSweep (a new process: only the cache file is shared), as an update
    does; returns the sweep."""
    sweep = LiveSweep(None, 'g', 'w', 'e', 's', objective, cache=cache, retry=RetrySettings(max_retries=0))
    log = sweep.logs.get(name)
    if log is None or log.created != created:
        from azext_batchai_sweep.core.report.live import JobLog  # pylint: disable=import-outside-toplevel
        log = sweep.logs[name] = JobLog(created)
    log.link = ('{}/{}'.format(base, name), sweep.clock())
    sweep._read(name, final)  # pylint: disable=protected-access
    cache.save(sweep.logs)
    return sweep


def _found(sweep, name):
    return sweep.reader.with_steps(sweep.logs[name].found)


def test_a_grown_log_is_read_from_where_the_last_report_stopped(logs, tmp_path):
    cache = LogCache(str(tmp_path / 'cache.json'), OBJECTIVE)
    Logs.files['a'] = b''.join(LINES[:10]) + LINES[10][:12]  # a line being written at the first look
    first = _look(logs, cache, 'a')
    assert _found(first, 'a') == _values(b''.join(LINES[:10]))
    consumed = len(b''.join(LINES[:10]))
    for grown, final in ((20, False), (39, True)):
        Logs.files['a'] = b''.join(LINES[:grown])
        later = _look(logs, cache, 'a', final=final)
        assert _found(later, 'a') == _values(Logs.files['a'])  # the values of reading the log whole
        assert Logs.asked[-1] == ('a', consumed - 64)  # from where it stopped, 64 bytes back to check them
        assert later.bytes_read == len(Logs.files['a']) - consumed + 64
        consumed = len(Logs.files['a'])
    assert later.logs['a'].complete
    Logs.asked.clear()
    again = _look(logs, cache, 'a', final=True)
    assert Logs.asked == [] or again.logs['a'].complete  # a log read to its end after its job ended is not read
    text = open(cache.path, encoding='utf-8').read()
    assert 'http' not in text and 'loss' not in text  # no link, no line of the log: the values only


@pytest.mark.parametrize('change', ['rewritten', 'shorter', 'same length'])
def test_a_rewritten_or_shorter_log_is_read_again_from_its_start(logs, tmp_path, change):
    cache = LogCache(str(tmp_path / 'cache.json'), OBJECTIVE)
    Logs.files['a'] = b''.join(LINES[:20])
    _look(logs, cache, 'a')
    if change == 'rewritten':  # another run of the job: other values, and longer
        Logs.files['a'] = b''.join(line.replace(b'val_accuracy=0.', b'val_accuracy=0.9') for line in LINES[:30])
    elif change == 'shorter':
        Logs.files['a'] = b''.join(LINES[:5])
    else:  # the same size, the last line's value changed
        Logs.files['a'] = b''.join(LINES[:19]) + LINES[19].replace(b'0.60', b'0.99')
    later = _look(logs, cache, 'a')
    assert _found(later, 'a') == _values(Logs.files['a'])
    assert Logs.asked[-1] == ('a', 0)


def test_a_cache_of_another_reading_or_damaged_is_not_used(logs, tmp_path):
    path = str(tmp_path / 'cache.json')
    Logs.files['a'] = b''.join(LINES[:10]).replace(b'loss=', b'val_loss=')
    _look(logs, LogCache(path, OBJECTIVE), 'a')
    loss = Objective(metric='val_loss')
    other = LogCache(path, loss)
    assert other.load(lambda created: None) == {}  # another metric: nothing of the last reading is used
    sweep = _look(logs, other, 'a', objective=loss)
    assert [v for _, v in _found(sweep, 'a')[1]] == [round(0.90 - e / 100, 2) for e in range(1, 11)]
    for damaged in ('{', '[]', json.dumps({'key': other.key, 'jobs': {'a': {'found': 'x'}}})):
        with open(path, 'w', encoding='utf-8') as out:
            out.write(damaged)
        assert other.load(lambda created: None) == {}


@pytest.mark.az
@pytest.mark.service
def test_a_second_report_of_an_unchanged_sweep_reads_no_log_byte(batchai_client, reported_sweep, tmp_path):
    args = dict(zip(reported_sweep.args[::2], reported_sweep.args[1::2]))
    target = (batchai_client, args['-g'], args['-w'], args['-e'], args['-n'], OBJECTIVE)
    cache = LogCache(str(tmp_path / 'cache.json'), OBJECTIVE)
    first = make_report(*target, str(tmp_path / 'first.html'), cache=cache)
    written = os.stat(cache.path)
    second = make_report(*target, str(tmp_path / 'second.html'), cache=LogCache(cache.path, OBJECTIVE))
    assert dict(second, generatedAt=None) == dict(first, generatedAt=None)
    assert [j['reports'] for j in second['jobs']] == [j['reports'] for j in reported_sweep.data['jobs']]
    assert os.stat(cache.path).st_mtime_ns == written.st_mtime_ns  # nothing read, nothing to write
    sweep = LiveSweep(*target, cache=LogCache(cache.path, OBJECTIVE))
    assert sweep.update() is True
    assert sweep.bytes_read == 0 and sweep.requests == 1  # the listing only
    assert sweep.data['jobs'] == first['jobs']


@pytest.mark.az
@pytest.mark.service
def test_a_job_created_again_under_its_name_is_read_from_its_start(batchai_client, reported_sweep, tmp_path):
    args = dict(zip(reported_sweep.args[::2], reported_sweep.args[1::2]))
    target = (batchai_client, args['-g'], args['-w'], args['-e'], args['-n'], OBJECTIVE)
    cache = LogCache(str(tmp_path / 'cache.json'), OBJECTIVE)
    first = LiveSweep(*target, cache=cache)
    first.update()
    saved = json.load(open(cache.path, encoding='utf-8'))
    name = sorted(saved['jobs'])[0]
    saved['jobs'][name]['created'] = '2001-01-01T00:00:00Z'  # the job the cache read was another one of that name
    saved['jobs'][name]['found'] = [[[['epoch', 1.0]], 0.123]]
    with open(cache.path, 'w', encoding='utf-8') as out:
        json.dump(saved, out)
    again = LiveSweep(*target, cache=LogCache(cache.path, OBJECTIVE))
    again.update()
    assert again.data['jobs'] == first.data['jobs']
    assert 0 < again.bytes_read == first.logs[name].offset  # that job's log, whole, and no other


@pytest.mark.az
@pytest.mark.service
def test_sweep_report_keeps_its_cache_beside_the_journal_with_no_secret(reported_sweep):
    caches = glob.glob(os.path.join(reported_sweep.directory, '**', '*.report-cache.json'), recursive=True)
    assert len(caches) == 1, caches
    text = open(caches[0], encoding='utf-8').read()
    assert len(json.loads(text)['jobs']) == len(reported_sweep.data['jobs'])
    assert 'http' not in text and 'sig=' not in text.lower() and 'token' not in text.lower()
    assert os.stat(caches[0]).st_mode & 0o077 == 0
