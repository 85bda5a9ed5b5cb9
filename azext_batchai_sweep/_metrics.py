# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""`sweep metrics`' views of a `sweep run`: its Pareto front, each parameter's importance (for the metric, or for each
objective), and the jobs that broke a constraint (marked, and left out of --top).
"""
import os

from knack.log import get_logger

from ._command_context import retry_settings
from ._errors import core_errors
from ._output import listed as _listed
from ._run_view import say_figures

logger = get_logger(__name__)


def mark_infeasible(identity, rows, run_rows, top):
    """A `sweep run` with constraints: each row's `infeasible` (the constraints its job broke, or None); returns the
    names of the infeasible jobs, which rank below every feasible one and never come with --top (core/tuning/best.py:
    an infeasible job is never the best, in any command)."""
    if not any('infeasible' in (row or {}) for row in (run_rows or {}).values()):
        return set()
    broken = {name: (row or {}).get('infeasible') for name, row in run_rows.items()}
    for row in rows:
        row['infeasible'] = broken.get(row['name'])
    names = {name for name, text in broken.items() if text}
    if names:
        logger.warning('Sweep %s: %d job(s) broke a constraint (marked infeasible%s): %s', identity.name, len(names),
                       '; left out of --top' if top is not None else '', _listed(sorted(names)))
    return names


def importance_per_objective(identity, pareto):
    """metrics --importance on a `sweep run` with several objectives: the importance for each of them."""
    from .core.report.importance import front_importance
    return said_importance(identity, front_importance(pareto, infos=plan_infos(identity)))


def plan_infos(identity):
    """The parameters' types and scales from the sweep's plan here (`<name>.plan.jsonl`), else none."""
    from ._planning import default_plan_header
    from .core.report.collect import plan_details
    header = default_plan_header(identity)
    return plan_details(header)[1] if header else ()


def said_importance(identity, entries):
    for entry in entries:
        if entry['tooFewJobs'] or entry.get('nothingRanked'):
            logger.warning('Sweep %s: no importance for %s: %s.', identity.name, entry['objective'],
                           entry['message'])
        said = entry.get('resource')
        if said:  # Hyperband: values at different resources do not compare (core/report/importance.at_one_resource)
            logger.warning('Sweep %s: importance for %s from the jobs at %s %g only (%d; %d at other %s left out).',
                           identity.name, entry['objective'], said['name'], said['value'], said['jobs'],
                           said['leftOut'], said['name'])
    return {'sweep': identity.name, 'importance': entries}


def importance_of_metric(identity, rows, goal, metric, run_rows):
    """metrics --importance: each parameter's importance for the metric (core/report/importance.py), on the
    scales of the sweep's plan where it is here; the jobs a `sweep run` decision stopped count with their value."""
    from .core.report.importance import metrics_importance
    stopped = {name for name, row in (run_rows or {}).items() if (row or {}).get('decision') == 'stopped'}
    resources = {name: (row or {}).get('resource') for name, row in (run_rows or {}).items()}
    return said_importance(identity, metrics_importance(rows, goal, metric, infos=plan_infos(identity),
                                                        stopped=stopped, resources=resources))


def pareto_front(cmd, identity, top, run_view):
    """A `sweep run` with several objectives: its Pareto front (core/tuning/front.py), else None."""
    from ._run import run_journal_path
    from .core.tuning.journal import Journal
    path = run_journal_path(cmd.cli_ctx, identity.resource_group, identity.workspace, identity.experiment,
                            identity.name)
    with core_errors():
        journal = Journal(path).data if os.path.exists(path) else {}
    if journal.get('objective') is not None and 'objectives' not in (journal.get('figures') or {}).get('pareto', {}):
        return None  # this machine ran it with one objective: no front to show, and no need to list the jobs
    figures = run_view.get()[1]
    pareto = (figures or {}).get('pareto') or {}
    if len(pareto.get('objectives') or ()) < 2:
        return None
    say_figures(identity, figures)
    return pareto['front'][:top] if top else pareto['front']


def check_values_read(client, identity, rows, files_found, *, metric, regex, file, output_directory_id):
    """Raise when nothing could be read: no finished job has the file, or no job's file has a value of the metric
    (naming the metrics the jobs do print); else say how many jobs have no value. Call inside core_errors()."""
    finished = any(row['state'] in ('succeeded', 'failed', 'terminated') for row in rows)
    if not files_found and finished:
        from .core.errors import NotFoundError
        raise NotFoundError(
            'None of the {} job(s) of sweep {} has the file {} in output directory {}'.format(
                len(rows), identity.name, file, output_directory_id),
            recommendation='Check --file and --output-directory-id; "az batchai sweep download {} --jobs {}" '
                           'shows what a job wrote.'.format(identity.args(), rows[0]['name']))
    finished = [row['name'] for row in rows if row['state'] in ('succeeded', 'failed', 'terminated')]
    if finished and all(row['metric'] is None for row in rows):
        from .core.outputs.names import nothing_matched
        raise nothing_matched(client, identity.resource_group, identity.workspace, identity.experiment, identity.name,
                              finished, metric=metric, regex=regex, file=file, output_directory_id=output_directory_id,
                              retry=retry_settings())
    missing = sum(1 for row in rows if row['metric'] is None)
    if missing:  # of every job of the sweep, not of the --top shown
        logger.warning('%d of %d job(s) have no value for the metric', missing, len(rows))


def values_when_judged(rows, run_rows):
    """Rows ranked by a `sweep run`'s objective: a job a rule stopped has its value when judged; what it printed
    later is shown apart (`afterDecision`)."""
    from .core.tuning.job_value import STOPPING_KINDS
    for row in rows:
        tuning = run_rows.get(row['name']) or {}
        if tuning.get('decision') in STOPPING_KINDS and tuning.get('latest') is not None \
                and row['metric'] != tuning['latest']:
            row['afterDecision'], row['metric'] = row['metric'], tuning['latest']
