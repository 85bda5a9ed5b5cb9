"""scripts/azure_batch_smoke.sh, run the way a user runs it (`az login`, then the script with their Batch account and
resource group), through the real az logged in offline to a custom cloud whose ARM and Batch data plane are the
doubles (TEST CODE: tests/azurebatch/login_fixtures.py; the lifecycle double behind Prism, e2e_fixtures.py). The
script runs start to end and leaves no pool; it fails, naming the reason, when a check does not hold: the pool's
growth refused for quota, a cluster over the quota not refused. What only Azure can show is said as not checked.

The one thing given that a user would not give: the scheduler's fast timings (as in every e2e test: the double runs
Batch's clock fast), in the environment the script's `local start` inherits."""
import os
import re
import subprocess

import pytest

from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import
from tests.azurebatch.e2e_fixtures import FAST_TIMINGS, add_account
from tests.fixtures_az import REPO_ROOT, VENV_BIN, base_env

pytestmark = [pytest.mark.az, pytest.mark.service]

SCRIPT = os.path.join(REPO_ROOT, 'scripts', 'azure_batch_smoke.sh')


def run_script(user, timeout=300, **options):
    """The script as a user runs it after `az login`: their az on PATH and their az config (the login), the Batch
    account and resource group in the environment, the service's data dir in the test's folder; `options`: more of
    the script's options (environment)."""
    login = user.login
    env = base_env(login.config_dir, {**login.env, 'PATH': VENV_BIN + os.pathsep + os.environ['PATH'],
                                      'AZURE_BATCHAI_SWEEP_BATCH_TIMINGS': FAST_TIMINGS,
                                      'BATCH_ACCOUNT': ACCOUNT, 'RESOURCE_GROUP': RESOURCE_GROUP,
                                      'DATA_DIR': user.data_dir, 'TMPDIR': user.directory, **options})
    return subprocess.run(['bash', SCRIPT], capture_output=True, text=True, env=env, cwd=user.directory,
                          timeout=timeout, check=False)


def _pools(user):
    with user.double.account.lock:
        return dict(user.double.account.pools)


def _ends_clean(done, user):
    """The cleanup ran: no pool is left at the double, and the script said so from `az batch pool list`."""
    assert 'no pool of prefix smoke is left' in done.stdout, done.stdout + done.stderr
    assert _pools(user) == {}


def test_the_smoke_script_runs_to_the_end_against_the_double(batch_user):  # pylint: disable=W0621
    done = run_script(batch_user)
    assert done.returncode == 0, done.stdout + done.stderr
    checks = re.findall(r'^ok: (.*)$', done.stdout, re.M)
    assert len(checks) == 8 and 'refused, naming the quota' in checks, done.stdout
    assert re.search(r'^ok: pool smoke-local-smoke-\w+ records this service as its owner$', done.stdout, re.M)
    assert 'ok: local stop lists no pool holding nodes' in done.stdout
    assert 'ok: 3 jobs succeeded on Batch tasks' in done.stdout
    assert "ok: the 3 jobs' metrics read back" in done.stdout
    assert re.search(r'^ok: pool smoke-local-smoke-\w+ has no node left$', done.stdout, re.M), done.stdout
    _ends_clean(done, batch_user)
    # What this run could not show is said, the cloud's name first.
    said = done.stdout[done.stdout.index('== not checked by this run'):]
    assert "az's cloud is BatchTestCloud, not one of Azure's" in said
    assert 'token refresh past an hour' in said and 'Azure Files mount' in said
    assert 'FAILED' not in done.stdout + done.stderr


def test_the_smoke_script_fails_naming_the_quota_when_its_pool_cannot_grow(batch_user):  # pylint: disable=W0621
    batch_user.double.faults.resize_error(code='AccountCoreQuotaReached')
    done = run_script(batch_user)
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"^FAILED: the sweep's jobs did not all succeed \(their errors: AccountCoreQuotaReached",
                     done.stderr, re.M), done.stderr
    _ends_clean(done, batch_user)


def test_the_smoke_script_fails_when_a_cluster_over_the_quota_is_not_refused(batch_user):  # pylint: disable=W0621
    add_account(batch_user.login, dedicatedCoreQuota=10 ** 7, dedicatedCoreQuotaPerVMFamily=[
        {'name': 'standardDSv3Family', 'coreQuota': 10 ** 7}])
    done = run_script(batch_user)
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'FAILED: a cluster of at most 100000 Standard_D2s_v3 nodes was not refused' in done.stderr, done.stderr
    _ends_clean(done, batch_user)  # the cluster made by mistake is deleted too


def test_the_smoke_script_checks_a_gpu_size_when_given_one(batch_user, tmp_path, monkeypatch):  # pylint: disable=W0621
    """GPU_VM_SIZE=Standard_NC4as_T4_v3 (issue 40 item 3): its cluster's pool gets the GPU image and its job
    AZ_BATCHAI_NUM_GPUS=1. The region's sizes are Microsoft's documented entries and the supported images the
    recorded list (tests/azurebatch/recorded/gpu_pools); the account's family quota is written as Microsoft.Compute
    writes it (standardNCASv3_T4Family) while the size's family is Batch's 'Standard NCASv3_T4 Family' (issue 48
    item 3). Stood in for (it cannot exist here): the node's NVIDIA driver, an `nvidia-smi -L` listing one T4."""
    from tests.azurebatch.gpu_recorded import documented, supported_images
    add_account(batch_user.login, dedicatedCoreQuotaPerVMFamily=[
        {'name': 'standardDSv3Family', 'coreQuota': 100}, {'name': 'standardNCASv3_T4Family', 'coreQuota': 4}])
    batch_user.login.double.vm_skus['eastus'] = documented('vmSkus')
    with batch_user.double.account.lock:
        batch_user.double.account.supported_images = supported_images()
    driver = tmp_path / 'driver'
    driver.mkdir()
    (driver / 'nvidia-smi').write_text('#!/bin/sh\necho "GPU 0: Tesla T4 (UUID: GPU-00000000)"\n')
    (driver / 'nvidia-smi').chmod(0o755)
    monkeypatch.setenv('PATH', str(driver) + os.pathsep + os.environ['PATH'])  # the double's nodes run with it
    done = run_script(batch_user, GPU_VM_SIZE='Standard_NC4as_T4_v3')
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'ok: Standard_NC4as_T4_v3: GPU image ubuntu-hpc, AZ_BATCHAI_NUM_GPUS=1 as nvidia-smi lists' in \
        done.stdout, done.stdout
    assert "a GPU size's image" not in done.stdout  # checked, so not listed as unchecked
    _ends_clean(done, batch_user)
