# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The live views of a sweep on the command side: `status --watch` (one screen on stderr, core/report/screen.py),
`report --watch/--serve` and `run --report` (the live page, core/report/live.py and serve.py).
"""
import os

from knack.log import get_logger

from ._command_context import output_format, retry_settings
from ._errors import core_errors
from ._run_view import run_decisions, saved_objective
from ._scheduler_view import scheduler_job_ids
from ._selection import no_jobs

logger = get_logger(__name__)


def run_report(cmd, client, identity, output_file, interval, retry):
    """run --report FILE: the live page (core/report/live.RunReport) the run brings up to date after its polls."""
    from .core.report.decisions import objective_from_run
    from .core.report.live import LiveSweep, RunReport
    from .core.report.model import Objective

    def make_sweep(run):
        return LiveSweep(client, identity.resource_group, identity.workspace, identity.experiment, identity.name,
                         Objective(**objective_from_run(run.objective)), context=live_context(cmd, client, identity),
                         retry=retry)
    return RunReport(os.path.abspath(output_file), make_sweep, interval=interval, warn=logger.warning)


def watch_status_screen(cmd, client, identity, interval, max_retries):
    """status --watch: the live one-screen summary on stderr (core/report/screen.py) until every job has ended."""
    import sys
    from azure.cli.core.azclierror import RequiredArgumentMissingError
    from .core.report.decisions import objective_from_run
    from .core.report.live import LiveSweep
    from .core.report.model import Objective
    from .core.report.screen import Screen, watch_status
    try:
        objective = Objective(**objective_from_run(saved_objective(
            cmd, identity.resource_group, identity.workspace, identity.experiment, identity.name)))
    except RequiredArgumentMissingError:
        objective = None  # no objective known: the states only

    with core_errors():
        sweep = LiveSweep(client, identity.resource_group, identity.workspace, identity.experiment, identity.name,
                          objective, context=live_context(cmd, client, identity), retry=retry_settings(max_retries))
        if watch_status(sweep, Screen(sys.stderr), interval=interval, on_error=logger.warning) is None:
            no_jobs(identity, client)


def live_report(cmd, client, identity, objective, header, output_file, interval, parallel, port=None,
                open_report=False):
    """report --watch / --serve: the live page (core/report/live.py, serve.py) until the sweep has ended."""
    from azure.cli.core.util import open_page_in_browser
    from .core.report.live import LiveDocument, LiveSweep
    from .core.report.serve import watch_and_maybe_serve
    with core_errors():
        sweep = LiveSweep(client, identity.resource_group, identity.workspace, identity.experiment, identity.name,
                          objective, plan_header=header, context=live_context(cmd, client, identity),
                          parallel=parallel, cache=report_cache(cmd, identity, objective))
        data = watch_and_maybe_serve(sweep, LiveDocument(output_file, interval=interval), interval=interval,
                                     port=port, say=logger.warning,
                                     open_page=open_page_in_browser if open_report else None)
    if data is None:
        no_jobs(identity, client)
    if output_format(cmd) == 'none':
        return None
    return dict(data, reportFile=output_file)


def report_cache(cmd, identity, objective):
    """What the last report (or live view) of the sweep read of its jobs' logs (core/report/log_cache.py), kept beside
    the sweep's journal: one file per sweep and target."""
    from ._run import run_journal_path
    from .core.report.log_cache import LogCache
    journal = run_journal_path(cmd.cli_ctx, identity.resource_group, identity.workspace, identity.experiment,
                               identity.name)
    return LogCache(journal[:-len('.run.json')] + '.report-cache.json', objective)


def live_context(cmd, client, identity):
    """What a live view (core/report/live.LiveSweep) asks at each look besides the jobs: a `sweep run`'s decisions,
    figures and outline (its journal: whether it has ended), the Slurm job ids."""
    from ._run import run_journal_path
    from .core.tuning.loop import run_outline
    journal = run_journal_path(cmd.cli_ctx, identity.resource_group, identity.workspace, identity.experiment,
                               identity.name)

    def context():
        decisions, figures = run_decisions(cmd, client, identity)
        return {'decisions': decisions, 'figures': figures, 'scheduler_ids': scheduler_job_ids(cmd, client, identity),
                'run': run_outline(journal) if figures is not None else None}
    return context
