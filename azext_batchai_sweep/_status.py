# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""`sweep status`'s views besides the job table: a job's log tail (--job --tail) and the comparison with the plan
file (--plan-file, else `<name>.plan.jsonl` here).
"""
from knack.log import get_logger

from ._errors import core_errors
from ._output import listed as _listed
from ._selection import no_such_job

logger = get_logger(__name__)


def status_plan(plan_file, identity):
    """The plan status compares with: --plan-file, else `<name>.plan.jsonl` here when it is this sweep's."""
    from ._planning import default_plan_header
    from ._submission import load_plan
    if plan_file:
        with core_errors():
            load_plan(plan_file, identity.name, identity.resource_group, identity.workspace, identity.experiment)
            return plan_file
    return '{}.plan.jsonl'.format(identity.name) if default_plan_header(identity) is not None else None


def compare_with_plan(result, plan_file):
    """Add the planned jobs missing on the service (state 'missing') and name the service's jobs the plan lacks."""
    from .core.spec.plan import read_plan
    on_service = {row['name'] for row in result['jobs']}
    missing, planned = [], set()
    with core_errors():
        _, records = read_plan(plan_file)
        for record in records:
            planned.add(record['name'])
            if record['name'] not in on_service:
                missing.append({'name': record['name'], 'state': 'missing', 'exitCode': None, 'startTime': None,
                                'endTime': None, 'durationSeconds': None, 'parameters': record['parameters']})
    unplanned = sorted(on_service - planned)
    result['counts']['missing'] = len(missing)
    result['missing'] = [row['name'] for row in missing]
    result['notInPlan'] = unplanned
    result['jobs'] = sorted(result['jobs'] + missing, key=lambda row: row['name'])
    if missing:
        logger.warning('%d planned job(s) are not on the service (deleted, or never submitted): %s', len(missing),
                       _listed(result['missing']))
    if unplanned:
        logger.warning('%d job(s) of sweep %s on the service are not in the plan %s: %s', len(unplanned),
                       result['sweep'], plan_file, _listed(unplanned))


def tail_job(client, identity, job, lines, stderr=False):
    """The last lines of the job's stdout.txt (or stderr.txt) as a list of strings: `-o tsv` prints them as they are.
    (Of a job with several processes, its master's: stdout-wk-0.txt of TensorFlow, stdout-0.txt of Caffe2/PyTorch.)

    Without --stderr, a non-empty stderr.txt follows, both files labelled as `tail` labels several files; a failed
    job's exit code and Batch AI's error message go to stderr.
    """
    from .core.outputs.download import master_output_files, tail_job_output
    from .core.service.listing import state_of
    from azure.core.exceptions import ResourceNotFoundError
    from .core.errors import NotFoundError
    from .core.service.listing import sweep_name_of
    from .core.service.retry import NO_SDK_RETRY
    args = (identity.resource_group, identity.workspace, identity.experiment, job)
    with core_errors():
        try:
            found = client.jobs.get(*args, **NO_SDK_RETRY)
        except ResourceNotFoundError:
            no_such_job(client, identity, job)
        owner = sweep_name_of(found)
        if owner != identity.name:
            raise NotFoundError('Job {} is not a job of sweep {} (its sweep: {})'.format(job, identity.name, owner),
                                recommendation='List the sweep\'s jobs with "az batchai sweep status {}".'.format(
                                    identity.args()))
        out, err = master_output_files(found)
        files = [err] if stderr else [out, err]
        outputs = [tail_job_output(client, *args, file=name, lines=lines) for name in files]
    shown = [output for output in outputs if output['lines'] or output['file'] == files[0]]
    for output in outputs:
        if not output['found'] and output['file'] == files[0]:
            logger.warning('Job %s has no %s yet', job, output['file'])
    if len(shown) > 1:
        result = []
        for output in shown:
            result += ['==> {} <=='.format(output['file'])] + output['lines']
    else:
        result = shown[0]['lines'] if shown else []
    state = state_of(found)
    if state in ('failed', 'terminated'):
        info = found.execution_info
        errors = '; '.join('{}: {}'.format(error.code, error.message) for error in (info.errors or ())) if info else ''
        from .core.outputs.terminal import escape_controls
        logger.warning('Job %s %s with exit code %s%s', job, state, getattr(info, 'exit_code', None),
                       ' ({})'.format(escape_controls(errors)) if errors else '')
    return result
