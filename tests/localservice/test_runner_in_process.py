"""The processes scheduler's Runner run in the test's own process: a real LocalService (data dir, SQLite store, HTTP
listeners) started here, driven by the real SDK client over loopback, its jobs real bash process groups.

The other tests of the runner drive the service in a process of its own; these run the same code in this one, so
that `make mutate` (mutmut sees only the calls made in the test's process) can tell which of them check each part of
runner.py. Each test asserts what a user sees: a job's state, exit code and errors, its files and environment, what
happens to its processes."""
import json
import os
import signal
import subprocess
import time
import traceback
import uuid

import pytest
from azure.core.exceptions import HttpResponseError
from azure.mgmt.batchai import models

from azext_batchai_sweep.core.service.client import local_batchai_client
from azext_batchai_sweep.localservice.data.store import resource_key
from azext_batchai_sweep.localservice.schedulers.jobenv import MARKER_VARIABLE
from azext_batchai_sweep.localservice.schedulers.processes import runner as runner_module
from azext_batchai_sweep.localservice.server import LocalService
from tests.fixtures_service import ServiceInfo
from tests.localservice.conftest import job_outputs, job_params, job_pids, process_alive, wait_state

pytestmark = pytest.mark.service

SHARE_KEY = 'not-a-real-key'  # the file share's account key in job_params: never in a job's environment
# Every job here ends by itself within about 20 s (bounded waits, no endless loop), and each service's teardown
# kills what its jobs left (_kill_leftovers): under `make mutate` a mutant of the runner may never stop a job.


class InProcess:
    """A LocalService started in this process: `info` as the fixtures' ServiceInfo, `client` the SDK's."""

    def __init__(self, data_dir, **options):
        self.service = LocalService(data_dir, **options)
        info = self.service.start()
        self.info = ServiceInfo(endpoint=info['endpoint'], files_endpoint=info['filesEndpoint'],
                                token_file=info['tokenFile'], data_dir=info['dataDir'],
                                subscription=info['subscriptionId'], resource_group=info['resourceGroup'],
                                workspace=info['workspace'], cluster=info['cluster'], pid=os.getpid(),
                                blob_endpoint=info['blobEndpoint'])
        self.described = info
        self.client = local_batchai_client(self.info.endpoint, self.info.token_file, self.info.subscription)
        self.experiment = 'runner-' + uuid.uuid4().hex[:6]
        self.client.experiments.begin_create(self.info.resource_group, self.info.workspace, self.experiment).result()

    def shutdown(self):
        try:
            self.service.shutdown()
        finally:
            _kill_leftovers(self.info.data_dir)

    @property
    def runner(self):
        return self.service.runner

    def cluster(self, name, nodes, vm_size='LOCAL'):
        """A new manual cluster of `nodes` slots: its id."""
        return self.client.clusters.begin_create(
            self.info.resource_group, self.info.workspace, name, models.ClusterCreateParameters(
                vm_size=vm_size, user_account_settings=models.UserAccountSettings(admin_user_name='me'),
                scale_settings=models.ScaleSettings(manual=models.ManualScaleSettings(
                    target_node_count=nodes)))).result().id

    def submit(self, name, command='true', **kwargs):
        self.client.jobs.begin_create(self.info.resource_group, self.info.workspace, self.experiment, name,
                                      job_params(self.info, command, **kwargs), polling=False)

    def submit_params(self, name, params):
        self.client.jobs.begin_create(self.info.resource_group, self.info.workspace, self.experiment, name, params,
                                      polling=False)

    def wait(self, name, states=('succeeded', 'failed'), timeout=30):
        return wait_state(self.client, self.info, self.experiment, name, states, timeout)

    def get(self, name):
        return self.client.jobs.get(self.info.resource_group, self.info.workspace, self.experiment, name)

    def cluster_key(self, name):
        return resource_key(self.info.subscription, self.info.resource_group, self.info.workspace, 'clusters', name)

    def key(self, name):
        return resource_key(self.info.subscription, self.info.resource_group, self.info.workspace, 'experiments',
                            self.experiment, 'jobs', name)

    def outputs(self, name):
        """{file name: text} of the job's stdouterr folder, through its download links."""
        return job_outputs(self.client, self.info, self.experiment, name)


def _until(path):
    """A bash loop waiting for `path` to exist, for about 20 s at most."""
    return 'for i in $(seq 400); do [ -e {} ] && break; sleep 0.05; done'.format(path)


def _kill_leftovers(data_dir):
    """SIGKILL each process whose environment names `data_dir` (a job of that service: its variables hold its
    folders there), by its own pid: this test's code, never the runner's, so that a mutant cannot aim it."""
    needle = os.path.realpath(data_dir).encode()
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/{}/environ'.format(pid), 'rb') as f:
                if needle in f.read():
                    os.kill(int(pid), signal.SIGKILL)
        except OSError:
            continue


@pytest.fixture
def service(tmp_path):
    started = InProcess(str(tmp_path / 'data'), slots=3)
    yield started
    started.shutdown()


def _errors(job):
    return [(e.code, e.message) for e in job.execution_info.errors or []]


def _wait_for(check, what, timeout=10):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _gone(pid, timeout=5):
    _wait_for(lambda: not process_alive(pid), 'process {} outlived its job'.format(pid), timeout)


# ---- one job's run ----------------------------------------------------------------------------------------------

def test_a_job_that_exits_0_succeeds_with_its_output_in_its_stdouterr_folder(service, caplog):
    caplog.set_level('INFO', logger=runner_module.__name__)
    service.submit('ok', 'echo out; echo err >&2')
    job = service.wait('ok')
    _wait_for(lambda: any('succeeded' in r.getMessage() for r in caplog.records), 'no log of the end')
    assert [r.getMessage() for r in caplog.records if r.name == runner_module.__name__] == [
        'job {} succeeded (exit code 0)'.format(service.key('ok'))]
    assert service.service.store.get(service.key('ok'))['pgid'] is None, 'an ended job holds no process group'
    assert job.execution_state == 'succeeded'
    assert job.execution_info.exit_code == 0 and _errors(job) == []
    assert job.execution_info.start_time <= job.execution_info.end_time
    assert service.outputs('ok') == {'stdout.txt': 'out\n', 'stderr.txt': 'err\n'}
    assert not service.runner.is_running(service.key('ok'))
    assert service.runner.used_slots(service.cluster_key(service.info.cluster)) == 0


@pytest.mark.parametrize('code', [1, 7, 255])
def test_a_job_that_exits_non_zero_fails_with_that_exit_code_and_no_error(service, code):
    service.submit('bad', 'echo before; exit {}'.format(code))
    job = service.wait('bad')
    assert job.execution_state == 'failed'
    assert job.execution_info.exit_code == code and _errors(job) == []
    assert service.outputs('bad')['stdout.txt'] == 'before\n'


def test_a_job_killed_by_a_signal_fails_with_the_signals_negative_code(service):
    service.submit('signalled', 'kill -9 $$')
    job = service.wait('signalled')
    assert job.execution_state == 'failed' and job.execution_info.exit_code == -9


def test_the_job_runs_in_its_temp_folder_and_its_output_is_appended_not_replaced(service, tmp_path):
    where = tmp_path / 'cwd'
    service.submit('cwd', 'pwd > {}; echo "$AZ_BATCHAI_JOB_TEMP" >> {}'.format(where, where))
    assert service.wait('cwd').execution_state == 'succeeded'
    cwd, temp = where.read_text().split('\n')[:2]
    assert os.path.realpath(cwd) == os.path.realpath(temp) and os.path.isdir(temp)


