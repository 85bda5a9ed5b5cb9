"""Jobs queued together go to Slurm as job arrays (one sbatch for many jobs), each task still the job it was.

To make "queued together" certain rather than likely, sbatch is reached through a gate on the service's PATH: a
shell script that waits for a file to exist, then runs the real sbatch (and logs its arguments). It is no stand-in:
every job runs on the real cluster; the gate only decides when the service's sbatch returns.
"""
import glob
import os
import shutil
import time

import pytest

from azext_batchai_sweep.core.service.client import local_batchai_client
from azext_batchai_sweep.localservice.schedulers.slurm.scheduler import ARRAYS_DIR, ENV_FILE
from tests.fixtures_service import kill_service, start_service, stop_service
from tests.localservice.conftest import job_params
from tests.slurm.conftest import slurm_service_args
from tests.slurm.test_slurm_jobs import create, stdout_of, wait_end
from azure.mgmt.batchai import models

GATE = """#!/bin/sh
# Wait for {before} before sbatch runs; an array's answer also waits for {after} before it goes to the service.
while [ ! -e {before} ]; do sleep 0.05; done
echo "$@" >> {log}
out=$({sbatch} "$@") || exit $?
case "$*" in *--array=*)
    touch {submitted}
    while [ ! -e {after} ]; do sleep 0.05; done;;
esac
echo "$out"
"""


# The same gate, but a cluster that refuses job arrays (as one with MaxArraySize=0, or a submit limit, would).
REFUSING_ARRAYS = """#!/bin/sh
while [ ! -e {before} ]; do sleep 0.05; done
echo "$@" >> {log}
case "$*" in *--array=*)
    echo "sbatch: error: Batch job submission failed: Invalid job array specification" >&2; exit 1;;
esac
exec {sbatch} "$@"
"""


class Gate:
    def __init__(self, root, script=GATE):
        self.dir = os.path.join(root, 'gate')
        os.makedirs(self.dir)
        self.before, self.after = os.path.join(self.dir, 'open'), os.path.join(self.dir, 'answer')
        self.log, self.submitted = os.path.join(self.dir, 'log'), os.path.join(self.dir, 'submitted')
        with open(os.path.join(self.dir, 'sbatch'), 'w', encoding='utf-8') as f:
            f.write(script.format(before=self.before, after=self.after, log=self.log, submitted=self.submitted,
                                sbatch=shutil.which('sbatch')))
        os.chmod(os.path.join(self.dir, 'sbatch'), 0o755)

    def open(self, *which):
        for path in which or (self.before, self.after):
            open(path, 'w').close()  # pylint: disable=consider-using-with

    def calls(self):
        with open(self.log, encoding='utf-8') as f:
            return f.read().splitlines()

    def wait_array_submitted(self, timeout=20):
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.submitted):
            assert time.monotonic() < deadline, 'no array was submitted'
            time.sleep(0.05)


def gated_service(cluster, root, gate, monkeypatch):
    monkeypatch.setenv('PATH', gate.dir + os.pathsep + os.environ['PATH'])
    service = start_service(os.path.join(root, 'svc'), extra_args=slurm_service_args(cluster))
    monkeypatch.undo()
    return service, local_batchai_client(service.endpoint, service.token_file, service.subscription)


def with_env(service, command, variables=(), secrets=(), **kwargs):
    params = job_params(service, command, **kwargs)
    params.environment_variables = [models.EnvironmentVariable(name=n, value=v) for n, v in variables]
    params.secrets = [models.EnvironmentVariableWithSecretValue(name=n, value=v) for n, v in secrets]
    return params


