"""A 10,000-job experiment: `status`, `metrics` and `delete` through the real az complete with bounded memory (peak
RSS of each az process, measured with wait4), while the service keeps answering other requests (a prober measures
its latency throughout). Soak only: planning, submitting and running 10,000 jobs takes minutes on 2 cores.
"""
import json
import os
import threading
import time

import pytest

from azext_batchai_sweep.core.service.status import wait_for_jobs
from azext_batchai_sweep.core.service.submit import submit_jobs

from bench.procmem import run_measured
from tests.fixtures_az import AZ, base_env, service_env

from .helpers import client_for, make_plan, plan_bodies, quick_retry

# Minutes, not seconds: 10,000 jobs are run as processes before the commands are measured.
pytestmark = [pytest.mark.service, pytest.mark.az, pytest.mark.soak, pytest.mark.timeout(3600)]

JOBS = 10000
PEAK_RSS_LIMIT_MB = 400


class Prober:
    """GETs the workspace every 0.2 s from another client: every answer must come, and quickly."""

    def __init__(self, service):
        self.client = client_for(service)
        self.service = service
        self.latencies, self.errors = [], []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.wait(0.2):
            started = time.monotonic()
            try:
                self.client.workspaces.get(self.service.resource_group, self.service.workspace)
                self.latencies.append(time.monotonic() - started)
            except Exception as ex:  # pylint: disable=broad-except
                self.errors.append(repr(ex))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def measured_az(args, config_dir, service, cwd, timeout=1800):
    """Run az; (exit code, stdout, stderr, seconds, peak RSS in MB of the az process itself, bench/procmem.py)."""
    out_path, err_path = os.path.join(cwd, 'az.out'), os.path.join(cwd, 'az.err')
    with open(out_path, 'w') as out, open(err_path, 'w') as err:  # pylint: disable=unspecified-encoding
        code, seconds, peak = run_measured([AZ, *args], timeout=timeout, env=base_env(config_dir, service_env(service)),
                                           cwd=cwd, stdout=out, stderr=err)
    with open(out_path, encoding='utf-8') as out, open(err_path, encoding='utf-8') as err:
        return code, out.read(), err.read(), seconds, peak


def test_soak_10000_job_experiment_status_metrics_delete(service_factory, tmp_path):
    svc = service_factory(name='load', slots=8)
    client = client_for(svc)
    rg, ws = svc.resource_group, svc.workspace
    client.experiments.begin_create(rg, ws, 'load', polling=False).result()
    plan = make_plan(tmp_path, svc, 'load', JOBS, command='echo "loss=0.$PARAM_X"')
    started = time.monotonic()
    result = submit_jobs(client, rg, ws, 'load', plan_bodies(plan), parallel=16, retry=quick_retry())
    assert result['submitted'] == JOBS
    figures = {'submitSeconds': round(time.monotonic() - started, 1)}
    done = wait_for_jobs(client, rg, ws, 'load', sweep_name='rel', interval=5, timeout=3600, retry=quick_retry())
    assert done['finished'] and done['counts']['succeeded'] == JOBS, done['counts']
    figures['runSeconds'] = round(time.monotonic() - started, 1)

    config_dir = str(tmp_path / 'azure-config')
    os.makedirs(config_dir)
    common = ['-g', rg, '-w', ws, '-e', 'load', '-n', 'rel', '-o', 'json']
    commands = {
        'status': ['batchai', 'sweep', 'status', *common],
        'metrics': ['batchai', 'sweep', 'metrics', *common, '--metric', 'loss', '--output-directory-id', 'stdouterr',
                    '--file', 'stdout.txt', '--goal', 'min', '--top', '5'],
        'delete': ['batchai', 'sweep', 'delete', *common, '--yes'],
    }
    for name, args in commands.items():
        with Prober(svc) as prober:
            code, out, err, seconds, peak = measured_az(args, config_dir, svc, str(tmp_path))
        assert code == 0, err[-3000:]
        assert prober.errors == [], prober.errors[:3]
        assert prober.latencies and max(prober.latencies) < 5.0
        assert peak < PEAK_RSS_LIMIT_MB, (name, peak)
        figures[name] = {'seconds': round(seconds, 1), 'peakRssMB': round(peak, 1),
                         'probes': len(prober.latencies), 'maxProbeSeconds': round(max(prober.latencies), 3)}
        if name == 'status':
            assert json.loads(out)['counts']['succeeded'] == JOBS
    assert list(client.jobs.list_by_experiment(rg, ws, 'load')) == []
    print('\nFIGURES load 10000: {}'.format(json.dumps(figures)))
