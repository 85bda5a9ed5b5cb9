"""The Azure Batch scheduler of a service start, checked before the service serves anything.

`connect(store, data_dir, options)`: options are `__main__`'s flags (batch_account, resource_group, pool_prefix,
poll_seconds). The account is found and az's login checked against it (AzureLookup) as for a user; a test of
single parts may construct the same scheduler with its own parts instead (account_info: the account as found;
credential; api; facts; mapping): no user-facing option exists for them, and the end-to-end tests give none.

The scheduler's timings (seconds between two task polls, pool reads, file mirrors; how long a job may wait on a
pool that cannot grow) can also come from the environment `local start` runs in: TIMINGS_ENV, e.g.
`poll=0.2,pools=0.5,files=0.5,unrunnable=2` (the end-to-end tests' Batch double runs a fast clock; an operator
may poll less often). The defaults are the scheduler's own.
"""
import logging
import os
import re

from .auth import AzLoginCredential, LoginError, az_credential
from .client import BatchApi, BatchCallError
from .scheduler import AzureBatchScheduler

logger = logging.getLogger(__name__)

DEFAULT_POOL_PREFIX = 'batchai'
POOL_PREFIX_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_-]{0,19}')


def check_pool_prefix(prefix):
    """ValueError unless `prefix` can start every pool and job id (letters, digits, '-', '_'; at most 20)."""
    if not POOL_PREFIX_RE.fullmatch(prefix or ''):
        raise ValueError("--pool-prefix '{}' must be 1 to 20 letters, digits, '-' or '_', starting with a letter "
                         'or digit'.format(prefix))


TIMINGS_ENV = 'AZURE_BATCHAI_SWEEP_BATCH_TIMINGS'
TIMING_NAMES = {'poll': 'poll_seconds', 'pools': 'pools_seconds', 'files': 'files_seconds',
                'unrunnable': 'unrunnable_seconds'}


def timings_from_env(environ=None):
    """The scheduler's timings named in TIMINGS_ENV ({'poll_seconds': 0.2, ...}); ValueError naming what is wrong."""
    text = (os.environ if environ is None else environ).get(TIMINGS_ENV, '').strip()
    timings = {}
    for item in filter(None, (part.strip() for part in text.split(','))):
        name, _, value = item.partition('=')
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if name.strip() not in TIMING_NAMES or not 0 < seconds <= 3600:
            raise ValueError("{} '{}': each item is NAME=SECONDS, NAME one of {}, SECONDS above 0 and at most "
                             "3600".format(TIMINGS_ENV, item, ', '.join(TIMING_NAMES)))
        timings[TIMING_NAMES[name.strip()]] = seconds
    return timings


class AzureLookup:
    """What `local start` reads from Azure with az's login, as a user's az reaches it: az's active cloud and
    subscription (account.az_arm_target, read once), a credential for ARM and one for Batch (auth.py: az's own
    `account get-access-token`, each refreshed on its own)."""

    def __init__(self):
        from . import account  # pylint: disable=import-outside-toplevel
        self.arm = account.az_arm_target()
        self.arm_credential = account.az_credential(self.arm.audience)

    def find_account(self, name, resource_group):
        """The Batch account as the scheduler shows it (account.find_account: its ARM properties, batchAccount,
        batchResourceGroup, batchEndpoint, poolAllocationMode...), found with azure-mgmt-batch."""
        from .account import find_account as lookup  # pylint: disable=import-outside-toplevel
        return lookup(name, resource_group, credential=self.arm_credential, arm=self.arm)

    def permissions(self, account):
        """az's login's permissions on the account (ARM's permissions list): what preflight's role check reads."""
        from .preflight import list_permissions  # pylint: disable=import-outside-toplevel
        return list_permissions(account['batchAccountId'], self.arm_credential, self.arm)


