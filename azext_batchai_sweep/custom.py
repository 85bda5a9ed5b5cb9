# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The commands: arguments mapped to the core library; the rest lives in the small _*.py helpers and core/."""
# pylint: disable=too-many-arguments,too-many-locals
import os

from knack.log import get_logger

from ._errors import core_errors
from ._output import Progress, fail_after_output
from ._params import (DEFAULT_INTERVAL, DEFAULT_MAX_JOBS, DEFAULT_MAX_RETRIES, DEFAULT_PARALLEL, DEFAULT_POLL_INTERVAL,
                      DEFAULT_TAIL)

logger = get_logger(__name__)

RERUN_RECOMMENDATION = 'Run the same command again: jobs already on the service are skipped, none is duplicated.'
FAILED_RECOMMENDATION = ('See a job\'s output with "az batchai sweep status --job NAME --tail 50"; run the failed jobs '
                         'again with "az batchai sweep resubmit".')


def _names(resource_group, workspace_name, experiment_name):
    # Configured defaults arrive as str subclasses that az's output would turn into {"isDefault": true}.
    return str(resource_group), str(workspace_name), str(experiment_name)


def _client(cmd):
    from ._targeting import batchai_client
    return batchai_client(cmd.cli_ctx)


def _retry(max_retries=DEFAULT_MAX_RETRIES):
    from .core.retry import RetrySettings
    return RetrySettings(max_retries=max_retries)


def _listed(names, limit=10):
    shown = ', '.join(names[:limit])
    return shown + (' and {} more'.format(len(names) - limit) if len(names) > limit else '')


def create_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, spec, template=None,
                 cluster=None, storage_account_name=None, sampling=None, count=None, seed=None, plan_file=None,
                 max_jobs=DEFAULT_MAX_JOBS, yes=False, plan_only=False):
    from ._planning import plan_sweep
    from .core.submit import ensure_experiment
    resource_group, workspace_name, experiment_name = _names(resource_group, workspace_name, experiment_name)
    summary = plan_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, spec, template=template,
                         cluster=cluster, storage_account_name=storage_account_name, sampling=sampling, count=count,
                         seed=seed, plan_file=plan_file, max_jobs=max_jobs, yes=yes)
    if not plan_only:
        client = _client(cmd)
        with core_errors():
            if ensure_experiment(client, resource_group, workspace_name, experiment_name, retry=_retry()):
                logger.warning('Created experiment %s in workspace %s', experiment_name, workspace_name)
    return summary


def submit_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, plan_file=None, spec=None,
                 template=None, cluster=None, storage_account_name=None, sampling=None, count=None, seed=None,
                 max_jobs=DEFAULT_MAX_JOBS, yes=False, parallel=DEFAULT_PARALLEL, max_retries=DEFAULT_MAX_RETRIES,
                 wait=False, interval=DEFAULT_INTERVAL):
    from azure.cli.core.azclierror import AzureResponseError
    from ._planning import plan_sweep
    from ._submission import PlannedJobs, load_plan
    from .core.submit import ensure_experiment, submit_jobs
    resource_group, workspace_name, experiment_name = _names(resource_group, workspace_name, experiment_name)
    if spec:
        plan_file = plan_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, spec,
                               template=template, cluster=cluster, storage_account_name=storage_account_name,
                               sampling=sampling, count=count, seed=seed, plan_file=plan_file, max_jobs=max_jobs,
                               yes=yes)['planFile']
    retry = _retry(max_retries)
    with core_errors():
        header = load_plan(plan_file, sweep_name, resource_group, workspace_name, experiment_name)
        jobs = PlannedJobs(plan_file, header, cmd.cli_ctx)
        jobs.check_first()
        client = _client(cmd)
        if ensure_experiment(client, resource_group, workspace_name, experiment_name, retry=retry):
            logger.warning('Created experiment %s in workspace %s', experiment_name, workspace_name)
        with Progress(cmd, 'Submitting') as progress:
            outcome = submit_jobs(client, resource_group, workspace_name, experiment_name, jobs, parallel=parallel,
                                  progress=progress, retry=retry)
    result = {'sweep': sweep_name, 'planFile': os.path.abspath(plan_file), 'total': outcome['total'],
              'submitted': outcome['submitted'], 'alreadyPresent': outcome['alreadyPresent'],
              'failed': outcome['failed'], 'notSubmitted': outcome['notSubmitted']}
    logger.warning('Sweep %s: %d submitted, %d already present, %d not submitted, of %d jobs', sweep_name,
                   result['submitted'], result['alreadyPresent'], len(result['notSubmitted']), result['total'])
    if result['notSubmitted']:
        fail_after_output(cmd.cli_ctx, AzureResponseError(
            '{} job(s) of sweep {} were not submitted: {}'.format(
                len(result['notSubmitted']), sweep_name, _listed(result['notSubmitted'])),
            recommendation=RERUN_RECOMMENDATION))
    elif wait:
        status = _wait(cmd, client, resource_group, workspace_name, experiment_name, sweep_name, interval)
        result['counts'] = status['counts']
    return result


