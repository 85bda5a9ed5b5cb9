"""The experiment operations on a Batch AI client, in one place for the command layer.

Each operation is one function with an optional progress callback, returning JSON-ready dicts and lists
(camelCase keys). They work with any `azure.mgmt.batchai.BatchAI` client, against Azure or the local service.
"""
from .delete import delete_jobs
from .download import download_outputs, tail_job_output
from .identity import SweepIdentity, sweep_jobs
from .metrics import MetricExtractor, get_metrics, sort_rows, write_metrics_csv
from .resubmit import resubmit_jobs
from .retry import RetrySettings
from .status import list_sweep_jobs, sweep_status, wait_for_jobs
from .stop import stop_jobs
from .submit import ensure_experiment, submit_jobs

__all__ = [
    'MetricExtractor', 'RetrySettings', 'SweepIdentity', 'delete_jobs', 'download_outputs', 'ensure_experiment',
    'get_metrics', 'list_sweep_jobs', 'resubmit_jobs', 'sort_rows', 'stop_jobs', 'submit_jobs', 'sweep_jobs',
    'sweep_status', 'tail_job_output', 'wait_for_jobs', 'write_metrics_csv',
]
