"""`sweep run`'s poll at scale (issue 44, item 1): what one poll reads and writes follows the active jobs, not
the finished ones. Counted, never timed, on the session's local service (real HTTP, every request and answer
checked against Batch AI's spec by the client's SpecCheckPolicy), with the controller in this process so that each
poll can be counted apart:

- the jobs a poll reads from the service (a whole listing read every job of the experiment at every poll);
- the status rows it builds, and the bytes it writes to the run's journal (the journal was rewritten whole at every
  poll, a row per job);
- and a job deleted from outside among the finished ones is still seen gone (at the next whole listing: it is run
  again, as when every poll listed the sweep), the run ends only after a whole listing, with every job once, and
  what a re-run reads from the journal (its changes applied) is what the run held.

The rule's share (a GET per active job once the finished jobs outnumber the active ones LISTED_JOBS_PER_GET to one)
is lowered to 2 so that a sweep of tens of jobs shows it; the mechanism is the same at 10,000.
"""
import os
import time
import uuid

import pytest

from azext_batchai_sweep.core.service import listing
from azext_batchai_sweep.core.service.retry import RetrySettings
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file
from azext_batchai_sweep.core.tuning import loop
from azext_batchai_sweep.core.tuning.controller import Controller

pytestmark = [pytest.mark.service]

LONG = (1000, 1001)  # the two jobs that keep running while the measured polls are made
# Quick jobs print one report; the long ones one report, then wait until the test has measured its polls (the file
# `done` appears; at most a minute) with builtins alone (`read -t`: no process to leave behind). A fixed wait ran out
# on a loaded machine before the test saw both running.
COMMAND = ('q={{{{Q}}}}; echo epoch=1 acc=$q; if [ $q -ge 1000 ]; then exec 3<> <(:); i=0; '
           'while [ ! -e {done} ] && [ $i -lt 600 ]; do read -t 0.1 -u 3; i=$((i+1)); done; fi')


def sweep_file(directory, finished):
    values = list(range(finished)) + list(LONG)
    text = '\n'.join([
        'jobNamePrefix: pc',
        'objective: {metric: acc, goal: max, step: epoch}',
        'sampling: {type: grid}',
        'limits: {maxConcurrentJobs: 4}',
        'parameters:',
        '  - {{name: Q, type: discrete, values: {}}}'.format(values),
        'job:',
        '  nodeCount: 1',
        '  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs',
        '  customToolkitSettings: {{commandLine: "{}"}}'.format(
            COMMAND.format(done=done_file(directory, finished))),
    ])
    path = os.path.join(directory, 'pc-{}.yaml'.format(finished))
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text + '\n')
    return path


def done_file(directory, finished):
    """The file that lets the long jobs of the sweep of `finished` quick jobs end."""
    return os.path.join(directory, 'pc-{}.done'.format(finished))


class Counts:
    """Jobs read from the service (ListedJobs made: a listing's or a GET's), status rows built, trials placed in
    index order (the key of their order computed) and passes of the rules' view over every trial."""

    def __init__(self, monkeypatch):
        self.jobs = self.rows = self.ordered = self.views = 0
        made, row, order = listing.ListedJob.__init__, loop.tuning_row, loop._trial_order
        view = Controller.as_seen_by_policies

        def counted_order(trial):
            self.ordered += 1
            return order(trial)

        def counted_view(controller, trials):
            self.views += 1
            return view(controller, trials)
        monkeypatch.setattr(loop, '_trial_order', counted_order)
        monkeypatch.setattr(Controller, 'as_seen_by_policies', counted_view)

        def counted_job(job, *args, **kwargs):
            self.jobs += 1
            made(job, *args, **kwargs)

        def counted_row(*args, **kwargs):
            self.rows += 1
            return row(*args, **kwargs)
        monkeypatch.setattr(listing.ListedJob, '__init__', counted_job)
        monkeypatch.setattr(loop, 'tuning_row', counted_row)


def journal_bytes_written(path, before):
    """The bytes a save wrote: the file's size when it was replaced (another inode), else what it grew by."""
    stat = os.stat(path)
    if before is None or stat.st_ino != before.st_ino:
        return stat.st_size, stat
    return stat.st_size - before.st_size, stat