def test_jobs_queued_together_share_an_array_and_keep_their_own_environment(slurm_cluster, tmp_path, monkeypatch):
    slurm_cluster.wait_idle()
    gate = Gate(str(tmp_path))
    service, client = gated_service(slurm_cluster, str(tmp_path), gate, monkeypatch)
    try:
        create(client, service, 'arr', 'first', job_params(service, 'echo first'))  # its sbatch waits at the gate
        show = 'echo "v=$V s=$S pwd=$(pwd) tmp=$AZ_BATCHAI_JOB_TEMP other=${OTHER-unset}"'
        tricky = "it's \"quoted\" $HOME `x` \\ and\nnewline"
        names = ['a{}'.format(i) for i in range(6)]
        for i, name in enumerate(names):
            create(client, service, 'arr', name, with_env(service, show, [('V', 'value {}'.format(i))],
                                                          [('S', 'secret-{}-{}'.format(i, tricky))]))
        limit = models.JobBasePropertiesConstraints(max_wall_clock_time='PT5M')
        for name in ('t0', 't1'):  # another time limit: an array of their own
            create(client, service, 'arr', name, with_env(service, show, [('V', name)], constraints=limit))
        gate.open()
        jobs = {name: wait_end(client, service, 'arr', name) for name in ['first', *names, 't0', 't1']}
        assert {j.execution_state for j in jobs.values()} == {'succeeded'}, {
            n: (j.execution_state, j.execution_info.exit_code, j.execution_info.errors and
                j.execution_info.errors[0].message, stdout_of(service, j, 'stderr.txt')[-300:])
            for n, j in jobs.items() if j.execution_state != 'succeeded'}
        calls = gate.calls()
        assert len(calls) == 3, calls  # first; a0..a5; t0, t1
        assert '--array' not in calls[0]
        # The two arrays go to sbatch at once (in either order).
        six, two = sorted(calls[1:], key=lambda call: '--array=0-1' in call)
        assert '--array=0-5' in six and '--time=5' not in six
        assert '--array=0-1' in two and '--time=5' in two
        for i, name in enumerate(names):
            words = dict(w.split('=', 1) for w in stdout_of(service, jobs[name]).split()
                         if w.startswith(('pwd=', 'tmp=', 'other=')))
            assert words['pwd'] == words['tmp'] and words['other'] == 'unset'
            assert stdout_of(service, jobs[name]).startswith('v=value {} s=secret-{}-{}'.format(i, i, tricky))
        assert stdout_of(service, jobs['t1']).startswith('v=t1 ')
        leftovers = glob.glob(os.path.join(service.data_dir, 'jobs', '*', ENV_FILE))
        assert leftovers == [], 'environment files (with secrets) outlive the jobs that read them'
        assert os.listdir(os.path.join(service.data_dir, ARRAYS_DIR)) == []
        with open(os.path.join(service.data_dir, 'service.log'), encoding='utf-8') as f:
            assert 'secret-' not in f.read()
    finally:
        gate.open()
        stop_service(service)


def test_array_terminate_cancels_one_task_and_a_failing_task_fails_alone(slurm_cluster, tmp_path, monkeypatch):
    slurm_cluster.wait_idle()
    gate = Gate(str(tmp_path))
    service, client = gated_service(slurm_cluster, str(tmp_path), gate, monkeypatch)
    rg, ws = service.resource_group, service.workspace
    try:
        create(client, service, 'arr', 'first', job_params(service, 'true'))
        create(client, service, 'arr', 'long', job_params(service, 'sleep 300'))
        create(client, service, 'arr', 'bad', job_params(service, 'exit 4'))
        create(client, service, 'arr', 'ok', job_params(service, 'sleep 1; echo done'))
        gate.open()
        wait_end(client, service, 'arr', 'long', states=('running',))
        client.jobs.begin_terminate(rg, ws, 'arr', 'long').result()
        long = client.jobs.get(rg, ws, 'arr', 'long')
        assert long.execution_state == 'failed' and long.execution_info.errors[0].code == 'JobTerminated'
        bad, ok = wait_end(client, service, 'arr', 'bad'), wait_end(client, service, 'arr', 'ok')
        assert bad.execution_state == 'failed' and bad.execution_info.exit_code == 4
        assert ok.execution_state == 'succeeded' and stdout_of(service, ok) == 'done\n'
        assert '--array=0-2' in gate.calls()[1]
    finally:
        gate.open()
        stop_service(service)