def test_a_job_reads_nothing_on_its_stdin_even_when_the_services_stdin_has_data(service):
    """The service's fd 0 here is a pipe holding a line (as `... | az batchai local start` would give it; pytest
    leaves /dev/null there, which a job inheriting it could not tell from its own /dev/null)."""
    read_end, write_end = os.pipe()
    os.write(write_end, b'the service input\n')
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        service.submit('stdin', 'read line; echo "read: $? [$line]"')
        job = service.wait('stdin')
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)
    assert job.execution_state == 'succeeded'
    assert service.outputs('stdin')['stdout.txt'] == 'read: 1 []\n', 'stdin is /dev/null: read hits its end'


# ---- job preparation ---------------------------------------------------------------------------------------------

def test_job_preparation_runs_first_in_the_jobs_environment_with_its_own_files(service, tmp_path):
    marker = tmp_path / 'prepared'
    service.submit('prep', 'echo main saw $(cat {})'.format(marker),
                   job_preparation=models.JobPreparation(
                       command_line='echo prep $AZ_BATCHAI_JOB_NAME; echo note >&2; echo yes > {}'.format(marker)))
    job = service.wait('prep')
    assert job.execution_state == 'succeeded' and job.execution_info.exit_code == 0 and _errors(job) == []
    assert service.outputs('prep') == {'stdout-job_prep.txt': 'prep prep\n', 'stderr-job_prep.txt': 'note\n',
                                       'stdout.txt': 'main saw yes\n', 'stderr.txt': ''}


@pytest.mark.parametrize('code', [1, 3])
def test_a_failing_job_preparation_fails_the_job_and_its_command_never_runs(service, tmp_path, code):
    ran = tmp_path / 'ran'
    service.submit('prep-fails', 'touch {}'.format(ran),
                   job_preparation=models.JobPreparation(command_line='echo preparing; exit {}'.format(code)))
    job = service.wait('prep-fails')
    assert job.execution_state == 'failed' and job.execution_info.exit_code == code
    assert _errors(job) == [('JobPreparationFailed', 'jobPreparation.commandLine exited with {}.'.format(code))]
    assert not ran.exists(), "the job's command ran after its preparation failed"
    assert service.outputs('prep-fails')['stdout-job_prep.txt'] == 'preparing\n'


def test_a_failing_command_after_a_good_preparation_is_no_preparation_failure(service):
    service.submit('main-fails', 'exit 4', job_preparation=models.JobPreparation(command_line='true'))
    job = service.wait('main-fails')
    assert job.execution_state == 'failed' and job.execution_info.exit_code == 4 and _errors(job) == []


def test_a_job_preparation_past_the_wall_clock_fails_the_job_on_the_wall_clock_only(service, tmp_path):
    ran = tmp_path / 'ran'
    service.submit('prep-slow', 'touch {}'.format(ran), job_preparation=models.JobPreparation(command_line='sleep 30'),
                   constraints=models.JobBasePropertiesConstraints(max_wall_clock_time='PT0.5S'))
    job = service.wait('prep-slow', timeout=10)
    assert job.execution_state == 'failed'
    assert [code for code, _ in _errors(job)] == ['MaxWallClockTimeExceeded']
    assert not ran.exists()


# ---- the job's environment ---------------------------------------------------------------------------------------

def _environment(path):
    with open(path, 'rb') as f:
        return dict(entry.split(b'=', 1) for entry in f.read().split(b'\0') if entry)


def test_a_job_gets_batchai_variables_its_own_and_its_secrets_but_no_service_secret(service, tmp_path):
    dump = tmp_path / 'env'
    service.submit('env', 'env -0 > {}'.format(dump),
                   environment_variables=[models.EnvironmentVariable(name='MINE', value='plain')],
                   secrets=[models.EnvironmentVariableWithSecretValue(name='TOKEN', value='job-secret')])
    assert service.wait('env').execution_state == 'succeeded'
    env = _environment(dump)
    assert env[b'AZ_BATCHAI_JOB_NAME'] == b'env'
    assert env[b'AZ_BATCHAI_NUM_GPUS'] == b'0', 'no GPU managed: none per node'
    assert b'CUDA_VISIBLE_DEVICES' not in env or env[b'CUDA_VISIBLE_DEVICES'] == os.environb.get(
        b'CUDA_VISIBLE_DEVICES'), 'GPUs not managed: no devices chosen for the job'
    assert env[b'MINE'] == b'plain' and env[b'TOKEN'] == b'job-secret'
    # crash recovery finds the job's processes by this marker: the one stored for the job
    assert env[MARKER_VARIABLE.encode()].decode() == service.service.store.get(service.key('env'))['marker']
    with open(service.info.token_file, 'rb') as f:
        token = f.read().strip()
    blob = b'\0'.join(k + b'=' + v for k, v in env.items())
    for secret in (SHARE_KEY.encode(), token, service.service.secrets.storage_key.encode()):
        assert secret not in blob, 'a secret of the service or of a share reached the job'


def test_the_job_preparation_gets_the_same_environment_as_the_job(service, tmp_path):
    prep_dump, main_dump = tmp_path / 'prep-env', tmp_path / 'main-env'
    service.submit('envs', 'env -0 > {}'.format(main_dump),
                   environment_variables=[models.EnvironmentVariable(name='MINE', value='plain')],
                   job_preparation=models.JobPreparation(command_line='env -0 > {}'.format(prep_dump)))
    assert service.wait('envs').execution_state == 'succeeded'
    prep, main = _environment(prep_dump), _environment(main_dump)
    for name in (b'AZ_BATCHAI_JOB_NAME', b'MINE', b'AZ_BATCHAI_NUM_GPUS', MARKER_VARIABLE.encode()):
        assert prep[name] == main[name]


def test_container_settings_are_said_ignored_in_the_jobs_stderr_and_the_log(service, caplog):
    caplog.set_level('INFO', logger=runner_module.__name__)
    service.submit('container', 'echo ran', container_settings=models.ContainerSettings(
        image_source_registry=models.ImageSourceRegistry(image='ubuntu:16.04')))
    job = service.wait('container')
    assert ("job {}: batchai-local: containerSettings ignored (image 'ubuntu:16.04'): no container engine, the job "
            'runs on the host.'.format(service.key('container'))) in [r.getMessage() for r in caplog.records]
    assert job.execution_state == 'succeeded'
    texts = service.outputs('container')
    assert texts['stdout.txt'] == 'ran\n'
    assert texts['stderr.txt'] == ("batchai-local: containerSettings ignored (image 'ubuntu:16.04'): no container "
                                   'engine, the job runs on the host.\n')


def test_a_job_without_container_settings_has_an_empty_stderr(service):
    service.submit('plain', 'echo ran')
    service.wait('plain')
    assert service.outputs('plain')['stderr.txt'] == ''


# ---- stopping a job ----------------------------------------------------------------------------------------------

def test_terminate_fails_a_running_job_and_kills_its_whole_process_group(service, tmp_path, caplog):
    caplog.set_level('INFO', logger=runner_module.__name__)
    pid_file = tmp_path / 'child.pid'
    service.submit('long', 'sleep 20 & echo $! > {}; wait'.format(pid_file))
    service.wait('long', ('running',))
    (child,) = job_pids(pid_file)
    _wait_for(lambda: service.service.store.get(service.key('long'))['pgid'] == os.getpgid(child),
              "the job's process group is not recorded")
    service.client.jobs.begin_terminate(service.info.resource_group, service.info.workspace, service.experiment,
                                        'long').result()
    job = service.get('long')
    assert job.execution_state == 'failed'
    assert _errors(job) == [('JobTerminated', 'The job was terminated by the user.')]
    _wait_for(lambda: any('terminated' in r.getMessage() for r in caplog.records), 'no log of the end')
    assert 'job {} failed (exit code -15, terminated)'.format(service.key('long')) in [
        r.getMessage() for r in caplog.records]
    _gone(child)
    assert not service.runner.kill(service.key('long'), 'terminated'), 'a job that ended is no longer running'


