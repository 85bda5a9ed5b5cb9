"""Random search, seeded: the same draws, in the same order, as `create --sampling random` with that seed."""
from ...spec.sweep import ParameterSweep
from .base import SequenceSampler


class RandomSampler(SequenceSampler):
    kind = 'random'

    def __init__(self, specs, count, seed):
        jobs = ParameterSweep(specs).generate_jobs_random_search({'properties': {}}, count, seed=seed)
        super().__init__(job.parameters for job in jobs)
