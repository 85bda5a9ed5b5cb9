"""The local Batch AI service: the Batch AI 2018-05-01 ARM REST API (workspaces, clusters, experiments, jobs, file
listings), an Azure Files and a Blob Storage REST subset over the data dir (the shares and containers jobs mount),
and the jobs run by one of three schedulers (schedulers/: local process groups, Slurm, Azure Batch).

server.py puts it together (the listeners, the store, the scheduler): api/ holds what the listeners answer, data/
what the service keeps (the data dir, service.db), schedulers/ what runs the jobs; control.py starts, inspects and
stops it in the background for `az batchai sweep local start|status|stop`. Foreground:
`python -m azext_batchai_sweep.localservice --data-dir DIR [--scheduler processes|slurm|azure-batch]`.
"""
API_VERSION = '2018-05-01'
# Kept in sync with core.service.client.DEFAULT_SUBSCRIPTION (the service must not import the SDK-heavy core at start).
DEFAULT_SUBSCRIPTION = '00000000-0000-0000-0000-000000000000'
DEFAULT_RESOURCE_GROUP = 'batchai-local'
DEFAULT_WORKSPACE = 'local'
DEFAULT_CLUSTER = 'local'
DEFAULT_LOCATION = 'local'
SERVICE_FILE = 'service.json'
# The first path segment of the service's own views, outside the Batch AI API; kept in sync with
# core.service.scheduler_ids.LOCAL_VIEW (its client), as DEFAULT_SUBSCRIPTION is.
LOCAL_VIEW = 'local'
