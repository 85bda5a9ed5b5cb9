"""--code on the Slurm scheduler, through the real az: the same scenario as on the processes scheduler
(tests/code/code_sweep.py), the jobs running as Slurm jobs on the loopback cluster's nodes, which read the snapshot
from the share every node mounts: the upload happens once per content, ignored files never reach a job, the
folder changing after submit changes nothing, resubmit runs the same snapshot."""
import pytest

from tests.code.code_sweep import create_submit_resubmit

pytestmark = [pytest.mark.az, pytest.mark.service]


def test_code_sweep_on_slurm(slurm_service, idle_cluster, tmp_path):  # pylint: disable=unused-argument
    create_submit_resubmit(slurm_service, str(tmp_path))