def test_service_killed_before_storing_an_arrays_ids_finds_it_by_name(slurm_cluster, tmp_path, monkeypatch):
    """SIGKILL after Slurm accepted an array but before the service stored its ids: the restarted service finds
    the array by its name and follows its tasks; no job runs twice, none is lost."""
    slurm_cluster.wait_idle()
    gate = Gate(str(tmp_path))
    service, client = gated_service(slurm_cluster, str(tmp_path), gate, monkeypatch)
    runs = tmp_path / 'runs.txt'
    command = 'echo $AZ_BATCHAI_JOB_NAME >> {}'.format(runs)
    names = ['k{}'.format(i) for i in range(5)]
    try:
        for name in names:  # k0 alone (its sbatch waits at the gate), then k1..k4 queued together
            create(client, service, 'crash', name, job_params(service, command))
        gate.open(gate.before)
        gate.wait_array_submitted()  # the array is in Slurm; its ids never reach the service
        kill_service(service)
        gate.open(gate.after)
        service = start_service(service.data_dir, extra_args=slurm_service_args(slurm_cluster))
        client = local_batchai_client(service.endpoint, service.token_file, service.subscription)
        jobs = [wait_end(client, service, 'crash', name) for name in names]
        assert [j.execution_state for j in jobs] == ['succeeded'] * 5
        assert sorted(runs.read_text().split()) == names, 'every job ran exactly once'
        assert '--array=0-3' in gate.calls()[1] and len(gate.calls()) == 2
        assert os.listdir(os.path.join(service.data_dir, ARRAYS_DIR)) == []
    finally:
        gate.open()
        stop_service(service)


def test_a_refused_array_goes_job_by_job(slurm_cluster, tmp_path, monkeypatch):
    slurm_cluster.wait_idle()
    gate = Gate(str(tmp_path), REFUSING_ARRAYS)
    service, client = gated_service(slurm_cluster, str(tmp_path), gate, monkeypatch)
    names = ['first', 'r0', 'r1', 'r2']
    try:
        for name in names:
            create(client, service, 'refused', name, with_env(service, 'echo "v=$V"', [('V', name)]))
        gate.open()
        jobs = [wait_end(client, service, 'refused', name) for name in names]
        assert [j.execution_state for j in jobs] == ['succeeded'] * 4
        assert [stdout_of(service, j) for j in jobs] == ['v={}\n'.format(name) for name in names]
        calls = gate.calls()
        assert len(calls) == 5 and '--array=0-2' in calls[1], calls  # first; the refused array; r0, r1, r2
        assert not any('--array' in call for call in calls[2:])
        assert glob.glob(os.path.join(service.data_dir, 'jobs', '*', ENV_FILE)) == []
        assert os.listdir(os.path.join(service.data_dir, ARRAYS_DIR)) == []
        with open(os.path.join(service.data_dir, 'service.log'), encoding='utf-8') as f:
            assert 'sbatch refused a job array of 3 jobs (Batch job submission failed' in f.read()
    finally:
        gate.open()
        stop_service(service)


def test_the_cluster_says_how_large_an_array_may_be(slurm_cluster):
    from azext_batchai_sweep.localservice.schedulers.slurm.commands import SlurmCli
    shown = slurm_cluster.run('scontrol', 'show', 'config').stdout
    expected = int(next(line.split('=', 1)[1] for line in shown.splitlines() if line.startswith('MaxArraySize')))
    assert SlurmCli(slurm_cluster.conf).check()['maxArraySize'] == expected


@pytest.mark.parametrize('folder', ['data%j%%', 'data\\back%a'])
def test_an_array_in_a_data_directory_holding_sbatch_patterns(slurm_cluster, tmp_path, monkeypatch, folder):
    """The service's own paths go to sbatch too (an array's output goes through its folder, %a picking the task's):
    a % in the data directory is escaped; a backslash (which turns every pattern off) sends the jobs one by one."""
    slurm_cluster.wait_idle()
    root = tmp_path / folder
    root.mkdir()
    gate = Gate(str(tmp_path))  # the gate's shell script takes plain paths; the data directory is the test's
    service, client = gated_service(slurm_cluster, str(root), gate, monkeypatch)
    try:
        create(client, service, 'arr', 'first', job_params(service, 'echo first'))  # its sbatch waits at the gate
        names = ['p{}'.format(i) for i in range(3)]
        for name in names:
            create(client, service, 'arr', name, job_params(service, 'echo output of {}'.format(name)))
        gate.open()
        jobs = {name: wait_end(client, service, 'arr', name) for name in names}
        assert {j.execution_state for j in jobs.values()} == {'succeeded'}
        for name in names:
            assert stdout_of(service, jobs[name]) == 'output of {}\n'.format(name)
        arrays = [call for call in gate.calls() if '--array' in call]
        assert len(arrays) == (0 if '\\' in folder else 1), gate.calls()
    finally:
        gate.open()
        stop_service(service)
