"""`az batchai sweep report` in one call: read the sweep from the service as the live view reads it (live.LiveSweep),
make the report's data, write the HTML (build.write_file_atomically).
"""
import logging

from ..outputs.names import nothing_matched
from ..tuning.trial import FINISHED_STATES
from .build import write_file_atomically
from .html import render_html
from .live import LiveSweep

logger = logging.getLogger(__name__)


def make_report(client, resource_group, workspace, experiment, sweep_name, objective, output_file, *,
                plan_header=None, decisions=None, scheduler_ids=None, figures=None, run=None, parallel=8,
                progress=None, retry=None, cache=None):
    """Read the sweep, write its report to output_file; returns the report's data (None when the sweep has no
    jobs: nothing is written then).

    The sweep is read as the live view reads it (live.LiveSweep: one listing, then per job not read to its end the
    bytes its log has beyond what was read), so with ``cache`` (a log_cache.LogCache) a report after an earlier one
    reads only what changed since; without, every log from its start.

    :param objective: a model.Objective (metric or regex, goal, step key, file, output directory).
    :param plan_header: the header of the sweep's plan file, for the sampling type and the parameters' scales.
    :param decisions: {job name: decision dict} from the adaptive-sweep controller, if any.
    :param scheduler_ids: {job name, lower case: its id at the scheduler} on a local Slurm or Azure Batch service
        (scheduler_ids.SchedulerMap, which names the scheduler: the report's column says what the id is).
    :param figures: that controller's figures of the sweep (core/tuning/result.sweep_figures), if any.
    :param run: that controller's outline of the run (core/tuning/loop.run_outline), if any.
    :param progress: progress(done, total), counting the jobs whose logs are read.
    """
    context = {'decisions': decisions, 'figures': figures, 'run': run, 'scheduler_ids': scheduler_ids}
    sweep = LiveSweep(client, resource_group, workspace, experiment, sweep_name, objective, plan_header=plan_header,
                      context=lambda: context, parallel=parallel, retry=retry, cache=cache)
    sweep.update(on_error=logger.warning, progress=progress)
    trials = sweep.trials
    if not trials:
        return None
    finished = [t.name for t in trials if t.state in FINISHED_STATES]
    if finished and not any(t.reports for t in trials):  # a misnamed --metric: no empty report, the names there
        raise nothing_matched(client, resource_group, workspace, experiment, sweep_name, finished,
                              metric=objective.metric, regex=objective.regex, file=objective.file,
                              output_directory_id=objective.output_directory_id, retry=retry)
    write_file_atomically(output_file, render_html(sweep.data))
    return sweep.data
