"""A live report: the sweep's report kept current while it runs, and a page that updates itself without a server.

A page opened as a file (file://) cannot fetch its own file, so the live page is two files written side by side,
each atomically (a temporary file renamed over it):

    live.html          the report, its parts each wrapped in <div class="live-part" data-key="...">, and a script
                       that every `interval` seconds inserts <script src="live.live.js?N"> again
    live.live.js       `sweepLive({...})`: the time of the last look, whether the sweep has ended, and each part
                       with its key (a hash of its HTML)

The page replaces only the parts whose key changed and keeps the reader's place: scroll position, the selected
job, the table's sorting and page. Once the sidecar says `final` the page stops asking; the last HTML written is a
plain snapshot saying "final". A served page (serve.py) loads the same sidecar over loopback HTTP.

Each look costs one listing of the experiment and, per job not read to its end, one open-ended Range request for
the bytes appended to its log since the last look (as `sweep run`'s poll does, core/tuning/logs.py); a finished
job's log is read to its end once and never again. Nothing is drawn again when no job changed.
"""
import datetime
import hashlib
import itertools
import json
import os
import secrets
import threading
import time


from ..outputs.download import find_output_file, iter_new_bytes_of
from ..outputs.metrics import MAX_LINE, MetricExtractor
from ..outputs.names import nothing_matched
from ..service.listing import list_jobs, select_jobs, state_of
from ..service.parallel import run_parallel
from ..service.retry import RetrySettings, describe_error
from ..tuning.trial import FINISHED_STATES
from .build import data_of_trials, write_file_atomically
from .collect import in_submission_order, trial_of
from .data import Memo
from .html import report_parts, render_html
from .intermediate import ReportReader
from .log_cache import TAIL_CHECK, tail_hash
from .model import Objective

DEFAULT_INTERVAL = 10.0
LINK_RENEW_SECONDS = 45 * 60  # listOutputFiles links are asked for 60 minutes


def sidecar_path(output_file):
    """`live.html` -> `live.live.js`, beside it."""
    root, _ = os.path.splitext(output_file)
    return root + '.live.js'


def _scan(reader, data, found):
    """The reports in whole lines of `data` (bytes), read exactly as ReportReader.read_chunks reads a log."""
    reader._scan(data.decode('utf-8', errors='replace'), found)  # pylint: disable=protected-access


class JobLog:
    """The reports of one job's log read so far: its offset, a line cut at the end, and (step keys, value) pairs.

    ``created`` is the creation time of the job the log belongs to; ``tail`` the last bytes (at most
    log_cache.TAIL_CHECK) before ``consumed``, the end of the last whole line read, which the next read fetches again
    to check that the log was not rewritten (``tail_check``: their length and hash, for a log restored from the cache).
    """

    def __init__(self, created=None):
        self.created = created
        self.offset = 0
        self.partial = b''
        self.found = []
        self.complete = False
        self.link = None  # (download URL, when it was asked)
        self.tail = b''
        self.tail_check = None

    @property
    def consumed(self):
        return self.offset - len(self.partial)

    def feed(self, reader, data, final):
        self.offset += len(data)
        data = self.partial + data if self.partial else data
        cut = data.rfind(b'\n') + 1
        if cut == 0 and len(data) > MAX_LINE:
            cut = len(data)  # a "line" this long is scanned in pieces, as metrics does
        if cut:
            _scan(reader, data[:cut], self.found)
            self._keep_tail(data[max(0, cut - TAIL_CHECK):cut])
        self.partial = data[cut:]
        if final:
            if self.partial:
                _scan(reader, self.partial, self.found)
                self._keep_tail(self.partial[-TAIL_CHECK:])
                self.partial = b''
            self.complete = True

    def _keep_tail(self, data):
        self.tail = (self.tail + data)[-TAIL_CHECK:] if len(data) < TAIL_CHECK else data
        self.tail_check = None

    def overlap(self):
        """How many bytes before ``consumed`` the next read fetches again to check them."""
        kept = len(self.tail) if self.tail else self.tail_check[0] if self.tail_check else 0
        return min(kept, self.consumed)

    def same_tail(self, data):
        """Whether ``data`` (the overlap() bytes read again) are the bytes read before."""
        if self.tail:
            return data == self.tail
        return self.tail_check is None or (len(data) == self.tail_check[0] and tail_hash(data) == self.tail_check[1])

    def resume(self, tail):
        """Continue at ``consumed`` (the cut line is read again with what follows it); ``tail``: the checked bytes."""
        self.offset, self.partial = self.consumed, b''
        self.tail, self.tail_check = tail, None


