"""`status --wait` and `metrics` through a service that fails a third of its ARM requests: they keep their place.

The service answers 20% 500/503, 10% 429 + Retry-After and drops 2% of connections on the ARM API (listings,
listOutputFiles); the download links themselves are not faulted (they are storage, not ARM). Every job must come
back with its own metric, and the waiting command must end with the right counts, through the real `az`.
"""
import http.client
import json
import subprocess
import urllib.error
import urllib.request

import pytest

from azext_batchai_sweep.core.service.submit import submit_jobs
from tests.fixtures_az import AZ, base_env, service_env

from .helpers import client_for, make_plan, plan_bodies, quick_retry

pytestmark = [pytest.mark.service, pytest.mark.az]

JOBS = 24


def test_status_wait_and_metrics_read_every_job_through_faults(service_factory, tmp_path):
    svc = service_factory(name='faulty-reads', faults='5xx=0.2,429=0.1,drop=0.02,seed=5', slots=2)
    client = client_for(svc, retry_total=20)
    client.experiments.begin_create(svc.resource_group, svc.workspace, 'reads', polling=False).result()
    plan = make_plan(tmp_path, svc, 'reads', JOBS)  # each job prints "x=<X>", Katib's format for metric x
    assert submit_jobs(client, svc.resource_group, svc.workspace, 'reads', plan_bodies(plan),
                       retry=quick_retry())['submitted'] == JOBS
    common = ['batchai', 'sweep', '-g', svc.resource_group, '-w', svc.workspace, '-e', 'reads', '-n', 'rel']
    env = base_env(str(tmp_path / 'azure-config'), service_env(svc))

    def az(*args):
        return subprocess.run([AZ, *common[:2], *args, *common[2:], '-o', 'json'], capture_output=True, text=True,
                              env=env, timeout=600, check=False)

    waited = az('status', '--wait', '--interval', '0.5')
    assert waited.returncode == 0, waited.stderr[-2000:]
    assert json.loads(waited.stdout)['counts']['succeeded'] == JOBS
    assert 'Traceback' not in waited.stderr

    metrics = az('metrics', '--metric', 'x', '--goal', 'max')
    assert metrics.returncode == 0, metrics.stderr[-2000:]
    rows = json.loads(metrics.stdout)
    assert [row['metric'] for row in rows] == [float(x) for x in reversed(range(JOBS))]
    assert all(row['metric'] == float(row['parameters']['X']) for row in rows)
    # The service really was failing meanwhile: plain GETs of the experiment, without retries, fail often.
    assert sum(not _get_ok(svc) for _ in range(40)) >= 4


def _get_ok(svc):
    url = '{}/subscriptions/{}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}/experiments/reads' \
          '?api-version=2018-05-01'.format(svc.endpoint, svc.subscription, svc.resource_group, svc.workspace)
    request = urllib.request.Request(url, headers={'Authorization': 'Bearer ' + svc.token})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, http.client.HTTPException):
        return False
