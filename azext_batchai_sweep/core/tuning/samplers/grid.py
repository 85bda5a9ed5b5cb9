"""Grid: every combination of the parameters' values, in the order `create` plans them."""
from ...spec.sweep import ParameterSweep
from .base import SequenceSampler


class GridSampler(SequenceSampler):
    kind = 'grid'

    def __init__(self, specs):
        jobs = ParameterSweep(specs).generate_jobs({'properties': {}})
        super().__init__(job.parameters for job in jobs)
