"""The local service on the Azure Batch scheduler for end-to-end tests, started the way a user starts it:
`az login` (the real az, offline: tests/azurebatch/login_fixtures.py), then
`az batchai sweep local start --scheduler azure-batch --batch-account NAME -g RG`. The service az spawns finds the
account with azure-mgmt-batch through az's login (ARM: the ARM double), gets its Batch tokens from az
(`az account get-access-token`, as for a user) and sends all its Batch data-plane traffic through Prism
(`batch_prism`: the lifecycle double, TEST CODE, behind Prism validating every request and answer against the Batch
spec; the test fails on any violation).

The one thing the tests give that a user would not: the scheduler's timings (TIMINGS_ENV, in the environment of
`local start`), because the double runs Batch's clock fast and the default 5 s poll would make each test last
minutes. Nothing else of the service, of az or of the login is replaced.
"""
import contextlib
import os
import pathlib
import signal
import time
from dataclasses import dataclass, field

import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch.connect import TIMINGS_ENV
from azext_batchai_sweep.localservice.schedulers.azurebatch.preflight import AccountFacts
from tests.azurebatch.login_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import
from tests.fixtures_az import AzRunner

ACCOUNT, RESOURCE_GROUP = 'testacct', 'batch-rg'
# The local service's own subscription and resource group (where `-g batchai-local` clusters live): the last two
# parts of names.pool_id and batch_job_id for its clusters.
LOCAL = ('00000000-0000-0000-0000-000000000000', 'batchai-local')
FAST_TIMINGS = 'poll=0.2,pools=0.5,files=0.5,unrunnable=2'
# What a new account's quotas would be after a quota increase: 100 dedicated vCPUs of the D-series v3 family.
QUOTAS = {'dedicatedCoreQuota': 100, 'lowPriorityCoreQuota': 100,
          'dedicatedCoreQuotaPerVMFamily': [{'name': 'standardDSv3Family', 'coreQuota': 100}]}


def tasks(double):
    """Every task of the double's account."""
    with double.account.lock:
        return [t for job in double.account.jobs.values() for t in job.tasks.values()]


def _alive(pid):
    try:
        with open('/proc/{}/stat'.format(pid), encoding='ascii') as f:
            return f.read().split(')')[1].split()[0] != 'Z'
    except OSError:
        return False


@dataclass
class BatchService:  # pylint: disable=too-many-instance-attributes
    """A user logged in with az, and the service `local start --scheduler azure-batch` spawned for them.

    ``double``: batch_prism (the lifecycle double behind Prism: its account, faults, requests); ``login``: the
    OfflineLogin (``login.double``: the ARM double); ``az``: the real az as that user, targeting the service;
    ``info``: what `local start -o json` printed (pid, endpoint, workspace, batchAccount...)."""
    double: object
    login: object
    az: AzRunner
    directory: str
    data_dir: str
    start_args: list = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def group(self):
        return ['-g', self.info['resourceGroup'], '-w', self.info['workspace']]

    def start(self, *extra, env=None):
        """`az batchai sweep local start --scheduler azure-batch --batch-account ACCOUNT -g RG` (+ ``extra``), in
        the user's environment plus ``env`` (e.g. Cloud Shell's variables; the service inherits them)."""
        started = self.az('batchai', 'sweep', 'local', 'start', '--data-dir', self.data_dir, '--scheduler',
                          'azure-batch', '--batch-account', ACCOUNT, '-g', RESOURCE_GROUP, *extra, '-o', 'json',
                          env=env)
        assert started.exit_code == 0, started.stderr
        # The account as ARM described it: its data plane is Prism's endpoint (every Batch call is checked there).
        assert 'scheduling on Azure Batch account {} ({})'.format(ACCOUNT, self.double.endpoint) in self.log()
        self.start_args = list(extra)
        self.info = started.json()
        return started

    def kill(self):
        """SIGKILL the service (its tasks run on at Batch) and wait until it is gone."""
        os.kill(self.info['pid'], signal.SIGKILL)
        wait_until(lambda: not _alive(self.info['pid']), what='the service is killed')

    def restart(self):
        """Kill the service and start it again on the same data dir, through az: it re-attaches."""
        self.kill()
        return self.start(*self.start_args)

    def log(self):
        with open(os.path.join(self.data_dir, 'service.log'), encoding='utf-8', errors='replace') as f:
            return f.read()


