"""The live report (issue 43) on the session's local service: a `sweep run` whose jobs finish one by one, when the
test says so (each job waits for its gate file), followed by `report --watch` (the page opened as a file in
headless Chromium) and `report --serve` (the same page over loopback HTTP).

Without any action on the page, its job count and best value change as jobs finish; the job the reader selected
and the scroll position survive the updates; once the sweep has ended the page says "final" and asks for nothing
more; every request the page makes stays on this machine; the server answers nothing but the sweep's page and
its data, and only to a loopback Host.
"""
import http.client
import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from tests.fixtures_az import AZ, base_env, service_az
from tests.report.test_report_browser import browser, keep  # noqa: F401  pylint: disable=unused-import

pytestmark = [pytest.mark.az, pytest.mark.service]

VALUES = (0.3, 0.6, 0.9)
GATED = '''
import os, sys, time
q, gates = sys.argv[1], sys.argv[2]
open(os.path.join(gates, 'started-' + q), 'w').close()
print('epoch=1 val_accuracy=%.4f' % (float(q) / 2), flush=True)
while not os.path.exists(os.path.join(gates, 'gate-' + q)):
    time.sleep(0.1)
print('epoch=2 val_accuracy=%.4f' % float(q), flush=True)
'''


def gated_sweep(directory, logs='$AZ_BATCHAI_MOUNT_ROOT/logs'):
    """A grid over Q run one job at a time; a job prints epoch 1, waits for `gate-Q`, then prints its final value Q
    (the later the job, the better). logs: the jobs' stdOutErrPathPrefix."""
    script = os.path.join(directory, 'gated.py')
    with open(script, 'w', encoding='utf-8') as out:
        out.write(GATED)
    command = '{} {} {{{{Q}}}} {}'.format(sys.executable, script, directory)
    text = '\n'.join([
        'jobNamePrefix: live', 'objective: {metric: val_accuracy, goal: max, step: epoch}',
        'sampling: {type: grid}', 'limits: {maxConcurrentJobs: 1}', 'parameters:',
        '  - {{name: Q, type: discrete, values: {}}}'.format(list(VALUES)), 'job:', '  nodeCount: 1',
        '  stdOutErrPathPrefix: ' + logs, '  customToolkitSettings: {{commandLine: "{}"}}'.format(command)])
    path = os.path.join(directory, 'live.yaml')
    with open(path, 'w', encoding='utf-8') as out:
        out.write(text + '\n')
    return path


def wait_file(path, timeout=120, process=None):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        said = process.stderr() if process is not None else ''
        assert process is None or process.proc.poll() is None, said
        assert time.monotonic() < deadline, 'no {} in {} s: {}'.format(path, timeout, said)
        time.sleep(0.1)


class Background:
    """An az command running in the background, its stderr collected as it comes."""

    def __init__(self, az, *args, terminal=False):
        """terminal: stderr on a pseudo-terminal (as a person's shell has it), else a pipe."""
        master = slave = None
        if terminal:
            master, slave = pty.openpty()
        self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
            [AZ, *args], cwd=az.cwd, env=base_env(az.config_dir, az.env), stdout=subprocess.PIPE,
            stderr=slave if terminal else subprocess.PIPE, text=True)
        self.err = []
        self.out = []
        if terminal:
            os.close(slave)
            err = threading.Thread(target=self._drain_pty, args=(master, self.err), daemon=True)
        else:
            err = threading.Thread(target=self._drain, args=(self.proc.stderr, self.err), daemon=True)
        self._threads = [err, threading.Thread(target=self._drain, args=(self.proc.stdout, self.out), daemon=True)]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def _drain(stream, into):
        for line in stream:
            into.append(line)

    @staticmethod
    def _drain_pty(master, into):
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other end is closed
                break
            if not chunk:
                break
            into.append(chunk.decode('utf-8', 'replace'))
        os.close(master)

    def stderr(self):
        return ''.join(self.err)

    def wait(self, timeout=120):
        code = self.proc.wait(timeout)
        for thread in self._threads:
            thread.join(5)
        return code

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def sidecar_update(path):
    """The update a live page's sidecar carries ({'checked', 'final', 'parts'})."""
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    assert text.startswith('sweepLive(') and text.rstrip().endswith(');'), text[:80]
    return json.loads(text[len('sweepLive('):text.rstrip().rindex(')')])


