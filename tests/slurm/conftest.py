"""The session's Slurm cluster (tests/slurm/cluster.py) and a local service scheduling on it.

Started once per test session, and only when a test of this folder runs. Without the Slurm binaries or root the
tests skip and say why; in CI (CI=true) they fail instead, since CI installs Slurm (`make test` as root does).
"""
import os

import pytest

from azext_batchai_sweep.core.service.client import local_batchai_client
from tests.fixtures_service import start_service, stop_service
from tests.slurm.cluster import SlurmCluster, why_unavailable
from tests.spec_conformance import SpecCheckPolicy

POLL = '0.2'  # seconds between the service's squeue polls (1 s by default)


@pytest.fixture(scope='session')
def slurm_cluster():
    reason = why_unavailable()
    if reason:
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail('Slurm tests cannot run in CI: ' + reason)
        pytest.skip('SLURM TESTS SKIPPED: ' + reason)
    cluster = SlurmCluster(nodes=4, cpus=4).start()
    yield cluster
    cluster.stop()


def slurm_service_args(cluster, *extra):
    return ['--scheduler', 'slurm', '--slurm-conf', cluster.conf, '--slurm-poll', POLL, *extra]


@pytest.fixture(scope='session')
def slurm_service(slurm_cluster, tmp_path_factory):
    info = start_service(str(tmp_path_factory.mktemp('slurm-service')), extra_args=slurm_service_args(slurm_cluster))
    yield info
    stop_service(info)


@pytest.fixture(scope='session')
def slurm_client(slurm_service):
    return local_batchai_client(slurm_service.endpoint, slurm_service.token_file, slurm_service.subscription,
                                per_retry_policies=[SpecCheckPolicy()])


@pytest.fixture
def idle_cluster(slurm_cluster):
    """The cluster with no job left over from a test before (each node idle)."""
    slurm_cluster.wait_idle()
    return slurm_cluster