class LiveSweep:
    """The sweep's jobs and their values, brought up to date by each update() at the cost of what is new.

    :param objective: a model.Objective; None to follow the jobs' states only.
    :param context: a callable returning {'decisions', 'figures', 'run', 'scheduler_ids'} as they stand now (a
        `sweep run`'s journal), or None.
    :param cache: a log_cache.LogCache: what an earlier report or view read of the logs, read from it at the start
        and written back after each update that read something (a report reads only what changed since).
    """

    def __init__(self, client, resource_group, workspace, experiment, sweep_name, objective, *, plan_header=None,
                 context=None, parallel=8, retry=None, clock=time.monotonic, cache=None):
        self.client, self.target = client, (resource_group, workspace, experiment)
        # Without an objective (`status --watch` of a sweep with none known): states only, no log is read.
        self.read_logs = objective is not None
        objective = objective if objective is not None else Objective(metric='objective')
        self.sweep_name, self.objective, self.plan_header = sweep_name, objective, plan_header
        self.context = context or (lambda: {})
        self.parallel, self.retry, self.clock = parallel, retry or RetrySettings(), clock
        self.reader = ReportReader(MetricExtractor(regex=objective.regex, metric_name=objective.metric),
                                   step_key=objective.step)
        self.cache = cache if self.read_logs else None
        self.logs = self.cache.load(JobLog) if self.cache is not None else {}
        self.bytes_read = 0
        self.requests = 0
        self._lock = threading.Lock()
        self._fingerprint = None
        self._memo = Memo()  # the sweep-level summaries of the last data, made again only when their inputs change
        self.data = None
        self.trials = []
        self.ended = False

    def update(self, on_error=None, progress=None):
        """Look at the sweep once; returns True when what the report shows changed (self.data is then new).
        progress(done, total) counts the jobs whose logs were read."""
        jobs = list(select_jobs(list_jobs(self.client, *self.target, retry=self.retry), sweep_name=self.sweep_name))
        with self._lock:
            self.requests += 1
        todo = []
        for job in jobs:
            state = state_of(job)
            created = getattr(job, 'creation_time_text', None)
            log = self.logs.get(job.name)
            if log is None or log.created != created:  # new, or deleted and created again under its name
                log = self.logs[job.name] = JobLog(created)
            if self.read_logs and not log.complete and state != 'queued':
                todo.append((job.name, state in FINISHED_STATES))
        done, errors = [0], {}

        def on_result(item, _, exc):
            if exc is not None:
                errors[item[0]] = exc
            if exc is not None and on_error is not None:
                on_error('job {}: new log lines not read this time: {}'.format(item[0], describe_error(exc)))
            done[0] += 1
            if progress is not None:
                progress(done[0], len(todo))
        read_before = self.bytes_read
        run_parallel(lambda item: self._read(*item), todo, parallel=self.parallel, on_result=on_result)
        if self.cache is not None and (todo or len(self.logs) != len(jobs) or self.bytes_read != read_before):
            self.logs = {job.name: self.logs[job.name] for job in jobs}  # jobs deleted since are forgotten
            self.cache.save(self.logs)
        context = self.context() or {}
        trials = []
        for job in jobs:
            step_key, reports = self.reader.with_steps(self.logs[job.name].found)
            trials.append(trial_of(job, step_key, reports, error=errors.get(job.name),
                                   decisions=context.get('decisions'), scheduler_ids=context.get('scheduler_ids')))
        trials = self.trials = in_submission_order(trials)
        run = context.get('run')
        self.ended = bool(trials) and all(t.state in FINISHED_STATES for t in trials) and (
            context.get('figures') is None or bool((run or {}).get('ended')))
        fingerprint = json.dumps([[t.name, t.state, len(t.reports), [(r.step, r.value) for r in t.reports[-1:]],
                                   t.extra] for t in trials] + [context.get('figures'), run], sort_keys=True,
                                 default=str)
        if fingerprint == self._fingerprint:
            return False
        finished = [t.name for t in trials if t.state in FINISHED_STATES]
        if self.read_logs and finished and len(finished) == len(trials) and not any(t.reports for t in trials):
            raise nothing_matched(self.client, *self.target, self.sweep_name, finished,
                                  metric=self.objective.metric, regex=self.objective.regex, file=self.objective.file,
                                  output_directory_id=self.objective.output_directory_id, retry=self.retry)
        self._fingerprint = fingerprint
        self.data = data_of_trials(trials, self.sweep_name, self.objective, resource_group=self.target[0],
                                   workspace=self.target[1], experiment=self.target[2],
                                   plan_header=self.plan_header, figures=context.get('figures'), run=run,
                                   memo=self._memo) \
            if trials else None
        return True

    def _link(self, name, log, renew=False):
        if log.link is None or renew or self.clock() - log.link[1] > LINK_RENEW_SECONDS:
            item = find_output_file(self.client, *self.target, name, self.objective.file,
                                    self.objective.output_directory_id, retry=self.retry)
            with self._lock:
                self.requests += 1
            log.link = (item.download_url, self.clock()) if item is not None and item.download_url else None
        return log.link[0] if log.link else None

    def _read(self, name, final):
        """Read what was appended to a job's log since the last read (from its start the first time), a few bytes
        before to check they are the ones read then: when they are not (the log was rewritten or cut), the job's
        values are dropped and its log read from its start."""
        log = self.logs[name]
        link = lambda renew=False: self._link(name, log, renew=renew)  # noqa: E731
        overlap = log.overlap()
        chunks = iter_new_bytes_of(link, log.consumed - overlap, retry=self.retry)
        if chunks is None:
            if final:  # the job ended without ever writing the file: nothing will come
                log.complete = True
            return
        with self._lock:
            self.requests += 1
        source = chunks
        head, chunks = _take(source, overlap)
        self._count(len(head))
        if log.same_tail(head):
            log.resume(head)
        else:
            _close(source)
            fresh = JobLog(log.created)
            fresh.link = log.link
            log = self.logs[name] = fresh
            chunks = iter_new_bytes_of(link, 0, retry=self.retry) or iter(())
            with self._lock:
                self.requests += 1
        for chunk in chunks:
            self._count(len(chunk))
            log.feed(self.reader, chunk, False)
        if final:
            log.feed(self.reader, b'', True)

    def _count(self, size):
        with self._lock:
            self.bytes_read += size