def add_account(login, **properties):
    """The Batch account ACCOUNT in RESOURCE_GROUP (BatchService mode, QUOTAS unless overridden)."""
    return login.double.add_batch_account(ACCOUNT, resource_group=RESOURCE_GROUP, **{**QUOTAS, **properties})


@pytest.fixture
def batch_user(az_offline_login, batch_prism, tmp_path):
    """A user logged in with az (one offline login per test module), whose Batch account ACCOUNT's data plane is
    the lifecycle double behind Prism, with the role Azure Batch Data Contributor on it. No service yet:
    `.start()` runs `local start`; stopped at the end of the test."""
    login = az_offline_login
    login.double.serve_batch_with(batch_prism)
    login.trust(batch_prism.ca_file)
    account_id = add_account(login)
    login.double.assign('Azure Batch Data Contributor', account_id)
    env = dict(login.env, AZURE_CORE_ONLY_SHOW_ERRORS='false', **{TIMINGS_ENV: FAST_TIMINGS})
    handle = BatchService(batch_prism, login, AzRunner(login.config_dir, env=env, cwd=str(tmp_path)),
                          str(tmp_path), str(tmp_path / 'data'))
    try:
        yield handle
    finally:
        handle.az('batchai', 'sweep', 'local', 'stop', '--data-dir', handle.data_dir)
        if handle.info.get('pid') and _alive(handle.info['pid']):
            os.kill(handle.info['pid'], signal.SIGKILL)


@pytest.fixture
def batch_service(batch_user):  # pylint: disable=redefined-outer-name
    """``batch_user`` with the service started: `az batchai sweep local start --scheduler azure-batch
    --batch-account testacct -g batch-rg`."""
    batch_user.start()
    return batch_user


# ---- In the test's own process, for tests/azurebatch/test_e2e_share_outputs.py only ----------------------------
# The one seam left (TEST CODE): that test's share reader must be given the Files double's endpoint instead of
# `<account>.file.core.windows.net` (which cannot be reached offline), and only construction can give it, so its
# service runs in the test's process, built with its parts: the account as found (ACCOUNT_AS_FOUND), the facts
# cluster create checks (GivenFacts), and tokens from the double. Everything else runs the user's path above.

# The account's supported images as the data plane lists them (one current Ubuntu).
SUPPORTED_IMAGES = [{'nodeAgentSKUId': 'batch.node.ubuntu 22.04', 'osType': 'linux', 'verificationType': 'verified',
                     'capabilities': [], 'batchSupportEndOfLife': '2027-04-30T00:00:00Z',
                     'imageReference': {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy',
                                        'sku': '22_04-lts', 'version': 'latest'}}]
# The VM sizes Batch offers in the account's region, as ARM lists them.
VM_SKUS = [{'name': 'Standard_D2s_v3', 'familyName': 'standardDSv3Family',
            'capabilities': [{'name': 'vCPUs', 'value': '2'}, {'name': 'GPUs', 'value': '0'}]}]


# Azure's Ubuntu HPC image (it ships MPI) as the data plane lists it (the double's list): an account offering it
# gives multi-node clusters an image a multi-node job may run on (mapping.AbMapMapping._check_mpi).
HPC_IMAGE = {'nodeAgentSKUId': 'batch.node.ubuntu 22.04', 'osType': 'linux', 'verificationType': 'verified',
             'capabilities': ['DockerCompatible', 'NvidiaTeslaDriverInstalled'],
             'imageReference': {'publisher': 'microsoft-dsvm', 'offer': 'ubuntu-hpc', 'sku': '2204',
                                'version': 'latest'}}


def account_info(double, images=None):
    """The account as account.find_account describes it, with QUOTAS and ``images`` (default SUPPORTED_IMAGES);
    its data plane: ``double``."""
    return {'batchAccount': ACCOUNT, 'batchResourceGroup': RESOURCE_GROUP, 'batchEndpoint': double.endpoint,
            'poolAllocationMode': 'BatchService', 'supportedImages': images or SUPPORTED_IMAGES, 'poolQuota': 100,
            'dedicatedCoreQuotaPerVMFamilyEnforced': True, 'activeJobAndJobScheduleQuota': 300, **QUOTAS}


class GivenFacts(AccountFacts):
    """TEST CODE: the facts cluster create checks, given (the region's VM sizes, the supported images) instead
    of fetched from ARM and Batch."""

    @property
    def vm_skus(self):
        return VM_SKUS

    @property
    def supported_images(self):
        return self.account['supportedImages']