def run_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, spec, template=None, cluster=None,
              storage_account_name=None, sampling=None, count=None, seed=None, max_total_jobs=None,
              max_concurrent_jobs=None, timeout=None, poll_interval=DEFAULT_POLL_INTERVAL):
    from azure.cli.core.azclierror import AzureResponseError
    from ._run import ProgressLines, body_preparer, load_run_definition, run_journal_path
    from .core.submit import ensure_experiment
    from .core.tuning.controller import Limits
    from .core.tuning.loop import SweepRun
    from .core.tuning.result import describe
    resource_group, workspace_name, experiment_name = _names(resource_group, workspace_name, experiment_name)
    definition = load_run_definition(cmd, spec, template=template, cluster=cluster,
                                     storage_account_name=storage_account_name, sampling=sampling, count=count,
                                     seed=seed)
    written = definition.limits
    limits = Limits(max_total_jobs=max_total_jobs or written.get('maxTotalJobs'),
                    max_concurrent_jobs=max_concurrent_jobs or written.get('maxConcurrentJobs'),
                    timeout_minutes=timeout or written.get('timeoutMinutes'),
                    job_timeout_minutes=written.get('jobTimeoutMinutes'))
    client = _client(cmd)
    retry = _retry()
    with core_errors():
        if ensure_experiment(client, resource_group, workspace_name, experiment_name, retry=retry):
            logger.warning('Created experiment %s in workspace %s', experiment_name, workspace_name)
        run = SweepRun(client, resource_group, workspace_name, experiment_name, sweep_name, definition,
                       limits=limits, retry=retry, prepare_body=body_preparer(cmd.cli_ctx), progress=ProgressLines(),
                       journal_path=run_journal_path(cmd.cli_ctx, resource_group, workspace_name, experiment_name,
                                                     sweep_name))
        result = run.run(poll_interval)
    goal = definition.objective['goal'] if definition.objective else 'max'
    logger.warning('Sweep %s: %s', sweep_name, describe(result, goal))
    if definition.objective and result['best'] is None:
        fail_after_output(cmd.cli_ctx, AzureResponseError(
            'No job of sweep {} ran to the end with a value of the objective'.format(sweep_name),
            recommendation=FAILED_RECOMMENDATION))
    return result


def _wait(cmd, client, resource_group, workspace_name, experiment_name, sweep_name, interval, job_names=None):
    """Block until the jobs have finished; a failed job makes the command exit non-zero after its output."""
    from azure.cli.core.azclierror import AzureResponseError
    from .core.status import wait_for_jobs
    with core_errors(), Progress(cmd, 'Waiting for the jobs') as progress:
        status = wait_for_jobs(client, resource_group, workspace_name, experiment_name, sweep_name=sweep_name,
                               job_names=job_names, interval=interval, progress=progress)
    failed = [row['name'] for row in status['jobs'] if row['state'] == 'failed']
    logger.warning('Sweep %s finished: %s', sweep_name,
                   ', '.join('{} {}'.format(n, state) for state, n in status['counts'].items() if n) or 'no jobs')
    if failed:
        fail_after_output(cmd.cli_ctx, AzureResponseError(
            '{} job(s) of sweep {} failed: {}'.format(len(failed), sweep_name, _listed(failed)),
            recommendation=FAILED_RECOMMENDATION))
    return status


