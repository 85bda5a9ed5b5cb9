"""The experiment operations on a Batch AI client, in one place for the command layer.

Each operation is one function with an optional progress callback, returning JSON-ready dicts and lists
(camelCase keys). They work with any `azure.mgmt.batchai.BatchAI` client, against Azure or the local service.
"""
from .service.delete import delete_jobs
from .outputs.download import download_outputs, tail_job_output
from .service.identity import SweepIdentity, sweep_jobs
from .outputs.metrics import MetricExtractor, get_metrics, sort_rows, write_metrics_csv
from .service.resubmit import resubmit_jobs
from .service.retry import RetrySettings
from .service.status import list_sweep_jobs, sweep_status, wait_for_jobs
from .service.stop import stop_jobs
from .service.submit import ensure_experiment, submit_jobs

__all__ = [
    'MetricExtractor', 'RetrySettings', 'SweepIdentity', 'delete_jobs', 'download_outputs', 'ensure_experiment',
    'get_metrics', 'list_sweep_jobs', 'resubmit_jobs', 'sort_rows', 'stop_jobs', 'submit_jobs', 'sweep_jobs',
    'sweep_status', 'tail_job_output', 'wait_for_jobs', 'write_metrics_csv',
]
