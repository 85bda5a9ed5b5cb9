# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""On a local service whose scheduler has job ids of its own (Slurm, Azure Batch): its view of the experiment's jobs,
their ids in `status` and the report, and why queued jobs wait; nothing on Azure, which has no such view.
"""
from knack.log import get_logger

logger = get_logger(__name__)


def add_scheduler_notes(cmd, client, rows, identity):
    """On a local service whose scheduler has job ids of its own (Slurm, Azure Batch): each row's
    `schedulerJobId`, and the scheduler's notes (Azure Batch: why a queued job waits, its requeues), the waiting
    ones also said on stderr (the table has no room for them)."""
    view = scheduler_view(cmd, client, identity) if rows else None
    if view is not None:
        from .core.service.scheduler_ids import add_scheduler_job_ids, job_ids_of, waiting_summary
        add_scheduler_job_ids(rows, job_ids_of(view), view)
        for line in waiting_summary(rows):
            logger.warning('%s', line)


def waiting_reader_of(cmd, client, identity):
    """On a local service: the progress's reader of why queued jobs wait (scheduler_ids.waiting_reader); None on
    Azure (no such view)."""
    from ._targeting import local_target
    if not local_target(cmd.cli_ctx):
        return None
    from .core.service.scheduler_ids import waiting_reader
    return waiting_reader(client, identity.resource_group, identity.workspace, identity.experiment)


def scheduler_view(cmd, client, identity):
    """The local service's scheduler view of the experiment's jobs (scheduler_ids.scheduler_job_view: one
    request); None on Azure (no such view)."""
    from ._targeting import local_target
    if not local_target(cmd.cli_ctx):
        return None
    from .core.service.scheduler_ids import scheduler_job_view
    return scheduler_job_view(client, identity.resource_group, identity.workspace, identity.experiment)


def scheduler_job_ids(cmd, client, identity):
    """{job name, lower case: Slurm job id} on a local service (one request); {} on Azure."""
    from .core.service.scheduler_ids import job_ids_of
    return job_ids_of(scheduler_view(cmd, client, identity) or {})
