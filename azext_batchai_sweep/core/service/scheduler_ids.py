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


def scheduler_job_ids(client, resource_group, workspace, experiment):
    """{job name (lower case): scheduler job id} of the experiment's jobs a scheduler with ids has taken; {} when
    the service has no such view (a service of 0.2 or older) or none of them (the processes scheduler)."""
    from azure.core.exceptions import HttpResponseError  # pylint: disable=import-outside-toplevel
    url = '/' + LOCAL_VIEW + jobs_url(client, resource_group, workspace, experiment)
    try:
        body = send_json(client, 'GET', url)
    except HttpResponseError as ex:
        logger.debug('no scheduler job ids: %s', ex)
        return {}
    return {str(item.get('name', '')).lower(): item.get('schedulerJobId') for item in body.get('value') or []
            if item.get('schedulerJobId')}


def add_scheduler_job_ids(rows, ids):
    """Set `schedulerJobId` on the status rows (dicts with `name`) whose job has one."""
    for row in rows:
        job_id = ids.get(str(row.get('name', '')).lower())
        if job_id:
            row['schedulerJobId'] = job_id
    return rows
