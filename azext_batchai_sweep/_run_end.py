# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""How a `sweep run` ends on the command side: a signal or an error while it steers jobs (which still run, how to stop
or resume them), and its exit code once its result is printed (no best job, no value of the objective, a timeout,
jobs terminated by someone else).
"""
from knack.log import get_logger

from ._command_context import client_of, retry_settings
from ._output import fail_after_output
from ._run_view import say_front

logger = get_logger(__name__)


def steer(cmd, identity, prepare_and_run, steering):
    """Run the sweep with SIGINT, SIGTERM and SIGHUP caught from the start. Ended by one of them: say which jobs still
    run and how to stop or resume them (stopping them with --stop-on-exit), then exit 128 + the signal. Ended by an
    error once it steers jobs: the same, then the error (an error before, such as a bad sweep file, is only that)."""
    from ._exit_codes import InterruptedByASignalError
    from ._run import Interrupted, ended_early, signals_interrupt
    try:
        with signals_interrupt():
            return prepare_and_run()
    except Interrupted as ex:
        import signal
        name = signal.Signals(ex.signum).name
        message, recommendation = ended_early(cmd.cli_ctx, identity, 'interrupted by {}'.format(name),
                                              steering['stopOnExit'])
        raise InterruptedByASignalError(ex.signum, message, recommendation=recommendation) from None
    except Exception as ex:  # an error ends the run: nothing may be left running unsaid (or, asked, unstopped)
        if steering['started']:
            message, recommendation = ended_early(cmd.cli_ctx, identity, type(ex).__name__, steering['stopOnExit'])
            logger.warning('%s. %s', message, recommendation)
        raise


def run_outcome(cmd, result, definition, identity, spec):
    """The run's exit code, once its result is printed: 0 with a best job (a timeout is a budget), BAD_INPUT when no
    job reports the objective (strict), JOBS_FAILED when someone else stopped its jobs or no job ran to the end with a
    value, TIMEOUT when its timeout came first."""
    from ._exit_codes import JobsFailedError, SweepTimeoutError
    from ._run import resume_command
    from .core.tuning.controller import END_STOPPED, END_TIMEOUT, END_UNREPORTED
    from .core.tuning.result import describe
    logger.warning('Sweep %s: %s', identity.name, describe(result))
    say_front(identity, result)
    see = ('See a job\'s output with "az batchai sweep status {} --job NAME --tail 50", and check the objective of the '
           'sweep file against what the jobs print.'.format(identity.args()))
    pareto = result.get('pareto') or {}
    if result['ended'] == END_UNREPORTED:
        from azure.cli.core.azclierror import InvalidArgumentValueError
        fields = 'objective.metric (or objective.regex)' if '].metric)' not in result['objectiveNotReported'] else \
            'the field named there'
        fail_after_output(cmd.cli_ctx, InvalidArgumentValueError(
            'Sweep {} stopped: {}'.format(identity.name, result['objectiveNotReported']),
            recommendation='Fix {} in {} to a name the jobs print (see "az batchai sweep run -h", section '
                           'Objective), then run the same command again.'.format(fields, spec)))
    elif result['ended'] == END_STOPPED:
        fail_after_output(cmd.cli_ctx, JobsFailedError(
            'Jobs of sweep {} were terminated by someone else: the run ended without running them to the end'.format(
                identity.name), recommendation='Go on with "{}".'.format(resume_command())))
    elif result['ended'] == END_TIMEOUT and result['best'] is None:
        fail_after_output(cmd.cli_ctx, SweepTimeoutError(
            'Sweep {} reached its timeout before any job ran to the end{}; its running jobs were terminated'.format(
                identity.name, ' with a value of the objective' if definition.objective else ''),
            recommendation='Give it more time (--timeout, limits.timeoutMinutes). ' + see))
    elif definition.objective and result['best'] is None and result['counts'].get('failed') \
            and not result['counts'].get('succeeded'):
        from ._run import first_failure
        name, why = first_failure(client_of(cmd), identity, retry_settings())
        failed, total = result['counts']['failed'], sum(result['counts'].values())
        fail_after_output(cmd.cli_ctx, JobsFailedError(
            '{} of sweep {} failed; the first, {}: {}'.format(
                'Every job ({})'.format(total) if failed == total else '{} of its {} jobs'.format(failed, total),
                identity.name, name, why),
            recommendation='See its output with "az batchai sweep status {} --job {} --tail 50", fix the job in {} '
                           '(its command line, the script\'s path, limits.jobTimeoutMinutes), then run it as a new '
                           'sweep (another -n) or delete this one first ("az batchai sweep delete {} --yes").'.format(
                               identity.args(), name, spec, identity.args())))
    elif definition.objective and (result['best'] is None or (
            len(pareto.get('objectives') or ()) > 1 and not pareto.get('front'))):
        fail_after_output(cmd.cli_ctx, JobsFailedError(no_best_text(identity, result), recommendation=see))


def no_best_text(identity, result):
    """Why a run has no best job (or, with several objectives, an empty front): every job that ran to the end with
    its values broke a constraint (named), or none ran to the end with a value of every objective."""
    pareto = result.get('pareto') or {}
    several = len(pareto.get('objectives') or ()) > 1
    broken = [entry for entry in pareto.get('infeasible') or () if entry.get('values') or not several]
    if broken and not pareto.get('ranked'):
        causes = sorted({part.split(' (')[0] for entry in broken for part in (entry.get('failed') or '').split('; ')
                         if part})
        return ('No job of sweep {} met the constraints: all {} job(s) that ran to the end with a value broke {} '
                '({})'.format(identity.name, len(broken), ' or '.join(causes) or 'a constraint',
                              '; '.join('{}: {}'.format(e['name'], e['failed']) for e in broken[:3]) +
                              (' and {} more'.format(len(broken) - 3) if len(broken) > 3 else '')))
    if several:
        text = 'No job of sweep {} ran to the end with a value of every objective ({})'.format(
            identity.name, ', '.join(o['metric'] for o in pareto['objectives']))
        return text + (': ' + result['objectiveNotReported'] if result.get('objectiveNotReported') else '')
    return 'No job of sweep {} ran to the end with a value of the objective'.format(identity.name)
