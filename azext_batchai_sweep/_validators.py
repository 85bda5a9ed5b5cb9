# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Argument checks that need no file content: they fail before anything is read or written."""
import os
import re

from azure.cli.core.azclierror import (ArgumentUsageError, FileOperationError, InvalidArgumentValueError,
                                       MutuallyExclusiveArgumentError, RequiredArgumentMissingError)

# The subscription of a cluster id when nobody is logged in: `create` works offline, and submit checks the real one.
NO_SUBSCRIPTION = '00000000-0000-0000-0000-000000000000'
_SWEEP_NAME = re.compile(r'^[-\w]{1,64}$', re.ASCII)


def validate_sweep_create(cmd, namespace):
    _validate_sweep_name(namespace.sweep_name)
    _validate_planning(cmd, namespace)


def _validate_planning(cmd, namespace):
    _validate_file(namespace.spec, '--spec', 'the sweep file')
    if namespace.template is not None:
        _validate_file(namespace.template, '--template', 'the job template')
    _at_least(1, count=namespace.count, max_jobs=namespace.max_jobs)
    _at_least(0, seed=namespace.seed)
    if namespace.cluster:
        namespace.cluster = _cluster_id(cmd.cli_ctx, namespace)


def _at_least(minimum, **values):
    for name, value in values.items():
        if value is not None and value < minimum:
            raise InvalidArgumentValueError('--{} must be {}, not {}'.format(
                name.replace('_', '-'), 'at least {}'.format(minimum) if minimum else '0 or more', value))


def validate_sweep_run(cmd, namespace):
    _validate_sweep_name(namespace.sweep_name)
    _validate_file(namespace.spec, '--spec', 'the sweep file')
    if namespace.template is not None:
        _validate_file(namespace.template, '--template', 'the job template')
    report = getattr(namespace, 'report', None)
    if report is not None and not os.path.isdir(os.path.dirname(os.path.abspath(report))):
        raise FileOperationError('The directory of --report, {}, does not exist'.format(
            os.path.dirname(os.path.abspath(report))))
    _at_least(1, count=namespace.count, max_total_jobs=namespace.max_total_jobs,
              max_concurrent_jobs=namespace.max_concurrent_jobs)
    _at_least(0, seed=namespace.seed)
    for option in ('timeout', 'poll_interval'):
        value = getattr(namespace, option)
        if value is not None and value <= 0:
            raise InvalidArgumentValueError('--{} must be more than 0, not {:g}'.format(option.replace('_', '-'),
                                                                                     value))
    if namespace.cluster:
        namespace.cluster = _cluster_id(cmd.cli_ctx, namespace)


def validate_sweep_target(cmd, namespace):  # pylint: disable=unused-argument
    """Every command acting on a sweep's jobs: a valid sweep name and sensible --parallel/--interval."""
    _validate_sweep_name(namespace.sweep_name)
    _at_least(1, parallel=getattr(namespace, 'parallel', None))
    for option in ('interval', 'timeout'):
        value = getattr(namespace, option, None)
        if value is not None and value <= 0:
            raise InvalidArgumentValueError('--{} must be more than 0 seconds, not {:g}'.format(option, value))
    if getattr(namespace, 'timeout', None) is not None and not getattr(namespace, 'wait', False):
        raise RequiredArgumentMissingError('--timeout limits a wait: it needs --wait')
    _at_least(0, max_retries=getattr(namespace, 'max_retries', None))


def validate_sweep_submit(cmd, namespace):
    validate_sweep_target(cmd, namespace)
    _at_least(0, max_retries=namespace.max_retries)
    if namespace.spec:
        _validate_planning(cmd, namespace)
        return
    for option in ('template', 'cluster', 'storage_account_name', 'sampling', 'count', 'seed', 'code',
                   'code_size_limit'):
        if getattr(namespace, option, None) is not None:
            raise ArgumentUsageError('--{} is an option of planning: it needs --spec'.format(
                option.replace('_', '-')))
    namespace.plan_file = namespace.plan_file or '{}.plan.jsonl'.format(namespace.sweep_name)
    if not os.path.isfile(namespace.plan_file):
        from .core.service.identity import SweepIdentity
        args = SweepIdentity(str(namespace.resource_group), str(namespace.workspace_name),
                             str(namespace.experiment_name), namespace.sweep_name).args()
        raise FileOperationError(
            'The plan file {} does not exist'.format(namespace.plan_file),
            recommendation='Plan and submit at once with "az batchai sweep submit {} --spec FILE", plan first with '
                           '"az batchai sweep create {} --spec FILE", or pass the plan with --plan-file.'.format(
                               args, args))


