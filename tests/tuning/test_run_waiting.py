"""`sweep run`'s and `--wait`'s progress say why queued jobs wait when the scheduler says it (issue 31 rule 3): after
the counts, when it changes, and again periodically while unchanged (without a terminal); a scheduler that says
nothing (local processes, Slurm) changes nothing. The e2e tests through az: tests/azurebatch/test_e2e_waiting.py."""
from types import SimpleNamespace

from azext_batchai_sweep.core.tuning.loop import SweepRun

NOTE = '2 queued jobs: waiting for the pool (next evaluation about 14:05 UTC)'


def _run(waiting, repeat, clock):
    """A SweepRun with only what its report of the waiting jobs reads (no service: the reader is given)."""
    run = SweepRun.__new__(SweepRun)
    lines = []
    run.progress, run.waiting, run.repeat_waiting, run.clock = lines.append, waiting, repeat, clock
    run._waiting_said = None  # pylint: disable=protected-access
    return run, lines


def _trials(*states):
    return [SimpleNamespace(name='j{}'.format(i), state=state) for i, state in enumerate(states)]


def test_the_waiting_note_is_said_when_it_changes_and_again_every_repeat_seconds():
    now = [0.0]
    said = [[NOTE]]
    asked = []

    def reader(rows):
        asked.append(rows)
        return said[0]
    run, lines = _run(reader, 30.0, lambda: now[0])
    trials = _trials('queued', 'queued', 'running')
    for t in (0, 5, 10):
        now[0] = t
        run._report_waiting(trials)  # pylint: disable=protected-access
    assert lines == [NOTE]  # unchanged: said once
    assert asked[0] == [{'name': 'j0', 'state': 'queued'}, {'name': 'j1', 'state': 'queued'},
                        {'name': 'j2', 'state': 'running'}]
    now[0] = 31
    run._report_waiting(trials)  # pylint: disable=protected-access
    assert lines == [NOTE, NOTE]  # periodically, while unchanged
    said[0] = ['1 queued job: waiting for a node of the pool']
    now[0] = 32
    run._report_waiting(trials)  # pylint: disable=protected-access
    assert lines[-1] == '1 queued job: waiting for a node of the pool'  # a change at once
    said[0] = []
    run._report_waiting(trials)  # pylint: disable=protected-access
    said[0] = ['1 queued job: waiting for a node of the pool']
    run._report_waiting(trials)  # pylint: disable=protected-access
    assert lines[-2:] == ['1 queued job: waiting for a node of the pool'] * 2  # waiting again after none: said


def test_at_a_terminal_only_a_change_is_said_and_a_silent_scheduler_says_nothing():
    now = [0.0]
    run, lines = _run(lambda rows: [NOTE], None, lambda: now[0])
    for t in (0, 100, 1000):
        now[0] = t
        run._report_waiting(_trials('queued'))  # pylint: disable=protected-access
    assert lines == [NOTE]
    silent, nothing = _run(lambda rows: [], 30.0, lambda: now[0])
    silent._report_waiting(_trials('queued'))  # pylint: disable=protected-access
    none, also_nothing = _run(None, 30.0, lambda: now[0])
    none._report_waiting(_trials('queued'))  # pylint: disable=protected-access
    assert nothing == [] and also_nothing == []


def test_the_wait_progress_line_says_why_queued_jobs_wait(caplog):
    from azext_batchai_sweep._output import Progress
    cmd = SimpleNamespace(cli_ctx=SimpleNamespace(get_progress_controller=None))  # stderr is no terminal here
    rows = [{'name': 'a', 'state': 'queued'}, {'name': 'b', 'state': 'succeeded'}]
    asked = []
    progress = Progress(cmd, 'Waiting for the jobs', period=1.0, clock=lambda: 0.0,
                        waiting=lambda given: asked.append(given) or [NOTE])
    with caplog.at_level('WARNING'):
        progress(1, 2, {'queued': 1, 'succeeded': 1}, rows)
    assert [r.getMessage() for r in caplog.records] == ['Waiting for the jobs: 1 of 2 finished (1 queued)', NOTE]
    assert asked == [rows]
    caplog.clear()
    later = Progress(cmd, 'Waiting for the jobs', period=1.0, clock=lambda: 0.0, waiting=asked.append)
    with caplog.at_level('WARNING'):
        later(2, 2, {'queued': 0, 'succeeded': 2}, rows)  # nothing queued: the service is not asked
    assert len(asked) == 1 and [r.getMessage() for r in caplog.records] == [
        'Waiting for the jobs: 2 of 2 finished']


def test_a_service_that_does_not_answer_the_view_ends_no_run(tmp_path):
    # A real client against a port nobody listens on: the note is unknown, the run and the wait go on.
    from azext_batchai_sweep.core.service.client import local_batchai_client
    from azext_batchai_sweep.core.service.scheduler_ids import waiting_reader
    token = tmp_path / 'token'
    token.write_text('t' * 32)
    client = local_batchai_client('http://127.0.0.1:9', str(token), retry_total=0)
    read = waiting_reader(client, 'g', 'w', 'e')
    assert read([{'name': 'a', 'state': 'queued'}]) == []
    assert read([{'name': 'a', 'state': 'running'}]) == []  # nothing queued: nothing asked


def test_a_silent_scheduler_is_asked_once_per_run(local_service, batchai_client, monkeypatch):
    """The view holds every job of the experiment: a scheduler that never says why a job waits (the local processes
    here) is asked once, not at every poll with a queued job (issue 44: a request and a pass over the sweep a poll)."""
    from azext_batchai_sweep.core.service import scheduler_ids
    asked = []
    view = scheduler_ids.scheduler_job_view
    monkeypatch.setattr(scheduler_ids, 'scheduler_job_view', lambda *args: asked.append(args) or view(*args))
    batchai_client.experiments.begin_create(local_service.resource_group, local_service.workspace, 'silent').result()
    read = scheduler_ids.waiting_reader(batchai_client, local_service.resource_group, local_service.workspace,
                                        'silent')
    for _ in range(5):
        assert read([{'name': 'a', 'state': 'queued'}, {'name': 'b', 'state': 'running'}]) == []
    assert len(asked) == 1


def test_a_scheduler_that_explains_is_asked_at_each_poll_with_a_queued_job(monkeypatch):
    from azext_batchai_sweep.core.service import scheduler_ids
    asked = []

    def view(*args):
        asked.append(args)
        return scheduler_ids.SchedulerMap({'a': {'name': 'a', 'waiting': 'waiting for a node of the pool'}},
                                          scheduler='azure-batch')
    monkeypatch.setattr(scheduler_ids, 'scheduler_job_view', view)
    read = scheduler_ids.waiting_reader(None, 'g', 'w', 'e')
    for _ in range(3):
        assert read([{'name': 'a', 'state': 'queued'}]) == ['1 queued job: waiting for a node of the pool']
    assert len(asked) == 3