def test_a_job_that_ignores_sigterm_is_killed_after_the_grace_period(service, tmp_path):
    """SIGTERM first (a job may clean up), SIGKILL once KILL_GRACE_SECONDS have passed."""
    pid_file, got = tmp_path / 'pid', tmp_path / 'got'
    # A loop of builtins: a `$(seq ...)` would fork a subshell without the trap, which a SIGTERM sent just after the
    # pid is written kills, leaving the loop empty and the job ended before the grace (seen on a loaded machine).
    service.submit('stubborn', "trap 'echo TERM >> {}' TERM; echo $$ > {}; i=0; "
                   "while [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done".format(got, pid_file))
    service.wait('stubborn', ('running',))
    (pid,) = job_pids(pid_file)
    started = time.monotonic()
    assert service.runner.kill(service.key('stubborn'), 'terminated', state='terminating')
    assert service.get('stubborn').execution_state == 'terminating'
    job = service.wait('stubborn', timeout=15)
    assert time.monotonic() - started >= runner_module.KILL_GRACE_SECONDS - 0.2
    assert job.execution_state == 'failed' and job.execution_info.exit_code == -9
    assert [code for code, _ in _errors(job)] == ['JobTerminated']
    assert got.read_text().startswith('TERM\n'), 'the job was sent SIGTERM first'
    _gone(pid)


def _stop_while_started(service, monkeypatch, name, pid_file):
    """Have job `name` terminated while its process is being started: its command already runs (it wrote its pid),
    Popen has not returned to the runner yet. The moment of the stop (monotonic) is appended to the list returned."""
    real_popen, stopped = subprocess.Popen, []

    def started_then_stopped(args, **kwargs):
        proc = real_popen(args, **kwargs)
        if not stopped and list(args[:2]) == ['bash', '-c'] and str(pid_file) in args[2]:
            job_pids(pid_file)
            stopped.append(time.monotonic())
            assert service.runner.kill(service.key(name), 'terminated', state='terminating')
        return proc
    monkeypatch.setattr(subprocess, 'Popen', started_then_stopped)
    return stopped


def test_a_job_stopped_while_its_process_starts_gets_sigterm_then_the_grace(service, tmp_path, monkeypatch):
    """A stop that lands between the process's start and the runner learning its pid (seen on a loaded machine,
    where it was a SIGKILL at once): the job gets the SIGTERM it would have got a moment later, SIGKILL only after
    the grace."""
    pid_file, got = tmp_path / 'pid', tmp_path / 'got'
    stopped = _stop_while_started(service, monkeypatch, 'stubborn', pid_file)
    service.submit('stubborn', "trap 'echo TERM >> {}' TERM; echo $$ > {}; i=0; "
                   "while [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done".format(got, pid_file))
    job = service.wait('stubborn', timeout=15)
    assert stopped and time.monotonic() - stopped[0] >= runner_module.KILL_GRACE_SECONDS - 0.2
    assert job.execution_state == 'failed' and job.execution_info.exit_code == -9
    assert [code for code, _ in _errors(job)] == ['JobTerminated']
    assert got.read_text().startswith('TERM\n'), 'the job was sent SIGTERM first'


def test_a_job_stopped_while_its_process_starts_may_end_by_its_sigterm(service, tmp_path, monkeypatch):
    """The same stop on a job that does not trap SIGTERM: it ends by that signal (-15), not by a SIGKILL."""
    pid_file = tmp_path / 'pid'
    stopped = _stop_while_started(service, monkeypatch, 'plain', pid_file)
    service.submit('plain', 'echo $$ > {}; sleep 20'.format(pid_file))
    job = service.wait('plain', timeout=15)
    assert stopped
    assert job.execution_state == 'failed' and job.execution_info.exit_code == -15
    assert [code for code, _ in _errors(job)] == ['JobTerminated']


def test_the_wall_clock_fails_a_job_and_a_job_within_it_succeeds(service):
    service.submit('slow', 'sleep 30', constraints=models.JobBasePropertiesConstraints(max_wall_clock_time='PT0.5S'))
    service.submit('quick', 'sleep 0.2', constraints=models.JobBasePropertiesConstraints(max_wall_clock_time='PT20S'))
    started = time.monotonic()
    slow = service.wait('slow', timeout=10)
    assert time.monotonic() - started < 8, 'the wall clock stops the job (SIGTERM: sleep ends at once)'
    assert slow.execution_state == 'failed' and slow.execution_info.exit_code == -15
    assert _errors(slow) == [('MaxWallClockTimeExceeded', 'The job ran longer than its constraints.maxWallClockTime.')]
    quick = service.wait('quick')
    assert quick.execution_state == 'succeeded' and _errors(quick) == []


def _terminate_while_set_up(service, monkeypatch, name):
    """Have job `name` terminated (through the API) while the runner sets it up, before its process starts: as the
    runner reads its wall clock."""
    reads_wall_clock = runner_module.job_wall_clock

    def terminated_meanwhile(spec):
        service.client.jobs.begin_terminate(service.info.resource_group, service.info.workspace, service.experiment,
                                            name, polling=False)
        return reads_wall_clock(spec)
    monkeypatch.setattr(runner_module, 'job_wall_clock', terminated_meanwhile)


def test_a_job_terminated_before_its_process_starts_is_killed_as_it_starts(service, tmp_path, monkeypatch):
    """The terminate request arrives while the job is being set up (running, no process yet: here at the moment the
    runner reads its wall clock): its process is killed at once (SIGKILL), it never gets to run its command."""
    ran = tmp_path / 'ran'
    _terminate_while_set_up(service, monkeypatch, 'early')
    service.submit('early', 'sleep 1; touch {}'.format(ran))
    job = service.wait('early', timeout=10)
    assert job.execution_state == 'failed' and job.execution_info.exit_code == -9
    assert _errors(job) == [('JobTerminated', 'The job was terminated by the user.')]
    time.sleep(1.2)
    assert not ran.exists(), 'the terminated job ran its command'


def test_a_job_terminated_while_set_up_whose_process_cannot_start_says_both(service, monkeypatch):
    """Terminated during its set-up, then its process cannot start (no bash on the PATH its variables set): both
    are said, the start failure and the terminate."""
    _terminate_while_set_up(service, monkeypatch, 'early')
    service.submit('early', 'true', environment_variables=[models.EnvironmentVariable(name='PATH',
                                                                                      value='/nonexistent')])
    job = service.wait('early', timeout=10)
    assert job.execution_state == 'failed' and job.execution_info.exit_code is None
    assert [code for code, _ in _errors(job)] == ['JobStartFailed', 'JobTerminated']


def test_a_store_error_recording_a_jobs_process_group_kills_the_group_and_fails_the_job(service, tmp_path):
    """Another writer holds service.db's write lock (a real SQLite lock, taken here) when the job's command starts:
    recording its process group fails ('database is locked', SQLite's 5 s busy timeout), so the runner kills the
    group (none of it is left running unrecorded) and the job fails with that error."""
    import sqlite3  # pylint: disable=import-outside-toplevel
    prep_pid, main_pid, gate = tmp_path / 'prep.pid', tmp_path / 'main.pid', tmp_path / 'gate'
    service.submit('locked', 'echo $$ > {}; sleep 20'.format(main_pid), job_preparation=models.JobPreparation(
        command_line='echo $$ > {}; {}'.format(prep_pid, _until(gate))))
    (prep,) = job_pids(prep_pid)
    _wait_for(lambda: service.service.store.get(service.key('locked'))['pgid'] == prep, 'the preparation is unrecorded')
    other = sqlite3.connect(os.path.join(service.info.data_dir, 'service.db'), isolation_level=None)
    try:
        other.execute('BEGIN EXCLUSIVE')
        gate.touch()
        (main,) = job_pids(main_pid)
        _gone(main, timeout=8)
    finally:
        other.close()  # its transaction rolled back: the job's end can be recorded
    job = service.wait('locked')
    assert job.execution_state == 'failed' and job.execution_info.exit_code is None
    assert _errors(job) == [('JobStartFailed', 'database is locked')]


