# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""While the local target is set, az's own `az batchai` commands (azure.cli.command_modules.batchai) use it too.

How (az 2.91): az's batchai module builds its client at call time, in the command's client factory
(`_client_factory.batchai_client_factory`), through az core's `get_mgmt_service_client(cli_ctx, BatchAI)`, imported
inside the function. For one built-in `batchai` command, while the az config section `batchai_sweep` names a local
service, this module
  1. wraps the command's handler, and for the time the handler runs (only then) replaces
     `azure.cli.core.commands.client_factory.get_mgmt_service_client` by a function that answers the Batch AI client
     type (azure.mgmt.batchai.BatchAI) with the local client of _targeting.py (local token, loopback endpoint, the
     "Using the Batch AI service at ..." line) and refuses every other client type with an error that says why
     (the local service has no resource groups or storage accounts: an Azure token must not be fetched, and an
     Azure storage key must not be sent to the local service);
  2. wraps the command's client factory to check that what it returns is that local client (or one of its operation
     groups): if az built it some other way, the command stops before any request is sent (fail closed);
  3. before the command runs, fills in what the local service can answer itself (the storage key of a local
     account), stops the commands it cannot serve (SSH to nodes, file servers) with the reason, and says
     what a command asks for that has no local meaning (VM size, image, SSH key, containers, node counts).