def validate_sweep_status(cmd, namespace):
    validate_sweep_target(cmd, namespace)
    if namespace.tail is not None and not namespace.job:
        raise RequiredArgumentMissingError('--tail needs --job: the name of the job whose output to print')
    _at_least(1, tail=namespace.tail)
    if namespace.job and getattr(namespace, 'watch', False):
        raise MutuallyExclusiveArgumentError('--job prints one job\'s output: it takes no --watch')
    if namespace.job and (namespace.wait or namespace.state or namespace.plan_file):
        raise MutuallyExclusiveArgumentError('--job prints one job\'s output: it takes no --wait, --state or '
                                             '--plan-file')
    if namespace.stderr and not namespace.job:
        raise RequiredArgumentMissingError('--stderr needs --job: the name of the job whose stderr.txt to print')
    if namespace.plan_file:
        _validate_file(namespace.plan_file, '--plan-file', 'the plan file')


def validate_sweep_resubmit(cmd, namespace):
    validate_sweep_target(cmd, namespace)
    if namespace.plan_file:
        _validate_file(namespace.plan_file, '--plan-file', 'the plan file')


def validate_sweep_metrics(cmd, namespace):
    validate_sweep_target(cmd, namespace)
    if namespace.regex and namespace.metric:  # neither: the sweep file's objective (see custom.sweep_metrics)
        raise MutuallyExclusiveArgumentError(
            'Give exactly one of --regex and --metric',
            recommendation='--metric NAME reads NAME=VALUE lines; --regex takes a pattern with a group around the '
                           'number.')
    _at_least(1, top=namespace.top)
    _validate_importance(namespace)
    if not namespace.regex and not namespace.metric:
        return  # the metric, its goal (for --top) and its file come from the sweep's objective
    if namespace.top is not None and not namespace.goal:
        raise RequiredArgumentMissingError('--top N keeps the N best jobs: it needs --goal max or --goal min')
    from .core.errors import SpecError
    from .core.outputs.metrics import MetricExtractor
    try:
        MetricExtractor(regex=namespace.regex, metric_name=namespace.metric, reduce=namespace.reduce)
    except SpecError as ex:
        option = '--regex' if namespace.regex else '--metric'
        raise InvalidArgumentValueError('Invalid {}: {}'.format(option, ex.message)) from None


def _validate_importance(namespace):
    """--importance prints the parameters, not the jobs: the options that shape the job rows do not go with it, and
    it needs to know which way is better."""
    if not namespace.importance:
        return
    given = [option for option, value in (('--top', namespace.top), ('--csv', namespace.csv)) if value is not None]
    if given:
        raise MutuallyExclusiveArgumentError(
            '--importance prints the parameters\' importance, not the jobs: {} does not go with it'.format(
                ' and '.join(given)),
            recommendation='Run metrics without --importance for the jobs\' rows.')
    if (namespace.regex or namespace.metric) and not namespace.goal:
        raise RequiredArgumentMissingError(
            '--importance with --metric or --regex needs --goal max or --goal min: which values are the best')


_STEP_KEY = re.compile(r'^[A-Za-z_][\w.-]{0,63}$', re.ASCII)


def validate_sweep_report(cmd, namespace):
    validate_sweep_target(cmd, namespace)
    if namespace.regex and namespace.metric:
        raise MutuallyExclusiveArgumentError(
            'Give one of --regex and --metric: the objective the report draws',
            recommendation='--metric NAME reads NAME=VALUE lines; --regex takes a pattern with a group around the '
                           'number.')
    if namespace.step is not None and not _STEP_KEY.match(namespace.step):
        raise InvalidArgumentValueError('--step must be the name of a key written as NAME=VALUE, not {!r}'.format(
            namespace.step))
    if namespace.plan_file:
        _validate_file(namespace.plan_file, '--plan-file', 'the plan file')
    port = getattr(namespace, 'port', None)
    if port is not None and not getattr(namespace, 'serve', False):
        raise RequiredArgumentMissingError('--port is where --serve serves the live report: it needs --serve')
    if port is not None and not 0 <= port <= 65535:
        raise InvalidArgumentValueError('--port must be 0 to 65535, not {}'.format(port))
    output = namespace.output_file or '{}-report.html'.format(namespace.sweep_name)
    directory = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(directory):
        raise FileOperationError('The directory of --output-file, {}, does not exist'.format(directory))
    if os.path.isdir(output):
        raise FileOperationError('--output-file {} is a directory; give a file name'.format(output))


def validate_sweep_delete(cmd, namespace):
    validate_sweep_target(cmd, namespace)


def validate_sweep_stop(cmd, namespace):
    validate_sweep_target(cmd, namespace)


