"""Synthetic learning curves with a known final ranking, for the tuning tests and bench/tuning.py.

Configuration c has a final value q_c (a parameter of the curve) and approaches it as q - (q - start) * decay^step
plus a small deterministic wobble; with crossing=True some curves start fast and end low, so early steps can
mislead; with crossing=False the ranking is the same at every step (what makes early stopping risky).
"""
import math
import random


def make_curves(count, steps, seed, crossing=True, goal='max'):
    """{config id: [values at steps 1..steps]} and the id of the truly best configuration (best final value)."""
    rng = random.Random(seed)
    curves = {}
    for c in range(count):
        final = rng.uniform(0.5, 0.95)
        start = rng.uniform(0.1, 0.4) if crossing else 0.2
        decay = rng.uniform(0.55, 0.9) if crossing else 0.75
        wobble = rng.uniform(0.0, 0.01) if crossing else 0.0
        values = [final - (final - start) * decay ** step + wobble * math.sin(step * 1.7 + c) for step in
                  range(1, steps + 1)]
        curves[c] = values if goal == 'max' else [1.0 - v for v in values]
    pick = max if goal == 'max' else min
    best = pick(curves, key=lambda c: curves[c][-1])
    return curves, best