def get(port, path, host=None, method='GET'):
    connection = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True)
        connection.putheader('Host', '127.0.0.1:{}'.format(port) if host is None else host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read().decode('utf-8', 'replace')
    finally:
        connection.close()


ROWS = 'document.querySelectorAll("#job-table tbody tr").length'
BEST = '(document.querySelector("#summary .best-value") || {}).textContent || ""'
STATE = 'document.getElementById("live-status").getAttribute("data-state")'


def test_live_page_follows_a_sweep_whose_jobs_finish_one_by_one(local_service, browser, tmp_path):  # noqa: F811
    directory = str(tmp_path)
    az = service_az(local_service, directory)
    spec = gated_sweep(directory)
    target = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'live-' + uuid.uuid4().hex[:8],
              '-n', 'live']
    run = Background(az, 'batchai', 'sweep', 'run', *target, '--spec', spec, '-c', local_service.cluster,
                     '--poll-interval', '0.2', '-o', 'none')
    watcher = served = None
    try:
        wait_file(os.path.join(directory, 'started-0.3'), process=run)
        page_file = os.path.join(directory, 'live.html')
        watcher = Background(az, 'batchai', 'sweep', 'report', *target, '-f', page_file, '--watch', '--interval',
                             '0.5', '-o', 'none')
        served = Background(az, 'batchai', 'sweep', 'report', *target, '-f', os.path.join(directory, 'served.html'),
                            '--serve', '--port', '0', '--interval', '0.5', '-o', 'none')
        wait_file(page_file, process=watcher)
        with open(page_file, encoding='utf-8') as handle:
            first = handle.read()
        assert 'id="live-status"' in first and 'live, updated' in first and first.rstrip().endswith('</html>')

        page = browser.page()
        page.load(page_file, height=500)
        assert page.evaluate(STATE) == 'live'
        assert page.evaluate(ROWS) == 1
        assert page.evaluate(BEST) == ''  # no job has ended yet
        # The reader selects the running job and scrolls down; nothing of that may be lost to an update.
        page.click('#job-table tbody tr')
        selected = page.evaluate('document.documentElement.getAttribute("data-selected")')
        assert selected and selected.startswith('live')
        page.click('#job-table th[data-column="2"]')  # sorted by state, then descending
        page.click('#job-table th[data-column="2"]')
        sorted_by = 'document.querySelector("#job-table th[aria-sort]").getAttribute("data-column") + " " + ' \
                    'document.querySelector("#job-table th[aria-sort]").getAttribute("aria-sort")'
        assert page.evaluate(sorted_by) == '2 descending'
        page.evaluate('window.scrollTo(0, 700)')
        scrolled = page.evaluate('window.scrollY')
        assert scrolled > 300

        port = int(re.search(r'http://127\.0\.0\.1:(\d+)/', _wait_text(served, 'Serving the live report')).group(1))
        wait_file(os.path.join(directory, 'served.html'), process=served)
        status, body = get(port, '/')
        assert status == 200 and 'id="live-status"' in body
        served_page = browser.page()
        served_page.open_url('http://127.0.0.1:{}/'.format(port))
        assert served_page.evaluate(ROWS) == 1

        updates_before = page.evaluate('Number(document.documentElement.getAttribute("data-updates") || 0)')
        for count, value in enumerate(VALUES, start=1):
            open(os.path.join(directory, 'gate-{}'.format(value)), 'w').close()
            # The job ended: the page shows it as best, and the run's next job, without anyone touching it.
            page.wait_for('({}) === "{}"'.format(BEST, value), timeout=90)
            if count < len(VALUES):
                page.wait_for('({}) === {}'.format(ROWS, count + 1), timeout=90)
                assert page.evaluate(STATE) == 'live'
                if count == 1:  # docs/img/report-live.png (REPORT_SCREENSHOTS=DIR)
                    page.send('Page.bringToFront')  # a background tab draws no frame to capture
                    page.evaluate('window.scrollTo(0, 0)')
                    keep(page, tmp_path, 'report-live.png')
                    page.evaluate('window.scrollTo(0, {})'.format(scrolled))
            assert page.evaluate('document.documentElement.getAttribute("data-selected")') == selected
            assert page.evaluate(sorted_by) == '2 descending'
            states = page.evaluate('Array.from(document.querySelectorAll("#job-table tbody tr td:nth-child(3)"))'
                                   '.map(function (td) { return td.textContent; })')
            assert states == sorted(states, reverse=True)
            assert page.evaluate('document.querySelectorAll("tr.sel").length') == 1
            assert page.evaluate('document.querySelector("tr.sel").getAttribute("data-job")') == selected
            assert page.evaluate('window.scrollY') == scrolled
        assert page.evaluate('Number(document.documentElement.getAttribute("data-updates"))') > updates_before
        page.wait_for('({}) === "final"'.format(STATE), timeout=90)
        assert page.evaluate('document.getElementById("live-status").textContent').startswith('final, updated ')
        assert page.evaluate(ROWS) == len(VALUES)
        page.send('Page.bringToFront')  # a background tab draws no frame to capture
        keep(page, tmp_path, 'report-live-final.png')

        # Final: the page asks for nothing more.
        page.pump()
        asked = len(page.requests())
        time.sleep(2.0)  # four intervals
        page.pump()
        assert len(page.requests()) == asked
        assert all(url.startswith('file://') for url in page.requests()), page.requests()
        assert any('.live.js?' in url for url in page.requests())
        assert not page.errors(), page.errors()

        assert watcher.wait(120) == 0, watcher.stderr()
        assert run.wait(120) == 0, run.stderr()
        with open(page_file, encoding='utf-8') as handle:
            final = handle.read()
        assert 'data-state="final"' in final and 'live-config' not in final  # a snapshot: no poller
        assert sidecar_update(os.path.join(directory, 'live.live.js'))['final'] is True
        assert not [name for name in os.listdir(directory) if name.startswith('.report-')]  # no temporary left

        # The served page followed the same sweep to its end; the server serves the final page until Ctrl+C.
        served_page.wait_for('({}) === "final"'.format(STATE), timeout=90)
        assert served_page.evaluate(BEST) == str(VALUES[-1])
        assert all(url.startswith('http://127.0.0.1:{}/'.format(port)) for url in served_page.requests())
        assert not served_page.errors(), served_page.errors()
        status, body = get(port, '/served.live.js')
        assert status == 200 and body.startswith('sweepLive(')
        assert get(port, '/served.html')[0] == 200
        for path in ('/live.html', '/served.live.js/x', '/../served.html', '/etc/passwd', '/favicon.ico',
                     '/%2e%2e/served.html', '/gated.py', '/live.yaml'):
            assert get(port, path)[0] == 404, path
        for host in ('example.com', 'evil.example:{}'.format(port), '10.0.0.1:{}'.format(port), '',
                     '127.0.0.1.evil.example'):
            assert get(port, '/', host=host)[0] == 403, host
        assert get(port, '/', host='localhost:{}'.format(port))[0] == 200
        assert get(port, '/', method='POST')[0] == 405
        served.proc.send_signal(signal.SIGINT)
        assert served.wait(60) == 0, served.stderr()
        assert 'Web preview' in served.stderr()
    finally:
        for value in VALUES:  # never leave a job waiting on the service
            open(os.path.join(directory, 'gate-{}'.format(value)), 'w').close()
        for process in (watcher, served, run):
            if process is not None:
                process.stop()