def validate_local_start(cmd, namespace):  # pylint: disable=unused-argument
    _at_least(1, slots=namespace.slots)
    if namespace.port is not None and not 0 <= namespace.port <= 65535:
        raise InvalidArgumentValueError('--port must be between 0 (any free port) and 65535, not {}'.format(
            namespace.port))
    _validate_scheduler_options(namespace)
    if namespace.faults:
        from .localservice.faults import parse_spec
        try:
            parse_spec(namespace.faults)
        except ValueError as ex:
            raise InvalidArgumentValueError('Invalid --faults: {}'.format(ex)) from None


def _validate_scheduler_options(namespace):
    """The options of one scheduler are refused with the other; --gpus and --slurm-conf are checked here."""
    slurm = getattr(namespace, 'scheduler', 'processes') == 'slurm'
    batch = getattr(namespace, 'scheduler', 'processes') == 'azure-batch'
    given = [option for option, value in (('--partition', namespace.partition), ('--account', namespace.account),
                                          ('--slurm-conf', namespace.slurm_conf)) if value]
    if given and not slurm:
        raise InvalidArgumentValueError('{} only apply with --scheduler slurm'.format(', '.join(given)))
    _validate_azure_batch_options(namespace, batch)
    if slurm and namespace.gpus:
        raise InvalidArgumentValueError('--gpus is for the processes scheduler',
                                        recommendation='On Slurm the jobs get GPUs as GRES, from their cluster\'s '
                                                       'VM size (NC6: 1 per node, NC12: 2, NC24: 4).')
    if slurm and namespace.slots:
        raise InvalidArgumentValueError('--slots is for the processes scheduler: on Slurm the cluster has the '
                                        'nodes of the partition')
    if namespace.gpus:
        from .localservice.schedulers.gpus import parse_gpus
        try:
            parse_gpus(namespace.gpus if namespace.gpus.strip().lower() != 'auto' else '0')
        except ValueError as ex:
            raise InvalidArgumentValueError(str(ex)) from None
    if namespace.slurm_conf:
        _validate_file(namespace.slurm_conf, '--slurm-conf', 'the Slurm configuration')


def _validate_azure_batch_options(namespace, batch):
    """--batch-account is required with --scheduler azure-batch; its options, --slots and --gpus are refused
    elsewhere / with it; --pool-prefix must start valid Batch ids."""
    given = [option for option, value in (('--batch-account', getattr(namespace, 'batch_account', None)),
                                          ('--resource-group', getattr(namespace, 'batch_resource_group', None)),
                                          ('--pool-prefix', getattr(namespace, 'pool_prefix', None))) if value]
    if given and not batch:
        raise InvalidArgumentValueError('{} only apply with --scheduler azure-batch'.format(', '.join(given)))
    if not batch:
        return
    if not namespace.batch_account:
        raise InvalidArgumentValueError('--scheduler azure-batch needs --batch-account NAME',
                                        recommendation='Name the Batch account that runs the jobs: '
                                                       '"az batch account list -o table" lists yours.')
    for option, value in (('--slots', namespace.slots), ('--gpus', namespace.gpus)):
        if value:
            raise InvalidArgumentValueError('{} is for the processes scheduler: on Azure Batch each cluster is a '
                                            'pool, with the nodes and GPUs of its VM size'.format(option))
    if namespace.pool_prefix:
        from .localservice.schedulers.azurebatch.connect import check_pool_prefix
        try:
            check_pool_prefix(namespace.pool_prefix)
        except ValueError as ex:
            raise InvalidArgumentValueError(str(ex)) from None


def validate_local_connection_string(cmd, namespace):  # pylint: disable=unused-argument
    if not re.match(r'^[a-z0-9]{3,24}$', namespace.account_name or ''):  # Azure Storage's (and files_api.py's)
        raise InvalidArgumentValueError(
            'Storage account name {!r} is invalid'.format(namespace.account_name),
            recommendation='Use 3 to 24 lower-case letters and digits, as Azure Storage does.')


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
    from ._targeting import subscription_for_cluster_ids
    subscription = subscription_for_cluster_ids(cli_ctx) or _current_subscription(cli_ctx)
    return resource_id(subscription=subscription, resource_group=namespace.resource_group,
                       namespace='Microsoft.BatchAI', type='workspaces', name=namespace.workspace_name,
                       child_type_1='clusters', child_name_1=namespace.cluster)


def _current_subscription(cli_ctx):
    from azure.cli.core._profile import Profile
    from knack.util import CLIError
    try:
        return Profile(cli_ctx=cli_ctx).get_subscription_id()
    except CLIError:  # not logged in: fine for an offline plan
        return NO_SUBSCRIPTION
