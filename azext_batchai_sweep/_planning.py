# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Planning a sweep into its plan file: what `create` does, and what `submit --spec` does first."""
import json
import os
import sys

from knack.log import get_logger

from ._errors import core_errors

logger = get_logger(__name__)

# Progress is only worth drawing for sweeps that take a while to write.
PROGRESS_THRESHOLD = 10000
PROGRESS_EVERY = 1000


def plan_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, spec, *, template, cluster,
               storage_account_name, sampling, count, seed, plan_file, max_jobs, yes):
    """Expand the sweep file into the plan file; returns create's summary (sweep, planFile, jobCount, jobs...)."""
    from azure.cli.core.azclierror import InvalidArgumentValueError
    from .core.plan import plan_header, write_plan
    from ._local_storage import local_file_storage
    from .core.sweepfile import load_sweep_file

    plan_file = os.path.abspath(plan_file or '{}.plan.jsonl'.format(sweep_name))
    with core_errors():
        definition = load_sweep_file(spec, template_path=template, sampling=sampling, count=count, seed=seed,
                                     storage_account_name=storage_account_name, cluster_id=cluster,
                                     file_storage=local_file_storage(cmd.cli_ctx))
        jobs = definition.jobs(sweep_name=sweep_name)
    if len(jobs) > max_jobs and not yes:
        raise InvalidArgumentValueError(
            'The sweep has {} jobs, more than --max-jobs ({})'.format(len(jobs), max_jobs),
            recommendation='Add --yes to plan it anyway, raise --max-jobs, or use --sampling random --count N.')
    header = plan_header(sweep=sweep_name, resource_group=resource_group, workspace=workspace_name,
                         experiment=experiment_name, job_name_prefix=jobs.prefix, sampling=definition.sampling,
                         parameters=definition.parameter_summaries, job_count=len(jobs))
    if definition.objective:
        header['objective'] = definition.objective  # the defaults of `sweep metrics` (and of a later `sweep run`)
    listed = []
    with core_errors():
        write_plan(plan_file, header, _records(cmd, jobs, listed, max_jobs))
    logger.warning('Planned %d jobs of sweep %s in %s', len(jobs), sweep_name, plan_file)
    if len(listed) < len(jobs):
        logger.warning('The output lists the first %d jobs; the plan file has all of them.', len(listed))
    return {
        'sweep': sweep_name,
        'resourceGroup': resource_group,
        'workspace': workspace_name,
        'experiment': experiment_name,
        'planFile': plan_file,
        'jobCount': len(jobs),
        'sampling': definition.sampling['type'],
        'seed': definition.sampling['seed'],
        'parameters': [spec.name for spec in definition.parameters],
        'jobs': listed,
    }


def _plain(parameters):
    # File values are str subclasses carrying attributes (core.substitution.ExternalValue); az's output would print
    # those attributes as an object instead of the string.
    return {name: str(value) if isinstance(value, str) else value for name, value in parameters.items()}


def _records(cmd, jobs, listed, limit):
    """The plan's job records, one at a time; the first `limit` are also kept (name and parameters) for the output."""
    # A bar is for someone watching: redirected stderr (CI logs, scripts) gets only the final status line.
    watched = len(jobs) >= PROGRESS_THRESHOLD and sys.stderr.isatty()
    progress = cmd.cli_ctx.get_progress_controller(det=True) if watched else None
    for job in jobs:
        if len(listed) < limit:
            listed.append({'name': job.name, 'parameters': _plain(job.parameters)})
        if progress and job.index % PROGRESS_EVERY == 0:
            progress.add(message='Planning', value=job.index, total_val=len(jobs))
        yield {'name': job.name, 'parameters': job.parameters, 'job': json.loads(job.body_json())}
    if progress:
        progress.end()