def _wait_text(process, text, timeout=120):
    deadline = time.monotonic() + timeout
    while text not in process.stderr():
        assert process.proc.poll() is None, process.stderr()
        assert time.monotonic() < deadline, process.stderr()
        time.sleep(0.1)
    return process.stderr()


def test_run_keeps_its_report_live_and_makes_it_final(local_service, browser, tmp_path):  # noqa: F811
    directory = str(tmp_path)
    az = service_az(local_service, directory)
    spec = gated_sweep(directory)
    target = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'live-' + uuid.uuid4().hex[:8],
              '-n', 'live']
    page_file = os.path.join(directory, 'run.html')
    run = Background(az, 'batchai', 'sweep', 'run', *target, '--spec', spec, '-c', local_service.cluster,
                     '--poll-interval', '0.3', '--report', page_file, '-o', 'none')
    watchers = []
    try:
        wait_file(os.path.join(directory, 'started-0.3'), process=run)
        # status --watch beside it: on a terminal (redrawn in place) and on a pipe (lines).
        watchers = [Background(az, 'batchai', 'sweep', 'status', *target, '--watch', '--interval', '0.3', '-o', 'json',
                               terminal=terminal) for terminal in (True, False)]
        wait_file(page_file, process=run)
        page = browser.page()
        page.load(page_file, height=500)
        page.send('Page.bringToFront')
        assert page.evaluate(STATE) == 'live'
        page.wait_for('({}) === 1'.format(ROWS), timeout=60)
        page.click('#job-table tbody tr')
        selected = page.evaluate('document.documentElement.getAttribute("data-selected")')
        page.evaluate('window.scrollTo(0, 650)')
        scrolled = page.evaluate('window.scrollY')
        for watcher in watchers:
            _wait_text(watcher, '1 job(s): 1 running')
        for count, value in enumerate(VALUES, start=1):
            open(os.path.join(directory, 'gate-{}'.format(value)), 'w').close()
            page.wait_for('({}) === "{}"'.format(BEST, value), timeout=90)
            if count < len(VALUES):
                page.wait_for('({}) === {}'.format(ROWS, count + 1), timeout=90)
                for watcher in watchers:
                    _wait_text(watcher, '{} job(s): '.format(count + 1))
            assert page.evaluate('document.querySelector("tr.sel").getAttribute("data-job")') == selected
            assert page.evaluate('window.scrollY') == scrolled
        assert run.wait(120) == 0, run.stderr()
        page.wait_for('({}) === "final"'.format(STATE), timeout=30)
        assert 'The live report of the run: ' + page_file in run.stderr()
        with open(page_file, encoding='utf-8') as handle:
            final = handle.read()
        assert 'data-state="final"' in final and 'live-config' not in final
        assert all(url.startswith('file://') for url in page.requests())
        assert not page.errors(), page.errors()

        on_terminal, on_pipe = watchers
        for watcher in watchers:
            assert watcher.wait(120) == 0, watcher.stderr()
            assert json.loads(''.join(watcher.out))['counts']['succeeded'] == len(VALUES)  # then the status
        screen = on_terminal.stderr()
        assert re.search(r'\x1b\[\d+F\x1b\[J', screen)  # redrawn in place
        # A running job: its step named as the jobs print it (epoch=N), its value by its metric (core/units.py).
        assert 'Sweep live - final' in screen and 'running:' in screen and \
            re.search(r'  live\S* +epoch 1 val_accuracy 0\.15', screen)
        lines = [line for line in on_pipe.stderr().splitlines() if 'job(s):' in line]
        assert '\x1b' not in on_pipe.stderr()
        assert lines[-1].endswith('(final)') and 'best val_accuracy 0.9' in lines[-1]
        assert any(' 1 job(s): ' in line for line in lines) and ' 3 job(s): 3 succeeded' in lines[-1]
        assert len(lines) == len(set(line.split(' ', 2)[2] for line in lines))  # one line per change
    finally:
        for value in VALUES:
            open(os.path.join(directory, 'gate-{}'.format(value)), 'w').close()
        for process in [run] + watchers:
            process.stop()


