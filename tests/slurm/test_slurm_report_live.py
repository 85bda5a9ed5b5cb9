"""The live report (issue 43) on the real Slurm cluster: `sweep run --report FILE` keeps the page's data sidecar
current as the sweep's Slurm jobs run and end one by one, and ends it "final" (the page itself is proven in
Chromium on the processes scheduler, tests/report/test_report_live.py)."""
import uuid

import pytest

from tests.fixtures_az import service_az
from tests.report.test_report_live import follow_gated_run, gated_sweep, sidecar_rows

pytestmark = [pytest.mark.az, pytest.mark.service]


def test_run_report_follows_slurm_jobs_to_the_end(slurm_service, idle_cluster, tmp_path):  # pylint: disable=W0613
    directory = str(tmp_path)
    az = service_az(slurm_service, directory)
    target = ['-g', slurm_service.resource_group, '-w', slurm_service.workspace, '-e',
              'live-' + uuid.uuid4().hex[:8], '-n', 'live']
    last, result = follow_gated_run(az, target, gated_sweep(directory), slurm_service.cluster, directory)
    assert result['jobs'] == 3 and result['best']['parameters'] == {'Q': 0.9}
    rows = sidecar_rows(last)
    assert all(str(row[-2]).isdigit() for row in rows), rows  # each job's Slurm job id, as squeue knows it
