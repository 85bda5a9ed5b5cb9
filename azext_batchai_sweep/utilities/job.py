# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The old `utilities.job`: MetricExtractor, convert_job_to_jcp, print_job_status, wait_for_job_completion.

Metric reading is core.outputs.metrics' (streamed, per line, `last` read backwards with HTTP Range); rebuilding a job's
creation parameters is core.service.resubmit's; output files are found and read with core.outputs.download.
"""
import os
import re
import time

import azure.mgmt.batchai.models as models

from ..core.service.client import local_token_file
from ..core.outputs.download import STDOUTERR, tail_job_output
from ..core.errors import StorageError
from ..core.outputs.metrics import MetricExtractor as _CoreMetricExtractor
from ..core.outputs.metrics import get_metrics
from ..core.service.resubmit import rebuild_body

__all__ = ['MetricExtractor', 'convert_job_to_jcp', 'get_storage_account_key', 'print_job_status',
           'wait_for_job_completion', 'POLLING_INTERVAL_SEC', 'STORAGE_KEY_ENV']

POLLING_INTERVAL_SEC = 5
# The variable `az batchai job create` and `az batchai sweep submit` read a storage mount's key from.
STORAGE_KEY_ENV = 'AZURE_BATCHAI_STORAGE_KEY'
# The local service keeps its storage accounts' key in this file of its data dir (localservice/auth.py).
LOCAL_STORAGE_KEY_FILE = 'storage.key'
# A metric that could not be read: sorts after every real value, as the old code's missing file did.
MISSING_METRIC = float('inf')


def _with_group(regex):
    """The regex with a capture group: the old code used re.findall, which returns the whole match without one."""
    return regex if re.compile(regex).groups else '({})'.format(regex)


class MetricExtractor:
    """Extracts a metric from a job's output file: the old ``MetricExtractor(output_dir_id, logfile, regex,
    calculate_method="last")``.

    :param output_dir_id: the output directory id of the file ('stdouterr' for stdout.txt/stderr.txt).
    :param logfile: the file name.
    :param regex: its first group (or, without a group, the whole match) is the metric; matched line by line.
    :param calculate_method: "last" (default), "first", "mean", "min" or "max".
    """

    def __init__(self, output_dir_id, logfile, regex, calculate_method="last"):
        self.output_dir_id = output_dir_id
        self.logfile = logfile
        self.regex = regex
        self.calculate_method = calculate_method
        self.extractor = _CoreMetricExtractor(regex=_with_group(regex), reduce=calculate_method)

    def get_metrics(self, job_names, resource_group, workspace_name, experiment_name, client, parallel=8):
        """{job name: metric} for several jobs with one listing; MISSING_METRIC (inf) where it cannot be read."""
        rows = get_metrics(client, resource_group, workspace_name, experiment_name, self.extractor,
                           job_names=list(job_names), file=self.logfile,
                           output_directory_id=self.output_dir_id or STDOUTERR, parallel=parallel)
        values = {row['name']: row['metric'] for row in rows}
        return {name: MISSING_METRIC if values.get(name) is None else values[name] for name in job_names}

    def get_metric(self, job_name, resource_group, workspace_name, experiment_name, client):
        """The metric of one job (a float; inf when the file or the metric is missing)."""
        return self.get_metrics([job_name], resource_group, workspace_name, experiment_name, client)[job_name]


def get_storage_account_key(account_name, client):
    """The key of a storage account a job mounts, for re-submitting it (Batch AI never returns keys).

    In order: the AZURE_BATCHAI_STORAGE_KEY environment variable (as for `az batchai job create`); for a client of
    the local service, its storage key; else the account's first key from Azure Storage's management API with the
    client's own credential, as the old code did (needs azure-mgmt-storage).
    """
    key = os.environ.get(STORAGE_KEY_ENV)
    if key:
        return key
    token_file = local_token_file(client)
    if token_file is not None:
        path = os.path.join(os.path.dirname(os.path.abspath(token_file)), LOCAL_STORAGE_KEY_FILE)
        try:
            with open(path, encoding='ascii') as stream:
                return stream.read().strip()
        except OSError as exc:
            raise StorageError('cannot read the local service\'s storage key ({}): {}'.format(path, exc.strerror)) \
                from None
    return _key_from_azure(account_name, client)


def _key_from_azure(account_name, client):
    try:
        from azure.mgmt.storage import StorageManagementClient
    except ImportError:
        raise StorageError('the key of storage account {!r} is needed to submit the job again: set {} or install '
                           'azure-mgmt-storage'.format(account_name, STORAGE_KEY_ENV)) from None
    config = client._config  # pylint: disable=protected-access
    storage = StorageManagementClient(credential=config.credential, subscription_id=config.subscription_id,
                                      base_url=client._client._base_url)  # pylint: disable=protected-access
    for account in storage.storage_accounts.list():
        if account.name == account_name:
            resource_group = account.id.split('/resourceGroups/', 1)[1].split('/', 1)[0]
            keys = storage.storage_accounts.list_keys(resource_group, account_name).keys
            if keys:
                return keys[0].value
            raise StorageError('storage account {!r} has no key'.format(account_name))
    raise StorageError('cannot find storage account {!r}'.format(account_name))


def convert_job_to_jcp(job, client):
    """The JobCreateParameters of an existing job, ready to submit again: every creation field the service returned,
    constraints dropped (as the old function did) and each mounted storage account's key filled in."""
    jcp = rebuild_body(job)
    jcp.constraints = None
    volumes = jcp.mount_volumes
    references = [] if volumes is None else \
        list(volumes.azure_blob_file_systems or []) + list(volumes.azure_file_shares or [])
    for reference in references:
        if reference.credentials is None:
            reference.credentials = models.AzureStorageCredentialsInfo()
        if not reference.credentials.account_key_secret_reference:
            reference.credentials.account_key = get_storage_account_key(reference.account_name, client)
    return jcp


