"""The Azure Batch scheduler of a service start, checked before the service serves anything.

`connect(store, data_dir, options)`: options are `__main__`'s flags (batch_account, resource_group, pool_prefix,
poll_seconds). Tests construct the same scheduler with their own parts instead of the lookups (account_info: the
account as found; credential; api; mapping): no user-facing option exists for them.
"""
import logging
import re

from .auth import AzLoginCredential, LoginError
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


def find_account(name, resource_group):
    """The Batch account as the scheduler shows it (account.find_account: its ARM properties, batchAccount,
    batchResourceGroup, batchEndpoint, poolAllocationMode...), found with azure-mgmt-batch and az's login."""
    from .account import find_account as lookup  # pylint: disable=import-outside-toplevel
    return lookup(name, resource_group)


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
    try:
        account = options.get('account_info') or find_account(options['batch_account'],
                                                               options.get('resource_group'))
        credential = options.get('credential') or AzLoginCredential()
        api = options.get('api') or BatchApi(account['batchEndpoint'], credential)
        preflight.check_local_start(account, credential, client=api.client)
        # The account's supported images, where every pool's image and node agent come from.
        images = account.get('supportedImages')
        if images is None:
            images = api.list_supported_images()
        storage_check = _storage_check(options)
        if storage_check is not None:
            from .storage_roles import check_stored_clusters  # pylint: disable=import-outside-toplevel
            check_stored_clusters(store, storage_check)
    except Refusal as ex:
        raise RuntimeError(ex.reason) from None
    except LoginError as ex:
        raise RuntimeError('cannot use az\'s login for Azure Batch: {} (run "az login")'.format(ex)) from None
    except BatchCallError as ex:
        raise RuntimeError('Azure Batch account {} did not answer: {}'.format(account.get('batchAccount'),
                                                                              ex)) from None
    extra = {name: options[name] for name in ('poll_seconds', 'pools_seconds', 'files_seconds', 'unrunnable_seconds')
             if options.get(name)}
    # What cluster create checks (the region's VM sizes, quotas): fetched with az's login when first needed; tests
    # give their own facts (or none) with the account.
    facts = options['facts'] if 'facts' in options else preflight.AccountFacts(account, batch_credential=credential)
    # The job directories on a pool's Azure file share are read from the storage with az's token (asked when a job
    # first has one); tests give a reader of their own.
    shares = options.get('shares')
    if shares is None:
        from .share_reader import ShareMirror  # pylint: disable=import-outside-toplevel
        shares = ShareMirror()
    scheduler = AzureBatchScheduler(store, data_dir, api, account, mapping=options.get('mapping'),
                                    pool_prefix=prefix, facts=facts, shares=shares, **extra)
    if hasattr(scheduler.mapping, 'supported_images'):
        scheduler.mapping.supported_images = images
    scheduler.storage_check = storage_check  # az's data role on a new cluster's storage, at cluster create
    logger.info('scheduling on Azure Batch account %s (%s), pools %s-*', account.get('batchAccount'),
                account.get('batchEndpoint'), prefix)
    return scheduler


def _storage_check(options):
    """The check of az's data role on the clusters' storage (storage_roles.StorageRoleCheck): tests that give the
    account as found give this check too (or None), as they give its facts."""
    if 'storage_check' in options:
        return options['storage_check']
    if options.get('account_info'):
        return None
    from .storage_roles import StorageRoleCheck  # pylint: disable=import-outside-toplevel
    return StorageRoleCheck()
