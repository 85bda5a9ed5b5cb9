"""SQLite (WAL) persistence of the local service's resources.

One table holds every resource as its public JSON body (what GET returns, secrets stripped), so a list page is a
string join of stored bodies. Jobs carry extra columns for the scheduler and for crash recovery, and `spec`, the
create request as received (it holds the secret values a job needs to run; it is never returned).

Keys are lower-cased ARM paths below the subscription ('sub/rg/ws', 'sub/rg/ws/experiments/e/jobs/j'...)
because ARM resource names are case-insensitive.
"""
import json
import logging
import sqlite3
import threading

logger = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    parent TEXT NOT NULL,
    body TEXT NOT NULL,
    spec TEXT,
    cluster TEXT,
    state TEXT,
    priority INTEGER,
    node_count INTEGER,
    pgid INTEGER,
    marker TEXT,
    sched_id TEXT
);
CREATE INDEX IF NOT EXISTS resources_children ON resources (kind, parent, seq);
CREATE INDEX IF NOT EXISTS resources_queue ON resources (cluster, state, priority, seq);
"""

RESOURCE_COLUMNS = ('key', 'kind', 'parent', 'body', 'spec')  # every resource's, set when it is inserted
JOB_COLUMNS = ('cluster', 'state', 'priority', 'node_count', 'pgid', 'marker', 'sched_id')

# The statements, named here rather than written inline: SQLite reads keywords and names in any case, so their text
# is no behaviour to mutate (mutmut 3 changes only what is inside functions). What the functions compute around
# them (a key prefix and its '/' boundary, the columns set, the clusters skipped) stays inside the functions.
WAL = 'PRAGMA journal_mode=WAL'
# NORMAL in WAL mode: durable against a service crash (not a power cut) without an fsync per commit.
SYNCHRONOUS = 'PRAGMA synchronous=NORMAL'
COLUMN_NAMES = "SELECT name FROM pragma_table_info('resources')"
ADD_SCHED_ID = 'ALTER TABLE resources ADD COLUMN sched_id TEXT'
# The Slurm scheduler asks for the jobs still to hand over after every create: only they are indexed.
UNSUBMITTED_INDEX = ('CREATE INDEX IF NOT EXISTS resources_unsubmitted ON resources (priority, seq) '
                     "WHERE state = 'queued' AND sched_id IS NULL")
GET = 'SELECT * FROM resources WHERE key = ?'
INSERT = 'INSERT OR IGNORE INTO resources ({columns}) VALUES ({marks})'
GET_BODY = 'SELECT body FROM resources WHERE key = ?'
UPDATE = 'UPDATE resources SET body = ?{job_columns} WHERE key = ?'
DELETE = 'DELETE FROM resources WHERE key = ?'
# a resource (its key) and those below it (keys starting with the key and '/': `below` is that prefix's length)
DELETE_TREE = 'DELETE FROM resources WHERE key = :key OR substr(key, 1, :below) = :prefix'
SET_STATE_BELOW = 'UPDATE resources SET state = :state WHERE key = :key OR substr(key, 1, :below) = :prefix'
PAGE = 'SELECT seq, body FROM resources WHERE kind = ? AND parent = ? AND seq > ? ORDER BY seq LIMIT ?'
PAGE_BY_PREFIX = ('SELECT seq, body FROM resources WHERE kind = ? AND substr(key, 1, ?) = ? AND seq > ? '
                  'ORDER BY seq LIMIT ?')
ALL_BY_PREFIX = 'SELECT key, parent, body FROM resources WHERE kind = ? AND substr(key, 1, ?) = ? ORDER BY seq'
SCHEDULER_IDS = ("SELECT key, sched_id FROM resources WHERE kind = 'job' AND parent = ? "
                 'AND sched_id IS NOT NULL')
NEXT_QUEUED = ("SELECT key, node_count FROM resources WHERE cluster = ? AND state = 'queued' "
               'ORDER BY priority, seq LIMIT 1')
# one indexed probe per cluster, not a scan of every job row (a scan costs a millisecond per thousand jobs under the
# store lock, which every request waits for): the scheduler asks after every create
CLUSTERS_WITH_QUEUE = ("SELECT c.key FROM resources c WHERE c.kind = 'cluster' AND EXISTS "
                       "(SELECT 1 FROM resources j WHERE j.cluster = c.key AND j.state = 'queued')")
UNSUBMITTED = ("SELECT key, node_count, cluster FROM resources WHERE state = 'queued' AND sched_id IS NULL "
               '{skip}ORDER BY priority, seq LIMIT ?')
SKIP_CLUSTERS = 'AND cluster NOT IN ({marks}) '
IN_STATES = 'SELECT key, state, pgid, marker, cluster, sched_id FROM resources WHERE state IN ({marks})'
OF_KIND = ' AND kind = ?'


def resource_key(*parts):
    """The store key of a resource from its ARM path segments (case-insensitive)."""
    return '/'.join(parts).lower()


class Store:
    """Thread-safe access to the database: one connection, short transactions under a lock.

    A single writer keeps SQLite free of `database is locked` retries; every statement is a few microseconds, so
    the lock is never the bottleneck of the HTTP layer.
    """

    def __init__(self, path):
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(WAL)
        self._conn.execute(SYNCHRONOUS)
        self._conn.executescript(SCHEMA)
        columns = {name for (name,) in self._conn.execute(COLUMN_NAMES)}
        if 'sched_id' not in columns:  # a data dir of 0.1.1: the job's id at an external scheduler (Slurm)
            self._conn.execute(ADD_SCHED_ID)
        self._conn.execute(UNSUBMITTED_INDEX)
        self._lock = threading.RLock()

    def close(self):
        with self._lock:
            self._conn.close()

    def get(self, key):
        """The row of a resource, or None."""
        with self._lock:
            return self._conn.execute(GET, (key,)).fetchone()

    def insert(self, key, kind, parent, body, spec=None, **job):
        """Insert a resource; return False (and change nothing) when the key already exists."""
        cols = list(RESOURCE_COLUMNS) + [c for c in JOB_COLUMNS if c in job]
        values = [key, kind, parent, json.dumps(body, separators=(',', ':')),
                  None if spec is None else json.dumps(spec)] + [job[c] for c in JOB_COLUMNS if c in job]
        sql = INSERT.format(columns=','.join(cols), marks=','.join('?' * len(cols)))
        with self._lock:
            return self._conn.execute(sql, values).rowcount == 1

    def update(self, key, mutate=None, **job):
        """Apply `mutate(body)` to a resource's body and set job columns, atomically; return the new body or None."""
        with self._lock:
            row = self._conn.execute(GET_BODY, (key,)).fetchone()
            if row is None:
                return None
            (stored,) = row
            body = json.loads(stored)
            if mutate is not None:
                mutate(body)
            assignments = ''.join(', {} = ?'.format(c) for c in JOB_COLUMNS if c in job)
            values = [json.dumps(body, separators=(',', ':'))] + [job[c] for c in JOB_COLUMNS if c in job] + [key]
            self._conn.execute(UPDATE.format(job_columns=assignments), values)
            return body

    def delete(self, key):
        """Delete one resource; True when it existed."""
        with self._lock:
            return self._conn.execute(DELETE, (key,)).rowcount == 1

    def delete_tree(self, key):
        """Delete a resource and everything below it."""
        with self._lock:
            self._conn.execute('BEGIN')
            try:
                self._conn.execute(DELETE_TREE, {'key': key, 'below': len(key) + 1, 'prefix': key + '/'})
                self._conn.execute('COMMIT')
            except sqlite3.Error:
                # A full disk fails the statement or the commit: roll back, or every later BEGIN would fail too.
                if self._conn.in_transaction:
                    self._conn.execute('ROLLBACK')
                raise

    def page(self, kind, parent, after_seq, limit):
        """Up to `limit` (seq, body-JSON) pairs of `kind` under `parent`, in creation order after `after_seq`."""
        with self._lock:
            rows = self._conn.execute(PAGE, (kind, parent, after_seq, limit)).fetchall()
        return [(seq, body) for seq, body in rows]

    def page_by_prefix(self, kind, prefix, after_seq, limit):
        """Like `page`, for every resource of `kind` whose key starts with `prefix` (e.g. a subscription)."""
        with self._lock:
            rows = self._conn.execute(PAGE_BY_PREFIX, (kind, len(prefix), prefix, after_seq, limit)).fetchall()
        return [(seq, body) for seq, body in rows]

    def all_by_prefix(self, kind, prefix):
        """(key, parent, body-JSON) of every resource of `kind` whose key starts with `prefix`."""
        with self._lock:
            rows = self._conn.execute(ALL_BY_PREFIX, (kind, len(prefix), prefix)).fetchall()
        return [(key, parent, body) for key, parent, body in rows]

    def scheduler_ids(self, parent):
        """{job name (lower case): its id at the scheduler} of the jobs under `parent` (an experiment's key) that a
        scheduler with ids of its own (Slurm) has taken."""
        with self._lock:
            rows = self._conn.execute(SCHEDULER_IDS, (parent,)).fetchall()
        return {key.rsplit('/', 1)[-1]: sched_id for key, sched_id in rows}

    def next_queued(self, cluster):
        """The job to start next on a cluster: highest priority first, then submission order."""
        with self._lock:
            return self._conn.execute(NEXT_QUEUED, (cluster,)).fetchone()

    def clusters_with_queue(self):
        """Keys of the clusters that have queued jobs."""
        with self._lock:
            rows = self._conn.execute(CLUSTERS_WITH_QUEUE).fetchall()
        return [cluster for (cluster,) in rows]

    def unsubmitted(self, limit, skip_clusters=()):
        """Queued jobs not yet handed to an external scheduler: highest priority first, then submission order (those
        of `skip_clusters` left out: clusters whose next job must wait)."""
        skip = sorted(skip_clusters)
        with self._lock:
            skipped = SKIP_CLUSTERS.format(marks=','.join('?' * len(skip))) if skip else ''
            return self._conn.execute(UNSUBMITTED.format(skip=skipped), (*skip, limit)).fetchall()

    def in_states(self, states, kind='job'):
        """Rows (key, state, pgid, marker, cluster, sched_id) of the resources (of `kind`, None: any) in `states`."""
        sql = IN_STATES.format(marks=','.join('?' * len(states)))
        args = list(states)
        if kind:
            sql += OF_KIND
            args.append(kind)
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def set_state_below(self, key, state):
        """Set the state column of a resource and of everything below it (e.g. 'deleting': unschedulable)."""
        with self._lock:
            self._conn.execute(SET_STATE_BELOW, {'state': state, 'key': key, 'below': len(key) + 1,
                                                 'prefix': key + '/'})
