"""Grid: every combination of the parameters' values, in the order `create` plans them."""
from ...spec.sweep import ParameterSweep
from .base import SequenceSampler


class GridSampler(SequenceSampler):
    kind = 'grid'

    def __init__(self, specs):
        super().__init__(ParameterSweep(specs).generate_jobs({'properties': {}}))
