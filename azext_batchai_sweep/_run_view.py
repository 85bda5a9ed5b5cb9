# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""What a `sweep run` of a sweep adds to what the other commands show of it: its decision per job and its figures (from
its journal here, else rebuilt from the jobs on the service), the lines that say them, and the objective it kept
(with the one `sweep report` reads the jobs' values with).
"""
import os

from knack.log import get_logger

from ._command_context import client_of, retry_settings, sweep_identity
from ._errors import core_errors

logger = get_logger(__name__)


class RunView:
    """run_view_of of one command, read when first asked and then kept (`status --wait` asks twice: for the jobs
    stopped by someone else, and for its rows)."""

    def __init__(self, cmd, client, identity):
        self._args, self._view = (cmd, client, identity), None

    def get(self):
        if self._view is None:
            self._view = run_view_of(*self._args)
        return self._view


def run_view_of(cmd, client, identity):
    """({job name: status row additions}, the sweep's figures) of a `sweep run` of this sweep: from its journal on
    this machine when it saw every job's current attempt, else rebuilt from the jobs on the service
    (core/tuning/loop.run_view: their objective, rules and logs); ({}, None) for a sweep no controller ran."""
    from ._run import run_journal_path
    from .core.service.identity import sweep_jobs
    from .core.tuning.loop import run_view
    path = run_journal_path(cmd.cli_ctx, identity.resource_group, identity.workspace, identity.experiment,
                            identity.name)
    with core_errors():
        jobs = sweep_jobs(client, identity.resource_group, identity.workspace, identity.experiment, identity.name,
                          retry=retry_settings())
        return run_view(client, identity.resource_group, identity.workspace, identity.experiment, jobs, path,
                        retry=retry_settings())


def add_run_decisions(rows, identity, result, run_view):
    """A `sweep run`'s objective, step and decision per job, and the sweep's figures (see run_view_of)."""
    tuning, figures = run_view.get() if rows else ({}, None)
    for row in rows:
        if row['name'] in tuning:
            row['tuning'] = tuning[row['name']]
    if figures is not None:
        result['figures'] = figures
        say_figures(identity, figures)


def say_figures(identity, figures):
    from .core.tuning.result import describe_figures
    logger.warning('Sweep %s: %s', identity.name, describe_figures(figures))
    say_front(identity, figures)


def say_front(identity, figures):
    """The Pareto front's line, for a sweep with several objectives or constraints."""
    if figures.get('pareto'):
        from .core.tuning.front import describe_front
        logger.warning('Sweep %s: %s', identity.name, describe_front(figures['pareto']))


def run_decisions(cmd, client, identity):
    """({job name: decision dict}, figures) of a `sweep run` of this sweep, for the report: the rows and figures
    `status` shows."""
    from .core.report.decisions import decisions_from_run_rows
    rows, figures = run_view_of(cmd, client, identity)
    return decisions_from_run_rows(rows), figures


def saved_objective(cmd, resource_group, workspace_name, experiment_name, sweep_name):
    """The sweep file's objective, as `sweep run` (its journal, its jobs) or `create` (the plan's header) kept it."""
    from azure.cli.core.azclierror import RequiredArgumentMissingError
    from ._planning import default_plan_header
    from ._run import run_journal_path
    from .core.tuning.journal import Journal
    path = run_journal_path(cmd.cli_ctx, resource_group, workspace_name, experiment_name, sweep_name)
    with core_errors():
        objective = Journal(path).data.get('objective') if os.path.exists(path) else None
    if objective is None:  # `<name>.plan.jsonl` here, only when it is this sweep's (same target)
        header = default_plan_header(sweep_identity(resource_group, workspace_name, experiment_name, sweep_name))
        objective = (header or {}).get('objective')
    if objective is None:
        from .core.service.identity import sweep_jobs
        from .core.tuning.loop import objective_from_service
        with core_errors():
            objective = objective_from_service(sweep_jobs(client_of(cmd), resource_group, workspace_name,
                                                          experiment_name, sweep_name, retry=retry_settings()))
    if not objective:
        raise RequiredArgumentMissingError(
            'Give --metric or --regex: no objective is known for sweep {}'.format(sweep_name),
            recommendation='Or put an objective (metric or regex, and goal) in the sweep file: `sweep run` and '
                           '`create` keep it for metrics.')
    return objective


def report_objective(cmd, identity, header, *, metric, regex, goal, step, file, output_directory_id):
    """The objective `sweep report` reads the jobs' values with (core/report/model.Objective): --metric/--regex, else
    the plan's, else the sweep file's as `sweep run` or `create` kept it (else an error); --goal, --step, --file and
    --output-directory-id over it."""
    from .core.report.decisions import objective_from_run
    from .core.report.model import Objective
    if metric or regex:
        objective = {'metric': metric, 'regex': regex}
    elif header is not None and header.get('objective'):
        objective = objective_from_run(header['objective'])
    else:  # the sweep file's, as `sweep run` (its journal) or `create` (the plan) kept it; else an error
        objective = objective_from_run(saved_objective(cmd, identity.resource_group, identity.workspace,
                                                       identity.experiment, identity.name))
    given = {'goal': goal, 'step': step, 'file': file, 'output_directory_id': output_directory_id}
    return Objective(**dict(objective, **{key: value for key, value in given.items() if value}))
