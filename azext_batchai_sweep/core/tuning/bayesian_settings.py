"""The sweep file's ``sampling: {type: bayesian, count, seed, startupJobs, multiFidelity, randomFraction}`` (the TPE
sampler, core/tuning/samplers/tpe.py; with multiFidelity under ASHA, samplers/multifidelity.py) and Hyperband's
``sampler: bayesian`` (BOHB, samplers/bohb.py), resolved and checked with the same SpecErrors as the rest of the file.

Kept apart from settings.py (objective, limits, earlyTermination, Hyperband) so that each sampling type's rules
live beside each other; settings.py and sweepfile.py call the two functions below. It imports no sampler (the
samplers read its constants; samplers/__init__.py builds the sampler these settings describe: make_tpe_sampler).
"""
from ..errors import SpecError

BAYESIAN = 'bayesian'
DEFAULT_STARTUP_JOBS = 10
DEFAULT_RANDOM_FRACTION = 1.0 / 3  # BOHB's rho (samplers/bohb.py)


def resolve_bayesian(written, count, resolved):
    """Fill ``resolved`` (the sampling as sweepfile.py resolves it) with count and startupJobs.

    :param written: the file's sampling section (its type may differ when --sampling bayesian overrides it).
    :param count: --count, or None.
    """
    # A random sampling section's count still says how many jobs the user meant to spend.
    resolved['count'] = count if count is not None else written.get('count')
    multi = bool(written.get('multiFidelity', False))
    # Multi-fidelity: startupJobs is the results a rung needs before its model is used; None: BOHB's d + 3.
    resolved['startupJobs'] = written.get('startupJobs', None if multi else DEFAULT_STARTUP_JOBS)
    if multi:
        resolved['multiFidelity'] = True
        resolved['randomFraction'] = written.get('randomFraction', DEFAULT_RANDOM_FRACTION)
    return resolved


def resolve_hyperband_sampler(written, resolved):
    """Hyperband's sampler (random, or bayesian: BOHB), the settings of its model, and its iterations."""
    if written.get('iterations', 1) != 1:  # (1, the default, adds nothing: a sweep's jobs carry what it had)
        resolved['iterations'] = written['iterations']
    if written.get('sampler') == BAYESIAN:  # (random, the default, adds nothing: a sweep's jobs carry what it had)
        resolved['sampler'] = BAYESIAN
        resolved['startupJobs'] = written.get('startupJobs')
        resolved['randomFraction'] = written.get('randomFraction', DEFAULT_RANDOM_FRACTION)
    return resolved


def model_based(sampling):
    """True when the sampling learns from the results (the ones warmStart can teach)."""
    return sampling['type'] == BAYESIAN or sampling.get('sampler') == BAYESIAN


def check_model_settings(written, sampling, policy, path):
    """The model's keys only where a model uses them: each error names the key and what would use it."""
    kind = sampling['type']
    if kind == BAYESIAN and sampling.get('multiFidelity') and (policy or {}).get('policy') != 'asha':
        raise SpecError('expected earlyTermination {policy: asha, ...} with multiFidelity: the model is fitted on '
                        'the values at ASHA\'s rungs', source=path, path='sampling.multiFidelity')
    if 'randomFraction' in written and not (kind == BAYESIAN and sampling.get('multiFidelity')
                                            or sampling.get('sampler') == BAYESIAN):
        raise SpecError('expected randomFraction only with a multi-fidelity model (hyperband with sampler: '
                        'bayesian, or bayesian with multiFidelity: true)', source=path, path='sampling.randomFraction')
    if kind == 'hyperband' and 'startupJobs' in written and sampling.get('sampler') != BAYESIAN:
        raise SpecError('expected startupJobs only with sampler: bayesian (random Hyperband has no model)',
                        source=path, path='sampling.startupJobs')
    if written.get('warmStart') and not model_based(sampling):
        raise SpecError('expected warmStart only with a sampler that learns from results (type: bayesian, or '
                        'hyperband with sampler: bayesian); {} sampling would not use them'.format(kind),
                        source=path, path='sampling.warmStart')


def check_bayesian(sampling, objective, max_total_jobs, path):
    """Bayesian sampling learns from the objective and must know when to stop (max_total_jobs: the run's, the option
    else the file's limits.maxTotalJobs, or None)."""
    if objective is None:
        raise SpecError('expected an objective ({metric: NAME, goal: max} or a regex): bayesian sampling suggests '
                        'each new job from the objective of the jobs so far', source=path, path='objective')
    if sampling['count'] is None and max_total_jobs is None:
        raise SpecError('expected the number of jobs of a bayesian search (sampling.count, --count, '
                        'limits.maxTotalJobs or --max-total-jobs)', source=path, path='sampling.count')


def objectives_of(definition):
    """The sweep's objectives.Objectives when it has several objectives or constraints, else None."""
    if not getattr(definition, 'objective_set', None):
        return None
    from .objectives import Objectives
    return Objectives.from_spec(definition.objective_set, definition.objective)


def jobs_to_run(sampling, limits):
    """How many jobs a bayesian sweep runs: its count, else the run's maxTotalJobs (the option, else the file's);
    None when neither bounds it. The TPE stops suggesting there and starts its local phase (samplers/tpe.py) at 70%
    of it. A count wins over a smaller maxTotalJobs: that limit may be a slice of the sweep (`--max-total-jobs 10`,
    then a run without it), and a sweep run in slices must suggest what one run would."""
    if sampling['count'] is not None:
        return sampling['count']
    return limits.max_total_jobs if limits else None