def test_a_job_ignoring_sigterm_past_its_wall_clock_gets_one_sigterm_then_sigkill(service, tmp_path):
    got = tmp_path / 'got'
    service.submit('stubborn', "trap 'echo TERM >> {}' TERM; i=0; while [ $i -lt 80 ]; do sleep 0.1; i=$((i + 1)); "
                   'done'.format(got), constraints=models.JobBasePropertiesConstraints(max_wall_clock_time='PT0.5S'))
    started = time.monotonic()
    job = service.wait('stubborn', timeout=15)
    assert time.monotonic() - started < 6, 'not killed once the grace after its wall clock had passed'
    assert job.execution_state == 'failed' and job.execution_info.exit_code == -9
    assert [code for code, _ in _errors(job)] == ['MaxWallClockTimeExceeded']
    assert got.read_text() == 'TERM\n', 'one SIGTERM when the wall clock passed, no more'


def test_a_background_child_left_by_a_finished_job_ends_with_it(service, tmp_path):
    pid_file = tmp_path / 'child.pid'
    service.submit('leaves', 'sleep 20 & echo $! > {}'.format(pid_file))
    assert service.wait('leaves').execution_state == 'succeeded'
    _gone(job_pids(pid_file)[0])


def test_deleting_a_running_job_kills_it_and_its_record_goes(service, tmp_path, caplog):
    caplog.set_level('INFO', logger=runner_module.__name__)
    pid_file = tmp_path / 'pid'
    service.submit('doomed', 'echo $$ > {}; sleep 20'.format(pid_file))
    service.wait('doomed', ('running',))
    (pid,) = job_pids(pid_file)
    service.client.jobs.begin_delete(service.info.resource_group, service.info.workspace, service.experiment,
                                     'doomed').result()
    _gone(pid)
    _wait_for(lambda: service.service.store.get(service.key('doomed')) is None, 'the deleted job is still stored')
    time.sleep(0.3)  # its thread's end is not written back either
    assert service.service.store.get(service.key('doomed')) is None
    assert not [r.getMessage() for r in caplog.records if r.getMessage().startswith('job ')], \
        'a deleted job has no end recorded'


def test_stopping_the_service_fails_its_running_jobs_and_kills_them(tmp_path):
    started = InProcess(str(tmp_path / 'data'), slots=2)
    pid_file = tmp_path / 'pid'
    started.submit('running', 'echo $$ > {}; sleep 20'.format(pid_file))
    started.wait('running', ('running',))
    (pid,) = job_pids(pid_file)
    store = started.service.store
    key = started.key('running')
    stopping = time.monotonic()
    started.runner.stop()
    assert time.monotonic() - stopping < 5, 'stop() returns once its jobs are recorded (SIGTERM ends sleep at once)'
    _gone(pid)
    props = json.loads(store.get(key)['body'])['properties']
    assert props['executionState'] == 'failed'
    assert [e['code'] for e in props['executionInfo']['errors']] == ['ServiceStopped']
    started.shutdown()


# ---- scheduling ----------------------------------------------------------------------------------------------------

def test_a_cluster_runs_no_more_jobs_than_its_slots_and_starts_the_next_when_one_ends(service, tmp_path):
    cluster = service.cluster('one', 1)
    gate = tmp_path / 'gate'
    service.submit('first', _until(gate), cluster_id=cluster)
    service.wait('first', ('running',))
    service.submit('second', 'true', cluster_id=cluster)
    time.sleep(0.6)
    assert service.get('second').execution_state == 'queued'
    assert service.runner.used_slots(service.cluster_key('one')) == 1
    assert service.runner.is_running(service.key('first')) and not service.runner.is_running(service.key('second'))
    gate.touch()
    assert service.wait('first').execution_state == 'succeeded'
    second = service.wait('second')
    assert second.execution_state == 'succeeded'
    assert second.execution_info.start_time >= service.get('first').execution_info.end_time


def test_a_job_needing_more_slots_than_are_free_holds_the_jobs_behind_it(service, tmp_path):
    """Gang order: the head of a cluster's queue waits for its nodes, and the jobs behind it wait too."""
    cluster = service.cluster('two', 2)
    gate = tmp_path / 'gate'
    service.submit('holder', _until(gate), cluster_id=cluster)
    service.wait('holder', ('running',))
    service.submit_params('pair', _two_process_params(service, tmp_path, cluster))
    service.submit('behind', 'true', cluster_id=cluster)
    time.sleep(0.8)
    assert service.get('pair').execution_state == 'queued'
    assert service.get('behind').execution_state == 'queued', 'a one-slot job jumped the two-node job ahead of it'
    gate.touch()
    pair, behind = service.wait('pair'), service.wait('behind')
    assert pair.execution_state == 'succeeded', (_errors(pair), pair.execution_info.exit_code, service.outputs('pair'))
    assert behind.execution_state == 'succeeded'
    assert behind.execution_info.start_time >= pair.execution_info.start_time


def test_a_cluster_whose_queue_waits_for_slots_holds_up_no_other_clusters_jobs(service, tmp_path):
    """Gang order is per cluster: the queue of a full cluster (made first, so looked at first) waits; the job of
    another cluster starts."""
    _a_waiting_queue_holds_up_no_other_cluster(service, service.cluster('full', 1), service.cluster('other', 1),
                                               tmp_path / 'gate')


def _a_waiting_queue_holds_up_no_other_cluster(service, full, other, gate):
    """A job holds `full`'s room until `gate` exists; the next job of `full` waits, a job of `other` runs."""
    service.submit('holder', _until(gate), cluster_id=full)
    service.wait('holder', ('running',))
    service.submit('waiting', 'true', cluster_id=full)
    service.submit('elsewhere', 'true', cluster_id=other)
    try:
        assert service.wait('elsewhere', timeout=5).execution_state == 'succeeded'
        assert service.get('waiting').execution_state == 'queued', 'the waiting job ran too soon'
    finally:
        gate.touch()
    assert service.wait('waiting').execution_state == 'succeeded'


def test_a_cluster_whose_queue_waits_for_gpus_holds_up_no_other_clusters_jobs(tmp_path):
    started = InProcess(str(tmp_path / 'data'), slots=2, gpus=[0])
    try:
        gpu = started.cluster('gpu', 2, vm_size='STANDARD_NC6')  # two slots, one GPU: the second job waits
        cpu = started.cluster('cpu', 1, vm_size='STANDARD_D2_V2')  # no GPU
        _a_waiting_queue_holds_up_no_other_cluster(started, gpu, cpu, tmp_path / 'gate')
    finally:
        started.shutdown()


def _two_process_params(service, tmp_path, cluster_id=None, hang='0'):
    """A 2-node Caffe2 job (two processes, one per node, launched by launcher.py) writing each process's pid."""
    script = tmp_path / 'two.py'
    out = tmp_path / 'two.py.out'
    if not script.exists():
        out.mkdir()
        script.write_text('import os, sys, time\n'
                          'out = os.path.join(sys.argv[0] + ".out", os.environ["AZ_BATCHAI_TASK_INDEX"])\n'
                          'with open(out, "w") as f:\n'
                          '    f.write("{} [{}]\\n".format(os.getpid(), os.environ.get("CUDA_VISIBLE_DEVICES")))\n'
                          'time.sleep(float(os.environ.get("HANG", "0")))\n'
                          'print("task", os.environ["AZ_BATCHAI_TASK_INDEX"])\n')
    extra = {'cluster_id': cluster_id} if cluster_id else {}
    params = job_params(service.info, node_count=2,
                        environment_variables=[models.EnvironmentVariable(name='HANG', value=hang)], **extra)
    params.custom_toolkit_settings = None
    params.caffe2_settings = models.Caffe2Settings(python_script_file_path=str(script))
    return params


