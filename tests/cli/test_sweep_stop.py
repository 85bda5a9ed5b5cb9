"""`az batchai sweep stop` (issue 10, rule 5): Batch AI's job terminate on the sweep's queued and running jobs, no
other sweep's; idempotent; `status` shows them terminated and `resubmit --state terminated` runs them again.

The session's service has 4 slots: the sweep's 5 jobs (sleeping) fill them and queue one, so both a running and a
queued job get stopped. Everything is stopped again at the end so that other tests get the slots back.
"""
import os
import time

import pytest

from tests.cli.test_sweep_identity import Target, read_plan, write_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

SLEEPER = 'echo "x={{X}}"; echo "warming up x={{X}}" >&2; sleep 600'  # stopped by the test: long enough for any load


@pytest.fixture
def target(local_service, tmp_path):
    return Target(local_service, str(tmp_path))


def started_job(target, names, timeout=60):
    """The name of a job of sweep s that has run far enough to write to both its stdout.txt and stderr.txt.

    Which of the jobs get a slot depends on the order of the parallel submit (one stays queued and never writes
    anything), and a job the service reports running may not have reached its first echo yet: the test waits for
    the output itself, not for a state that does not imply it.
    """
    deadline = time.monotonic() + timeout
    while True:
        running = target.run('status', 's', '--query', "jobs[?state=='running'].name", '-o', 'tsv').stdout.split()
        for name in sorted(set(running) & set(names)):
            tail = target.run('status', 's', '--job', name, '-o', 'tsv').stdout
            if 'x=' in tail and 'warming up' in tail:
                return name
        assert time.monotonic() < deadline, 'no job of the sweep wrote its output within {}s'.format(timeout)
        time.sleep(0.5)


def test_stop_terminates_the_sweep_and_nothing_else(target):
    svc = target.service
    write_sweep(target.directory, values=(1, 2, 3, 4), command=SLEEPER)
    write_sweep(target.directory, values=(9,), command=SLEEPER, name='other.yaml')
    for name, spec in (('other', 'other.yaml'), ('s', 'sweep.yaml')):
        made = target.run('submit', name, '--spec', spec, '-c', svc.cluster, '--query', 'submitted')
        assert made.exit_code == 0 and made.json() >= 1, made.stderr
    try:
        refused = target.run('stop', 's')  # no terminal to confirm on: nothing is stopped
        assert refused.exit_code != 0
        names = sorted(record['name'] for record in read_plan(os.path.join(target.directory, 's.plan.jsonl'))[1])
        # A job that ran and wrote its output, stopped first and by name (its outputs are checked below).
        first = started_job(target, names)
        rest = [name for name in names if name != first]
        # A name that is not the sweep's: an error before anything is stopped (`first` is stopped just below).
        unknown = target.run('stop', 's', '--jobs', first, 'no-such-job', '--yes')
        assert unknown.exit_code == 3 and 'no-such-job' in unknown.stderr, unknown.stderr

        one = target.run('stop', 's', '--jobs', first, '--yes', '-o', 'json')
        assert one.exit_code == 0, one.stderr
        assert one.json()['stopped'] == [first] and 'stopped 1 job(s)' in one.stderr

        stopped = target.run('stop', 's', '--yes', '-o', 'table')
        assert stopped.exit_code == 0, stopped.stderr
        rows = [line.split() for line in stopped.stdout.splitlines()[2:]]
        assert rows == [[name, 'stopped'] for name in rest]

        status = target.run('status', 's', '--query', 'counts')
        assert status.json()['terminated'] == 4, status.stdout
        # The other sweep's job is untouched.
        other = target.run('status', 'other', '--query', 'jobs[0].state', '-o', 'tsv')
        assert other.stdout.strip() in ('queued', 'running')

        # Idempotent: nothing running, exit code 0, says so.
        again = target.run('stop', 's', '--yes', '-o', 'json')
        assert again.exit_code == 0, again.stderr
        assert again.json()['stopped'] == [] and sorted(again.json()['notRunning']) == names
        assert 'nothing was queued or running' in again.stderr

        # A stopped job keeps its outputs, and says why it ended.
        tail = target.run('status', 's', '--job', first, '-o', 'tsv')
        assert tail.exit_code == 0, tail.stderr
        assert tail.stdout.splitlines()[0] == '==> stdout.txt <==' and 'warming up' in tail.stdout
        assert 'terminated with exit code' in tail.stderr and 'JobTerminated' in tail.stderr

        # Run two of them again under the same names, then stop them with --no-wait (no result printed).
        resubmitted = target.run('resubmit', 's', '--state', 'terminated', '--jobs', *names[:2], '--query',
                                 'resubmitted')
        assert resubmitted.exit_code == 0 and resubmitted.json() == names[:2], resubmitted.stderr
        counts = target.run('status', 's', '--query', 'counts').json()
        assert counts['terminated'] == 2 and counts['queued'] + counts['running'] == 2
        quick = target.run('stop', 's', '--yes', '--no-wait')
        assert quick.exit_code == 0 and quick.stdout == '' and 'stopped 2 job(s)' in quick.stderr
    finally:
        target.run('stop', 's', '--yes')
        target.run('stop', 'other', '--yes')
    done = target.run('status', 'other', '--query', 'jobs[0].state', '-o', 'tsv')
    assert done.stdout.strip() == 'terminated'