def measured_polls(service, client, directory, finished, counts, polls=3):
    """[(jobs read, rows built, journal bytes written, trials ordered, passes of the rules' view)] of `polls` polls
    made once `finished` jobs have finished and been read, with the two long jobs running; returns them with the run
    and its experiment."""
    experiment = 'pc-' + uuid.uuid4().hex[:8]
    client.experiments.begin_create(service.resource_group, service.workspace, experiment).result()
    definition = load_sweep_file(sweep_file(directory, finished), cluster_id=service.cluster_id, adaptive=True)
    journal = os.path.join(directory, '{}.run.json'.format(experiment))
    run = loop.SweepRun(client, service.resource_group, service.workspace, experiment, 'pc', definition,
                        journal_path=journal, retry=RetrySettings(), parallel=4)
    deadline = time.monotonic() + 240
    while True:
        assert run.poll() is None
        done = [t for t in run.trials if t.state == 'succeeded' and t.reports]
        running = [t for t in run.trials if t.state == 'running' and t.reports]
        if len(done) == finished and len(running) == len(LONG):
            break
        assert time.monotonic() < deadline, [(t.name, t.state) for t in run.trials]
        time.sleep(0.2)
    figures = []
    _, stat = journal_bytes_written(journal, None)
    for _ in range(polls):
        jobs, rows, ordered, views = counts.jobs, counts.rows, counts.ordered, counts.views
        assert run.poll() is None
        written, stat = journal_bytes_written(journal, stat)
        figures.append((counts.jobs - jobs, counts.rows - rows, written, counts.ordered - ordered,
                        counts.views - views))
    with open(done_file(directory, finished), 'w', encoding='utf-8'):
        pass  # measured: the long jobs may end
    return figures, run, experiment


def test_a_poll_reads_and_writes_what_is_active_not_every_finished_job(local_service, batchai_client, tmp_path,
                                                                       monkeypatch):
    monkeypatch.setattr(loop, 'LISTED_JOBS_PER_GET', 2, raising=False)
    counts = Counts(monkeypatch)
    per_size = {}
    for finished in (10, 40):
        figures, run, experiment = measured_polls(local_service, batchai_client, str(tmp_path), finished, counts)
        per_size[finished] = figures
    small, large = per_size[10], per_size[40]
    # One GET per running job, whatever the finished jobs (a listing read all 12, then all 42, at every poll).
    assert [f[0] for f in small] == [f[0] for f in large] == [len(LONG)] * 3
    # The rows of the jobs that changed: the running ones (every row was built again at every poll).
    assert all(f[1] <= len(LONG) for f in small + large)
    # The journal's bytes: what changed (the running jobs' rows), the same at 4 times the finished jobs (the
    # whole journal was rewritten: its size grows with every finished job's row and log entry).
    assert max(f[2] for f in large) <= max(f[2] for f in small) + 64, (small, large)
    assert max(f[2] for f in large) < os.path.getsize(run.journal.path) / 4
    # The trials are kept in index order by putting the changed ones in their places (every job was sorted at every
    # poll), and the rules' view of every trial is built twice a poll: the controller's step and the journal's save,
    # which the sampler's explanations on stderr share (it was built five times).
    assert all(f[3] == 0 for f in small + large), (small, large)
    assert all(f[4] <= 2 for f in small + large), (small, large)

    # A finished job deleted from outside is seen gone at the next whole listing, and handled as a listing at
    # every poll handled it: the sampler runs it again.
    from azext_batchai_sweep.core.service.delete import delete_job
    gone = next(t.name for t in run.trials if t.state == 'succeeded')
    attempt = loop.attempt_of(run.jobs[gone])
    delete_job(batchai_client, local_service.resource_group, local_service.workspace, experiment, gone,
               retry=RetrySettings(), wait=True, interval=0.2)
    for _ in range(loop.FULL_LISTING_MIN_POLLS + 2):
        run.poll()
        if gone not in run.jobs or loop.attempt_of(run.jobs[gone]) != attempt:
            break
    assert gone not in run.jobs or loop.attempt_of(run.jobs[gone]) != attempt

    # What a re-run reads from the journal (its first line and every change appended after it) is what the
    # run holds.
    from azext_batchai_sweep.core.tuning.journal import read_journal
    run.journal.save()
    held = read_journal(run.journal.path)
    assert held['rows'] == run.journal.data['rows'] and held['complete'] == run.journal.data['complete']
    assert set(held['rows']) == {t.name for t in run.trials}

    # The run ends (after a whole listing), every job once: the finished ones, the deleted one again, the long.
    deadline = time.monotonic() + 120
    result = None
    while result is None:
        assert time.monotonic() < deadline
        time.sleep(0.3)
        result = run.poll()
    assert run._last_full  # pylint: disable=protected-access
    assert result['ended'] == 'exhausted' and result['counts'] == {'succeeded': 40 + len(LONG)}, result
    on_service = [job.name for job in listing.list_jobs(batchai_client, local_service.resource_group,
                                                        local_service.workspace, experiment)]
    assert len(on_service) == len(set(on_service)) == 40 + len(LONG)
