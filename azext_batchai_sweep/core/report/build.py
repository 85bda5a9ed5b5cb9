"""A report's data from a sweep's trials, and its file: the HTML is written to a temporary file beside the target
and renamed over it, so a report being rewritten is never seen half-written (a browser tab reloading it, a CI
artifact upload). `az batchai sweep report` in one call is snapshot.make_report; the live page, live.py.
"""
import os
import tempfile

from .collect import plan_details, sweep_record
from .data import report_data
from .model import EXTRA_SAMPLING


def write_file_atomically(path, text, mode=0o644):
    """Write `text` to a temporary file beside `path` (made private by mkstemp), give it `mode`, rename it over
    `path`; the temporary is removed on any error."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix='.report-', suffix='.tmp', dir=directory)
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as out:
            out.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def data_of_trials(trials, sweep_name, objective, *, resource_group=None, workspace=None, experiment=None,
                   plan_header=None, figures=None, run=None, memo=None):
    """The report's data of the sweep's trials (collect.trial_of), with what the plan or the jobs say of its sampling.
    `memo`: a data.Memo kept from one call to the next (a live report's: what did not change is not made again)."""
    sampling, parameters = plan_details(plan_header) if plan_header else (None, [])
    if sampling is None:  # a `sweep run` writes no plan; its jobs carry the sampling
        carried = {trial.extra.get(EXTRA_SAMPLING) for trial in trials} - {None}
        sampling = carried.pop() if len(carried) == 1 else None
    record = sweep_record(sweep_name, objective, trials, resource_group=resource_group, workspace=workspace,
                          experiment=experiment, sampling=sampling, parameters=parameters)
    return report_data(record, figures=figures, run=run, memo=memo)
