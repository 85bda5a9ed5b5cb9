# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The commands: arguments mapped to the core library, core errors mapped to azclierror classes."""
import os
import sys
from contextlib import contextmanager

from knack.log import get_logger

from ._params import DEFAULT_MAX_JOBS

logger = get_logger(__name__)

SPEC_RECOMMENDATION = 'Fix the field named above; "az batchai sweep create -h" describes the sweep file.'
STORAGE_RECOMMENDATION = ('Check the storage account, container or share, and the credentials in AZURE_STORAGE_KEY, '
                          'AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_SAS_TOKEN.')
# Progress is only worth drawing for sweeps that take a while to write.
PROGRESS_THRESHOLD = 10000
PROGRESS_EVERY = 1000


@contextmanager
def core_errors():
    """Turn the core's errors into az's error classes: a message and a fix, never a traceback."""
    from azure.cli.core.azclierror import AzureResponseError, FileOperationError, InvalidArgumentValueError
    from .core.errors import ServiceError, SpecError, StorageError, SweepError
    try:
        yield
    except SpecError as ex:
        # The message starts with the file name (whose case must not change), hence the lead-in.
        raise InvalidArgumentValueError('Invalid sweep definition: {}'.format(ex),
                                        recommendation=SPEC_RECOMMENDATION) from None
    except StorageError as ex:
        raise AzureResponseError(_capitalized(str(ex)), recommendation=STORAGE_RECOMMENDATION) from None
    except ServiceError as ex:
        raise AzureResponseError(_capitalized(str(ex))) from None
    except SweepError as ex:
        raise InvalidArgumentValueError(_capitalized(str(ex))) from None
    except OSError as ex:
        raise FileOperationError('{}: {}'.format(ex.strerror or ex, ex.filename)) from None


def _capitalized(message):
    return message[:1].upper() + message[1:]


def create_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, spec, template=None,
                 cluster=None, storage_account_name=None, sampling=None, count=None, seed=None, plan_file=None,
                 max_jobs=DEFAULT_MAX_JOBS, yes=False):
    from azure.cli.core.azclierror import InvalidArgumentValueError
    from .core.plan import plan_header, write_plan
    from .core.sweepfile import load_sweep_file

    # Configured defaults arrive as str subclasses that az's output would turn into {"isDefault": true}.
    resource_group, workspace_name, experiment_name = str(resource_group), str(workspace_name), str(experiment_name)
    plan_file = os.path.abspath(plan_file or '{}.plan.jsonl'.format(sweep_name))
    with core_errors():
        definition = load_sweep_file(spec, template_path=template, sampling=sampling, count=count, seed=seed,
                                     storage_account_name=storage_account_name, cluster_id=cluster)
        jobs = definition.jobs(sweep_name=sweep_name)
    if len(jobs) > max_jobs and not yes:
        raise InvalidArgumentValueError(
            'The sweep has {} jobs, more than --max-jobs ({})'.format(len(jobs), max_jobs),
            recommendation='Add --yes to plan it anyway, raise --max-jobs, or use --sampling random --count N.')
    header = plan_header(sweep=sweep_name, resource_group=resource_group, workspace=workspace_name,
                         experiment=experiment_name, job_name_prefix=jobs.prefix, sampling=definition.sampling,
                         parameters=definition.parameter_summaries, job_count=len(jobs))
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


def _records(cmd, jobs, listed, limit):
    """The plan's job records, one at a time; the first `limit` are also kept (name and parameters) for the output."""
    import json
    # A bar is for someone watching: redirected stderr (CI logs, scripts) gets only the final status line.
    watched = len(jobs) >= PROGRESS_THRESHOLD and sys.stderr.isatty()
    progress = cmd.cli_ctx.get_progress_controller(det=True) if watched else None
    for job in jobs:
        if len(listed) < limit:
            listed.append({'name': job.name, 'parameters': job.parameters})
        if progress and job.index % PROGRESS_EVERY == 0:
            progress.add(message='Planning', value=job.index, total_val=len(jobs))
        yield {'name': job.name, 'parameters': job.parameters, 'job': json.loads(job.body_json())}
    if progress:
        progress.end()
