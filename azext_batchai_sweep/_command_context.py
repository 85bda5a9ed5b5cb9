# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""What every command builds from its arguments: the sweep's names (-g/-w/-e/-n) and identity, the service's client
and retries, the experiment and cluster checked before a change, the output format, and a pasteable command line
naming the sweep.
"""
from knack.log import get_logger

from ._errors import core_errors
from ._params import DEFAULT_MAX_RETRIES

logger = get_logger(__name__)


def command_line(command, identity, *extra):
    """A pasteable `az batchai sweep` command line with this run's -g/-w/-e/-n (hints never say "the same
    command": they name it)."""
    import shlex
    return ' '.join(['az batchai sweep', command, identity.args()] + [shlex.quote(str(item)) for item in extra])


def plain_names(resource_group, workspace_name, experiment_name):
    # Configured defaults arrive as str subclasses that az's output would turn into {"isDefault": true}.
    return str(resource_group), str(workspace_name), str(experiment_name)


def client_of(cmd):
    from ._targeting import batchai_client
    return batchai_client(cmd.cli_ctx)


def retry_settings(max_retries=DEFAULT_MAX_RETRIES):
    from .core.service.retry import RetrySettings
    return RetrySettings(max_retries=max_retries)


def sweep_identity(resource_group, workspace_name, experiment_name, sweep_name):
    from .core.service.identity import SweepIdentity
    return SweepIdentity(resource_group, workspace_name, experiment_name, sweep_name)


def create_experiment_if_missing(client, resource_group, workspace_name, experiment_name, retry):
    """Create the experiment if the workspace lacks it (and say so); call inside core_errors()."""
    from .core.service.submit import ensure_experiment
    if ensure_experiment(client, resource_group, workspace_name, experiment_name, retry=retry):
        logger.warning('Created experiment %s in workspace %s', experiment_name, workspace_name)


def preflight_cluster(client, body, retry):
    """A job without a cluster, or a cluster that does not exist, would fail every job: refuse before any change."""
    from .core.service.preflight import check_cluster, cluster_id_of
    with core_errors():
        check_cluster(client, cluster_id_of(body) if body is not None else None, retry=retry)


def output_format(cmd):
    invocation = getattr(cmd.cli_ctx, 'invocation', None)
    return (getattr(invocation, 'data', None) or {}).get('output')
