# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The jobs a command names: the sweep must have jobs and every --jobs name must be one of them before anything
changes; the errors that say a sweep or a job is not there (naming the workspace when that is what is missing).
"""
from knack.log import get_logger

from ._command_context import retry_settings
from ._output import listed as _listed

logger = get_logger(__name__)


def require_jobs(identity, found, job_names, client=None):
    """A name that matches nothing is an error: a sweep with no jobs, or --jobs names that are not the sweep's."""
    from .core.errors import NotFoundError
    if job_names:
        unknown = sorted(set(job_names) - set(found))
        if unknown:
            raise NotFoundError('{} job(s) given with --jobs are not jobs of sweep {} in experiment {}: {}'.format(
                len(unknown), identity.name, identity.experiment, _listed(unknown)),
                recommendation='List the sweep\'s jobs with "az batchai sweep status {}".'.format(identity.args()))
    elif not found:
        no_jobs(identity, client)


def check_selection(client, identity, job_names=None):
    """Before anything changes: the sweep has jobs, and every name given with --jobs is one of them."""
    from .core.service.identity import sweep_jobs
    found = [job.name for job in sweep_jobs(client, identity.resource_group, identity.workspace,
                                            identity.experiment, identity.name, job_names=job_names,
                                            retry=retry_settings())]
    require_jobs(identity, found, job_names, client)


def no_jobs(identity, client=None):
    """Raise: the sweep has no jobs on the service (naming the workspace when that is what is missing)."""
    from .core.errors import NotFoundError
    from .core.service.identity import check_workspace
    if client is not None:
        check_workspace(client, identity.resource_group, identity.workspace, retry=retry_settings())
    raise NotFoundError('Sweep {} has no jobs in experiment {} (workspace {}, resource group {})'.format(
        identity.name, identity.experiment, identity.workspace, identity.resource_group),
        recommendation='Check -n/-e; submit the sweep with "az batchai sweep submit {} --spec FILE".'.format(
            identity.args()))


def no_such_job(client, identity, job):
    from .core.errors import NotFoundError
    from .core.service.identity import check_workspace
    check_workspace(client, identity.resource_group, identity.workspace, retry=retry_settings())
    raise NotFoundError('Job {} does not exist in experiment {}'.format(job, identity.experiment),
                        recommendation='List the sweep\'s jobs with "az batchai sweep status {}".'.format(
                            identity.args()))


def note_nothing_to_delete(client, identity, job_names):
    """A delete is idempotent, as ARM's DELETE (and with it az's delete commands) is: jobs already gone, or --jobs
    names that match nothing, are said on stderr, not an error (exit 0), so a retried cleanup succeeds. A workspace or
    experiment that does not exist is still one (exit 3): nothing could have been deleted from it."""
    from .core.service.identity import sweep_jobs
    found = {job.name for job in sweep_jobs(client, identity.resource_group, identity.workspace, identity.experiment,
                                            identity.name, job_names=job_names, retry=retry_settings())}
    if not found:
        logger.warning('Sweep %s has no %s in experiment %s: nothing to delete (already deleted; else check -n%s)',
                       identity.name, 'jobs' if not job_names else 'job named ' + _listed(sorted(job_names)),
                       identity.experiment, ' and --jobs' if job_names else '/-e')
    elif job_names and set(job_names) - found:
        logger.warning('%d job(s) given with --jobs are not jobs of sweep %s (already deleted?): %s',
                       len(set(job_names) - found), identity.name, _listed(sorted(set(job_names) - found)))