def _state(job):
    state = job.execution_state
    return str(getattr(state, 'value', state)).lower() if state is not None else None


def print_job_status(job):
    """Print a job's state, exit code and, for a failed job, its errors."""
    info = job.execution_info
    print('Job state: {0} ExitCode: {1}'.format(_state(job), info.exit_code if info is not None else 'None'))
    if _state(job) == 'failed' and info is not None:
        for error in info.errors or []:
            message = '\nErrorCode:{0}\nErrorMessage:{1}\n'.format(error.code, error.message)
            for detail in error.details or []:
                message += '{0}:{1}\n'.format(detail.name, detail.value)
            print('FailureDetails: {0}'.format(message))


def wait_for_job_completion(client, resource_group, workspace_name, experiment_name, job_name, cluster_name=None,
                            output_directory_id=None, file_name=None, lines=1000):
    """Wait until the job has finished, printing its state as it changes, then the last `lines` lines of the file
    given by output_directory_id and file_name (the old function streamed it while the job ran)."""
    if cluster_name:
        cluster = client.clusters.get(resource_group, workspace_name, cluster_name)
        print('Cluster state: {0}'.format(getattr(cluster.allocation_state, 'value', cluster.allocation_state)))
    last = None
    while True:
        job = client.jobs.get(resource_group, workspace_name, experiment_name, job_name)
        if _state(job) != last:
            last = _state(job)
            print('Job state: {0}'.format(last))
        if last in ('succeeded', 'failed'):
            break
        time.sleep(min(POLLING_INTERVAL_SEC, 1))
    if output_directory_id and file_name:
        tail = tail_job_output(client, resource_group, workspace_name, experiment_name, job_name, file=file_name,
                               output_directory_id=output_directory_id, lines=lines)
        for line in tail['lines']:
            print(line)
    print_job_status(job)
    return job
