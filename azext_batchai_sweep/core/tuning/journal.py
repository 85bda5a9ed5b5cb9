"""A `sweep run`'s journal: the run's cache in one file of JSON Lines, written a change at a time.

The first line is the whole journal (a JSON object); each later line is one save's change: the entries of its
per-job sections set or dropped, and its other fields replaced. A save appends what changed since the last one,
never the whole journal again: at 10,000 jobs that was a row per job re-encoded and rewritten at every poll, the
run's cost quadratic in its jobs (issue 44). The file is written whole (atomically) at a journal's first save (a
run's start or resume) and whenever the changes appended outgrow the whole, so it stays within about twice the
journal's size and the bytes written over a run grow linearly with its jobs.

A crash can cut the last line short: it is skipped (the journal is a cache, see core/tuning/loop.py), and the next run
writes the file whole before it appends. A reader that sees a file being appended to reads the whole lines only.
"""
import json
import logging
import os

logger = logging.getLogger(__name__)

JOURNAL_VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1: the one JSON object alone, rewritten at every save
# The fields that hold an entry per job: a change writes only their entries that changed.
SECTIONS = ('judged', 'decisions', 'complete', 'rows', 'attempts')
# The changes appended are compacted into a whole write once they outgrow the last whole write (and this).
COMPACT_MIN_BYTES = 64 * 1024
_MISSING = object()


class Journal:
    """A cache of the run in one file: decisions, judged reports, logs read to their end, status rows.

    ``data`` is the journal as one dict (what every reader sees); the loop changes it in place and calls ``save``.
    Losing it loses nothing the service does not hold (see core/tuning/loop.py); a file that does not parse is set
    aside and the run goes on from the service.

    The values of the per-job sections are never changed in place once saved (a changed entry is a new object):
    a save finds the entries that changed by identity first, then by value.
    """

    def __init__(self, path):
        self.path = path
        self.data = {'version': JOURNAL_VERSION, 'judged': {}, 'decisions': {}, 'complete': {}, 'rows': {}}
        self._written = None  # what the file holds, as of the last save: {field: dict copy or JSON text}
        self._whole_bytes = 0  # the size of the last whole write
        self._appended_bytes = 0  # the changes appended since
        self.bytes_written = 0  # by this object, whole writes and changes (tests/tuning/test_poll_cost_bounded.py)
        if path and os.path.exists(path):
            try:
                data = read_journal(path)
                if data.get('version') in READABLE_VERSIONS:
                    data['version'] = JOURNAL_VERSION
                    self.data.update(data)
            except (OSError, ValueError) as ex:
                logger.warning('The run journal %s could not be read (%s); going on from the service alone', path, ex)

    @property
    def decisions(self):
        from .decision import Decision
        return {name: Decision.from_dict(d) for name, d in self.data['decisions'].items()}

    @property
    def complete(self):
        from .trial import Report
        return {name: (entry['offset'], [Report(step=s, value=v) for s, v in entry['reports']], entry.get('metrics'))
                for name, entry in self.data['complete'].items()}

    def save(self):
        if not self.path:
            return
        if (self._written is None or self._appended_bytes > max(self._whole_bytes, COMPACT_MIN_BYTES)
                or not os.path.exists(self.path)):
            self._write_whole()
            return
        change = self._change()
        if not change:
            return
        # One dumps (the C encoder in one pass; json.dump streams through its pure-Python path, 7x slower).
        line = json.dumps(change, separators=(',', ':')) + '\n'
        with open(self.path, 'a', encoding='utf-8') as f:
            f.write(line)
        self._appended_bytes += len(line)  # ASCII: dumps escapes the rest
        self.bytes_written += len(line)

    def _write_whole(self):
        os.makedirs(os.path.dirname(self.path) or '.', exist_ok=True)
        partial = self.path + '.partial'
        text = json.dumps(self.data, separators=(',', ':')) + '\n'
        with open(partial, 'w', encoding='utf-8') as f:
            f.write(text)
        os.replace(partial, self.path)
        self._whole_bytes, self._appended_bytes = len(text), 0
        self.bytes_written += len(text)
        self._written = {key: self._snapshot(key, value) for key, value in self.data.items()}

    @staticmethod
    def _snapshot(key, value):
        return dict(value) if key in SECTIONS and isinstance(value, dict) else json.dumps(value)

    def _change(self):
        """{'set': {section: {key: value}}, 'drop': {section: [key]}, 'put': {field: value}, 'remove': [field]}
        of what changed since the last save (only the parts that did)."""
        written, sets, drops, puts = self._written, {}, {}, {}
        for key, value in self.data.items():
            old = written.get(key, _MISSING)
            if key in SECTIONS and isinstance(value, dict) and isinstance(old, dict):
                changed, added = {}, 0
                for name, entry in value.items():
                    before = old.get(name, _MISSING)
                    if before is entry:
                        continue
                    if before is _MISSING:
                        added += 1
                    elif before == entry:
                        continue
                    changed[name] = entry
                if changed:
                    sets[key] = changed
                if len(old) + added != len(value):
                    drops[key] = [name for name in old if name not in value]
                if changed or key in drops:
                    written[key] = dict(value)
                continue
            text = json.dumps(value)
            if text != (old if isinstance(old, str) else None):
                puts[key] = value
                written[key] = self._snapshot(key, value)
        removed = [key for key in written if key not in self.data]
        for key in removed:
            del written[key]
        change = {}
        for name, part in (('set', sets), ('drop', drops), ('put', puts), ('remove', removed)):
            if part:
                change[name] = part
        return change


def read_journal(path):
    """The journal's dict: its first line, with every whole change line after it applied in order."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    lines = text.split('\n')
    data = json.loads(lines[0])
    if not isinstance(data, dict):
        raise ValueError('not a JSON object')
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            change = json.loads(line)
        except ValueError:
            # Cut short by a crash (the last line), or being appended right now: what came before holds.
            logger.debug('run journal %s: line %d is not whole; read up to it', path, number)
            break
        apply_change(data, change)
    return data


def apply_change(data, change):
    for section, entries in (change.get('set') or {}).items():
        data.setdefault(section, {}).update(entries)
    for section, names in (change.get('drop') or {}).items():
        held = data.get(section) or {}
        for name in names:
            held.pop(name, None)
    data.update(change.get('put') or {})
    for key in change.get('remove') or ():
        data.pop(key, None)
