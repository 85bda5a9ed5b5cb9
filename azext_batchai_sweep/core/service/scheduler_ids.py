"""Each job's id at the local service's scheduler (Slurm's job id, `<array>_<task>` for an array task), so that a
Batch AI job can be found with Slurm's own tools (squeue, sacct, scontrol) and back.

Batch AI's job resource has no field for it, so the local service answers it in a view of its own,
`/local/<an experiment's jobs collection>`, one request for the whole experiment. Only asked of a local service:
Azure has no such view (nor a scheduler of ours).
"""
import logging

from .rest import jobs_url, send_json

logger = logging.getLogger(__name__)

LOCAL_VIEW = 'local'  # kept in sync with localservice.LOCAL_VIEW (the client imports nothing of the service)
# The local service's schedulers whose view never says why a queued job waits (only Azure Batch's pools do).
SILENT_SCHEDULERS = frozenset({'processes', 'slurm'})


class SchedulerMap(dict):
    """{job name (lower case): what the scheduler says of it}, and `scheduler`: the local service's scheduler that
    said it ('processes', 'slurm', 'azure-batch'; None when the view does not name it), so that an id is shown for
    what it is (a Slurm job, a Batch task)."""

    def __init__(self, items=(), scheduler=None):
        super().__init__(items)
        self.scheduler = scheduler


def scheduler_job_view(client, resource_group, workspace, experiment):
    """{job name (lower case): the local view's item ({"name", "schedulerJobId", and the scheduler's notes})} of
    the experiment's jobs, a SchedulerMap naming the scheduler; empty when the service has no such view (a service
    of 0.2 or older)."""
    from azure.core.exceptions import HttpResponseError  # pylint: disable=import-outside-toplevel
    url = '/' + LOCAL_VIEW + jobs_url(client, resource_group, workspace, experiment)
    try:
        body = send_json(client, 'GET', url)
    except HttpResponseError as ex:
        logger.debug('no scheduler job ids: %s', ex)
        return SchedulerMap()
    scheduler = body.get('scheduler')
    return SchedulerMap(((str(item.get('name', '')).lower(), item) for item in body.get('value') or []
                         if isinstance(item, dict)), scheduler=scheduler if isinstance(scheduler, str) else None)


def job_ids_of(view):
    """{job name (lower case): scheduler job id} of a scheduler_job_view (only the jobs that have one), a
    SchedulerMap naming the view's scheduler."""
    return SchedulerMap(((name, item.get('schedulerJobId')) for name, item in view.items()
                         if item.get('schedulerJobId')), scheduler=getattr(view, 'scheduler', None))


# The scheduler's notes of a job the status rows carry (the Azure Batch scheduler's): why a queued job waits
# ("waiting for the pool (next evaluation about HH:MM UTC)"), and how often Batch requeued its task (preemption).
NOTE_KEYS = ('waiting', 'requeues')


def add_scheduler_job_ids(rows, ids, view=None):
    """Set `schedulerJobId` on the status rows (dicts with `name`) whose job has one, and the scheduler's notes
    (NOTE_KEYS) from `view` (scheduler_job_view) on those it has notes for: a waiting note only while the row is
    queued, so that a state read after the view never shows an outdated reason."""
    view = view or {}
    for row in rows:
        name = str(row.get('name', '')).lower()
        job_id = ids.get(name)
        if job_id:
            row['schedulerJobId'] = job_id
        item = view.get(name) or {}
        if item.get('requeues'):
            row['requeues'] = int(item['requeues'])
        if item.get('waiting') and row.get('state') == 'queued':
            row['waiting'] = str(item['waiting'])
    return rows


def waiting_summary(rows):
    """One line per distinct waiting note of the rows ("3 queued jobs: waiting for the pool (...)"), for stderr."""
    counts = {}
    for row in rows:
        if row.get('waiting'):
            counts[row['waiting']] = counts.get(row['waiting'], 0) + 1
    return ['{} queued job{}: {}'.format(n, '' if n == 1 else 's', note) for note, n in sorted(counts.items())]


def waiting_reader(client, resource_group, workspace, experiment):
    """For progress on stderr: read(rows) -> waiting_summary of the rows' queued jobs (rows: dicts with `name` and
    `state`), as the scheduler explains them ("2 queued jobs: waiting for the pool (next evaluation about 14:05
    UTC)"). It asks the service's view (one request) only when a row is queued; [] when the scheduler says nothing
    (local processes, Slurm), the service has no such view, or asking it failed (a note never ends a run or a wait).
    Only for a local service (Azure has no such view).

    Once the view names a scheduler that never says why a job waits (SILENT_SCHEDULERS), the reader asks no more:
    the view holds every job of the experiment, and `sweep run` has a queued job at nearly every poll, so asking
    each time cost a request, and the service and az a pass over the whole sweep, per poll (issue 44)."""
    silent = []

    def read(rows):
        from azure.core.exceptions import AzureError  # pylint: disable=import-outside-toplevel
        if silent or not any(row.get('state') == 'queued' for row in rows):
            return []
        try:
            view = scheduler_job_view(client, resource_group, workspace, experiment)
        except AzureError as ex:
            logger.debug('why the queued jobs wait is not known: %s', ex)
            return []
        if view.scheduler in SILENT_SCHEDULERS:
            silent.append(view.scheduler)
        return waiting_summary(add_scheduler_job_ids([{'name': row['name'], 'state': row['state']} for row in rows],
                                                     {}, view))
    return read