def test_a_two_node_job_runs_two_processes_through_the_launcher_each_with_its_output(service, tmp_path,
                                                                                     monkeypatch):
    """...and what the service writes for it (the launch plan, the launcher's own output) stays in the job's folder
    of its data dir: nothing lands in the service's working directory."""
    cwd = tmp_path / 'service-cwd'
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    service.submit_params('pair', _two_process_params(service, tmp_path))
    job = service.wait('pair')
    assert job.execution_state == 'succeeded' and job.execution_info.exit_code == 0
    written = sorted(os.listdir(tmp_path / 'two.py.out'))
    assert written == ['0', '1']
    pids = {(tmp_path / 'two.py.out' / name).read_text().split()[0] for name in written}
    assert len(pids) == 2, 'one process per node'
    outputs = service.outputs('pair')
    assert 'task 0\n' in outputs.values() and 'task 1\n' in outputs.values()
    assert os.listdir(cwd) == [], 'the service wrote into its working directory'


def test_the_jobs_pythonpath_does_not_reach_the_launcher_of_its_processes(service, tmp_path):
    """A job whose PYTHONPATH holds a module shadowing one the launcher imports (json; the job's own script does not
    import it) still runs: the launcher runs isolated from the job's PYTHON* variables."""
    shadow = tmp_path / 'shadow'
    shadow.mkdir()
    (shadow / 'json.py').write_text('raise SystemExit("the job\'s PYTHONPATH reached the launcher")\n')
    params = _two_process_params(service, tmp_path)
    params.environment_variables.append(models.EnvironmentVariable(name='PYTHONPATH', value=str(shadow)))
    service.submit_params('shadowed', params)
    job = service.wait('shadowed')
    assert job.execution_state == 'succeeded' and job.execution_info.exit_code == 0
    assert sorted(os.listdir(tmp_path / 'two.py.out')) == ['0', '1']


def test_terminating_a_two_node_job_kills_both_processes(service, tmp_path):
    service.submit_params('pair', _two_process_params(service, tmp_path, hang='20'))
    service.wait('pair', ('running',))
    _wait_for(lambda: len(os.listdir(tmp_path / 'two.py.out')) == 2, 'both processes started')
    time.sleep(0.1)
    pids = [int((tmp_path / 'two.py.out' / n).read_text().split()[0]) for n in ('0', '1')]
    service.client.jobs.begin_terminate(service.info.resource_group, service.info.workspace, service.experiment,
                                        'pair').result()
    assert [c for c, _ in _errors(service.get('pair'))] == ['JobTerminated']
    for pid in pids:
        _gone(pid)


# ---- resizing a cluster under its jobs ------------------------------------------------------------------------------

def _resize(service, cluster, target, option):
    service.client.clusters.update(service.info.resource_group, service.info.workspace, cluster,
                                   models.ClusterUpdateParameters(scale_settings=models.ScaleSettings(
                                       manual=models.ManualScaleSettings(target_node_count=target,
                                                                         node_deallocation_option=option))))


def _counting_job(service, name, cluster, runs, gate):
    """A job that appends a line to `runs/name` each time it starts, then waits for `gate`."""
    service.submit(name, 'echo run >> {}/{}; {}'.format(runs, name, _until(gate)),
                   cluster_id=cluster)
    _wait_for(lambda: (runs / name).exists(), 'job {} did not start'.format(name))


def test_a_shrinking_cluster_requeues_its_latest_job_which_runs_again_from_the_start(service, tmp_path, caplog):
    caplog.set_level('INFO', logger=runner_module.__name__)
    cluster = service.cluster('shrinks', 2)
    runs, gate = tmp_path / 'runs', tmp_path / 'gate'
    runs.mkdir()
    _counting_job(service, 'older', cluster, runs, gate)
    _counting_job(service, 'newer', cluster, runs, gate)
    _resize(service, 'shrinks', 1, 'requeue')
    _wait_for(lambda: service.get('newer').execution_state == 'queued', 'the newer job was not requeued')
    queued = service.get('newer')
    assert queued.execution_info is None, "a requeued job's run is forgotten: it runs again from the start"
    assert service.service.store.get(service.key('newer'))['pgid'] is None, 'a requeued job holds no process group'
    assert 'job {} requeued: its cluster was resized'.format(service.key('newer')) in [
        r.getMessage() for r in caplog.records]
    assert service.get('older').execution_state == 'running'
    _resize(service, 'shrinks', 2, 'requeue')
    _wait_for(lambda: (runs / 'newer').read_text() == 'run\nrun\n', 'the requeued job did not run again')
    gate.touch()
    assert service.wait('older').execution_state == 'succeeded'
    newer = service.wait('newer')
    assert newer.execution_state == 'succeeded' and _errors(newer) == []
    assert (runs / 'older').read_text() == 'run\n'


@pytest.mark.parametrize('target', [1, 0])
def test_a_shrinking_cluster_with_terminate_fails_its_latest_jobs_until_the_rest_fit(service, tmp_path, target):
    cluster = service.cluster('cuts', 3)
    runs, gate = tmp_path / 'runs', tmp_path / 'gate'
    runs.mkdir()
    names = ['first', 'second', 'third']
    for name in names:
        _counting_job(service, name, cluster, runs, gate)
    _resize(service, 'cuts', target, 'terminate')
    cut = names[target:]
    for name in cut:
        job = service.wait(name)
        assert job.execution_state == 'failed'
        assert [code for code, _ in _errors(job)] == ['ClusterResized']
    gate.touch()
    for name in names[:target]:
        assert service.wait(name).execution_state == 'succeeded'
    time.sleep(0.3)
    assert all((runs / name).read_text() == 'run\n' for name in names), 'a terminated job never runs again'


# ---- GPUs ----------------------------------------------------------------------------------------------------------

def test_each_job_gets_its_own_gpus_and_a_job_needing_more_than_are_free_waits(tmp_path):
    started = InProcess(str(tmp_path / 'data'), slots=4, gpus=[0, 1])
    try:
        assert started.described['gpus'] == '0,1' and started.runner.describe() == {
            'scheduler': 'processes', 'gpus': '0,1'}
        nc6 = started.cluster('nc6', 3, vm_size='STANDARD_NC6')
        gate, out = tmp_path / 'gate', tmp_path / 'out'
        out.mkdir()
        command = 'echo "$CUDA_VISIBLE_DEVICES $AZ_BATCHAI_NUM_GPUS" > {}/$JOB; ' + _until('{}')
        for name in ('a', 'b', 'c'):
            started.submit(name, command.format(out, gate), cluster_id=nc6,
                           environment_variables=[models.EnvironmentVariable(name='JOB', value=name)])
        started.wait('a', ('running',))
        started.wait('b', ('running',))
        time.sleep(0.6)
        assert started.get('c').execution_state == 'queued', 'a third one-GPU job ran on 2 GPUs'
        _wait_for(lambda: len(os.listdir(out)) == 2, 'the two running jobs wrote their GPUs')
        seen = sorted((out / name).read_text().split()[0] for name in ('a', 'b'))
        assert seen == ['0', '1'] and (out / 'a').read_text().split()[1] == '1'
        gate.touch()
        for name in ('a', 'b', 'c'):
            assert started.wait(name).execution_state == 'succeeded'
        assert (out / 'c').read_text().split() in (['0', '1'], ['1', '1'])
        with pytest.raises(HttpResponseError) as refused:
            started.client.jobs.begin_create(started.info.resource_group, started.info.workspace,
                                             started.experiment, 'four', job_params(
                                                 started.info, cluster_id=started.cluster('nc24', 1,
                                                                                          'STANDARD_NC24'))).result()
        assert refused.value.error.code == 'InsufficientGpus'
        assert refused.value.error.message == ('The job needs 4 GPUs (1 nodes of STANDARD_NC24); the local service '
                                               'has 2 (local start --gpus).')
    finally:
        started.shutdown()


