"""Following the logs of a sweep's jobs incrementally: each poll reads only the bytes appended since the last one.

Per job, the download link of its objective file (one listOutputFiles call, then kept while it is valid) and an
offset; each poll sends one open-ended HTTP Range request per running job (`bytes=<offset>-`: 206 with the new
bytes, 416 when there are none), so the cost of a poll grows with the new output, not with the logs' size. A
finished job's log is read to its end once more and then never again.
"""
import threading
import time


from ..outputs.download import find_output_file, read_new_bytes_of
from ..service.parallel import run_parallel
from ..service.retry import describe_error
from .reports import LogReader, ReportParser

# listOutputFiles links are asked for 60 minutes; one is renewed well before that.
LINK_RENEW_SECONDS = 45 * 60


class LogFollower:
    """The reports of every job of a sweep, read incrementally.

    :param complete: {job name: (offset, reports[, metrics])} of logs already read to their end (the run's journal),
        which are never read again; with ``extra_metrics``, an entry without its metrics is read again.
    :param extra_metrics: the other metrics of a sweep with several objectives or constraints (ReportParser).
    """

    def __init__(self, client, resource_group, workspace, experiment, objective, *, retry=None, parallel=8,
                 complete=None, clock=time.monotonic, warn=None, extra_metrics=()):
        self.client, self.target = client, (resource_group, workspace, experiment)
        self.file = objective.get('file') or 'stdout.txt'
        self.directory = objective.get('outputDirectoryId') or 'stdouterr'
        self.parser = ReportParser(objective, extra_metrics)
        self.retry, self.parallel, self.clock, self.warn = retry, parallel, clock, warn
        self.readers = {}
        self.complete = set()
        for name, entry in (complete or {}).items():
            offset, reports, metrics = (tuple(entry) + (None,))[:3]
            if extra_metrics and metrics is None:
                continue  # read by a run without these metrics: read again
            self.readers[name] = LogReader(self.parser, offset, reports, metrics)
            self.complete.add(name)
        self._links = {}
        self._lock = threading.Lock()
        self.bytes_read = 0
        self.requests = 0

    def forget(self, name):
        """Read the job's log from its start again: a new attempt of the job (resubmit) writes a new log."""
        self.readers.pop(name, None)
        self.complete.discard(name)
        self._links.pop(name, None)

    def reports(self, name):
        reader = self.readers.get(name)
        return tuple(reader.reports) if reader else ()

    def metrics(self, name):
        """{extra metric: its last value} of the job's log so far."""
        reader = self.readers.get(name)
        return dict(reader.metrics) if reader else {}

    def update(self, jobs):
        """Read what is new in the logs of `jobs` ((name, state) pairs): running ones, and finished ones once."""
        todo = []
        for name, state in jobs:
            if name in self.complete or state == 'queued':
                continue
            todo.append((name, state not in ('running', 'terminating')))
            self.readers.setdefault(name, LogReader(self.parser))

        def on_result(item, _, exc):
            if exc is not None and self.warn is not None:
                self.warn('job {}: new log lines not read this time: {}'.format(item[0], describe_error(exc)))
        run_parallel(lambda item: self._read(*item), todo, parallel=self.parallel, on_result=on_result)

    def _link(self, name, renew=False):
        link = self._links.get(name)
        if link is None or renew or self.clock() - link[1] > LINK_RENEW_SECONDS:
            item = find_output_file(self.client, *self.target, name, self.file, self.directory, retry=self.retry)
            with self._lock:
                self.requests += 1
            if item is None or not item.download_url:
                return None
            link = (item.download_url, self.clock())
            self._links[name] = link
        return link[0]

    def _read(self, name, final):
        reader = self.readers[name]
        data = read_new_bytes_of(lambda renew=False: self._link(name, renew=renew), reader.offset, retry=self.retry)
        if data is None:
            if final:  # the job ended without ever writing the file: nothing will come
                self.complete.add(name)
            return
        with self._lock:
            self.bytes_read += len(data)
            self.requests += 1
        reader.feed(data, final=final)
        if final:
            self.complete.add(name)
            self._links.pop(name, None)
