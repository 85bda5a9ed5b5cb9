"""The live report (issue 43) on the Azure Batch scheduler (the lifecycle double behind Prism, e2e_fixtures.py):
`sweep run --report FILE` keeps the page's data sidecar current as the sweep's Batch tasks run and end one by one,
the running ones' logs read through the task file API, and ends it "final" (the page itself is proven in Chromium
on the processes scheduler, tests/report/test_report_live.py)."""
import pytest

from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import
from tests.report.test_report_live import follow_gated_run, gated_sweep

pytestmark = [pytest.mark.az, pytest.mark.service]


def test_run_report_follows_batch_tasks_to_the_end(batch_service):  # pylint: disable=redefined-outer-name
    svc = batch_service
    created = svc.az('batchai', 'cluster', 'create', '-n', 'live', *svc.group(), '-s', 'Standard_D2s_v3', '-t', '1',
                     '-u', 'batchai', '-p', 'not-used-0A!')
    assert created.exit_code == 0, created.stderr
    # The logs in the task's folder on its node, read while the task runs through Batch's task file API (this
    # cluster mounts no share for $AZ_BATCHAI_MOUNT_ROOT).
    target = [*svc.group(), '-e', 'live', '-n', 'live']
    spec = gated_sweep(svc.directory, logs='$AZ_BATCHAI_JOB_TEMP/logs')
    _, result = follow_gated_run(svc.az, target, spec, 'live', svc.directory)
    assert result['jobs'] == 3 and result['best']['parameters'] == {'Q': 0.9}
    assert len(tasks(svc.double)) == 3  # each job one Batch task