def _take(chunks, size):
    """(the first `size` bytes of the chunks (fewer when they end first), the chunks after them)."""
    if not size:
        return b'', chunks
    head = b''
    for chunk in chunks:
        head += chunk
        if len(head) >= size:
            rest = head[size:]
            return head[:size], itertools.chain((rest,) if rest else (), chunks)
    return head, iter(())


def _close(chunks):
    close = getattr(chunks, 'close', None)
    if close is not None:
        close()


LIVE_SCRIPT = """
(function () {
  'use strict';
  var config = JSON.parse(document.getElementById('live-config').textContent);
  var status = document.getElementById('live-status');
  var nonce = document.currentScript ? document.currentScript.nonce : '';
  var asked = 0, pending = null, timer = null;
  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    if (pending) { pending.remove(); pending = null; }
  }
  function say(update) {
    status.textContent = (update.final ? 'final' : 'live') + ', updated ' + update.checked;
    status.setAttribute('data-state', update.final ? 'final' : 'live');
  }
  window.sweepLive = function (update) {
    if (!update || timer === null) { return; }
    var x = window.scrollX, y = window.scrollY;
    var wrap = document.querySelector('#jobs .table-wrap');
    var inner = wrap ? [wrap.scrollLeft, wrap.scrollTop] : null;
    var changed = 0;
    update.parts.forEach(function (part, i) {
      var el = document.getElementById('live-part-' + i);
      if (!el || el.getAttribute('data-key') === part[0]) { return; }
      el.innerHTML = part[1];
      el.setAttribute('data-key', part[0]);
      changed += 1;
      if (el.querySelector('#report-table-data')) {
        window.sweepReport.setupTable();
        wrap = el.querySelector('.table-wrap');
        if (wrap && inner) { wrap.scrollLeft = inner[0]; wrap.scrollTop = inner[1]; }
      }
    });
    if (changed) {
      window.sweepReport.light();
      window.sweepReport.reselect();
      window.scrollTo(x, y);
    }
    document.documentElement.setAttribute('data-updates',
      String(Number(document.documentElement.getAttribute('data-updates') || 0) + 1));
    say(update);
    if (update.final) { stop(); }
  };
  function ask() {
    if (pending) { pending.remove(); }
    asked += 1;
    pending = document.createElement('script');
    pending.nonce = nonce;
    pending.src = config.sidecar + '?' + asked;
    document.head.appendChild(pending);
  }
  if (!config.final) { timer = setInterval(ask, config.interval * 1000); }
})();
"""


# The page's "live, updated hh:mm:ss" / "final" badge, in a corner whatever the reader scrolled to.
STATUS_CSS = ('#live-status { position: fixed; top: 8px; right: 12px; z-index: 3; background: #fff; '
              'border: 1px solid var(--line); border-radius: 12px; padding: 2px 10px; font-size: 13px; '
              'box-shadow: 0 1px 3px rgba(0,0,0,.12); } '
              '#live-status::before { content: "\\25CF  "; color: #2ca02c; } '
              '#live-status[data-state="final"]::before { color: #8a919c; }')


def _checked_text(moment=None):
    moment = moment or datetime.datetime.now(datetime.timezone.utc)
    return moment.strftime('%H:%M:%S UTC')


