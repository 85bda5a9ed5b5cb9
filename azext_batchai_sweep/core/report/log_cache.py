"""What the report has read of each job's log, kept from one report (or live view) to the next in the sweep's local
folder, so that a report reads only what changed since the last one (core/report/live.py reads through it).

Per job it keeps the values found (the (step keys, value) pairs of intermediate.ReportReader), how far the log was
read (to the end of its last whole line), whether it was read to its end after the job had finished, the job's
creation time, and a SHA-256 of the 64 bytes before that position. Never a link (a download URL carries a SAS), never
a line of the log itself: a line not yet ended is read again next time.

It stays correct when a log changes under it:

- a log that grew is read from where the last report stopped (one open-ended Range request);
- a log rewritten or cut shorter: the next read starts 64 bytes early, and when those bytes are not the ones read
  before (or the file is now shorter), the job's values are dropped and its log read again from its start;
- a job deleted and created again under its name (`sweep resubmit`) has another creation time: read from its start;
- a job that had ended when its log was read to the end is not read again (a finished job's output does not change).

The file is keyed by the sweep (its path: the sweep's journal folder, one file per sweep and target, as the run's
journal) and by the reading (metric or regex, step key, file and output directory): another reading starts afresh.
A file that cannot be read or does not parse is ignored (it is a cache, never the truth), and it is written
atomically, readable by its owner only.
"""
import hashlib
import json
import os

from .build import write_file_atomically

CACHE_VERSION = 1
# The bytes before the read position that the next read fetches again and compares (as their hash).
TAIL_CHECK = 64


def tail_hash(data):
    return hashlib.sha256(data).hexdigest()


def reading_key(objective):
    """What the values found in a log depend on: the same log read with another metric, regex or step key (or another
    file of the job) finds other values."""
    what = [CACHE_VERSION, objective.metric, objective.regex, objective.step, objective.file,
            objective.output_directory_id]
    return hashlib.sha256(json.dumps(what).encode('utf-8')).hexdigest()


def _steps_out(steps):
    return [[key, step] for key, step in steps.items()]


def _entry_out(log):
    return {'created': log.created, 'consumed': log.consumed, 'complete': log.complete,
            'tail': [len(log.tail), tail_hash(log.tail)] if log.tail else
                    list(log.tail_check) if log.tail_check else None,
            'found': [[_steps_out(steps), value] for steps, value in log.found]}


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _found_in(found):
    """The (steps, value) pairs of an entry, or None when the entry is not one this module wrote."""
    if not isinstance(found, list):
        return None
    pairs = []
    for item in found:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list) and _number(item[1])):
            return None
        steps = {}
        for pair in item[0]:
            if not (isinstance(pair, list) and len(pair) == 2 and (pair[0] is None or isinstance(pair[0], str))
                    and _number(pair[1])):
                return None
            steps[pair[0]] = float(pair[1])
        pairs.append((steps, float(item[1])))
    return pairs


class LogCache:
    """The cache file of one sweep (``path``) for one reading (``objective``, a model.Objective)."""

    def __init__(self, path, objective):
        self.path = path
        self.key = reading_key(objective)

    def load(self, make_log):
        """{job name: JobLog} as the last report left them (make_log(created) makes an empty JobLog); {} when there is
        no usable file. An entry that does not read as this module writes it is left out (that job is read again)."""
        try:
            with open(self.path, encoding='utf-8') as handle:
                saved = json.load(handle)
        except (OSError, ValueError):
            return {}
        if not isinstance(saved, dict) or saved.get('key') != self.key or not isinstance(saved.get('jobs'), dict):
            return {}
        logs = {}
        for name, entry in saved['jobs'].items():
            log = self._log_of(entry, make_log)
            if log is not None:
                logs[name] = log
        return logs

    @staticmethod
    def _log_of(entry, make_log):
        if not isinstance(entry, dict):
            return None
        created, consumed, complete, tail = (entry.get(k) for k in ('created', 'consumed', 'complete', 'tail'))
        found = _found_in(entry.get('found'))
        if found is None or not (created is None or isinstance(created, str)) or not isinstance(complete, bool):
            return None
        if not isinstance(consumed, int) or isinstance(consumed, bool) or consumed < 0:
            return None
        if tail is not None and not (isinstance(tail, list) and len(tail) == 2 and isinstance(tail[0], int)
                                     and 0 < tail[0] <= min(TAIL_CHECK, consumed) and isinstance(tail[1], str)):
            return None
        if tail is None and consumed and not complete:
            return None  # a position without the bytes that check it: read again
        log = make_log(created)
        log.offset, log.found, log.complete = consumed, found, complete
        log.tail_check = tuple(tail) if tail else None
        return log

    def save(self, logs):
        """Write what `logs` ({job name: JobLog}) have read, atomically; an error is the caller's to say."""
        jobs = {name: _entry_out(log) for name, log in logs.items() if log.consumed or log.complete}
        text = json.dumps({'version': CACHE_VERSION, 'key': self.key, 'jobs': jobs}, separators=(',', ':'))
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), mode=0o700, exist_ok=True)
        write_file_atomically(self.path, text, mode=0o600)  # readable by its owner only
