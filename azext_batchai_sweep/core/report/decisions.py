"""The adaptive-sweep controller's decisions (core/tuning, `sweep run`) as the report's per-job decisions.

`sweep run` keeps, per job, the row `status` shows (core/tuning/result.tuning_row: decision, rule, reason with the
numbers, step, bracket, rung) in its journal; the report reads the same rows, so a job's decision reads the same in
`status`, in `sweep run`'s result and on the report's curves and table.
"""
from .model import Decision

# What a decision did to a job; "ran to the end" is no decision (the job's own end).
ACTIONS = ('stopped', 'timeout', 'promoted', 'not promoted')
STOPPING = ('stopped', 'timeout')


def decisions_from_run_rows(rows):
    """{job name: Decision dict} from `sweep run`'s status rows ({name: row}); jobs without a decision are left out.

    A job the controller stopped (a policy, or the sweep's timeout) has action "stopped" (the report marks it
    stopped early); Hyperband's "promoted" and "not promoted" keep their names.
    """
    decisions = {}
    for name, row in (rows or {}).items():
        kind = (row or {}).get('decision')
        if kind not in ACTIONS:
            continue
        decisions[name] = Decision(action='stopped' if kind in STOPPING else kind, rule=row.get('rule'),
                                   reason=row.get('reason') or kind, step=row.get('step'), rung=row.get('rung'),
                                   bracket=row.get('bracket')).as_dict()
    return decisions


def objective_from_run(objective):
    """The keyword arguments of model.Objective from a sweep file's `objective` section (as `sweep run` keeps it)."""
    if not objective:
        return None
    found = {'metric': objective.get('metric'), 'regex': objective.get('regex'),
             'goal': objective.get('goal') or 'max', 'step': objective.get('step')}
    if objective.get('file'):
        found['file'] = objective['file']
    if objective.get('outputDirectoryId'):
        found['output_directory_id'] = objective['outputDirectoryId']
    return found
