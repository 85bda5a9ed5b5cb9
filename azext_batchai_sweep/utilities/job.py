# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The old `utilities.job`: MetricExtractor, OutputStreamer, convert_job_to_jcp, print_job_status,
wait_for_job_completion.

Metric reading is core.outputs.metrics' (streamed, per line, `last` read backwards with HTTP Range); rebuilding a job's
creation parameters is core.service.resubmit's; output files are found and read with core.outputs.download.
"""
import codecs
import os
import re
import sys
import time

import azure.mgmt.batchai.models as models

from ..core.service.client import local_token_file
from ..core.outputs.download import STDOUTERR, find_output_file, read_new_bytes
from ..core.errors import StorageError
from ..core.outputs.metrics import MetricExtractor as _CoreMetricExtractor
from ..core.outputs.metrics import get_metrics
from ..core.service.resubmit import rebuild_body
from .cluster import print_cluster_status

__all__ = ['MetricExtractor', 'OutputStreamer', 'convert_job_to_jcp', 'get_storage_account_key', 'print_job_status',
           'wait_for_job_completion', 'POLLING_INTERVAL_SEC', 'STORAGE_KEY_ENV']

POLLING_INTERVAL_SEC = 5
FIRST_POLL_SECS = 0.25
STREAM_POLL_SECS = 1
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
    """Print ``Job state: <state> ExitCode: <code>`` and, for a failed job, ``FailureDetails:`` with its (last)
    error's code, message and details, as the old function printed them."""
    info = job.execution_info
    failure_message = None
    if _state(job) == 'failed' and info is not None:
        for error in info.errors or []:
            failure_message = '\nErrorCode:{0}\nErrorMessage:{1}\n'.format(error.code, error.message)
            if error.details is not None:
                failure_message += 'Details:\n'
                for detail in error.details:
                    failure_message += '{0}:{1}\n'.format(detail.name, detail.value)
    print('Job state: {0} ExitCode: {1}'.format(_state(job), info.exit_code if info is not None else 'None'))
    if failure_message:
        print('FailureDetails: {0}'.format(failure_message))


class OutputStreamer:
    """Stream (tail -f) one output file of a job: the old ``OutputStreamer(client, resource_group, workspace_name,
    experiment_name, job_name, output_directory_id, file_name)``. Each ``tail()`` prints what the file gained since
    the last call (one HTTP Range request from where it stopped); nothing before the file exists, and nothing at all
    when output_directory_id or file_name is None."""

    # pylint: disable=too-many-arguments,too-many-instance-attributes
    def __init__(self, client, resource_group, workspace_name, experiment_name, job_name, output_directory_id,
                 file_name):
        self.client = client
        self.resource_group = resource_group
        self.workspace_name = workspace_name
        self.experiment_name = experiment_name
        self.job_name = job_name
        self.output_directory_id = output_directory_id
        self.file_name = file_name
        self.url = None
        self.downloaded = 0
        self._decoder = codecs.getincrementaldecoder('utf-8')(errors='replace')  # a character split across reads
        if self.output_directory_id is None or self.file_name is None:
            self.tail = lambda: None

    def tail(self):
        """Print what was appended to the file since the last call."""
        if not self.url:
            item = find_output_file(self.client, self.resource_group, self.workspace_name, self.experiment_name,
                                    self.job_name, self.file_name, self.output_directory_id)
            self.url = item.download_url if item is not None else None
        if self.url:
            data = read_new_bytes(self.url, self.downloaded)
            self.downloaded += len(data)
            print(self._decoder.decode(data), end='')
            sys.stdout.flush()


def _queued_pauses():
    """Pauses between the looks at a queued job: short at first (a local job starts at once), then the old 5 s."""
    pause = FIRST_POLL_SECS
    while True:
        yield pause
        pause = min(pause * 2, POLLING_INTERVAL_SEC)


def wait_for_job_completion(client, resource_group, workspace_name, experiment_name, job_name, cluster_name=None,
                            output_directory_id=None, file_name=None):
    """Wait for the job to complete, streaming the file given by output_directory_id and file_name, as the old
    function did: the cluster's status line and the job's while it is queued, "Waiting for job output to become
    available...", the file's content as it grows, then the job's final status. Returns the finished Job."""
    pauses = _queued_pauses()
    while True:
        if cluster_name:
            print_cluster_status(client.clusters.get(resource_group, workspace_name, cluster_name))
        job = client.jobs.get(resource_group, workspace_name, experiment_name, job_name)
        print_job_status(job)
        if _state(job) != 'queued':
            break
        time.sleep(next(pauses))
    print('Waiting for job output to become available...')
    streamer = OutputStreamer(client, resource_group, workspace_name, experiment_name, job_name,
                              output_directory_id, file_name)
    while True:
        streamer.tail()
        job = client.jobs.get(resource_group, workspace_name, experiment_name, job_name)
        if _state(job) in ('succeeded', 'failed'):
            break
        time.sleep(STREAM_POLL_SECS)
    streamer.tail()
    print_job_status(job)
    return job