@pytest.mark.parametrize('vm_size, gpus, expected', [
    ('STANDARD_NC6', [0, 1], {'0': '[0]', '1': '[1]'}),
    ('STANDARD_NC12', [0, 1, 2, 3], {'0': '[0,1]', '1': '[2,3]'}),
])
def test_each_node_of_a_two_node_gpu_job_sees_its_own_gpus(tmp_path, vm_size, gpus, expected):
    started = InProcess(str(tmp_path / 'data'), slots=2, gpus=gpus)
    try:
        cluster = started.cluster('gpus', 2, vm_size=vm_size)
        started.submit_params('pair', _two_process_params(started, tmp_path, cluster))
        assert started.wait('pair').execution_state == 'succeeded'
        seen = {name: (tmp_path / 'two.py.out' / name).read_text().split()[1] for name in ('0', '1')}
        assert seen == expected
    finally:
        started.shutdown()


def test_the_ranks_of_a_two_node_mpi_gpu_job_see_all_of_its_gpus(tmp_path):
    """One mpirun starts every rank (on this machine): each sees the job's GPUs of both nodes."""
    started = InProcess(str(tmp_path / 'data'), slots=2, gpus=[0, 1, 2, 3])
    try:
        out = tmp_path / 'out'
        out.mkdir()
        params = job_params(started.info, node_count=2, cluster_id=started.cluster('nc12', 2, 'STANDARD_NC12'))
        params.custom_toolkit_settings = None
        params.custom_mpi_settings = models.CustomMpiSettings(
            command_line='echo "$CUDA_VISIBLE_DEVICES" > {}/$AZ_BATCHAI_TASK_INDEX'.format(out), process_count=2)
        started.submit_params('mpi', params)
        job = started.wait('mpi')
        assert job.execution_state == 'succeeded', started.outputs('mpi')
        assert {name: (out / name).read_text() for name in os.listdir(out)} == {'0': '0,1,2,3\n', '1': '0,1,2,3\n'}
    finally:
        started.shutdown()


@pytest.mark.parametrize('gpus, count', [([0, 1], '1'), ([0], '1'), (None, '0')])
def test_a_local_size_clusters_job_counts_one_gpu_when_the_service_has_some(tmp_path, gpus, count):
    """A cluster of the LOCAL size (this machine's node): AZ_BATCHAI_NUM_GPUS is 1 when the service manages GPUs,
    whatever their number (the node's share: one device), 0 when it manages none."""
    started = InProcess(str(tmp_path / 'data'), slots=2, gpus=gpus)
    try:
        dump = tmp_path / 'env'
        local = started.cluster('here', 1, vm_size='LOCAL')
        started.submit('one', 'echo "$AZ_BATCHAI_NUM_GPUS" $CUDA_VISIBLE_DEVICES > {}'.format(dump), cluster_id=local)
        assert started.wait('one').execution_state == 'succeeded', started.outputs('one')
        seen = dump.read_text().split()
        assert seen[0] == count and len(seen) == (2 if gpus else 1)
        assert not gpus or int(seen[1]) in gpus, 'one of the managed devices'
    finally:
        started.shutdown()


def test_without_gpus_managed_a_gpu_cluster_job_is_not_refused_and_sees_no_count(service, tmp_path):
    dump = tmp_path / 'env'
    nc12 = service.cluster('nc12', 1, vm_size='STANDARD_NC12')
    service.submit('gpu', 'echo "$AZ_BATCHAI_NUM_GPUS" > {}'.format(dump), cluster_id=nc12)
    assert service.wait('gpu').execution_state == 'succeeded'
    assert service.runner.describe() == {'scheduler': 'processes'}
    assert dump.read_text() == '2\n', "AZ_BATCHAI_NUM_GPUS: the GPUs of the cluster's VM size"


# ---- crash recovery ----------------------------------------------------------------------------------------------

def _orphan(marker):
    """A process group left by a job of a service that died: `sleep` carrying the job's marker."""
    env = dict(os.environ, **{MARKER_VARIABLE: marker})
    return subprocess.Popen(['bash', '-c', 'sleep 20 & sleep 20; wait'], env=env, start_new_session=True,
                            stdin=subprocess.DEVNULL)


def test_recovery_kills_what_a_dead_service_left_running_and_fails_its_jobs(service, tmp_path, caplog):
    """The rows a service killed mid-run left (running, terminating, deleting) and their processes, found by the
    jobs' markers, handled as the next start does."""
    caplog.set_level('INFO', logger=runner_module.__name__)
    cluster = service.cluster('frozen', 0)  # its jobs stay queued: the test sets their states as a crash left them
    for name in ('was-running', 'was-terminating', 'was-deleting', 'was-queued'):
        service.submit(name, 'true', cluster_id=cluster)
    store = service.service.store
    procs = {}
    for name, state in (('was-running', 'running'), ('was-terminating', 'terminating'),
                        ('was-deleting', 'deleting')):
        marker = uuid.uuid4().hex
        store.update(service.key(name), state=state, marker=marker)
        procs[name] = _orphan(marker)
    bystander = _orphan(uuid.uuid4().hex)
    try:
        time.sleep(0.3)
        service.runner.recover()
        for name, proc in procs.items():
            assert proc.wait(5) == -signal.SIGKILL, name
        assert bystander.poll() is None, "a process without a job's marker was killed"
        running, terminating = service.get('was-running'), service.get('was-terminating')
        assert running.execution_state == 'failed' and terminating.execution_state == 'failed'
        assert [c for c, _ in _errors(running)] == ['ServiceInterrupted']
        assert [c for c, _ in _errors(terminating)] == ['JobTerminated']
        assert store.get(service.key('was-deleting')) is None, 'a deletion under way is finished'
        assert service.get('was-queued').execution_state == 'queued'
        assert sorted(r.getMessage() for r in caplog.records if r.getMessage().startswith('job ')) == [
            'job {} failed (exit code None, crashed)'.format(service.key('was-running')),
            'job {} failed (exit code None, terminated)'.format(service.key('was-terminating'))], \
            'the ends recorded: none for the deleted job'
    finally:
        bystander.kill()
        bystander.wait()


def test_recovery_finishes_the_deletion_of_an_experiment_with_its_jobs(service):
    """A service killed while it deleted an experiment (the experiment and its jobs marked deleting, as its delete
    does first) left them stored: the next start deletes the experiment itself, not only its jobs."""
    cluster = service.cluster('frozen', 0)
    rg, ws = service.info.resource_group, service.info.workspace
    service.client.experiments.begin_create(rg, ws, 'going').result()
    service.client.jobs.begin_create(rg, ws, 'going', 'job', job_params(service.info, cluster_id=cluster),
                                     polling=False)
    experiment = resource_key(service.info.subscription, rg, ws, 'experiments', 'going')
    service.service.store.set_state_below(experiment, 'deleting')
    service.runner.recover()
    assert service.service.store.get(experiment + '/jobs/job') is None
    assert service.service.store.get(experiment) is None, 'the experiment outlived its deletion'
    with pytest.raises(HttpResponseError) as gone:
        service.client.experiments.get(rg, ws, 'going')
    assert gone.value.status_code == 404
    assert service.client.experiments.get(rg, ws, service.experiment).name == service.experiment


