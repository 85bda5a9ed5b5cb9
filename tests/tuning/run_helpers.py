"""Helpers of the `sweep run` end-to-end tests: sweep files of tiny deterministic jobs, and a watcher that checks the
service while a run goes on."""
import os
import sys
import threading

from azext_batchai_sweep.core.service.listing import list_jobs, sweep_name_of
from azext_batchai_sweep.core.tuning.loop import job_state

CURVE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'curve.py')
TRADEOFF = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'tradeoff.py')


OBJECTIVE = '{metric: val_accuracy, goal: max, step: epoch}'


def write_sweep(directory, name, sections, values, epochs='{{EPOCHS}}', sleep=0.05, objective=OBJECTIVE):
    """A sweep file over Q (the job's quality: the larger, the better at every epoch) running data/curve.py."""
    command = '{} {} {{{{Q}}}} {} {}'.format(sys.executable, CURVE, epochs, sleep)
    return _write(directory, name, ['objective: ' + objective, *sections],
                  ['  - {{name: Q, type: discrete, values: {}}}'.format(list(values))],
                  ['  outputDirectories: [{id: MODEL, pathPrefix: $AZ_BATCHAI_MOUNT_ROOT/outputs}]'], command)


def with_q_range(spec, q_range):
    """The sweep file `spec` of write_sweep([0.5]) with Q as `q_range` (a YAML parameter) instead of its one
    discrete value; returns spec."""
    with open(spec, encoding='utf-8') as f:
        text = f.read().replace('{name: Q, type: discrete, values: [0.5]}', q_range)
    with open(spec, 'w', encoding='utf-8') as f:
        f.write(text)
    return spec


def write_tradeoff_sweep(directory, name, sections, q_values, epochs=2, k_values=(1, 2)):
    """A sweep file over Q and K running data/tradeoff.py (accuracy Q, latency 100 Q K, memory 10 Q per epoch): the
    sections name its objective(s) and constraints."""
    command = '{} {} {{{{Q}}}} {{{{K}}}} {} 0.02'.format(sys.executable, TRADEOFF, epochs)
    return _write(directory, name, sections, ['  - {{name: Q, type: discrete, values: {}}}'.format(list(q_values)),
                                             '  - {{name: K, type: discrete, values: {}}}'.format(list(k_values))],
                  [], command)


def _write(directory, name, sections, parameters, job, command):
    text = '\n'.join(['jobNamePrefix: {}'.format(name), *sections, 'parameters:', *parameters, 'job:',
                      '  nodeCount: 1', '  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs', *job,
                      '  customToolkitSettings: {{commandLine: "{}"}}'.format(command)])
    path = os.path.join(directory, name + '.yaml')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text + '\n')
    return path


def report_html(az, service, experiment, sweep, directory):
    """(`report -o json`'s result, the HTML it wrote) of a sweep on the service."""
    path = os.path.join(directory, sweep + '.html')
    made = az('batchai', 'sweep', 'report', *target(service, experiment, sweep), '-f', path, '-o', 'json')
    assert made.exit_code == 0, made.stderr
    with open(path, encoding='utf-8') as f:
        return made, f.read()


class Watcher:
    """Lists the sweep's jobs every few hundredths of a second while a run goes on: the most ever queued, running or
    terminating at once, as the service saw it."""

    def __init__(self, client, service, experiment, sweep):
        self.client, self.service, self.experiment, self.sweep = client, service, experiment, sweep
        self.most = 0
        self.listings = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def jobs(self):
        """The sweep's jobs now ([] before its experiment exists)."""
        from azure.core.exceptions import ResourceNotFoundError
        try:
            return [job for job in list_jobs(self.client, self.service.resource_group, self.service.workspace,
                                             self.experiment) if sweep_name_of(job) == self.sweep]
        except ResourceNotFoundError:
            return []

    def _watch(self):
        while not self._stop.is_set():
            try:
                active = sum(job_state(job) in ('queued', 'running', 'terminating') for job in self.jobs())
            except Exception:  # pylint: disable=broad-except
                continue  # the experiment does not exist yet
            self.most = max(self.most, active)
            self.listings += 1
            self._stop.wait(0.03)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def kill_and_resume(command, env, cwd, watcher, kill_points, config_dir, sweep, delete_journal_at=(), timeout=120):
    """Start the run, SIGKILL it once the service holds `kill_point` jobs of the sweep, for each kill point; with a
    kill point in `delete_journal_at`, the run's journal is deleted too. Returns how many kills hit a running az."""
    import glob
    import signal
    import subprocess
    import time
    kills = 0
    for kill_point in kill_points:
        proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.monotonic() + timeout
        while len(watcher.jobs()) < kill_point and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        kills += proc.wait() == -signal.SIGKILL
        if kill_point in delete_journal_at:
            for path in glob.glob(os.path.join(config_dir, 'batchai-sweep', 'journals', sweep + '-*.run.json')):
                os.unlink(path)
    return kills


def hyperband_decisions(jobs):
    """What Hyperband did, independent of job names and timing: (bracket, rung, slot, Q) of every job."""
    from azext_batchai_sweep.core.service.listing import env_of
    out = set()
    for job in jobs:
        env = env_of(job)
        out.add((env['BATCHAI_SWEEP_BRACKET'], env['BATCHAI_SWEEP_RUNG'], env['BATCHAI_SWEEP_SLOT'], env['PARAM_Q']))
    return out


def service_setup(service, tmp_path_factory, name):
    """(az pointed at the service, a folder for the sweep files, a new experiment's name) for one test module."""
    import uuid
    from tests.fixtures_az import service_az
    directory = str(tmp_path_factory.mktemp(name))
    return service_az(service, directory), directory, name + '-' + uuid.uuid4().hex[:8]


def target(service, experiment, sweep):
    """-g -w -e -n of a sweep on the service."""
    return ['-g', service.resource_group, '-w', service.workspace, '-e', experiment, '-n', sweep]


def steps_in_log(az, service, experiment, sweep, job):
    """How many steps (`epoch=` lines) a job's log shows: what it ran, a stopped job's steps after its decision too."""
    tail = az('batchai', 'sweep', 'status', *target(service, experiment, sweep), '--job', job, '--tail', '200',
              '-o', 'json')
    assert tail.exit_code == 0, tail.stderr
    return sum(1 for line in tail.json() if line.startswith('epoch='))


def run_args(service, experiment, sweep, spec, *extra):
    """`az batchai sweep run` of a sweep file on the service, polling often, JSON out."""
    return ['batchai', 'sweep', 'run', *target(service, experiment, sweep), '--spec', spec, '-c', service.cluster,
            '--poll-interval', '0.2', '-o', 'json', *extra]