def sweep_status(cmd, resource_group, workspace_name, experiment_name, sweep_name, state=None, wait=False,
                 interval=DEFAULT_INTERVAL, job=None, tail=None):
    from .core.status import sweep_status as core_sweep_status
    resource_group, workspace_name, experiment_name = _names(resource_group, workspace_name, experiment_name)
    client = _client(cmd)
    if job:
        return _tail(client, resource_group, workspace_name, experiment_name, job, tail or DEFAULT_TAIL)
    if wait:
        status = _wait(cmd, client, resource_group, workspace_name, experiment_name, sweep_name, interval)
        if state:
            status['jobs'] = [row for row in status['jobs'] if row['state'] == state]
    else:
        with core_errors():
            status = core_sweep_status(client, resource_group, workspace_name, experiment_name,
                                       sweep_name=sweep_name, state=state)
    if not status['jobs'] and not state:
        logger.warning('No jobs of sweep %s in experiment %s', sweep_name, experiment_name)
    _add_run_decisions(cmd, status['jobs'], resource_group, workspace_name, experiment_name, sweep_name)
    return {'sweep': sweep_name, 'counts': status['counts'], 'jobs': status['jobs']}


def _add_run_decisions(cmd, rows, resource_group, workspace_name, experiment_name, sweep_name):
    """A `sweep run`'s objective, step and decision per job, from its journal on this machine (when there is one)."""
    from ._run import run_journal_path
    from .core.tuning.loop import read_journal_rows
    tuning = read_journal_rows(run_journal_path(cmd.cli_ctx, resource_group, workspace_name, experiment_name,
                                                sweep_name))
    for row in rows:
        if row['name'] in tuning:
            row['tuning'] = tuning[row['name']]


def _tail(client, resource_group, workspace_name, experiment_name, job, lines):
    """The last lines of the job's stdout.txt as a list of strings: `-o tsv` prints them as they are."""
    from .core.download import tail_job_output
    from .core.retry import NO_SDK_RETRY
    with core_errors():
        client.jobs.get(resource_group, workspace_name, experiment_name, job, **NO_SDK_RETRY)  # 404: no such job
        output = tail_job_output(client, resource_group, workspace_name, experiment_name, job, lines=lines)
    if not output['found']:
        logger.warning('Job %s has no %s yet', job, output['file'])
    return output['lines']


def resubmit_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, plan_file=None, job_names=None,
                   state=None, parallel=DEFAULT_PARALLEL, wait=False, interval=DEFAULT_INTERVAL):
    from azure.cli.core.azclierror import AzureResponseError
    from ._submission import PlannedJobs, load_plan
    from ._targeting import journal_path
    from .core.resubmit import resubmit_jobs
    resource_group, workspace_name, experiment_name = _names(resource_group, workspace_name, experiment_name)
    if state is None and not job_names:
        state = 'failed'
    client = _client(cmd)
    plan, journal = None, None
    with core_errors():
        if plan_file:
            header = load_plan(plan_file, sweep_name, resource_group, workspace_name, experiment_name)
            plan = list(PlannedJobs(plan_file, header, cmd.cli_ctx))
        else:
            journal = journal_path(cmd.cli_ctx, resource_group, workspace_name, experiment_name, sweep_name)
        with Progress(cmd, 'Resubmitting') as progress:
            result = resubmit_jobs(client, resource_group, workspace_name, experiment_name, sweep_name=sweep_name,
                                   job_names=job_names, state=state, plan=plan, journal_path=journal,
                                   parallel=parallel, progress=progress)
    logger.warning('Sweep %s: %d job(s) resubmitted, %d skipped, %d failed', sweep_name, len(result['resubmitted']),
                   len(result['skipped']), len(result['failed']))
    result = {'sweep': sweep_name, **result}
    if result['failed']:
        fail_after_output(cmd.cli_ctx, AzureResponseError(
            '{} job(s) of sweep {} were not resubmitted: {}'.format(
                len(result['failed']), sweep_name, _listed([item['job'] for item in result['failed']])),
            recommendation=RERUN_RECOMMENDATION))
    elif wait and result['resubmitted']:
        status = _wait(cmd, client, resource_group, workspace_name, experiment_name, sweep_name, interval,
                       job_names=result['resubmitted'])
        result['counts'] = status['counts']
    return result