def test_recovery_kills_every_group_carrying_the_marker_and_skips_a_row_without_one(service, caplog):
    marker = uuid.uuid4().hex
    first, second = _orphan(marker), _orphan(marker)
    unmarked = _orphan('None')  # what a row without a marker would look for, were it looked for
    try:
        time.sleep(0.3)
        runner_module.kill_orphaned_groups({'marker': None, 'key': 'k'})
        assert unmarked.poll() is None, 'a row without a marker killed a process'
        with caplog.at_level('WARNING', logger=runner_module.__name__):
            runner_module.kill_orphaned_groups({'marker': marker, 'key': 'the/job'})
        assert sorted(r.getMessage() for r in caplog.records) == sorted(
            'killing orphaned process group {} of job the/job'.format(p.pid) for p in (first, second))
        assert first.wait(5) == -signal.SIGKILL and second.wait(5) == -signal.SIGKILL
        _wait_for(lambda: runner_module._groups_with_marker(marker) == set(),  # pylint: disable=protected-access
                  'a process carrying the marker outlived the kill')
    finally:
        for proc in (first, second, unmarked):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_the_marker_finds_each_group_of_a_jobs_processes(tmp_path):
    marker = uuid.uuid4().hex
    procs = [_orphan(marker), _orphan(marker)]
    other = _orphan(marker + 'x')
    try:
        time.sleep(0.3)
        assert runner_module._groups_with_marker(marker) == {p.pid for p in procs}  # pylint: disable=W0212
    finally:
        for proc in procs + [other]:
            proc.kill()
            proc.wait()


# ---- refusals at submit ----------------------------------------------------------------------------------------------

def test_a_job_whose_processes_need_mpirun_is_refused_when_none_is_on_the_path(service, monkeypatch):
    params = job_params(service.info, node_count=2)
    params.custom_toolkit_settings = None
    params.custom_mpi_settings = models.CustomMpiSettings(command_line='true', process_count=2)
    monkeypatch.setenv('PATH', '/nonexistent')  # read by this process: the service's own
    with pytest.raises(HttpResponseError) as refused:
        service.client.jobs.begin_create(service.info.resource_group, service.info.workspace, service.experiment,
                                         'mpi', params).result()
    assert refused.value.error.code == 'MpiNotInstalled'
    assert refused.value.error.message == (
        'customMpiSettings with 2 processes runs them through mpirun (as Batch AI did), and the local service finds '
        'no mpirun on its PATH: install OpenMPI (Debian: apt-get install openmpi-bin).')


def test_a_job_of_no_process_is_refused_with_launchers_words(service):
    params = job_params(service.info)
    params.custom_toolkit_settings = None
    params.custom_mpi_settings = models.CustomMpiSettings(command_line='true', process_count=0)
    with pytest.raises(HttpResponseError) as refused:
        service.client.jobs.begin_create(service.info.resource_group, service.info.workspace, service.experiment,
                                         'none', params).result()
    assert (refused.value.error.code, refused.value.error.message) == ('InvalidRequestContent',
                                                                       'processCount must be at least 1.')


def test_terminating_a_queued_job_fails_it_and_it_never_runs(service, tmp_path):
    cluster = service.cluster('busy', 1)
    gate, ran = tmp_path / 'gate', tmp_path / 'ran'
    service.submit('blocker', _until(gate), cluster_id=cluster)
    service.wait('blocker', ('running',))
    service.submit('queued', 'touch {}'.format(ran), cluster_id=cluster)
    assert service.get('queued').execution_state == 'queued'
    assert not service.runner.fail_queued(service.key('blocker'), 'terminated'), 'a running job is not queued'
    assert not service.runner.fail_queued(service.key('missing'), 'terminated')
    service.submit('queued2', 'touch {}'.format(ran), cluster_id=cluster)
    assert service.runner.fail_queued(service.key('queued2'), 'cluster') is True, 'a queued job: failed, said so'
    assert _errors(service.get('queued2')) == [('ClusterDeleted', 'The cluster of the job was deleted.')]
    service.client.jobs.begin_terminate(service.info.resource_group, service.info.workspace, service.experiment,
                                        'queued').result()
    job = service.get('queued')
    assert job.execution_state == 'failed' and job.execution_info.exit_code is None
    assert _errors(job) == [('JobTerminated', 'The job was terminated by the user.')]
    gate.touch()
    assert service.wait('blocker').execution_state == 'succeeded'
    time.sleep(0.5)  # the slot is free: a job still queued would start now
    assert service.get('queued').execution_state == 'failed' and not ran.exists()


# ---- a full disk (a real one: a small tmpfs, root needed) ----------------------------------------------------------

def _fill(path):
    with open(path, 'wb') as f:
        try:
            while True:
                f.write(b'\0' * 65536)
                f.flush()
        except OSError:
            pass


def _small_disk(tmp_path):
    """A 24 MB tmpfs mounted at tmp_path/disk (skipped without root, failed in CI); unmount it with umount -l."""
    where = tmp_path / 'disk'
    where.mkdir()
    if os.geteuid() != 0 or subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', str(where)],
                                           capture_output=True, check=False).returncode:
        if os.environ.get('CI') == 'true':
            pytest.fail('mounting a tmpfs failed (in CI this test must run)')
        pytest.skip('FULL-DISK TEST NOT RUN: it needs root to mount a tmpfs')
    return where


def test_a_job_ending_on_a_full_disk_is_answered_ended_and_recorded_once_there_is_room(tmp_path, caplog):
    caplog.set_level('INFO', logger=runner_module.__name__)
    where = _small_disk(tmp_path)
    started = None
    try:
        started = InProcess(str(where / 'data'), slots=1)
        gate, begun = where / 'gate', tmp_path / 'begun'
        started.submit('a', 'touch {}; {}'.format(begun, _until(gate)))
        started.submit('b', 'echo b')
        _wait_for(begun.exists, 'job a did not start')
        _fill(str(where / 'filler'))
        store = started.service.store
        _fill_store(store)
        gate.touch()  # an empty file: no data block
        _wait_for(started.runner.has_unrecorded, "a's end was not kept in memory")
        assert 'job {} succeeded; the disk is full: recorded once there is room'.format(started.key('a')) in [
            r.getMessage() for r in caplog.records]
        a = started.get('a')
        assert a.execution_state == 'succeeded' and a.execution_info.exit_code == 0, 'answered as it ended'
        assert store.get(started.key('a'))['state'] == 'running', 'not written: the disk is full'
        time.sleep(1.2)  # the scheduler makes passes meanwhile
        assert started.get('b').execution_state == 'queued', 'b started without a record of it'
        os.unlink(str(where / 'filler'))
        _wait_for(lambda: not started.runner.has_unrecorded(), 'the kept end was never written', timeout=15)
        assert store.get(started.key('a'))['state'] == 'succeeded'
        assert store.get(started.key('a'))['pgid'] is None, 'an ended job holds no process group'
        assert json.loads(store.get(started.key('a'))['body'])['properties']['executionInfo']['exitCode'] == 0
        assert 'job {} succeeded (recorded now that the disk has room)'.format(started.key('a')) in [
            r.getMessage() for r in caplog.records]
        assert started.wait('b').execution_state == 'succeeded'
        # (the passes that could not record b's start logged their failure: those are expected)
        failures = [''.join(traceback.format_exception(*r.exc_info)) for r in caplog.records if r.exc_info]
        assert not [f for f in failures if '_record_unrecorded' in f], 'a full disk made writing the kept end fail'
    finally:
        if started is not None:
            started.shutdown()
        subprocess.run(['umount', '-l', str(where)], check=False)