def test_report_options_are_checked_before_any_request(local_service, tmp_path):
    az = service_az(local_service, str(tmp_path))
    target = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'none', '-n', 'live']
    alone = az('batchai', 'sweep', 'report', *target, '--port', '8080')
    assert alone.exit_code != 0 and '--port is where --serve serves the live report' in alone.stderr
    wrong = az('batchai', 'sweep', 'report', *target, '--serve', '--port', '70000')
    assert wrong.exit_code != 0 and '--port must be 0 to 65535' in wrong.stderr
    nowhere = az('batchai', 'sweep', 'run', *target, '--spec', gated_sweep(str(tmp_path)), '-c', 'local',
                 '--report', str(tmp_path / 'missing' / 'live.html'))
    assert nowhere.exit_code != 0 and 'The directory of --report' in nowhere.stderr
    for text in (alone.stderr, wrong.stderr, nowhere.stderr):
        assert 'Traceback' not in text


def sidecar_rows(update):
    """The job table's rows an update carries ([#, job, state, decision, objective, best, step, duration, ...])."""
    html = ''.join(part for _, part in update['parts'])
    found = re.search(r'<script type="application/json" id="report-table-data">(.*?)</script>', html, re.S)
    assert found, html[:200]
    return json.loads(found.group(1))['rows']


