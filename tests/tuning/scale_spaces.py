"""The spaces and the objective of the samplers-at-scale tests (test_tpe_scale.py, test_tpe_incremental.py): two
continuous spaces and a mixed one, and a smooth function with a clear optimum, so that the good group clusters (as
in a real sweep)."""
import math

from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.tuning import pareto
from azext_batchai_sweep.core.tuning.samplers import motpe

SPACES = {
    'continuous 2': [NumParamSpec('X', -5, 10, 'REAL', 'LINEAR'), NumParamSpec('Y', 0, 15, 'REAL', 'LINEAR')],
    'continuous 6': [NumParamSpec('X%d' % i, 0, 1, 'REAL', 'LINEAR') for i in range(6)],
    'mixed': [DiscreteParamSpec('OPT', ['adam', 'sgd', 'rmsprop']), NumParamSpec('LAYERS', 1, 20, 'INTEGER', 'LINEAR'),
              NumParamSpec('UNITS', 1, 64, 'INTEGER', 'LOG'), NumParamSpec('LR', 1e-5, 1e-1, 'REAL', 'LOG'),
              NumParamSpec('DROP', 0.0, 0.5, 'REAL', 'LINEAR')],
}


def objective(params):
    """The value of a job with these parameters (the lower, the better)."""
    total = 0.0
    for name, value in sorted(params.items()):
        if isinstance(value, str):
            total += {'adam': 0.0, 'sgd': 0.3, 'rmsprop': 0.1}[value]
        elif name in ('LR', 'UNITS'):
            total += (math.log10(value) + 3) ** 2 / 4
        else:
            total += math.sin(3 * value) + 0.05 * value ** 2
    return total


def ranked_sizes(monkeypatch):
    """A list that gets the number of points of every non-domination ranking MOTPE's split asks for from now on."""
    sizes = []
    ranks = pareto.nondominated_ranks

    def counted(points):
        sizes.append(len(points))
        return ranks(points)
    monkeypatch.setattr(motpe, 'nondominated_ranks', counted)
    return sizes
