"""Synthetic learning curves with a known final ranking, for the tuning tests and bench/tuning.py.

Configuration c has a final value q_c (a parameter of the curve) and approaches it as q - (q - start) * decay^step
plus a small deterministic wobble; with crossing=True some curves start fast and end low, so early steps can
mislead; with crossing=False the ranking is the same at every step (what makes early stopping risky).
"""
import math
import random


# How much the curves may cross: (start range, decay range, wobble) of each curve.
SHAPES = {
    'none': ((0.2, 0.2), (0.75, 0.75), 0.0),
    'mild': ((0.1, 0.3), (0.6, 0.8), 0.005),
    'strong': ((0.1, 0.4), (0.55, 0.9), 0.01),
}


def make_curves(count, steps, seed, crossing=True, goal='max'):
    """{config id: [values at steps 1..steps]} and the id of the truly best configuration (best final value).

    crossing: True ('strong'), False ('none'), or a key of SHAPES.
    """
    shape = SHAPES[{True: 'strong', False: 'none'}.get(crossing, crossing)]
    rng = random.Random(seed)
    curves = {}
    for c in range(count):
        final = rng.uniform(0.5, 0.95)
        start = rng.uniform(*shape[0])
        decay = rng.uniform(*shape[1])
        wobble = rng.uniform(0.0, shape[2])
        values = [final - (final - start) * decay ** step + wobble * math.sin(step * 1.7 + c) for step in
                  range(1, steps + 1)]
        curves[c] = values if goal == 'max' else [1.0 - v for v in values]
    pick = max if goal == 'max' else min
    best = pick(curves, key=lambda c: curves[c][-1])
    return curves, best