def follow_gated_run(az, target, spec, cluster, directory, timeout=120):
    """`sweep run --spec SPEC (gated_sweep) --report DIRECTORY/run.html` on `cluster`, its jobs let end one by one,
    reading the page's data sidecar as a page would, without a browser: before a job's gate opens the sidecar shows
    it running with its first report (Q/2, read from the running job's log), after it the job succeeded with Q and
    is the best; once the run has ended the sidecar says final and the page is a snapshot. Returns the last update
    and the run's JSON output."""
    page_file = os.path.join(directory, 'run.html')
    sidecar = os.path.join(directory, 'run.live.js')
    run = Background(az, 'batchai', 'sweep', 'run', *target, '--spec', spec, '-c', cluster, '--poll-interval', '0.3',
                     '--report', page_file, '-o', 'json')
    seen = []

    def wait_update(condition, what):
        deadline = time.monotonic() + timeout
        while True:
            if os.path.exists(sidecar):
                update = sidecar_update(sidecar)
                if not seen or update['parts'] != seen[-1]['parts']:
                    seen.append(update)
                if condition(update, sidecar_rows(update)):
                    return update
            assert run.proc.poll() is None or what == 'final', run.stderr()
            assert time.monotonic() < deadline, 'no {} in {} s: {}; last rows {}'.format(
                what, timeout, run.stderr(), sidecar_rows(seen[-1]) if seen else None)
            time.sleep(0.1)

    try:
        for count, value in enumerate(VALUES, start=1):
            wait_update(lambda update, rows, n=count, q=value: len(rows) == n and rows[-1][2] == 'running' and
                        rows[-1][4] == q / 2 and not update['final'], 'job {} running at step 1'.format(count))
            open(os.path.join(directory, 'gate-{}'.format(value)), 'w').close()
            wait_update(lambda update, rows, n=count, q=value: len(rows) >= n and rows[n - 1][2] == 'succeeded' and
                        rows[n - 1][4] == q and '<div class="big best-value">{}</div>'.format(q) in
                        update['parts'][0][1], 'job {} succeeded'.format(count))
        assert run.wait(timeout) == 0, run.stderr()
        last = wait_update(lambda update, rows: update['final'], 'final')
        rows = sidecar_rows(last)
        assert [(row[2], row[4]) for row in rows] == [('succeeded', value) for value in VALUES]
        assert len(seen) >= 2 * len(VALUES)  # the data changed as the jobs ran and ended, not once at the end
        with open(page_file, encoding='utf-8') as handle:
            final = handle.read()
        assert 'data-state="final"' in final and 'live-config' not in final  # a snapshot: no poller
        assert not [name for name in os.listdir(directory) if name.startswith('.report-')]  # no temporary left
        assert 'The live report of the run: ' + page_file in run.stderr()
        return last, json.loads(''.join(run.out))
    finally:
        for value in VALUES:  # never leave a job waiting
            open(os.path.join(directory, 'gate-{}'.format(value)), 'w').close()
        run.stop()