@dataclass
class InProcessService:
    """The service in the test's process (``service``: LocalService; ``scheduler``: its AzureBatchScheduler) and
    the real az pointed at it over HTTP; ``extra``: start()'s construction options, used again at a restart."""
    double: object
    service: object
    info: dict
    az: AzRunner
    directory: str
    extra: dict = None

    @property
    def scheduler(self):
        return self.service.runner

    def group(self):
        return ['-g', self.info['resourceGroup'], '-w', self.info['workspace']]


def start(double, data_dir, poll_seconds=0.2, images=None, **extra):
    """A LocalService on Azure Batch built with the parts above (``extra``: more construction options, e.g. the
    share reader `shares`; ``images``: the account's supported images, default SUPPORTED_IMAGES)."""
    from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
    from azext_batchai_sweep.localservice.server import LocalService
    account = account_info(double, images)
    service = LocalService(data_dir, scheduler='azure-batch', azure_batch={
        'account_info': account, 'facts': GivenFacts(account),
        'credential': AzLoginCredential(source=lambda: (double.issue_token(), time.time() + 3600)),
        'poll_seconds': poll_seconds, 'pools_seconds': 0.5, 'files_seconds': 0.5, 'unrunnable_seconds': 2, **extra})
    service.start()
    return service


def serve(double, tmp_path, **extra):
    """start() on ``double`` and the real az (its own config dir) pointed at the service."""
    service = start(double, str(tmp_path / 'data'), **extra)
    config = tmp_path / 'azure-config'
    config.mkdir()
    info = service.info()
    env = {'AZURE_BATCHAI_SWEEP_ENDPOINT': info['endpoint'], 'AZURE_BATCHAI_SWEEP_TOKEN_FILE': info['tokenFile'],
           'AZURE_CORE_ONLY_SHOW_ERRORS': 'false'}
    return InProcessService(double, service, info, AzRunner(str(config), env=env, cwd=str(tmp_path)),
                            str(tmp_path), extra)


def files_reader(double):
    """(the Files REST double over ``double``'s share folders, a share_reader.ShareMirror reading it) for an
    in-process service (TEST CODE: the storage token comes from the Files double instead of `az account
    get-access-token --resource https://storage.azure.com/`, the endpoint is the Files double's)."""
    from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
    from azext_batchai_sweep.localservice.schedulers.azurebatch.storage.share_reader import ShareMirror
    from tests.azurebatch.files_double import FilesDouble
    files = FilesDouble(os.path.join(double.account.root, 'storage'), double.ca)
    return files, ShareMirror(credential=AzLoginCredential(source=lambda: (files.issue_token(), time.time() + 3600)),
                              endpoint=lambda account, url: files.endpoint(account))


@contextlib.contextmanager
def files_service(tmp_path, monkeypatch, task_logs=lambda double: contextlib.nullcontext(None), prism=None,
                  **extra):
    """An in-process service (serve) on a new Batch double, reading the pools' shares from the Files double
    (files_reader); ``task_logs(double)``: a context manager giving its task_logs.TaskLogs (default: none, no
    outputFiles). Every double's certificate comes from the Batch double's test CA (REQUESTS_CA_BUNDLE).
    ``prism``: the test's `batch_prism` instead of a new double: the service's Batch traffic goes through Prism
    (every request and answer checked against the Batch spec), whose relay's CA is trusted as well; the double
    behind it is closed by its own fixture. ``extra``: more of start()'s options (e.g. ``images``)."""
    from tests.azurebatch.double import BatchDouble
    double = prism if prism is not None else BatchDouble(str(tmp_path / 'batch'))
    bundle = tmp_path / 'ca-bundle.pem'
    bundle.write_text(''.join(pathlib.Path(path).read_text(encoding='ascii').strip() + '\n'
                              for path in sorted({double.ca_file, double.ca.ca_file})), encoding='ascii')
    monkeypatch.setenv('REQUESTS_CA_BUNDLE', str(bundle))
    files, shares = files_reader(double)
    try:
        with task_logs(double) as logs:
            handle = serve(double, tmp_path, shares=shares, task_logs=logs, **extra)
            handle.files = files
            try:
                yield handle
            finally:
                handle.service.shutdown()
    finally:
        files.close()
        if prism is None:
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


__all__ = ['arm_double', 'az_offline_login', 'batch_login', '_module_arm_double', '_module_offline_login',
           'batch_user', 'batch_service', 'BatchService', 'add_account', 'tasks', 'wait_until', 'write_sweep',
           'ACCOUNT', 'RESOURCE_GROUP', 'LOCAL']
