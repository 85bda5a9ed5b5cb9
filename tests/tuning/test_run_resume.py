"""Resume resumes (issue 42, item 4), as docs/pipelines.md tells a user to do it: a run with --stop-on-exit is
interrupted (SIGTERM, as a CI runner cancels a step) while jobs run; it stops them and prints "Resume the run with
"..."". That printed command, run as printed, re-runs the jobs the first run stopped on its way out (they were never
judged), so the sweep ends as an uninterrupted run would: every job ran to the end, none counted as stopped early,
no job-step counted as saved. The real az, the session's local service.
"""
import json
import os
import re
import signal
import subprocess
import time
import uuid

import pytest

from azext_batchai_sweep.core.tuning.loop import job_state
from tests.fixtures_az import AZ, base_env, service_az, service_env

from .run_helpers import Watcher, target, write_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]

EPOCHS = 12


# limits.stopOnExit stops the jobs the same way (tests/tuning/test_run_exit.py): one form is enough here.
@pytest.mark.parametrize('how', ['--stop-on-exit'])
def test_the_printed_resume_command_reruns_the_jobs_stopped_on_exit(local_service, batchai_client, tmp_path, how):
    directory = str(tmp_path)
    az = service_az(local_service, directory)
    experiment, sweep = 'resume-' + uuid.uuid4().hex[:8], 'resumed'
    sections = ['limits: {maxConcurrentJobs: 2, stopOnExit: true}' if how != '--stop-on-exit'
                else 'limits: {maxConcurrentJobs: 2}']
    spec = write_sweep(directory, sweep, sections, [0.9, 0.8, 0.7], epochs=EPOCHS, sleep=0.25)
    command = [AZ, 'batchai', 'sweep', 'run', *target(local_service, experiment, sweep), '--spec', spec, '-c',
               local_service.cluster, '--poll-interval', '0.2', '-o', 'json'] + \
        (['--stop-on-exit'] if how == '--stop-on-exit' else [])
    env = base_env(az.config_dir, service_env(local_service))
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, env=env, cwd=directory, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    watcher = Watcher(batchai_client, local_service, experiment, sweep)
    try:
        deadline = time.monotonic() + 60
        while sum(job_state(job) == 'running' for job in watcher.jobs()) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        time.sleep(0.6)  # a few epochs logged
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    stopped = sorted(job.name for job in watcher.jobs() if job_state(job) == 'terminated')
    assert len(stopped) == 2, err
    resume = re.search(r'Resume the run with "([^"]+)"', err)
    assert resume, err

    env['PATH'] = os.path.dirname(AZ) + os.pathsep + env['PATH']  # the az the user typed
    resumed = subprocess.run(resume.group(1), shell=True, executable='/bin/bash', stdin=subprocess.DEVNULL, env=env,
                             cwd=directory, capture_output=True, text=True, timeout=240, check=False)
    assert resumed.returncode == 0, resumed.stderr
    for name in stopped:
        assert '{}: run again from its start: the last run stopped it on its way out'.format(name) in resumed.stderr
    result = json.loads(resumed.stdout)
    assert result['counts'] == {'succeeded': 3}, result
    assert result['decisions'] == {'ran to the end': 3}, result
    compute = result['compute']
    assert (compute['jobSteps'], compute['jobStepsFull'], compute['jobStepsSaved']) == (3 * EPOCHS, 3 * EPOCHS, 0)
    assert result['best']['parameters'] == {'Q': 0.9}
    # Nothing twice: three jobs, the two stopped ones under their own names.
    assert sorted(job.name for job in watcher.jobs()) == sorted(set(job.name for job in watcher.jobs()))
    assert len(watcher.jobs()) == 3 and set(stopped) <= {job.name for job in watcher.jobs()}