def test_a_full_disk_when_a_jobs_command_starts_lets_it_run_to_its_end(tmp_path):
    """The disk fills while the job's preparation runs: its command's process group cannot be recorded (crash
    recovery finds it by the job's marker anyway), yet the command runs to its end and the job succeeds, its end
    recorded once there is room."""
    where = _small_disk(tmp_path)
    started = None
    try:
        started = InProcess(str(where / 'data'), slots=1)
        store = started.service.store
        prep_pid, gate, ran = tmp_path / 'prep.pid', tmp_path / 'gate', tmp_path / 'ran'
        started.submit('a', 'sleep 0.3; touch {}'.format(ran), job_preparation=models.JobPreparation(
            command_line='echo $$ > {}; {}'.format(prep_pid, _until(gate))))
        (prep,) = job_pids(prep_pid)
        _wait_for(lambda: store.get(started.key('a'))['pgid'] == prep, 'the preparation is unrecorded')
        _fill(str(where / 'filler'))
        _fill_store(store)
        gate.touch()
        _wait_for(started.runner.has_unrecorded, "a's end was not kept in memory")
        a = started.get('a')
        assert a.execution_state == 'succeeded' and a.execution_info.exit_code == 0 and _errors(a) == []
        assert ran.exists(), 'the command did not run to its end'
        assert store.get(started.key('a'))['pgid'] == prep, "the command's group was recorded on a full disk"
        os.unlink(str(where / 'filler'))
        _wait_for(lambda: not started.runner.has_unrecorded(), 'the kept end was never written', timeout=15)
        assert store.get(started.key('a'))['state'] == 'succeeded'
    finally:
        if started is not None:
            started.shutdown()
        subprocess.run(['umount', '-l', str(where)], check=False)


def test_a_job_whose_folders_cannot_be_written_on_a_full_disk_fails_saying_so(tmp_path, monkeypatch):
    """The disk fills between the job's start being recorded and its folders and files being written (here: as the
    runner reads the job's spec): the job fails with DiskFull, which says what to do, and no command runs."""
    where = _small_disk(tmp_path)
    started = None
    try:
        started = InProcess(str(where / 'data'), slots=1)
        ran = tmp_path / 'ran'
        reads_spec = runner_module.job_spec

        def filled_meanwhile(row):
            _fill(str(where / 'filler'))
            return reads_spec(row)
        monkeypatch.setattr(runner_module, 'job_spec', filled_meanwhile)
        started.submit('a', 'touch {}'.format(ran))
        _wait_for(lambda: started.get('a').execution_state == 'failed', 'the job did not fail')
        a = started.get('a')
        assert a.execution_info.exit_code is None and not ran.exists()
        assert _errors(a) == [('DiskFull', runner_module.DISK_FULL_JOB_MESSAGE)]
    finally:
        (where / 'filler').unlink(missing_ok=True)
        if started is not None:
            started.shutdown()
        subprocess.run(['umount', '-l', str(where)], check=False)


def _fill_store(store):
    """Insert rows until SQLite says the disk is full (it may have room in its log after the file system fills)."""
    import sqlite3  # pylint: disable=import-outside-toplevel
    for index in range(10000):
        try:
            store.insert('filler/{}'.format(index), 'experiment', 'filler', {'x': 'y' * 4000})
        except (sqlite3.Error, OSError):
            return
    raise AssertionError('the store never filled up')


ENV_SCRIPT = ('import json, os, sys\n'
              'with open(os.path.join(sys.argv[0] + ".out", str(os.getpid())), "w") as f:\n'
              '    json.dump({k: v for k, v in os.environ.items() if k.startswith(("AZ_BATCHAI", "TF_"))}, f)\n')


def _env_script(tmp_path):
    script = tmp_path / 'env.py'
    script.write_text(ENV_SCRIPT)
    (tmp_path / 'env.py.out').mkdir()
    return script


def _process_envs(tmp_path):
    out = tmp_path / 'env.py.out'
    return [json.loads((out / name).read_text()) for name in sorted(os.listdir(out))]


def test_a_two_node_pytorch_job_shares_an_init_file_in_its_own_folder(service, tmp_path):
    params = job_params(service.info, node_count=2)
    params.custom_toolkit_settings = None
    params.py_torch_settings = models.PyTorchSettings(python_script_file_path=str(_env_script(tmp_path)),
                                                      communication_backend='gloo')
    service.submit_params('torch', params)
    assert service.wait('torch').execution_state == 'succeeded'
    envs = _process_envs(tmp_path)
    assert len(envs) == 2
    (init,) = {env['AZ_BATCHAI_PYTORCH_INIT_METHOD'] for env in envs}
    path = init[len('file://'):]
    assert init.startswith('file:///') and os.path.basename(path) == 'pytorch_init'
    assert os.path.isdir(os.path.dirname(path))
    assert os.path.realpath(path).startswith(os.path.realpath(service.info.data_dir) + os.sep)


def test_a_tensorflow_jobs_processes_get_free_loopback_ports_of_their_own(service, tmp_path):
    params = job_params(service.info, node_count=2)
    params.custom_toolkit_settings = None
    params.tensor_flow_settings = models.TensorFlowSettings(python_script_file_path=str(_env_script(tmp_path)),
                                                            worker_count=2, parameter_server_count=1)
    service.submit_params('tf', params)
    assert service.wait('tf').execution_state == 'succeeded'
    envs = _process_envs(tmp_path)
    assert len(envs) == 3
    cluster = json.loads(envs[0]['TF_CONFIG'])['cluster']
    addresses = cluster['ps'] + cluster['worker']
    assert len(addresses) == 3 and {a.rsplit(':', 1)[0] for a in addresses} == {'127.0.0.1'}
    ports = {int(a.rsplit(':', 1)[1]) for a in addresses}
    assert len(ports) == 3 and not ports & {2222, 2223, 2224}, "free ports, not Batch AI's fixed ones"


# ---- a job that cannot start -----------------------------------------------------------------------------------------

def test_a_job_whose_secrets_a_restarted_service_cannot_open_fails_saying_so(service, monkeypatch, caplog):
    """Its secrets were sealed by the service that took it; the service that starts it (here: this one with a new
    sealing key, as a restarted service has) cannot open them, and the job fails with SecretsNotKept."""
    from azext_batchai_sweep.localservice.data import stored_spec  # pylint: disable=import-outside-toplevel
    caplog.set_level('INFO', logger=runner_module.__name__)
    cluster = service.cluster('later', 0)
    service.submit('sealed', 'true', cluster_id=cluster,
                   secrets=[models.EnvironmentVariableWithSecretValue(name='TOKEN', value='job-secret')])
    assert service.get('sealed').execution_state == 'queued'
    monkeypatch.setattr(stored_spec, '_SEALER', None)  # the restarted service's key is a new one
    _resize(service, 'later', 1, 'requeue')
    job = service.wait('sealed')
    assert job.execution_state == 'failed' and job.execution_info.exit_code is None
    assert _errors(job) == [('SecretsNotKept', stored_spec.SECRETS_NOT_KEPT)]
    assert 'job-secret' not in caplog.text
    assert 'job {} could not run'.format(service.key('sealed')) in [r.getMessage() for r in caplog.records]


def test_a_job_whose_process_cannot_be_started_fails_with_the_reason(service, caplog):
    """No bash on the job's PATH (its own variables set it): the job fails with JobStartFailed and the error."""
    caplog.set_level('INFO', logger=runner_module.__name__)
    service.submit('no-bash', 'true', environment_variables=[models.EnvironmentVariable(name='PATH',
                                                                                        value='/nonexistent')])
    job = service.wait('no-bash')
    assert job.execution_state == 'failed' and job.execution_info.exit_code is None
    ((code, message),) = _errors(job)
    assert code == 'JobStartFailed' and "No such file or directory: 'bash'" in message
    assert 'job {} could not run'.format(service.key('no-bash')) in [r.getMessage() for r in caplog.records]
    assert not service.runner.is_running(service.key('no-bash'))
