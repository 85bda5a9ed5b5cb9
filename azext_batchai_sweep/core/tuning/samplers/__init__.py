"""Samplers, one module each; ``make_sampler`` builds the one a sweep file's sampling names.

SAMPLERS maps a sampling type to a factory ``(definition, goal, limits) -> Sampler`` (limits: the run's
controller.Limits, or None); a new sampler registers itself here,
and in ADAPTIVE_SAMPLING when its jobs depend on results (then create/submit refuse it and it needs an objective).
Its sampling type goes into core/spec/schemas/sweep.schema.json's `sampling.oneOf`.
"""
from .grid import GridSampler
from .hyperband import HyperbandSampler, hyperband_brackets
from .random_search import RandomSampler
from ..bayesian_settings import BAYESIAN, jobs_to_run, objectives_of


def _grid(definition, goal, limits=None):  # pylint: disable=unused-argument
    return GridSampler(definition.parameters)


def _random(definition, goal, limits=None):  # pylint: disable=unused-argument
    return RandomSampler(definition.parameters, definition.sampling['count'], definition.sampling['seed'])


def _hyperband(definition, goal, limits=None):  # pylint: disable=unused-argument
    sampling = definition.sampling
    sampler = HyperbandSampler(definition.parameters, goal, sampling['minResource'], sampling['maxResource'],
                               sampling.get('eta', 3), sampling['seed'], resource=sampling['resource'],
                               iterations=sampling.get('iterations', 1))
    if sampling.get('sampler') == BAYESIAN:  # BOHB: each bracket's new configurations from the TPE (bohb.py)
        from .bohb import BudgetModel
        sampler.model = BudgetModel(definition.parameters, goal, sampling['seed'], sampler.budget_values,
                                    min_points=sampling.get('startupJobs'),
                                    random_fraction=sampling['randomFraction'], resource=sampling['resource'],
                                    inherited=getattr(definition, 'inherited', ()),
                                    objectives=objectives_of(definition))
    return sampler


def make_tpe_sampler(definition, goal, limits=None):
    """The sampler of a bayesian sweep (the factory SAMPLERS registers): the multi-fidelity TPE under ASHA
    (multifidelity.py; with several objectives fitted on the first at each rung, as BOHB is), MOTPE
    (motpe.py) with several objectives or constraints, else TPE, told the sweep's number of jobs
    (jobs_to_run: its local phase takes the last part of them)."""
    sampling = definition.sampling
    inherited = getattr(definition, 'inherited', ())
    objectives = objectives_of(definition)
    if sampling.get('multiFidelity'):
        from ..policies.asha import AshaPolicy
        from .multifidelity import MultiFidelityTPESampler
        asha = definition.early_termination
        rungs = AshaPolicy(goal, asha['minResource'], asha['maxResource'], asha.get('eta', 3)).rungs
        step = (definition.objective or {}).get('step') or 'step'
        return MultiFidelityTPESampler(definition.parameters, goal, sampling['seed'], sampling['count'], rungs,
                                       asha['maxResource'], min_points=sampling['startupJobs'],
                                       random_fraction=sampling['randomFraction'], resource=step,
                                       inherited=inherited, objectives=objectives)
    if objectives is not None:
        from .motpe import MOTPESampler
        return MOTPESampler(definition.parameters, objectives, seed=sampling['seed'], count=sampling['count'],
                            startup_jobs=sampling['startupJobs'], inherited=inherited)
    from .tpe import TPESampler
    return TPESampler(definition.parameters, goal=goal, seed=sampling['seed'], count=jobs_to_run(sampling, limits),
                      startup_jobs=sampling['startupJobs'], inherited=inherited)


SAMPLERS = {'grid': _grid, 'random': _random, 'hyperband': _hyperband, BAYESIAN: make_tpe_sampler}
# Sampling types whose next jobs depend on the results: only `sweep run` can drive them.
ADAPTIVE_SAMPLING = frozenset({'hyperband', BAYESIAN})


def make_sampler(definition, goal, limits=None):
    """The sampler of the sweep file's sampling. ``limits``: the run's (controller.Limits: --max-total-jobs, else the
    file's limits.maxTotalJobs), which bound a bayesian sweep's number of jobs as its count does."""
    return SAMPLERS[definition.sampling['type']](definition, goal, limits)


__all__ = ['GridSampler', 'RandomSampler', 'HyperbandSampler', 'hyperband_brackets', 'make_sampler', 'SAMPLERS',
           'ADAPTIVE_SAMPLING']
