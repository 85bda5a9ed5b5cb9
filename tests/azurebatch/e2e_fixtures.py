"""The local service on the Azure Batch scheduler for end-to-end tests: the real mapping modules and node
wrapper, against the lifecycle double of the Batch data plane (tests/azurebatch/double/, TEST CODE: loopback HTTPS
with its own CA, tasks as local processes, nodes as slots, autoscale on a fast Batch clock). What needs Azure
itself is given by construction (TEST CODE): the Batch account as found (its endpoint: the double's; its supported
images: SUPPORTED_IMAGES) and a token source (the double's tokens), until the account lookup and the offline login
(ab-account) are wired in.

`batch_service`: the service runs in the test's own process (its scheduler is built with the stand-ins by
construction: no user-facing option exists for them), and the real `az` talks to it over HTTP as a user's does.
`standin_az`: the real `az batchai sweep local start --scheduler azure-batch` spawns the real service, given the
same stand-ins by standin_site/sitecustomize.py.
"""
import os
import time
from dataclasses import dataclass

import pytest

from azext_batchai_sweep.localservice.azurebatch.auth import AzLoginCredential
from azext_batchai_sweep.localservice.azurebatch.preflight import AccountFacts
from azext_batchai_sweep.localservice.server import LocalService
from tests.azurebatch.double import BatchDouble
from tests.fixtures_az import AzRunner


# The account's supported images as the data plane lists them (one current Ubuntu).
SUPPORTED_IMAGES = [{'nodeAgentSKUId': 'batch.node.ubuntu 22.04', 'osType': 'linux', 'verificationType': 'verified',
                     'capabilities': [], 'batchSupportEndOfLife': '2027-04-30T00:00:00Z',
                     'imageReference': {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy',
                                        'sku': '22_04-lts', 'version': 'latest'}}]


# The VM sizes Batch offers in the account's region, as ARM lists them (what the ARM double would answer).
VM_SKUS = [{'name': 'Standard_D2s_v3', 'familyName': 'standardDSv3Family',
            'capabilities': [{'name': 'vCPUs', 'value': '2'}, {'name': 'GPUs', 'value': '0'}]}]


def account_info(double, mode='BatchService'):
    """The account as account.find_account describes it: 100 dedicated vCPUs of the D-series v3 family."""
    return {'batchAccount': 'testacct', 'batchResourceGroup': 'rg', 'batchEndpoint': double.endpoint,
            'poolAllocationMode': mode, 'supportedImages': SUPPORTED_IMAGES, 'dedicatedCoreQuota': 100,
            'lowPriorityCoreQuota': 100, 'dedicatedCoreQuotaPerVMFamilyEnforced': True,
            'dedicatedCoreQuotaPerVMFamily': [{'name': 'standardDSv3Family', 'coreQuota': 100}], 'poolQuota': 100,
            'activeJobAndJobScheduleQuota': 300}


class GivenFacts(AccountFacts):
    """TEST CODE: the facts cluster create checks, given (the region's VM sizes, the supported images) instead
    of fetched from ARM and Batch."""

    @property
    def vm_skus(self):
        return VM_SKUS

    @property
    def supported_images(self):
        return SUPPORTED_IMAGES


def tasks(double):
    """Every task of the double's account."""
    with double.account.lock:
        return [t for job in double.account.jobs.values() for t in job.tasks.values()]


@dataclass
class BatchService:
    double: BatchDouble
    service: LocalService
    info: dict
    az: AzRunner
    directory: str

    @property
    def scheduler(self):
        return self.service.runner

    def group(self):
        return ['-g', self.info['resourceGroup'], '-w', self.info['workspace']]

    def restart(self):
        """Stop the service (its tasks run on at Batch) and start a new one on the same data dir: re-attach."""
        self.service.shutdown()
        self.service = start(self.double, self.service.data_dir)
        self.info = self.service.info()
        self.az.env.update(_target(self.info))


def start(double, data_dir, poll_seconds=0.2):
    account = account_info(double)
    service = LocalService(data_dir, scheduler='azure-batch', azure_batch={
        'account_info': account, 'facts': GivenFacts(account),
        'credential': AzLoginCredential(source=lambda: (double.issue_token(), time.time() + 3600)),
        'poll_seconds': poll_seconds, 'pools_seconds': 0.5, 'files_seconds': 0.5, 'unrunnable_seconds': 2})
    service.start()
    return service


def _target(info):
    return {'AZURE_BATCHAI_SWEEP_ENDPOINT': info['endpoint'], 'AZURE_BATCHAI_SWEEP_TOKEN_FILE': info['tokenFile']}


@pytest.fixture
def batch_service(tmp_path, monkeypatch):
    double = BatchDouble(str(tmp_path / 'batch'))
    monkeypatch.setenv('REQUESTS_CA_BUNDLE', double.ca_file)  # the double's own test CA (no network, no real cert)
    service = start(double, str(tmp_path / 'data'))
    config = tmp_path / 'azure-config'
    config.mkdir()
    info = service.info()
    env = dict(_target(info), AZURE_CORE_ONLY_SHOW_ERRORS='false')
    handle = BatchService(double, service, info, AzRunner(str(config), env=env, cwd=str(tmp_path)), str(tmp_path))
    try:
        yield handle
    finally:
        handle.service.shutdown()
        double.close()


@dataclass
class StandInAz:
    """The real az, whose `local start --scheduler azure-batch` spawns the real service (a process of its own),
    given the account as found and a token source by standin_site/sitecustomize.py (TEST CODE)."""
    double: BatchDouble
    az: AzRunner
    directory: str
    data_dir: str


@pytest.fixture
def standin_az(tmp_path):
    import json
    from tests.fixtures_az import REPO_ROOT
    double = BatchDouble(str(tmp_path / 'batch'))
    settings = tmp_path / 'standins.json'
    settings.write_text(json.dumps({
        'endpoint': double.endpoint, 'token': double.token, 'ca': double.ca_file, 'repo': REPO_ROOT,
        'account': account_info(double, 'UserSubscription')}))
    config = tmp_path / 'azure-config'
    config.mkdir()
    site = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'standin_site')
    env = {'BATCHAI_TEST_STANDINS': str(settings), 'PYTHONPATH': site}
    handle = StandInAz(double, AzRunner(str(config), env=env, cwd=str(tmp_path)), str(tmp_path),
                       str(tmp_path / 'data'))
    try:
        yield handle
    finally:
        handle.az('batchai', 'sweep', 'local', 'stop', '--data-dir', handle.data_dir)
        double.close()


def wait_until(condition, timeout=30, what=''):
    """Wait until condition() is true; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def write_sweep(directory, name, command, values, **job):
    import json
    body = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
            'customToolkitSettings': {'commandLine': command}, **job}
    path = os.path.join(directory, name)
    with open(path, 'w', encoding='utf-8') as f:
        f.write('jobNamePrefix: ab\nparameters:\n  - {{name: X, type: discrete, values: {}}}\njob: {}\n'.format(
            json.dumps(values), json.dumps(body)))
    return path