def connect(store, data_dir, options):
    """An AzureBatchScheduler whose account passes `local start`'s checks (preflight.check_local_start: the SDK's API
    version, Entra ID authentication allowed, one cheap data-plane call with az's token); RuntimeError says why not
    and what to do."""
    from . import preflight  # pylint: disable=import-outside-toplevel
    from .errors import Refusal  # pylint: disable=import-outside-toplevel
    # azure-core logs every request and answer at INFO: the service log would hold one entry per poll.
    logging.getLogger('azure').setLevel(max(logging.WARNING, logging.getLogger('azure').level))
    prefix = options.get('pool_prefix') or DEFAULT_POOL_PREFIX
    check_pool_prefix(prefix)
    extra = timings_from_env()
    azure = None
    try:
        account = options.get('account_info')
        if account is None:
            azure = AzureLookup()
            account = azure.find_account(options['batch_account'], options.get('resource_group'))
        credential = options.get('credential') or AzLoginCredential()
        api = options.get('api') or BatchApi(account['batchEndpoint'], credential)
        # The role check reads ARM: done for an account found there (tests that give the account skip it).
        permissions = azure.permissions(account) if azure else None
        preflight.check_local_start(account, credential, permissions=permissions, client=api.client)
        # The account's supported images, where every pool's image and node agent come from.
        images = account.get('supportedImages')
        if images is None:
            images = api.list_supported_images()
        storage_check = _storage_check(options, azure)
        if storage_check is not None:
            from .storage.roles import check_stored_clusters  # pylint: disable=import-outside-toplevel
            check_stored_clusters(store, storage_check)
    except Refusal as ex:
        raise RuntimeError(ex.reason) from None
    except LoginError as ex:
        raise RuntimeError('cannot use az\'s login for Azure Batch: {} (run "az login")'.format(ex)) from None
    except BatchCallError as ex:
        raise RuntimeError('Azure Batch account {} did not answer: {}'.format(account.get('batchAccount'),
                                                                              ex)) from None
    extra.update({name: options[name] for name in TIMING_NAMES.values() if options.get(name)})
    # What cluster create checks (the region's VM sizes, quotas): fetched with az's login when first needed; tests
    # give their own facts (or none) with the account.
    facts = options['facts'] if 'facts' in options else preflight.AccountFacts(
        account, arm_credential=azure and azure.arm_credential, batch_credential=credential, arm=azure and azure.arm)
    # The job directories on a pool's Azure file share are read from the storage with az's token (asked when a job
    # first needs it, one token for both readers); tests give a reader of their own.
    from .storage.rest import STORAGE_RESOURCE  # pylint: disable=import-outside-toplevel
    storage_credential = az_credential(STORAGE_RESOURCE)
    shares = options.get('shares')
    if shares is None:
        from .storage.share_reader import ShareMirror  # pylint: disable=import-outside-toplevel
        shares = ShareMirror(credential=storage_credential)
    # Batch's own stdout/stderr of each task go to the cluster storage's task-log container (a write-only user
    # delegation SAS signed with a key asked with az's token, storage/task_logs.py); tests give one of their own.
    if 'task_logs' in options:
        task_logs = options['task_logs']
    else:
        from .storage.task_logs import TaskLogs  # pylint: disable=import-outside-toplevel
        task_logs = TaskLogs(credential=storage_credential)
    scheduler = AzureBatchScheduler(store, data_dir, api, account, mapping=options.get('mapping'),
                                    pool_prefix=prefix, facts=facts, shares=shares, task_logs=task_logs, **extra)
    if hasattr(scheduler.mapping, 'supported_images'):
        scheduler.mapping.supported_images = images
    if hasattr(scheduler.mapping, 'offered_sizes') and facts is not None:
        # What a VM size is (GPUs, Hyper-V generations) comes from the sizes cluster create checks, one list.
        scheduler.mapping.offered_sizes = lambda: facts.vm_skus
    scheduler.storage_check = storage_check  # az's data role on a new cluster's storage, at cluster create
    logger.info('scheduling on Azure Batch account %s (%s), pools %s-*', account.get('batchAccount'),
                account.get('batchEndpoint'), prefix)
    return scheduler


def _storage_check(options, azure):
    """The check of az's data role on the clusters' storage (storage.roles.StorageRoleCheck), through the ARM target
    and credential `azure` (an AzureLookup) already holds: tests that give the account as found give this check too
    (or None), as they give its facts."""
    if 'storage_check' in options:
        return options['storage_check']
    if options.get('account_info'):
        return None
    from .storage.roles import StorageRoleCheck  # pylint: disable=import-outside-toplevel
    return StorageRoleCheck(azure and azure.arm_credential, azure and azure.arm)
