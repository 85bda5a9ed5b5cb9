"""pool_watch.py: why a queued job waits (next autoscale evaluation, a pool that cannot grow), and the pools
recorded in the data dir for `local status`/`stop` when the service is not running; states.cannot_grow with
nodes whose start task failed."""
import datetime

from azext_batchai_sweep._local_azure_batch import cloud_shell_notes
from azext_batchai_sweep.localservice.schedulers.azurebatch import pool_watch, states

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 11, 26, 10, 1, tzinfo=UTC)


def _autoscale(timestamp='2026-11-26T10:00:00Z', interval='PT5M', **extra):
    return dict({'id': 'p', 'enableAutoScale': True, 'autoScaleEvaluationInterval': interval,
                 'autoScaleRun': {'timestamp': timestamp}, 'allocationState': 'steady'}, **extra)


def test_a_job_on_an_autoscale_pool_waits_for_its_next_evaluation():
    assert pool_watch.waiting_note(_autoscale(), now=NOW) == 'waiting for the pool (next evaluation about 10:05 UTC)'
    assert pool_watch.waiting_note(_autoscale(interval='PT15M'), now=NOW) == (
        'waiting for the pool (next evaluation about 10:15 UTC)')
    late = datetime.datetime(2026, 11, 26, 10, 7, tzinfo=UTC)  # Batch evaluates late: never a time in the past
    assert pool_watch.waiting_note(_autoscale(), now=late) == 'waiting for the pool (next evaluation due now)'


def test_other_waits_say_why():
    assert pool_watch.waiting_note({'id': 'p', 'enableAutoScale': False}, now=NOW) == 'waiting for a node of the pool'
    assert pool_watch.waiting_note(None) == 'waiting for its pool to be read'
    quota = _autoscale(resizeErrors=[{'code': 'AccountCoreQuotaReached', 'message': 'Quota reached.'}])
    assert 'cannot grow (AccountCoreQuotaReached)' in pool_watch.waiting_note(quota, now=NOW)
    failing = _autoscale(autoScaleRun={'timestamp': '2026-11-26T10:00:00Z',
                                       'error': {'code': 'InvalidFormula', 'message': 'bad'}})
    assert 'cannot grow (InvalidFormula)' in pool_watch.waiting_note(failing, now=NOW)


def test_a_pool_whose_every_node_failed_its_start_task_cannot_run_a_job():
    failed = {'id': 'n1', 'state': 'starttaskfailed',
              'startTaskInfo': {'exitCode': 3, 'failureInfo': {'code': 'FailureExitCode', 'message': 'exit 3'}}}
    idle = {'id': 'n2', 'state': 'idle'}
    pool = {'id': 'p', 'allocationState': 'steady'}
    assert states.cannot_grow(pool, [failed])['code'] == 'SetupTaskFailed'
    assert states.cannot_grow(pool, [failed, dict(failed, id='n3')])['code'] == 'SetupTaskFailed'
    assert states.cannot_grow(pool, [failed, idle]) is None  # one usable node: the job runs there
    assert states.cannot_grow(pool, []) is None and states.cannot_grow(pool) is None
    assert 'cannot grow (SetupTaskFailed)' in pool_watch.waiting_note(pool, [failed])


def test_the_pools_record_round_trips_and_a_missing_one_is_none(tmp_path):
    assert pool_watch.read_last_pools(str(tmp_path)) is None
    row = pool_watch.pool_row('sub/rg/ws/clusters/c1', _autoscale(currentDedicatedNodes=2,
                                                                  currentLowPriorityNodes=1), now=NOW)
    assert row == {'cluster': 'c1', 'workspace': 'ws', 'resourceGroup': 'rg', 'pool': 'p', 'nodes': 3,
                   'allocationState': 'steady', 'nextEvaluation': 'about 10:05 UTC'}
    pool_watch.write_last_pools(str(tmp_path), [row], now=NOW)
    assert pool_watch.read_last_pools(str(tmp_path)) == {'readAt': '2026-11-26T10:01:00Z', 'pools': [row]}
    (tmp_path / pool_watch.LAST_POOLS).write_text('not json')
    assert pool_watch.read_last_pools(str(tmp_path)) is None


def test_cloud_shell_notes_say_whether_the_data_dir_outlives_the_session(tmp_path, monkeypatch):
    """A session with a storage account mounts its share as ~/clouddrive and keeps $HOME (Microsoft's "Persist files
    in Azure Cloud Shell"): a data dir under home outlives the session, one outside does not."""
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    (tmp_path / 'home' / 'clouddrive').mkdir(parents=True)
    inside = cloud_shell_notes(str(tmp_path / 'home' / '.azure' / 'local'))
    assert 'drain to zero nodes by themselves' in inside[0] and 'under your persisted home' in inside[1]
    outside = cloud_shell_notes(str(tmp_path / 'elsewhere'), 'lab')
    assert 'lost with the session' in outside[1] and 'Give --data-dir under' in outside[1]
    assert "starts_with(id, 'lab-')" in outside[1] and 'az batch pool delete --pool-id POOL' in outside[1]


def test_before_the_first_autoscale_run_the_note_gives_the_evaluation():
    """Issue 48 item 5 (fails on the old code: 'waiting for a node of the pool'). Recorded: a pool right after
    enable autoscale has no autoScaleRun (tests/azurebatch/recorded/gpu_pools)."""
    from tests.azurebatch.gpu_recorded import recorded
    pool = recorded('pool list right after enable autoscale (no autoScaleRun yet)')['response']['value'][0]
    assert pool_watch.waiting_note(pool, now=NOW) == 'waiting for the pool (next evaluation due now)'
    assert pool_watch.pool_row('sub/rg/ws/clusters/c1', pool, now=NOW)['nextEvaluation'] == 'due now'


def test_a_partial_pool_says_it_waits_for_a_node_not_that_it_cannot_grow():
    """Issue 48 item 2: a steady pool keeping a resize error with a usable node runs its queue."""
    from tests.azurebatch.gpu_recorded import recorded
    pool = dict(recorded('pool get after a stopped resize')['response'], currentDedicatedNodes=1,
                targetDedicatedNodes=4)
    running = [{'id': 'n1', 'state': 'running'}]
    assert pool_watch.waiting_note(pool, running, now=NOW) == 'waiting for a node of the pool'
    assert 'cannot grow (ResizeStopped)' in pool_watch.waiting_note(pool, running, now=NOW, needed=2)
    assert 'cannot grow (ResizeStopped)' in pool_watch.waiting_note(dict(pool, currentDedicatedNodes=0), now=NOW)




def test_an_ephemeral_cloud_shell_is_said_and_nothing_said_to_outlive_it(tmp_path, monkeypatch):
    """Cloud Shell without a storage account (no ~/clouddrive): even a data dir under home is lost with the session;
    the notes say so, and name the commands that delete what stays at Batch."""
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    (tmp_path / 'home').mkdir()
    notes = cloud_shell_notes(str(tmp_path / 'home' / '.azure' / 'local'), 'ci')
    assert 'no storage account (an ephemeral session' in notes[1]
    assert not any('outlives the session.' in n and 'persisted home' in n for n in notes)
    assert 'az batchai cluster delete -n CLUSTER -g batchai-local -w local -y' in notes[1]
    assert "starts_with(id, 'ci-')" in notes[1] and 'az batch job delete --job-id JOB' in notes[1]
