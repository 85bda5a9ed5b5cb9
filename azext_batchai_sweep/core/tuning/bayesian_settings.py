"""The sweep file's ``sampling: {type: bayesian, count, seed, startupJobs}`` (the TPE sampler,
core/tuning/samplers/tpe.py), resolved and checked with the same SpecErrors as the rest of the file.

Kept apart from settings.py (objective, limits, earlyTermination, Hyperband) so that each sampling type's rules
live beside each other; settings.py and sweepfile.py call the two functions below.
"""
from ..errors import SpecError

BAYESIAN = 'bayesian'
DEFAULT_STARTUP_JOBS = 10


def resolve_bayesian(written, count, resolved):
    """Fill ``resolved`` (the sampling as sweepfile.py resolves it) with count and startupJobs.

    :param written: the file's sampling section (its type may differ when --sampling bayesian overrides it).
    :param count: --count, or None.
    """
    # A random sampling section's count still says how many jobs the user meant to spend.
    resolved['count'] = count if count is not None else written.get('count')
    resolved['startupJobs'] = written.get('startupJobs', DEFAULT_STARTUP_JOBS)
    return resolved


def check_bayesian(sampling, objective, limits, path):
    """Bayesian sampling learns from the objective and must know when to stop."""
    if objective is None:
        raise SpecError('expected an objective ({metric: NAME, goal: max} or a regex): bayesian sampling suggests '
                        'each new job from the objective of the jobs so far', source=path, path='objective')
    if sampling['count'] is None and limits.get('maxTotalJobs') is None:
        raise SpecError('expected the number of jobs of a bayesian search (sampling.count, --count, or '
                        'limits.maxTotalJobs)', source=path, path='sampling.count')


def make_tpe_sampler(definition, goal):
    """The sampler of a bayesian sweep (the factory core/tuning/samplers registers): MOTPE (samplers/motpe.py) with
    several objectives or constraints, else TPE."""
    sampling = definition.sampling
    if definition.objective_set:
        from .objectives import Objectives
        from .samplers.motpe import MOTPESampler
        return MOTPESampler(definition.parameters, Objectives.from_spec(definition.objective_set,
                                                                        definition.objective),
                            seed=sampling['seed'], count=sampling['count'], startup_jobs=sampling['startupJobs'])
    from .samplers.tpe import TPESampler
    return TPESampler(definition.parameters, goal=goal, seed=sampling['seed'], count=sampling['count'],
                      startup_jobs=sampling['startupJobs'])
