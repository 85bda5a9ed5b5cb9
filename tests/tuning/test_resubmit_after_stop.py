"""`resubmit --state terminated` after `stop` (issue 42, item 7), through the real az on the session's local service,
as a user does it: a sweep whose jobs mount an Azure file share (the demo's shape), made by `submit` or by `run`
(which leaves no plan file), stopped with `sweep stop`, then resubmitted without a plan file. The service never
returns a mount's key; on the local service the key is its own, so nothing write-only is missing and every terminated
job is created again. A job whose secrets only a plan file holds is refused with az's error naming the fix, never
"Invalid sweep definition"."""
import json
import subprocess
import sys
import time
import uuid

import pytest

from azext_batchai_sweep.core.tuning.loop import job_state
from tests.fixtures_az import AZ, base_env, service_az, service_env

from .run_helpers import CURVE, Watcher, target

pytestmark = [pytest.mark.az, pytest.mark.service]


def _spec(directory, name, secret=False):
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
           'mountVolumes': {'azureFileShares': [{
               'azureFileUrl': 'https://<AZURE_BATCHAI_STORAGE_ACCOUNT>.file.core.windows.net/logs',
               'relativeMountPath': 'logs'}]},
           # a negative quality hangs: the jobs run until `sweep stop`
           'customToolkitSettings': {'commandLine': '{} {} {{{{Q}}}} 1 0.01'.format(sys.executable, CURVE)}}
    if secret:
        job['secrets'] = [{'name': 'API_TOKEN', 'value': '$env:API_TOKEN'}]  # resolved from run's environment
    path = '{}/{}.yaml'.format(directory, name)
    with open(path, 'w', encoding='utf-8') as f:
        f.write('jobNamePrefix: {}\nobjective: {{metric: val_accuracy, goal: max}}\nparameters:\n'
                '  - {{name: Q, type: discrete, values: [-1, -2]}}\njob: {}\n'.format(name, json.dumps(job)))
    return path


def _running(watcher, count, run=None, deadline=60):
    end = time.monotonic() + deadline
    while sum(job_state(job) == 'running' for job in watcher.jobs()) < count:
        assert run is None or run.poll() is None, run.communicate()
        assert time.monotonic() < end, [job_state(job) for job in watcher.jobs()]
        time.sleep(0.2)


def _start_and_stop(az, local_service, batchai_client, experiment, sweep, spec, how):
    args = [*target(local_service, experiment, sweep), '--spec', spec, '-c', local_service.cluster,
            '--storage-account-name', 'acct']
    watcher = Watcher(batchai_client, local_service, experiment, sweep)
    run = None
    if how == 'submit':
        submitted = az('batchai', 'sweep', 'submit', *args, '-o', 'none')
        assert submitted.exit_code == 0, submitted.stderr
    else:
        env = dict(base_env(az.config_dir, service_env(local_service)), API_TOKEN='token-for-the-job')
        run = subprocess.Popen([AZ, 'batchai', 'sweep', 'run', *args, '--poll-interval', '0.3', '-o', 'none'],
                               env=env, cwd=az.cwd,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _running(watcher, 2, run)
    stopped = az('batchai', 'sweep', 'stop', *target(local_service, experiment, sweep), '--yes', '-o', 'json')
    assert stopped.exit_code == 0 and len(stopped.json()['stopped']) == 2, stopped.stderr
    if run is not None:
        _, err = run.communicate(timeout=60)
        assert run.returncode == 4, err  # `sweep stop` during a run ends it
    return watcher


@pytest.mark.parametrize('how', ['submit', 'run'])
def test_resubmit_terminated_after_stop_recreates_jobs_that_mount_a_share(local_service, batchai_client, tmp_path,
                                                                         how):
    az = service_az(local_service, str(tmp_path))
    experiment, sweep = 'resub-' + uuid.uuid4().hex[:8], 'shares-' + how
    spec = _spec(str(tmp_path), sweep)
    watcher = _start_and_stop(az, local_service, batchai_client, experiment, sweep, spec, how)
    (tmp_path / '{}.plan.jsonl'.format(sweep)).unlink(missing_ok=True)  # from the service alone, as after `run`
    again = az('batchai', 'sweep', 'resubmit', *target(local_service, experiment, sweep), '--state', 'terminated',
               '-o', 'json')
    assert again.exit_code == 0, again.stderr
    assert len(again.json()['resubmitted']) == 2 and not again.json()['failed'], again.stdout
    _running(watcher, 2)  # created again, with their mount, and running
    stopped = az('batchai', 'sweep', 'stop', *target(local_service, experiment, sweep), '--yes', '-o', 'none')
    assert stopped.exit_code == 0, stopped.stderr


def test_a_secret_only_the_plan_holds_is_refused_naming_the_fix(local_service, batchai_client, tmp_path):
    az = service_az(local_service, str(tmp_path))
    experiment, sweep = 'resub-' + uuid.uuid4().hex[:8], 'secret'
    spec = _spec(str(tmp_path), sweep, secret=True)
    watcher = _start_and_stop(az, local_service, batchai_client, experiment, sweep, spec, 'run')
    again = az('batchai', 'sweep', 'resubmit', *target(local_service, experiment, sweep), '--state', 'terminated')
    assert again.exit_code != 0
    assert 'Invalid sweep definition' not in again.stderr and 'Traceback' not in again.stderr
    assert 'need write-only values the service does not return (properties.secrets in ' in again.stderr, again.stderr
    assert '--plan-file' in again.stderr and 'another -n' in again.stderr
    assert sorted(job_state(job) for job in watcher.jobs()) == ['terminated', 'terminated']  # nothing deleted