def sweep_metrics(cmd, resource_group, workspace_name, experiment_name, sweep_name, regex=None, metric=None,
                  reduce='last', file='stdout.txt', output_directory_id='stdouterr', goal=None, top=None, csv=None,
                  parallel=DEFAULT_PARALLEL):
    from .core.metrics import MetricExtractor, get_metrics, sort_rows, write_metrics_csv
    resource_group, workspace_name, experiment_name = _names(resource_group, workspace_name, experiment_name)
    with core_errors():
        extractor = MetricExtractor(regex=regex, metric_name=metric, reduce=reduce)
        client = _client(cmd)
        with Progress(cmd, 'Reading metrics') as progress:
            rows = get_metrics(client, resource_group, workspace_name, experiment_name, extractor,
                               sweep_name=sweep_name, file=file, output_directory_id=output_directory_id,
                               goal=goal or 'max', parallel=parallel, progress=progress)
        # Without a goal there is no "best": the jobs come in name order, like status.
        rows = sort_rows(rows, goal=goal, top=top) if goal else sorted(rows, key=lambda row: row['name'])[:top]
        if csv:
            with open(csv, 'w', encoding='utf-8', newline='') as stream:
                write_metrics_csv(rows, stream, metric_column=metric or 'metric')
            logger.warning('Wrote %d rows to %s', len(rows), csv)
    missing = sum(1 for row in rows if row['metric'] is None)
    if missing:
        logger.warning('%d of %d job(s) have no value for the metric', missing, len(rows))
    return rows


def delete_sweep_jobs(cmd, resource_group, workspace_name, experiment_name, sweep_name, state=None, job_names=None,
                      parallel=DEFAULT_PARALLEL, no_wait=False):
    from azure.cli.core.azclierror import AzureResponseError
    from .core.delete import delete_jobs
    resource_group, workspace_name, experiment_name = _names(resource_group, workspace_name, experiment_name)
    client = _client(cmd)
    with core_errors(), Progress(cmd, 'Deleting') as progress:
        # sweep_name is always given (-n is required): a delete never reaches jobs outside the sweep.
        result = delete_jobs(client, resource_group, workspace_name, experiment_name, sweep_name=sweep_name,
                             state=state, job_names=job_names, parallel=parallel, wait=not no_wait,
                             progress=progress)
    logger.warning('Sweep %s: %d job(s) deleted%s', sweep_name, len(result['deleted']),
                   ' (deletion still in progress)' if no_wait and result['deleted'] else '')
    if result['failed']:
        fail_after_output(cmd.cli_ctx, AzureResponseError(
            '{} job(s) of sweep {} were not deleted: {}'.format(
                len(result['failed']), sweep_name, _listed([item['job'] for item in result['failed']])),
            recommendation='Run the same command again.'))
    return {'sweep': sweep_name, **result}


def download_sweep_outputs(cmd, resource_group, workspace_name, experiment_name, sweep_name, job_names=None,
                           output_directory_id=None, dest=None, parallel=DEFAULT_PARALLEL):
    from azure.cli.core.azclierror import AzureResponseError
    from .core.download import download_outputs
    resource_group, workspace_name, experiment_name = _names(resource_group, workspace_name, experiment_name)
    dest = os.path.abspath(dest or '{}-outputs'.format(sweep_name))
    client = _client(cmd)
    with core_errors(), Progress(cmd, 'Downloading') as progress:
        result = download_outputs(client, resource_group, workspace_name, experiment_name, dest, job_names=job_names,
                                  output_directory_id=output_directory_id, sweep_name=sweep_name,
                                  parallel=parallel, progress=progress)
    logger.warning('Downloaded %d file(s) (%d bytes) of %d job(s) to %s; %d already there', result['files'],
                   result['bytes'], result['jobs'], dest, result['skipped'])
    if result['failed']:
        fail_after_output(cmd.cli_ctx, AzureResponseError(
            '{} file(s) were not downloaded'.format(len(result['failed'])), recommendation=RERUN_RECOMMENDATION))
    return {'sweep': sweep_name, 'destination': dest, **result}


