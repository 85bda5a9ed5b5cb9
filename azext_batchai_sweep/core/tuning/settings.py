"""The tuning sections of a sweep file (objective, limits, earlyTermination, Hyperband sampling), checked beyond
what sweep.schema.json can say, with the same SpecErrors (file, field, what was expected) as the rest of the file.

`create` and `submit` plan every job before the first result: they take `objective` (the defaults of `metrics`)
and `limits.jobTimeoutMinutes` (each job's maxWallClockTime), and refuse what only `az batchai sweep run` can do.
"""
import logging

from ..errors import SpecError
from .bayesian_settings import BAYESIAN, check_bayesian, check_model_settings

logger = logging.getLogger(__name__)

RUN_ONLY = 'only `az batchai sweep run` can {} (create and submit plan every job before the first result)'
NEEDS_RUN_LIMITS = ('maxTotalJobs', 'maxConcurrentJobs', 'timeoutMinutes', 'stopOnExit', 'stopAt',
                    'noImprovementJobs')
# Limits that end a sweep by its results: they compare the jobs' objective.
RESULT_LIMITS = ('stopAt', 'noImprovementJobs')


def check_tuning(document, sampling, path, adaptive, max_total_jobs=None):
    """Check the sections against each other; returns (objective, limits, earlyTermination) as dicts (or None).

    :param sampling: the resolved sampling (type, seed, and Hyperband's settings).
    :param adaptive: True for `sweep run`; False for create/submit, which refuse the sections they cannot honour.
    :param max_total_jobs: `sweep run`'s --max-total-jobs (it overrides limits.maxTotalJobs), or None.
    """
    objective = document.get('objective')
    limits = dict(document.get('limits') or {})
    policy = document.get('earlyTermination')
    if not adaptive:
        if policy is not None:
            raise SpecError('expected no earlyTermination here: ' + RUN_ONLY.format('stop jobs by their results'),
                            source=path, path='earlyTermination')
        from .samplers import ADAPTIVE_SAMPLING
        if sampling['type'] in ADAPTIVE_SAMPLING:
            raise SpecError('expected grid or random sampling here: ' + RUN_ONLY.format(
                'choose jobs by their results ({} sampling)'.format(sampling['type'])), source=path,
                path='sampling.type')
        for key in NEEDS_RUN_LIMITS:
            if key in limits:
                raise SpecError('expected no {} here: '.format(key) + RUN_ONLY.format('hold a sweep to its limits'),
                                source=path, path='limits.' + key)
    check_model_settings(document.get('sampling') or {}, sampling, policy, path)
    if objective is not None:
        _check_objective(objective, path)
    if sampling['type'] == BAYESIAN:
        check_bayesian(sampling, objective, max_total_jobs or limits.get('maxTotalJobs'), path)
    from .samplers import ADAPTIVE_SAMPLING
    needs = 'earlyTermination.policy {}'.format(policy['policy']) if policy else (
        '{} sampling'.format(sampling['type']) if sampling['type'] in ADAPTIVE_SAMPLING else None)
    if needs is None:
        needs = next(('limits.{}'.format(key) for key in RESULT_LIMITS if key in limits), None)
    if needs and objective is None:
        raise SpecError('expected an objective ({{metric: NAME, goal: max}} or a regex): {} compares the jobs\' '
                        'objective'.format(needs), source=path, path='objective')
    if policy and policy['policy'] == 'asha' and policy['maxResource'] <= policy['minResource']:
        raise SpecError('expected a maxResource larger than minResource ({:g})'.format(policy['minResource']),
                        source=path, path='earlyTermination.maxResource')
    if sampling['type'] == 'hyperband':
        if policy is not None:
            raise SpecError('expected no earlyTermination with hyperband sampling: Hyperband stops the '
                            'configurations itself (use policy asha with grid or random sampling instead)',
                            source=path, path='earlyTermination')
        eta = sampling['eta']
        if sampling['maxResource'] < sampling['minResource'] * eta:
            raise SpecError('expected a maxResource of at least minResource * eta ({:g}), so that there is '
                            'something to halve'.format(sampling['minResource'] * eta), source=path,
                            path='sampling.maxResource')
    total, concurrent = limits.get('maxTotalJobs'), limits.get('maxConcurrentJobs')
    if total is not None and concurrent is not None and concurrent > total:
        logger.warning('limits.maxConcurrentJobs (%d) is more than limits.maxTotalJobs (%d): at most %d jobs will '
                       'run at once', concurrent, total, total)
    job_timeout, timeout = limits.get('jobTimeoutMinutes'), limits.get('timeoutMinutes')
    if job_timeout is not None and timeout is not None and job_timeout > timeout:
        logger.warning('limits.jobTimeoutMinutes (%g minutes) is longer than limits.timeoutMinutes (%g minutes): the '
                       'sweep\'s timeout stops the jobs first', job_timeout, timeout)
    return objective, limits, policy


def _check_objective(objective, path):
    if objective.get('step') and objective.get('regex'):
        raise SpecError('expected no step with a regex: name a group "step" in the regex instead', source=path,
                        path='objective.step')
    from ..outputs.metrics import MetricExtractor  # not at import: planning a sweep needs no HTTP stack
    try:
        MetricExtractor(regex=objective.get('regex'), metric_name=objective.get('metric'))
    except SpecError as ex:
        raise SpecError(ex.message, source=path, path='objective.' + (ex.path or 'regex')) from None


def wall_clock(minutes):
    """jobTimeoutMinutes as the ISO 8601 duration of constraints.maxWallClockTime ('PT1H30M', 'PT4.5S')."""
    seconds = round(minutes * 60, 3)
    hours, rest = divmod(seconds, 3600)
    mins, secs = divmod(rest, 60)
    text = 'PT' + ''.join('{:g}{}'.format(v, unit) for v, unit in ((hours, 'H'), (mins, 'M'), (secs, 'S')) if v)
    return text if text != 'PT' else 'PT0S'
