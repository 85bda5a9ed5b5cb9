# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The commands (commands.py's table): each maps its arguments to calls.

What they share lives beside this file: _command_context.py (the sweep's names, client and retries), _selection.py
(the jobs a command names), _wait.py, _status.py, _metrics.py, _live.py (status --watch, the live report),
_run.py, _run_end.py and _run_view.py (`sweep run`, and what it adds to the other commands), _scheduler_view.py,
_planning.py and _submission.py; the sweep library is core/.
"""
# pylint: disable=too-many-arguments,too-many-locals
import os

from knack.log import get_logger

from ._command_context import (client_of, command_line, create_experiment_if_missing, output_format, plain_names,
                               preflight_cluster, retry_settings, sweep_identity)
from ._errors import core_errors
from ._live import live_report, report_cache, run_report, watch_status_screen
from ._metrics import (check_values_read, importance_of_metric, importance_per_objective, mark_infeasible, pareto_front,
                       values_when_judged)
from ._output import Progress, fail_after_output, listed as _listed
from ._params import (DEFAULT_INTERVAL, DEFAULT_MAX_JOBS, DEFAULT_MAX_RETRIES, DEFAULT_PARALLEL, DEFAULT_POLL_INTERVAL,
                      DEFAULT_TAIL)
from ._run import run_limits
from ._run_end import run_outcome, steer
from ._run_view import RunView, add_run_decisions, report_objective, run_decisions, saved_objective, say_figures
from ._scheduler_view import add_scheduler_notes, scheduler_job_ids, waiting_reader_of
from ._selection import check_selection, no_jobs, note_nothing_to_delete, require_jobs
from ._status import compare_with_plan, status_plan, tail_job
from ._submission import hidden_secrets_explained, mount_keys_preparer
from ._wait import wait_for_sweep

logger = get_logger(__name__)


def create_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, spec, template=None,
                 cluster=None, storage_account_name=None, sampling=None, count=None, seed=None, plan_file=None,
                 max_jobs=DEFAULT_MAX_JOBS, yes=False, plan_only=False, allow_changes=False, code=None,
                 code_size_limit=None):
    from ._planning import plan_sweep
    resource_group, workspace_name, experiment_name = plain_names(resource_group, workspace_name, experiment_name)
    client = None if plan_only else client_of(cmd)

    def before_commit(_first_body):
        # Every check passed: the experiment is the one thing create makes on the service, just before the plan.
        with core_errors():
            create_experiment_if_missing(client, resource_group, workspace_name, experiment_name, retry_settings())
    return plan_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, spec, template=template,
                      cluster=cluster, storage_account_name=storage_account_name, sampling=sampling, count=count,
                      seed=seed, plan_file=plan_file, max_jobs=max_jobs, yes=yes, allow_changes=allow_changes,
                      client=client, before_commit=None if plan_only else before_commit, code=code,
                      code_size_limit=code_size_limit)


def submit_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, plan_file=None, spec=None,
                 template=None, cluster=None, storage_account_name=None, sampling=None, count=None, seed=None,
                 max_jobs=DEFAULT_MAX_JOBS, yes=False, parallel=DEFAULT_PARALLEL, max_retries=DEFAULT_MAX_RETRIES,
                 wait=False, interval=DEFAULT_INTERVAL, timeout=None, allow_changes=False, code=None,
                 code_size_limit=None):
    from azure.cli.core.azclierror import AzureResponseError
    from ._exit_codes import NoServiceError
    from ._planning import _conflicts, plan_sweep
    from ._submission import PlannedJobs, load_plan
    from .core.service.submit import submit_jobs
    resource_group, workspace_name, experiment_name = plain_names(resource_group, workspace_name, experiment_name)
    identity = sweep_identity(resource_group, workspace_name, experiment_name, sweep_name)
    client = client_of(cmd)
    retry = retry_settings(max_retries)
    if spec:
        plan_file = plan_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, spec,
                               template=template, cluster=cluster, storage_account_name=storage_account_name,
                               sampling=sampling, count=count, seed=seed, plan_file=plan_file, max_jobs=max_jobs,
                               yes=yes, allow_changes=allow_changes, client=client, retry=retry, code=code,
                               code_size_limit=code_size_limit)['planFile']
    with core_errors():
        header = load_plan(plan_file, sweep_name, resource_group, workspace_name, experiment_name)
        jobs = PlannedJobs(plan_file, header, cmd.cli_ctx)
        first = jobs.check_first()
    if header.get('code') and not spec:  # a plan made by create: its snapshot must be on the share before its jobs
        from ._code import ensure_plan_code
        ensure_plan_code(cmd.cli_ctx, header)
    preflight_cluster(client, first, retry)
    with core_errors(), _conflicts(identity, command='submit'):
        create_experiment_if_missing(client, resource_group, workspace_name, experiment_name, retry)
        with Progress(cmd, 'Submitting') as progress:
            outcome = submit_jobs(client, resource_group, workspace_name, experiment_name, jobs, parallel=parallel,
                                  progress=progress, retry=retry, sweep_name=sweep_name,
                                  identities=jobs.identities(), allow_changes=allow_changes)
    result = {'sweep': sweep_name, 'planFile': os.path.abspath(plan_file), 'total': outcome['total'],
              'submitted': outcome['submitted'], 'alreadyPresent': outcome['alreadyPresent'],
              'replaced': outcome['replaced'], 'failed': outcome['failed'], 'notSubmitted': outcome['notSubmitted']}
    logger.warning('Sweep %s: %d submitted, %d already present, %d not submitted, of %d jobs%s', sweep_name,
                   result['submitted'], result['alreadyPresent'], len(result['notSubmitted']), result['total'],
                   '; {} re-created with their changed definition'.format(result['replaced'])
                   if result['replaced'] else '')
    if result['notSubmitted']:
        again = command_line('submit', identity, '--plan-file', os.path.abspath(plan_file))
        if outcome['stopped']:  # the service stopped answering: a later run finishes the sweep
            recommendation = ('Run "{}" once the service answers again: jobs already on the service are skipped, '
                              'none is duplicated.'.format(again))
        else:  # the service refused the jobs: running the same plan again would be refused again
            recommendation = ('The service refused them (see each job\'s error in "failed"); running the same plan '
                              'again will not help. Fix what the error names (the job in the sweep file, the '
                              'cluster), then plan and submit again: "{}".'.format(
                                  command_line('submit', identity, '--spec', 'FILE', '--allow-changes')))
        # Exit NO_SERVICE when the service stopped answering (run again later), else the service's refusal.
        error = NoServiceError if outcome['stopped'] else AzureResponseError
        fail_after_output(cmd.cli_ctx, error(
            '{} job(s) of sweep {} were not submitted: {}'.format(
                len(result['notSubmitted']), sweep_name, _listed(result['notSubmitted'])),
            recommendation=recommendation))
    elif wait:
        status = wait_for_sweep(cmd, client, identity, interval, timeout=timeout, max_retries=max_retries)
        result['counts'] = status['counts']
    return result


def run_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, spec, template=None, cluster=None,
              storage_account_name=None, sampling=None, count=None, seed=None, max_total_jobs=None,
              max_concurrent_jobs=None, timeout=None, poll_interval=DEFAULT_POLL_INTERVAL, stop_on_exit=False,
              strict=False, plan_only=False, code=None, code_size_limit=None, report=None):
    from ._run import ProgressLines, body_preparer, check_before_run, check_run_size, load_run_definition, \
        run_journal_path, service_seed
    from .core.tuning.loop import SweepRun
    resource_group, workspace_name, experiment_name = plain_names(resource_group, workspace_name, experiment_name)
    identity = sweep_identity(resource_group, workspace_name, experiment_name, sweep_name)

    def checked(recorded_seed):
        """The sweep file and the run's limits, checked as a run checks them, before any request that changes
        anything."""
        definition = load_run_definition(cmd, spec, template=template, cluster=cluster,
                                         storage_account_name=storage_account_name, sampling=sampling, count=count,
                                         seed=seed, recorded_seed=recorded_seed, max_total_jobs=max_total_jobs)
        limits = run_limits(definition, max_total_jobs, max_concurrent_jobs, timeout)
        check_run_size(definition, limits, DEFAULT_MAX_JOBS)
        from ._code import attach_code_folder
        definition.code_snapshot = attach_code_folder(definition, code, code_size_limit, storage_account_name)
        return definition, limits

    if plan_only:  # the sweep file checked as run checks it, and its first jobs: no service, no login
        from ._code import say_plan_only
        from ._run import plan_run
        definition, limits = checked(recorded_seed=None)
        say_plan_only(definition.code_snapshot)
        with core_errors():
            planned = plan_run(definition, identity, limits)
        if definition.code_snapshot is not None:
            planned['code'] = definition.code_snapshot.summary()
        return planned
    steering = {'stopOnExit': stop_on_exit, 'started': False}

    def prepare_and_run():
        client = client_of(cmd)
        retry = retry_settings()
        definition, limits = checked(recorded_seed=service_seed(client, identity, retry))
        steering['stopOnExit'] = stop_on_exit or definition.limits.get('stopOnExit', False)
        from ._code import check_run_snapshot, upload_code
        # The snapshot first: its refusal names what changed more precisely than the takeover check would.
        check_run_snapshot(client, identity, definition.code_snapshot, retry)
        check_before_run(cmd, client, identity, definition, spec, retry)
        if definition.code_snapshot is not None:
            upload_code(cmd.cli_ctx, definition.code_snapshot)
        with core_errors():
            create_experiment_if_missing(client, resource_group, workspace_name, experiment_name, retry)
            progress = ProgressLines()
            run = SweepRun(client, resource_group, workspace_name, experiment_name, sweep_name, definition,
                           limits=limits, retry=retry, prepare_body=body_preparer(cmd.cli_ctx),
                           progress=progress, journal_path=run_journal_path(
                               cmd.cli_ctx, resource_group, workspace_name, experiment_name, sweep_name),
                           strict=strict, waiting=waiting_reader_of(cmd, client, identity),
                           repeat_waiting=progress.repeat)
            steering['started'] = True
            if not report:
                return run.run(poll_interval), definition
            live = run_report(cmd, client, identity, report, poll_interval, retry)
            result = run.run(poll_interval, on_poll=live)
            live.finish(run)
            logger.warning('The live report of the run: %s', live.document.output_file)
            return result, definition
    result, definition = steer(cmd, identity, prepare_and_run, steering)
    run_outcome(cmd, result, definition, identity, spec)
    return result


def stop_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, job_names=None,
               parallel=DEFAULT_PARALLEL, no_wait=False):
    from azure.cli.core.azclierror import AzureResponseError
    from .core.service.stop import stop_jobs
    resource_group, workspace_name, experiment_name = plain_names(resource_group, workspace_name, experiment_name)
    identity = sweep_identity(resource_group, workspace_name, experiment_name, sweep_name)
    client = client_of(cmd)
    if job_names:  # every name must be the sweep's before anything is stopped
        with core_errors():
            check_selection(client, identity, job_names)
    with core_errors(), Progress(cmd, 'Stopping') as progress:
        result = stop_jobs(client, resource_group, workspace_name, experiment_name, sweep_name, job_names=job_names,
                           parallel=parallel, wait=not no_wait, progress=progress, retry=retry_settings())
        selected = result['stopped'] + result['notRunning'] + [item['job'] for item in result['failed']]
        require_jobs(identity, selected, job_names, client)
    if result['stopped']:
        logger.warning('Sweep %s: stopped %d job(s)%s: %s', sweep_name, len(result['stopped']),
                       ' (termination requested)' if no_wait else '', _listed(result['stopped']))
    else:
        logger.warning('Sweep %s: nothing was queued or running; nothing to stop', sweep_name)
    if result['failed'] or result['stillStopping']:
        names = [item['job'] for item in result['failed']] + result['stillStopping']
        fail_after_output(cmd.cli_ctx, AzureResponseError(
            '{} job(s) of sweep {} were not stopped: {}'.format(len(names), sweep_name, _listed(names)),
            recommendation='Run "az batchai sweep stop {} --yes" again.'.format(identity.args())))
    return {'sweep': sweep_name, **result}


def sweep_status(cmd, resource_group, workspace_name, experiment_name, sweep_name, state=None, wait=False,
                 interval=DEFAULT_INTERVAL, job=None, tail=None, stderr=False, plan_file=None, timeout=None,
                 max_retries=DEFAULT_MAX_RETRIES, watch=False):
    from .core.service.status import sweep_status as core_sweep_status
    resource_group, workspace_name, experiment_name = plain_names(resource_group, workspace_name, experiment_name)
    identity = sweep_identity(resource_group, workspace_name, experiment_name, sweep_name)
    client = client_of(cmd)
    if job:
        lines = tail_job(client, identity, job, tail or DEFAULT_TAIL, stderr)
        if output_format(cmd) in ('json', 'jsonc', 'yaml', 'yamlc'):
            return lines  # these formats escape control characters themselves
        from .core.outputs.terminal import escape_controls  # table, tsv: a job cannot write to the terminal
        return [escape_controls(line) for line in lines]
    if watch:
        watch_status_screen(cmd, client, identity, interval, max_retries)
    plan = status_plan(plan_file, identity)
    run_view = RunView(cmd, client, identity)
    if wait:
        status = wait_for_sweep(cmd, client, identity, interval, timeout=timeout, max_retries=max_retries,
                                run_view=run_view)
    else:
        with core_errors():
            # With a plan, every job of the sweep: what is missing is only known against all of them.
            status = core_sweep_status(client, resource_group, workspace_name, experiment_name,
                                       sweep_name=sweep_name, state=None if plan or wait else state,
                                       retry=retry_settings(max_retries))
    result = {'sweep': sweep_name, 'counts': status['counts'], 'jobs': status['jobs']}
    if plan is not None:
        compare_with_plan(result, plan)
    if state and (plan is not None or wait):
        from .core.service.status import summarize_rows
        result.update(summarize_rows([row for row in result['jobs'] if row['state'] == state],
                                     with_missing=plan is not None))
    if not status['jobs'] and not state and not result.get('missing'):
        with core_errors():
            no_jobs(identity, client)
    add_run_decisions(result['jobs'], identity, result, run_view)
    add_scheduler_notes(cmd, client, result['jobs'], identity)
    return result


def resubmit_sweep(cmd, resource_group, workspace_name, experiment_name, sweep_name, plan_file=None, job_names=None,
                   state=None, parallel=DEFAULT_PARALLEL, wait=False, interval=DEFAULT_INTERVAL, timeout=None,
                   max_retries=DEFAULT_MAX_RETRIES):
    from azure.cli.core.azclierror import AzureResponseError
    from ._submission import PlannedJobs, load_plan
    from ._targeting import journal_path
    from .core.service.resubmit import resubmit_jobs
    resource_group, workspace_name, experiment_name = plain_names(resource_group, workspace_name, experiment_name)
    identity = sweep_identity(resource_group, workspace_name, experiment_name, sweep_name)
    if state is None and not job_names:
        state = 'failed'
    client = client_of(cmd)
    plan, journal = None, None
    with core_errors():
        if plan_file:
            header = load_plan(plan_file, sweep_name, resource_group, workspace_name, experiment_name)
            plan = list(PlannedJobs(plan_file, header, cmd.cli_ctx))
        else:
            journal = journal_path(cmd.cli_ctx, resource_group, workspace_name, experiment_name, sweep_name)
        if not job_names:  # a sweep without jobs is not found, as for every other command
            check_selection(client, identity)
        if job_names:
            from .core.service.identity import sweep_jobs
            known = {job.name for job in sweep_jobs(client, resource_group, workspace_name, experiment_name,
                                                    sweep_name, job_names=job_names, retry=retry_settings(max_retries))}
            require_jobs(identity, known | {name for name, _ in plan or ()}, job_names, client)
        with Progress(cmd, 'Resubmitting') as progress, hidden_secrets_explained(identity, state, job_names):
            result = resubmit_jobs(client, resource_group, workspace_name, experiment_name, sweep_name=sweep_name,
                                   job_names=job_names, state=state, plan=plan, journal_path=journal,
                                   parallel=parallel, progress=progress, retry=retry_settings(max_retries),
                                   prepare_rebuilt=mount_keys_preparer(cmd))
    logger.warning('Sweep %s: %d job(s) resubmitted, %d skipped, %d failed', sweep_name, len(result['resubmitted']),
                   len(result['skipped']), len(result['failed']))
    result = {'sweep': sweep_name, **result}
    if result['failed']:
        fail_after_output(cmd.cli_ctx, AzureResponseError(
            '{} job(s) of sweep {} were not resubmitted: {}'.format(
                len(result['failed']), sweep_name, _listed([item['job'] for item in result['failed']])),
            recommendation='Run "{}" again: jobs already re-created are not touched, none is lost.'.format(
                command_line('resubmit', identity, *(['--plan-file', os.path.abspath(plan_file)] if plan_file else []),
                             *(['--jobs'] + [item['job'] for item in result['failed']])))))
    elif wait and result['resubmitted']:
        status = wait_for_sweep(cmd, client, identity, interval, job_names=result['resubmitted'], timeout=timeout,
                                max_retries=max_retries)
        result['counts'] = status['counts']
    return result


def sweep_metrics(cmd, resource_group, workspace_name, experiment_name, sweep_name, regex=None, metric=None,
                  reduce='last', file='stdout.txt', output_directory_id='stdouterr', goal=None, top=None, csv=None,
                  parallel=DEFAULT_PARALLEL, importance=False):
    from .core.outputs.metrics import MetricExtractor, get_metrics, sort_rows, write_metrics_csv
    resource_group, workspace_name, experiment_name = plain_names(resource_group, workspace_name, experiment_name)
    identity = sweep_identity(resource_group, workspace_name, experiment_name, sweep_name)
    stats = {}
    with core_errors():
        client = client_of(cmd)
    run_view = RunView(cmd, client, identity)
    by_objective = not regex and not metric and reduce == 'last'  # ranked by the run's objective: the job's value
    if not regex and not metric and not csv:
        front = pareto_front(cmd, identity, top, run_view)
        if front is not None:  # several objectives: the front, or (--importance) the importance for each objective
            return importance_per_objective(identity, run_view.get()[1]['pareto']) if importance else front
        objective = saved_objective(cmd, resource_group, workspace_name, experiment_name, sweep_name)
        regex, metric = objective.get('regex'), objective.get('metric')
        goal = goal or objective['goal']
        file = objective.get('file') if file == 'stdout.txt' and objective.get('file') else file
        if output_directory_id == 'stdouterr' and objective.get('outputDirectoryId'):
            output_directory_id = objective['outputDirectoryId']
    with core_errors():
        extractor = MetricExtractor(regex=regex, metric_name=metric, reduce=reduce)
        with Progress(cmd, 'Reading metrics') as progress:
            rows = get_metrics(client, resource_group, workspace_name, experiment_name, extractor,
                               sweep_name=sweep_name, file=file, output_directory_id=output_directory_id,
                               goal=goal or 'max', parallel=parallel, progress=progress, stats=stats)
        if not rows:
            no_jobs(identity, client)
        check_values_read(client, identity, rows, stats['filesFound'], metric=metric, regex=regex, file=file,
                          output_directory_id=output_directory_id)
    run_rows, figures = run_view.get()
    if figures is not None:  # a `sweep run`'s sweep: the figures run, status and report show
        say_figures(identity, figures)
        if by_objective:
            values_when_judged(rows, run_rows)
    if importance:
        return importance_of_metric(identity, rows, goal, metric or regex, run_rows)
    infeasible = mark_infeasible(identity, rows, run_rows, top)
    with core_errors():
        # Without a goal there is no "best": the jobs come in name order, like status.
        if goal:
            rows = sort_rows(rows, goal=goal, top=top, infeasible=infeasible)
        else:
            rows = [row for row in sorted(rows, key=lambda row: row['name'])
                    if top is None or row['name'] not in infeasible][:top]
        for row in rows:
            row['metricName'] = metric  # the table's column is named after the metric (None for --regex)
        if csv:
            with open(csv, 'w', encoding='utf-8', newline='') as stream:
                write_metrics_csv(rows, stream, metric_column=metric or 'metric')
            logger.warning('Wrote %d rows to %s', len(rows), csv)
    return rows


def delete_sweep_jobs(cmd, resource_group, workspace_name, experiment_name, sweep_name, state=None, job_names=None,
                      parallel=DEFAULT_PARALLEL, no_wait=False):
    from azure.cli.core.azclierror import AzureResponseError
    from .core.service.delete import delete_jobs
    resource_group, workspace_name, experiment_name = plain_names(resource_group, workspace_name, experiment_name)
    identity = sweep_identity(resource_group, workspace_name, experiment_name, sweep_name)
    client = client_of(cmd)
    with core_errors():
        note_nothing_to_delete(client, identity, job_names)
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
            recommendation='Run "{}" again.'.format(command_line(
                'delete', identity, '--jobs', *[item['job'] for item in result['failed']], '--yes'))))
    return {'sweep': sweep_name, **result}


def download_sweep_outputs(cmd, resource_group, workspace_name, experiment_name, sweep_name, job_names=None,
                           output_directory_id=None, dest=None, parallel=DEFAULT_PARALLEL):
    from azure.cli.core.azclierror import AzureResponseError
    from .core.outputs.download import download_outputs
    resource_group, workspace_name, experiment_name = plain_names(resource_group, workspace_name, experiment_name)
    identity = sweep_identity(resource_group, workspace_name, experiment_name, sweep_name)
    dest = os.path.abspath(dest or '{}-outputs'.format(sweep_name))
    client = client_of(cmd)
    with core_errors():
        check_selection(client, identity, job_names)
    with core_errors(), Progress(cmd, 'Downloading') as progress:
        result = download_outputs(client, resource_group, workspace_name, experiment_name, dest, job_names=job_names,
                                  output_directory_id=output_directory_id, sweep_name=sweep_name,
                                  parallel=parallel, progress=progress)
    from .core.units import size_text
    logger.warning('Downloaded %d file(s) (%s) of %d job(s) to %s; %d already there', result['files'],
                   size_text(result['bytes']), result['jobs'], dest, result['skipped'])
    if result['failed']:
        fail_after_output(cmd.cli_ctx, AzureResponseError(
            '{} file(s) were not downloaded'.format(len(result['failed'])),
            recommendation='Run "{}" again: the files already there are skipped.'.format(
                command_line('download', identity, '--dest', dest,
                             *(['--output-directory-id', output_directory_id] if output_directory_id else [])))))
    return {'sweep': sweep_name, 'destination': dest, **result}


def sweep_report(cmd, resource_group, workspace_name, experiment_name, sweep_name, output_file=None,
                 open_report=False, regex=None, metric=None, goal=None, step=None, file=None,
                 output_directory_id=None, plan_file=None, parallel=DEFAULT_PARALLEL, watch=False,
                 interval=10, serve=False, port=None):
    from ._planning import default_plan_header
    from ._submission import load_plan
    from .core.outputs.metrics import MetricExtractor
    from .core.report.snapshot import make_report
    resource_group, workspace_name, experiment_name = plain_names(resource_group, workspace_name, experiment_name)
    identity = sweep_identity(resource_group, workspace_name, experiment_name, sweep_name)
    output_file = os.path.abspath(output_file or '{}-report.html'.format(sweep_name))
    with core_errors():
        # --plan-file, else `<name>.plan.jsonl` here only when it is this sweep's (another target's plan of a sweep
        # with the same name says nothing of this one's sampling or objective).
        header = load_plan(plan_file, sweep_name, resource_group, workspace_name, experiment_name) \
            if plan_file else default_plan_header(identity)
    objective = report_objective(cmd, identity, header, metric=metric, regex=regex, goal=goal, step=step, file=file,
                                 output_directory_id=output_directory_id)
    with core_errors():
        MetricExtractor(regex=objective.regex, metric_name=objective.metric)  # a bad regex fails before any request
    client = client_of(cmd)
    if watch or serve:
        return live_report(cmd, client, identity, objective, header, output_file, interval, parallel,
                           port=(8080 if port is None else port) if serve else None, open_report=open_report)
    decisions, figures = run_decisions(cmd, client, identity)
    from ._run import run_journal_path
    from .core.tuning.loop import run_outline
    with core_errors():
        outline = run_outline(run_journal_path(cmd.cli_ctx, resource_group, workspace_name, experiment_name,
                                               sweep_name)) if figures is not None else None
        with Progress(cmd, 'Reading the jobs\' values') as progress:
            data = make_report(client, resource_group, workspace_name, experiment_name, sweep_name, objective,
                               output_file, plan_header=header, decisions=decisions, figures=figures, run=outline,
                               scheduler_ids=scheduler_job_ids(cmd, client, identity),
                               parallel=parallel, progress=progress, cache=report_cache(cmd, identity, objective))
        if data is None:
            no_jobs(identity, client)
    summary = data['summary']
    best = summary['best']
    if figures is not None:
        say_figures(identity, figures)
    from .core.tuning.result import best_phrase
    logger.warning('Wrote the report of sweep %s (%d jobs%s) to %s', sweep_name, summary['jobs'],
                   ', ' + best_phrase(objective.metric, best['value'], best['name']) if best else '', output_file)
    if open_report:
        from azure.cli.core.util import open_page_in_browser
        open_page_in_browser('file://' + output_file)
    if output_format(cmd) == 'none':
        # Nothing is printed: skip az's conversion of the result, which walks every value of every job (1.5 s of a
        # 1,000-job report, docs/benchmarks.md).
        return None
    return dict(data, reportFile=output_file)


def local_start(cmd, port=0, data_dir=None, slots=None, faults=None, scheduler='processes', gpus=None,
                partition=None, account=None, slurm_conf=None, retarget=False, batch_account=None,
                batch_resource_group=None, pool_prefix=None):
    from ._local import start
    return start(cmd.cli_ctx, data_dir=data_dir, port=port, slots=slots, faults=faults, scheduler=scheduler,
                 gpus=gpus, partition=partition, account=account, slurm_conf=slurm_conf, retarget=retarget,
                 batch_account=batch_account, batch_resource_group=batch_resource_group, pool_prefix=pool_prefix)


def local_status(cmd, data_dir=None):
    from ._local import status
    return status(cmd.cli_ctx, data_dir=data_dir)


def local_stop(cmd, data_dir=None):
    from ._local import stop
    return stop(cmd.cli_ctx, data_dir=data_dir)


def local_show_connection_string(cmd, account_name, data_dir=None):
    from ._local import show_connection_string
    return show_connection_string(cmd.cli_ctx, account_name, data_dir=data_dir)
