# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Argument checks that need no file content: they fail before anything is read or written."""
import os
import re

from azure.cli.core.azclierror import FileOperationError, InvalidArgumentValueError

# The subscription of a cluster id when nobody is logged in: `create` works offline, and submit checks the real one.
NO_SUBSCRIPTION = '00000000-0000-0000-0000-000000000000'
_SWEEP_NAME = re.compile(r'^[-\w]{1,64}$', re.ASCII)


def validate_sweep_create(cmd, namespace):
    _validate_sweep_name(namespace.sweep_name)
    _validate_file(namespace.spec, '--spec', 'the sweep file')
    if namespace.template is not None:
        _validate_file(namespace.template, '--template', 'the job template')
    for option, value in (('--count', namespace.count), ('--max-jobs', namespace.max_jobs)):
        if value is not None and value < 1:
            raise InvalidArgumentValueError('{} must be at least 1, not {}'.format(option, value))
    if namespace.seed is not None and namespace.seed < 0:
        raise InvalidArgumentValueError('--seed must be 0 or more, not {}'.format(namespace.seed))
    if namespace.cluster:
        namespace.cluster = _cluster_id(cmd.cli_ctx, namespace)


def _validate_sweep_name(name):
    if not _SWEEP_NAME.match(name or ''):
        raise InvalidArgumentValueError(
            'Sweep name {!r} is invalid'.format(name),
            recommendation='Use 1 to 64 letters, digits, "-" or "_": it names the plan file and tags every job.')


def _validate_file(path, option, what):
    if not os.path.isfile(path):
        raise FileOperationError('{} {} ({}) does not exist or is not a file'.format(
            what[0].upper() + what[1:], path, option))


def _cluster_id(cli_ctx, namespace):
    """A cluster name expanded to its resource id in the sweep's workspace, as `az batchai job create -c` does."""
    if namespace.cluster.startswith('/'):
        return namespace.cluster
    from azure.mgmt.core.tools import resource_id
    return resource_id(subscription=_current_subscription(cli_ctx), resource_group=namespace.resource_group,
                       namespace='Microsoft.BatchAI', type='workspaces', name=namespace.workspace_name,
                       child_type_1='clusters', child_name_1=namespace.cluster)


def _current_subscription(cli_ctx):
    from azure.cli.core._profile import Profile
    from knack.util import CLIError
    try:
        return Profile(cli_ctx=cli_ctx).get_subscription_id()
    except CLIError:  # not logged in: fine for an offline plan
        return NO_SUBSCRIPTION