def _key(html):
    return hashlib.sha256(html.encode('utf-8')).hexdigest()[:16]


def _script_json(value):
    return json.dumps(value, separators=(',', ':')).replace('<', '\\u003c').replace('>', '\\u003e').replace(
        '&', '\\u0026')


class LiveDocument:
    """Writes a live page and its sidecar (see the module's docstring), drawing parts again only on a change."""

    def __init__(self, output_file, interval=DEFAULT_INTERVAL):
        self.output_file = os.path.abspath(output_file)
        self.sidecar = sidecar_path(self.output_file)
        self.interval = interval
        self.nonce = secrets.token_hex(12)
        self.parts = None
        self.keys = None
        self.writes = 0
        self.final = False  # whether the page written last is the final one

    def write(self, data, changed, final, moment=None):
        """Write the sidecar (always: it carries the time of this look), and the page when it changed or ended."""
        if changed or self.parts is None:
            self.parts = report_parts(data)
            self.keys = [_key(part) for part in self.parts]
        checked = _checked_text(moment)
        update = {'checked': checked, 'final': bool(final), 'parts': [[key, part] for key, part in
                                                                     zip(self.keys, self.parts)]}
        write_file_atomically(self.sidecar, 'sweepLive({});\n'.format(_script_json(update)))
        if changed or self.writes == 0 or bool(final) != self.final:
            write_file_atomically(self.output_file, self.page(data, checked, final))
            self.final = bool(final)
        self.writes += 1

    def sidecar_text(self):
        with open(self.sidecar, encoding='utf-8') as handle:
            return handle.read()

    def page(self, data, checked, final):
        state = 'final' if final else 'live'
        config = {'sidecar': os.path.basename(self.sidecar), 'interval': self.interval, 'final': bool(final)}
        live = {
            'nonce': self.nonce,
            'status': '<style>{}</style><div id="live-status" data-state="{}">{}, updated {}</div>'.format(
                STATUS_CSS, state, state, checked),
            'parts': ['<div class="live-part" id="live-part-{}" data-key="{}">{}</div>'.format(i, key, part)
                      for i, (key, part) in enumerate(zip(self.keys, self.parts))],
            'script': '<script type="application/json" id="live-config">{}</script>'
                      '<script nonce="{}">{}</script>'.format(_script_json(config), self.nonce, LIVE_SCRIPT)
                      if not final else ''}
        return render_html(data, parts=self.parts, live=live)


def watch(sweep, document, *, interval=DEFAULT_INTERVAL, sleep=time.sleep, on_error=None, on_update=None,
          should_stop=None):
    """Update the sweep and its live page every `interval` seconds until the sweep has ended (then writes the final
    page and returns the last data) or should_stop() says so."""
    while True:
        started = time.monotonic()
        changed = sweep.update(on_error=on_error)
        if sweep.data is None and document.writes == 0:
            return None  # no job of the sweep: the caller says so
        if sweep.data is not None:
            document.write(sweep.data, changed, sweep.ended)
            if on_update is not None:
                on_update(sweep, changed)
        if sweep.ended or (should_stop is not None and should_stop()):
            return sweep.data
        sleep(max(0.0, interval - (time.monotonic() - started)))


class RunReport:
    """`sweep run --report FILE`: the run's live page, brought up to date after each of the run's polls (at most
    every `interval` seconds) and made final when the run has ended. An error of the report never stops the run:
    it is said once, and the page keeps its last complete state.

    :param make_sweep: make_sweep(run) -> a LiveSweep of the run's sweep (called at the first poll, when the run's
        objective is known).
    """

    def __init__(self, output_file, make_sweep, *, interval=DEFAULT_INTERVAL, clock=time.monotonic, warn=None):
        self.document = LiveDocument(output_file, interval=interval)
        self.make_sweep, self.interval, self.clock = make_sweep, interval, clock
        self.warn = warn or (lambda text: None)
        self.sweep = None
        self.last = None
        self.failed = False

    def __call__(self, run):
        """The run's on_poll."""
        if self.last is not None and self.clock() - self.last < self.interval:
            return
        self.last = self.clock()
        self._update(run, final=False)

    def finish(self, run):
        """The run has ended: write the final page."""
        self._update(run, final=True)

    def _update(self, run, final):
        try:
            if self.sweep is None:
                self.sweep = self.make_sweep(run)
            changed = self.sweep.update(on_error=self.warn)
            if self.sweep.data is not None:
                self.document.write(self.sweep.data, changed, final)
        except Exception as exc:  # pylint: disable=broad-except
            if not self.failed:
                self.failed = True
                self.warn('The live report {} was not updated: {}'.format(self.document.output_file,
                                                                          describe_error(exc)))


