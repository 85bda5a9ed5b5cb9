"""`az batchai sweep report` in one call: read the sweep from the service, make the report's data, write the HTML.

The HTML is written to a temporary file beside the target and renamed over it, so a report being rewritten is
never seen half-written (a browser tab reloading it, a CI artifact upload).
"""
import os
import tempfile

from ..outputs.metrics import MetricExtractor
from ..outputs.names import nothing_matched
from ..tuning.trial import FINISHED_STATES
from .collect import plan_details, read_trials, sweep_record
from .data import report_data
from .html import render_html
from .intermediate import ReportReader
from .model import EXTRA_SAMPLING


def write_file_atomically(path, text):
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix='.report-', suffix='.html', dir=directory)
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def make_report(client, resource_group, workspace, experiment, sweep_name, objective, output_file, *,
                plan_header=None, decisions=None, scheduler_ids=None, figures=None, run=None, parallel=8,
                progress=None, retry=None):
    """Read the sweep, write its report to output_file; returns the report's data (None when the sweep has no
    jobs: nothing is written then).

    :param objective: a model.Objective (metric or regex, goal, step key, file, output directory).
    :param plan_header: the header of the sweep's plan file, for the sampling type and the parameters' scales.
    :param decisions: {job name: decision dict} from the adaptive-sweep controller, if any.
    :param scheduler_ids: {job name, lower case: its id at the scheduler} on a local Slurm or Azure Batch service
        (scheduler_ids.SchedulerMap, which names the scheduler: the report's column says what the id is).
    :param figures: that controller's figures of the sweep (core/tuning/result.sweep_figures), if any.
    :param run: that controller's outline of the run (core/tuning/loop.run_outline), if any.
    """
    extractor = MetricExtractor(regex=objective.regex, metric_name=objective.metric)
    reader = ReportReader(extractor, step_key=objective.step)
    trials = read_trials(client, resource_group, workspace, experiment, sweep_name, reader, file=objective.file,
                         output_directory_id=objective.output_directory_id, decisions=decisions,
                         scheduler_ids=scheduler_ids, parallel=parallel,
                         progress=progress, retry=retry)
    if not trials:
        return None
    finished = [t.name for t in trials if t.state in FINISHED_STATES]
    if finished and not any(t.reports for t in trials):  # a misnamed --metric: no empty report, the names there
        raise nothing_matched(client, resource_group, workspace, experiment, sweep_name, finished,
                              metric=objective.metric, regex=objective.regex, file=objective.file,
                              output_directory_id=objective.output_directory_id, retry=retry)
    data = data_of_trials(trials, sweep_name, objective, resource_group=resource_group, workspace=workspace,
                          experiment=experiment, plan_header=plan_header, figures=figures, run=run)
    write_file_atomically(output_file, render_html(data))
    return data


def data_of_trials(trials, sweep_name, objective, *, resource_group=None, workspace=None, experiment=None,
                   plan_header=None, figures=None, run=None, memo=None):
    """The report's data of the sweep's trials (read_trials), with what the plan or the jobs say of its sampling.
    `memo`: a data.Memo kept from one call to the next (a live report's: what did not change is not made again)."""
    sampling, parameters = plan_details(plan_header) if plan_header else (None, [])
    if sampling is None:  # a `sweep run` writes no plan; its jobs carry the sampling
        carried = {trial.extra.get(EXTRA_SAMPLING) for trial in trials} - {None}
        sampling = carried.pop() if len(carried) == 1 else None
    record = sweep_record(sweep_name, objective, trials, resource_group=resource_group, workspace=workspace,
                          experiment=experiment, sampling=sampling, parameters=parameters)
    return report_data(record, figures=figures, run=run, memo=memo)