def sweep_report(cmd, resource_group, workspace_name, experiment_name, sweep_name, output_file=None,
                 open_report=False, regex=None, metric=None, goal=None, step=None, file='stdout.txt',
                 output_directory_id='stdouterr', plan_file=None, parallel=DEFAULT_PARALLEL):
    from azure.cli.core.azclierror import RequiredArgumentMissingError, ResourceNotFoundError
    from ._submission import load_plan
    from .core.metrics import MetricExtractor
    from .core.report.build import make_report
    from .core.report.model import Objective
    resource_group, workspace_name, experiment_name = _names(resource_group, workspace_name, experiment_name)
    output_file = os.path.abspath(output_file or '{}-report.html'.format(sweep_name))
    decisions, run_objective = _run_decisions(cmd, resource_group, workspace_name, experiment_name, sweep_name)
    if metric or regex:
        objective = Objective(metric=metric, regex=regex, goal=goal or 'max', step=step, file=file,
                              output_directory_id=output_directory_id)
    elif run_objective:  # the objective of the sweep file `sweep run` ran, unless the options say otherwise
        objective = Objective(**dict(run_objective, **{k: v for k, v in (('goal', goal), ('step', step)) if v}))
    else:
        raise RequiredArgumentMissingError(
            'Give the objective the report draws: --metric NAME or --regex PATTERN',
            recommendation='--metric NAME reads NAME=VALUE lines; a sweep run with "az batchai sweep run" on this '
                           'machine uses its sweep file\'s objective.')
    with core_errors():
        MetricExtractor(regex=objective.regex, metric_name=objective.metric)  # a bad regex fails before any request
    client = _client(cmd)
    with core_errors():
        header = load_plan(plan_file, sweep_name, resource_group, workspace_name, experiment_name) \
            if plan_file else None
        with Progress(cmd, 'Reading the jobs\' values') as progress:
            data = make_report(client, resource_group, workspace_name, experiment_name, sweep_name, objective,
                               output_file, plan_header=header, decisions=decisions, parallel=parallel,
                               progress=progress)
    if data is None:
        raise ResourceNotFoundError('No jobs of sweep {} in experiment {}'.format(sweep_name, experiment_name),
                                    recommendation='Check the sweep name (-n) and the experiment (-e): '
                                                   '"az batchai sweep status" lists a sweep\'s jobs.')
    summary = data['summary']
    best = summary['best']
    logger.warning('Wrote the report of sweep %s (%d jobs%s) to %s', sweep_name, summary['jobs'],
                   ', best {} {}'.format(best['name'], best['value']) if best else '', output_file)
    if open_report:
        from azure.cli.core.util import open_page_in_browser
        open_page_in_browser('file://' + output_file)
    if _output_format(cmd) == 'none':
        # Nothing is printed: skip az's conversion of the result, which walks every value of every job (1.5 s of a
        # 1,000-job report, docs/benchmarks.md).
        return None
    return dict(data, reportFile=output_file)


def _output_format(cmd):
    invocation = getattr(cmd.cli_ctx, 'invocation', None)
    return (getattr(invocation, 'data', None) or {}).get('output')


def _run_decisions(cmd, resource_group, workspace_name, experiment_name, sweep_name):
    """({job name: decision dict}, objective) of a `sweep run` of this sweep, from its journal on this machine;
    ({}, None) for a sweep no controller ran here."""
    from ._run import run_journal_path
    from .core.report.decisions import decisions_from_run_rows, objective_from_run
    from .core.tuning.loop import Journal
    path = run_journal_path(cmd.cli_ctx, resource_group, workspace_name, experiment_name, sweep_name)
    if not os.path.exists(path):
        return {}, None
    data = Journal(path).data
    return decisions_from_run_rows(data.get('rows')), objective_from_run(data.get('objective'))


def local_start(cmd, port=0, data_dir=None, slots=None, faults=None):
    from ._local import start
    return start(cmd.cli_ctx, data_dir=data_dir, port=port, slots=slots, faults=faults)


def local_status(cmd, data_dir=None):
    from ._local import status
    return status(cmd.cli_ctx, data_dir=data_dir)


def local_stop(cmd, data_dir=None):
    from ._local import stop
    return stop(cmd.cli_ctx, data_dir=data_dir)
