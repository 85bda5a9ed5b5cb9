"""Random search, seeded: the same draws, in the same order, as `create --sampling random` with that seed."""
from ...spec.sweep import ParameterSweep
from .base import SequenceSampler


class RandomSampler(SequenceSampler):
    kind = 'random'

    def __init__(self, specs, count, seed):
        super().__init__(ParameterSweep(specs).generate_jobs_random_search({'properties': {}}, count, seed=seed))