If az's internals are not what this expects (another az version), every built-in `batchai` command fails with
"local routing is unavailable" and why, instead of going to Azure while the user expects the local service.
With no local target, nothing here runs: the built-in commands are exactly az's.
"""
import contextlib
import os
import threading

from knack.log import get_logger

logger = get_logger(__name__)

BUILTIN_MODULE = 'azure.cli.command_modules.batchai'
BUILTIN_FACTORY_MODULE = BUILTIN_MODULE + '._client_factory'
CORE_FACTORY_MODULE = 'azure.cli.core.commands.client_factory'
TESTED_AZ_VERSIONS = ('2.91.0',)
STOP_HINT = 'Run "az batchai sweep local stop" to send the built-in "az batchai" commands to Azure again.'

# Built-in commands the local service cannot serve, and why (checked before anything is sent).
UNSUPPORTED = {
    'batchai cluster node list': 'a local cluster has no nodes to log in to: jobs run as processes on this machine',
    'batchai cluster node exec': 'a local cluster has no nodes to log in to: jobs run as processes on this machine',
    'batchai job node list': 'a local job runs as processes on this machine, not on nodes with SSH',
    'batchai job node exec': 'a local job runs as processes on this machine, not on nodes with SSH',
    'batchai file-server create': 'the local service has no NFS file servers: mount file shares instead',
    'batchai file-server list': 'the local service has no NFS file servers',
}
# Why a built-in command asked az for another management client, for the error that refuses it.
_OTHER_CLIENT_HINTS = {
    'batchai workspace create': 'give the location with -l/--location (the local service has no resource groups '
                                'to read it from)',
    'batchai job create': 'name the storage account with --storage-account-name (and the job file\'s '
                          '<AZURE_BATCHAI_STORAGE_ACCOUNT> placeholder) or give --storage-account-key: every local '
                          'account has the local service\'s key (az batchai sweep local show-connection-string)',
    'batchai cluster create': 'give the account with --storage-account-name (its key is the local service\'s own); '
                              '--use-auto-storage creates Azure resources and is not available locally',
}



def is_builtin_batchai(args):
    """True when the command line may name a built-in `az batchai` command (not `az batchai sweep ...`).

    Generous on purpose (options before the command words count too): the handler registered for such a command
    line checks the command name az parsed, so a false positive costs nothing and a false negative would let a
    built-in command go to Azure while the local target is set."""
    args = list(args or ())
    if 'batchai' not in args:
        return False
    following = [a for a in args[args.index('batchai') + 1:] if not a.startswith('-')]
    return following[:1] != ['sweep']


def register(cli_ctx):
    """Route the built-in command about to run, if the local target is set (called by the extension's loader)."""
    from ._targeting import local_target
    if local_target(cli_ctx) is None:
        return
    from knack.events import EVENT_INVOKER_POST_PARSE_ARGS
    cli_ctx.register_event(EVENT_INVOKER_POST_PARSE_ARGS, _on_parsed)


def _on_parsed(cli_ctx, command=None, args=None, **_):
    from azure.cli.core.azclierror import AzCLIError
    from ._targeting import local_target
    if not command or not command.startswith('batchai ') or command.startswith('batchai sweep'):
        return
    target = local_target(cli_ctx)
    cmd = getattr(args, 'func', None)
    if target is None or cmd is None:
        return
    try:
        _prepare(cli_ctx, target, command, cmd, args)
    except AzCLIError:
        raise
    except Exception as ex:  # pylint: disable=broad-except
        # Whatever went wrong here, the command must not run half-routed (nor end in a traceback).
        _refuse(cmd, _unavailable(cli_ctx, target, 'preparing it failed ({}: {})'.format(type(ex).__name__, ex)))


def _prepare(cli_ctx, target, command, cmd, args):
    if not _on_loopback(target[0]):
        _refuse(cmd, _not_loopback(target, command))
        return
    problem = _unexpected_internals(cmd)
    if problem:
        _refuse(cmd, _unavailable(cli_ctx, target, problem))
        return
    scheduler = _scheduler_of(cli_ctx)
    if command in UNSUPPORTED:
        _refuse(cmd, _not_served(target, command, UNSUPPORTED[command]))
        return
    _fill_local_storage_key(cli_ctx, command, args)
    if scheduler != 'azure-batch':  # on Azure Batch a cluster is a real pool: nothing is ignored
        _say_what_is_ignored(command, args)
    _route(cli_ctx, cmd, command)


# ---- what az must look like ----------------------------------------------------------------------------------

def _unexpected_internals(cmd):
    """Why the command cannot be routed safely (az's internals differ from what this module expects), or None."""
    import importlib
    operation = getattr(getattr(cmd, 'handler', None), '__self__', None)
    factory = getattr(operation, 'client_factory', None)
    if factory is None:
        return 'the command has no client factory on its operation (azure.cli.core.commands.command_operation)'
    if getattr(factory, '__module__', None) != BUILTIN_FACTORY_MODULE:
        return "its client factory is {}.{}, not one of {}'s".format(
            getattr(factory, '__module__', '?'), getattr(factory, '__name__', '?'), BUILTIN_FACTORY_MODULE)
    try:
        core_factories = importlib.import_module(CORE_FACTORY_MODULE)
        builtin_factories = importlib.import_module(BUILTIN_FACTORY_MODULE)
    except ImportError as ex:
        return 'a module is missing: {}'.format(ex)
    for name in ('get_mgmt_service_client', '_get_mgmt_service_client'):
        if not callable(getattr(core_factories, name, None)):
            return '{}.{} does not exist'.format(CORE_FACTORY_MODULE, name)
    # The factory must look the function up when it runs (an import inside the function), not hold its own copy.
    if getattr(builtin_factories, 'get_mgmt_service_client', None) is not None:
        return '{} holds its own reference to get_mgmt_service_client'.format(BUILTIN_FACTORY_MODULE)
    return None


def _az_version():
    try:
        from azure.cli.core import __version__
        return __version__
    except ImportError:  # pragma: no cover - az always has it
        return 'unknown'


def _unavailable(cli_ctx, target, problem):
    from azure.cli.core.azclierror import UnclassifiedUserFault
    del cli_ctx
    return UnclassifiedUserFault(
        'Local routing of the built-in "az batchai" commands is unavailable with azure-cli {} (tested with {}): {}. '
        'Nothing was sent: the command would have gone to Azure while az config batchai_sweep.endpoint names the '
        'local service {}.'.format(_az_version(), ', '.join(TESTED_AZ_VERSIONS), problem, target[0]),
        recommendation='Use the "az batchai sweep" commands with the local service, or: ' + STOP_HINT)


def _not_served(target, command, why):
    from azure.cli.core.azclierror import UnclassifiedUserFault
    return UnclassifiedUserFault(
        '"az {}" is not available on the local Batch AI service at {}: {}.'.format(command, target[0], why),
        recommendation=STOP_HINT)


def _on_loopback(endpoint):
    import urllib.parse
    from .core.service.loopback import is_loopback
    try:
        return is_loopback(urllib.parse.urlsplit(endpoint).hostname)
    except ValueError:
        return False


def _not_loopback(target, command):
    """The built-in commands carry the local token only to a service on this machine (the sweep commands also take
    an https endpoint elsewhere; az's own commands are routed only where `local start` points them)."""
    from azure.cli.core.azclierror import InvalidArgumentValueError
    return InvalidArgumentValueError(
        '"az {}" is routed only to a local Batch AI service on this machine (127.0.0.1, ::1, localhost), not to {} '
        '(az config batchai_sweep.endpoint or AZURE_BATCHAI_SWEEP_ENDPOINT): nothing was sent.'.format(
            command, target[0]),
        recommendation='Point them at a local service with "az batchai sweep local start", or run "az batchai '
                       'sweep local stop" to send them to Azure again.')


def _refuse(cmd, error):
    """Make the command raise `error` instead of running (nothing is sent)."""
    def refused(*_args, **_kwargs):
        raise error
    cmd.handler = refused


# ---- routing -----------------------------------------------------------------------------------------------------

class _Routing:
    """The local clients built for one command, and the command's name for the errors."""

    def __init__(self, cli_ctx, command):
        self.cli_ctx = cli_ctx
        self.command = command
        self.clients = []

    def get_mgmt_service_client(self, _cli_ctx, client_or_resource_type, *_args, **_kwargs):
        from azure.mgmt.batchai import BatchAI
        if client_or_resource_type is BatchAI:
            from ._targeting import batchai_client
            client = batchai_client(self.cli_ctx)
            self.clients.append(client)
            return client
        raise self.other_client_error(client_or_resource_type)

    def other_client_error(self, client_type):
        from azure.cli.core.azclierror import UnclassifiedUserFault
        from ._targeting import local_target
        name = getattr(client_type, 'name', None) or getattr(client_type, '__name__', None) or str(client_type)
        hint = _OTHER_CLIENT_HINTS.get(self.command)
        return UnclassifiedUserFault(
            '"az {}" asked for an Azure Resource Manager client ({}) while it runs against the local Batch AI service '
            'at {}, which serves Batch AI only: no Azure login is used and nothing of Azure reaches the local '
            'service.{}'.format(self.command, name, (local_target(self.cli_ctx) or ('?',))[0],
                                ' Locally, {}.'.format(hint) if hint else ''),
            recommendation=STOP_HINT)

    def owns(self, value):
        """True when `value` is one of the local clients or one of their operation groups."""
        for client in self.clients:
            if value is client or any(value is member for member in vars(client).values()):
                return True
        return False


_PATCH_LOCK = threading.Lock()
_patch_state = {'depth': 0, 'originals': None}


@contextlib.contextmanager
def _routed_clients(routing):
    """While the command's handler runs, az core's get_mgmt_service_client answers the Batch AI client type with
    the local client, and every other management client is refused: also through _get_mgmt_service_client, which
    the public function calls by name, for callers that hold their own reference to the public one (the built-in
    module's custom.py imports it at module level for its storage and resource group look-ups).

    Re-entrant: az runs the handler once per `--ids` value, concurrently; the functions are replaced by the first
    and restored by the last, so a handler that ends early never restores another's replacement as az's own."""
    import importlib
    core_factories = importlib.import_module(CORE_FACTORY_MODULE)

    def refused(_cli_ctx, client_type, *_args, **_kwargs):
        raise routing.other_client_error(client_type)

    with _PATCH_LOCK:
        if _patch_state['depth'] == 0:
            _patch_state['originals'] = {name: getattr(core_factories, name) for name in (
                'get_mgmt_service_client', '_get_mgmt_service_client')}
            core_factories.get_mgmt_service_client = routing.get_mgmt_service_client
            core_factories._get_mgmt_service_client = refused  # pylint: disable=protected-access
        _patch_state['depth'] += 1
    try:
        yield
    finally:
        with _PATCH_LOCK:
            _patch_state['depth'] -= 1
            if _patch_state['depth'] == 0:
                for name, function in _patch_state['originals'].items():
                    setattr(core_factories, name, function)


def _route(cli_ctx, cmd, command):
    from ._targeting import local_target
    routing = _Routing(cli_ctx, command)
    operation = cmd.handler.__self__
    factory = operation.client_factory
    handler = cmd.handler

    def checked_factory(*args, **kwargs):
        client = factory(*args, **kwargs)
        if client is not None and not routing.owns(client):
            raise _unavailable(cli_ctx, local_target(cli_ctx), 'its client factory {} did not build the client '
                               'through {}.get_mgmt_service_client'.format(factory.__name__, CORE_FACTORY_MODULE))
        return client

    def routed_handler(*args, **kwargs):
        with _routed_clients(routing), _redacted_links():
            return handler(*args, **kwargs)

    operation.client_factory = checked_factory
    cmd.handler = routed_handler


@contextlib.contextmanager
def _redacted_links():
    """`job file stream` logs the download link it found; the link's signature stays out of the log."""
    import logging
    from .core.service.retry import redact_urls

    class RedactLinks(logging.Filter):
        def filter(self, record):
            if isinstance(record.args, tuple):
                record.args = tuple(redact_urls(arg) if isinstance(arg, str) else arg for arg in record.args)
            if isinstance(record.msg, str):
                record.msg = redact_urls(record.msg)
            return True

    custom_logger = logging.getLogger('cli.' + BUILTIN_MODULE + '.custom')
    link_filter = RedactLinks()
    custom_logger.addFilter(link_filter)
    try:
        yield
    finally:
        custom_logger.removeFilter(link_filter)


# ---- what the local service answers itself, and what it ignores -------------------------------------------------

def _fill_local_storage_key(cli_ctx, command, args):
    """A storage account without `--storage-account-key`: az would look the key up in Azure (storage management
    client), or take az config batchai.storage_key (which may be an Azure key) for the account of az config
    batchai.storage_account. Every local account has the local service's key, so that key is given instead, with the
    account named on the command line either way."""
    if command not in ('batchai job create', 'batchai cluster create') or getattr(args, 'account_key', None):
        return
    account = getattr(args, 'account_name', None) or cli_ctx.config.get('batchai', 'storage_account', None)
    if not account:
        return
    from ._local_storage import local_data_dir, local_storage_key
    data_dir = local_data_dir(cli_ctx)
    if data_dir is None:
        return  # no token file: building the client says so
    args.account_name, args.account_key = account, local_storage_key(data_dir)
    logger.info('Storage account %s: using the local service\'s storage key', account)


def _scheduler_of(cli_ctx):
    """The scheduler of the targeted local service (its service.json), or None when that is not known here."""
    from ._local_storage import local_data_dir
    from .localservice import control
    data_dir = local_data_dir(cli_ctx)
    return control.status(data_dir).get('scheduler') if data_dir else None


def _say_what_is_ignored(command, args):
    """One warning per request that has no local meaning: the command still does what the local service can."""
    if command == 'batchai cluster create':
        ignored = ['VM size {}'.format(args.vm_size)] if getattr(args, 'vm_size', None) else []
        if getattr(args, 'image', None) or getattr(args, 'custom_image', None):
            ignored.append('image {}'.format(args.image or args.custom_image))
        if getattr(args, 'generate_ssh_keys', None) or getattr(args, 'ssh_key', None) or \
                getattr(args, 'password', None):
            ignored.append('the admin account\'s SSH key and password (no node accepts SSH)')
        if getattr(args, 'subnet', None):
            ignored.append('subnet')
        nodes = max([_count(getattr(args, name, None)) for name in ('target', 'max_nodes')])
        cpus = os.cpu_count() or 1
        logger.warning('Local cluster: its %s node(s) are job slots on this machine (%d CPUs)%s; recorded but not '
                       'used: %s.', nodes or 'configured', cpus,
                       ', more than its CPUs: its jobs hold at most as many slots as the service has (its CPUs, or '
                       'its --slots if more; the cluster\'s errors say so)' if nodes > cpus else '',
                       ', '.join(ignored) or 'nothing')
    elif command == 'batchai job create':
        job = _read_job_file(getattr(args, 'json_file', None))
        notes = []
        image = ((job.get('containerSettings') or {}).get('imageSourceRegistry') or {}).get('image')
        if image:
            notes.append('container image {} ignored: the job runs with this machine\'s Python and tools'
                         .format(image))
        node_count = job.get('nodeCount')
        if isinstance(node_count, int) and node_count > 1:
            notes.append('nodeCount {0} runs on {0} slots of the cluster, its nodes sharing this machine (one '
                         'process per node, or mpirun over the slots: docs/job-environment.md)'.format(node_count))
        if notes:
            logger.warning('Local job: %s.', '; '.join(notes))


def _count(value):
    """A node count as given on the command line (a string until the command converts it), or 0."""
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


def _read_job_file(path):
    import json
    try:
        with open(path, encoding='utf-8') as f:
            body = json.load(f)
    except (OSError, TypeError, ValueError):
        return {}  # the command itself reports an unreadable file
    props = body.get('properties', body) if isinstance(body, dict) else {}
    return props if isinstance(props, dict) else {}
