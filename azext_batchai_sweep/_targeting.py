# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Which Batch AI service the commands talk to: the local one named in az config, or Azure through the login.

The az config section `batchai_sweep` (keys `endpoint`, `token_file`; env AZURE_BATCHAI_SWEEP_ENDPOINT and
AZURE_BATCHAI_SWEEP_TOKEN_FILE override, as for any az config) is written by `az batchai sweep local start` and
cleared by `local stop`. After the client is built, both targets take the same code path.
"""
import os

from knack.log import get_logger

logger = get_logger(__name__)

SECTION = 'batchai_sweep'
ENDPOINT = 'endpoint'
TOKEN_FILE = 'token_file'
# More connections than the default --parallel, so a larger --parallel does not open one connection per call.
MAX_CONNECTIONS = 64


def local_target(cli_ctx):
    """(endpoint, token_file) of the configured local service, or None when the commands target Azure."""
    endpoint = cli_ctx.config.get(SECTION, ENDPOINT, None)
    if not endpoint:
        return None
    return endpoint, cli_ctx.config.get(SECTION, TOKEN_FILE, None)


def subscription_for_cluster_ids(cli_ctx):
    """The subscription a cluster name is expanded in, or None to ask az's login (the local service has one)."""
    if local_target(cli_ctx):
        from .core.service.client import DEFAULT_SUBSCRIPTION
        return DEFAULT_SUBSCRIPTION
    return None


def batchai_client(cli_ctx):
    """The azure.mgmt.batchai client of the configured target; says on stderr when it is a local service."""
    from azure.cli.core.azclierror import InvalidArgumentValueError, RequiredArgumentMissingError
    from .core.errors import SweepError
    from .core.service.parallel import pooled_transport
    from azure.cli.core.util import should_disable_connection_verify
    from ._network_trace import redact_network_trace
    from .core.outputs.download import disable_download_verification
    redact_network_trace()
    # az passes connection_verify=False to the clients it builds when AZURE_CLI_DISABLE_CONNECTION_VERIFICATION
    # is set; a client given its own transport would drop it, so it goes to the transport, and to the downloads.
    connection = {'connection_verify': False} if should_disable_connection_verify() else {}
    if connection:
        disable_download_verification()
    target = local_target(cli_ctx)
    if target is None:
        from azure.cli.core.commands.client_factory import get_mgmt_service_client
        from azure.mgmt.batchai import BatchAI
        from knack.util import CLIError
        try:
            return get_mgmt_service_client(cli_ctx, BatchAI,
                                           transport=pooled_transport(MAX_CONNECTIONS, **connection))
        except CLIError as ex:
            if 'az login' not in str(ex):
                raise
            # Nobody logged in, and no local service configured: both ways forward.
            from azure.cli.core.azclierror import AuthenticationError
            raise AuthenticationError(
                'No Batch AI service to talk to: no local service is configured and you are not logged in to Azure',
                recommendation=NO_TARGET_RECOMMENDATION) from None
    endpoint, token_file = target
    logger.warning('Using the Batch AI service at %s (az config %s.%s)', endpoint, SECTION, ENDPOINT)
    if not token_file:
        raise RequiredArgumentMissingError(
            'The Batch AI endpoint {} is configured without a token file'.format(endpoint),
            recommendation='Run "az batchai sweep local start", or set {}.{} (AZURE_BATCHAI_SWEEP_TOKEN_FILE).'
            .format(SECTION, TOKEN_FILE))
    if not os.path.isfile(token_file):
        from azure.cli.core.azclierror import AzureConnectionError
        raise AzureConnectionError('The token file {} of the local Batch AI service does not exist'.format(
            token_file), recommendation=START_RECOMMENDATION)
    from .core.service.client import local_batchai_client
    try:
        client = local_batchai_client(endpoint, token_file, transport=pooled_transport(MAX_CONNECTIONS, **connection),
                                      **_az_logging_policies())
    except SweepError as ex:
        raise InvalidArgumentValueError(str(ex), recommendation='Check az config {}.{}'.format(
            SECTION, ENDPOINT)) from None
    _check_reachable(endpoint)
    return client


def _az_logging_policies():
    """The logging policies az gives the clients it builds (azure.cli.core.commands.client_factory): its network
    trace that redacts Authorization, and no ARMHttpLoggingPolicy, which under az's DEBUG root logger would format
    every request's and response's headers into records nobody prints. The local client logs as az's do, and makes
    its trace's records only when --debug shows them (_network_trace.network_trace_policy)."""
    from azure.core.pipeline.policies import SansIOHTTPPolicy
    from ._network_trace import network_trace_policy
    return {'logging_policy': network_trace_policy(), 'http_logging_policy': SansIOHTTPPolicy()}


def _check_reachable(endpoint, timeout=3.0):
    """Fail at once when nothing listens at a local endpoint, instead of after every retry's backoff."""
    import socket
    import urllib.parse
    from azure.cli.core.azclierror import AzureConnectionError
    url = urllib.parse.urlsplit(endpoint)
    try:
        with socket.create_connection((url.hostname, url.port or (443 if url.scheme == 'https' else 80)), timeout):
            pass
    except OSError as ex:
        raise AzureConnectionError('The Batch AI service at {} cannot be reached: {}'.format(
            endpoint, ex.strerror or ex), recommendation=START_RECOMMENDATION) from None


NO_TARGET_RECOMMENDATION = ('Run "az login" to use Batch AI on Azure, or "az batchai sweep local start" to run the sweep '
                            'on this machine.')
START_RECOMMENDATION = ('Start the local service with "az batchai sweep local start", or check the endpoint '
                        '(az config get {}.{}).'.format(SECTION, ENDPOINT))


def set_local_target(cli_ctx, endpoint, token_file):
    cli_ctx.config.set_value(SECTION, ENDPOINT, endpoint)
    cli_ctx.config.set_value(SECTION, TOKEN_FILE, token_file)


def clear_local_target(cli_ctx):
    for option in (ENDPOINT, TOKEN_FILE):
        try:
            cli_ctx.config.remove_option(SECTION, option)
        except Exception:  # pylint: disable=broad-except  # already absent (knack raises per config backend)
            pass


def default_data_dir(cli_ctx):
    return os.path.join(cli_ctx.config.config_dir, 'batchai-sweep', 'local')


def journal_path(cli_ctx, resource_group, workspace, experiment, sweep):
    """Where resubmit keeps the bodies of jobs it is about to delete (no plan file given): one file per sweep."""
    import hashlib
    key = '\n'.join((resource_group, workspace, experiment, sweep)).encode('utf-8')
    directory = os.path.join(cli_ctx.config.config_dir, 'batchai-sweep', 'journals')
    os.makedirs(directory, mode=0o700, exist_ok=True)
    return os.path.join(directory, '{}-{}.jsonl'.format(sweep, hashlib.sha256(key).hexdigest()[:16]))
