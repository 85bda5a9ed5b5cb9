"""The TPE sampler with one model per parameter (``multivariate=False``, MOTPE's default) scores a candidate by its
l/g log ratio summed over the parameters' models, and suggests the best of its draws. Written from mutation testing
(issue 49): a score of the last parameter's ratio alone went unseen. The oracle: the sampler's own estimators and
random stream (sampler.models, the rng of the suggestion), the sums and the argmax computed here."""
import math

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

SPECS = [NumParamSpec('A', 0.0, 1.0, 'REAL', 'LINEAR'), NumParamSpec('B', 0.0, 1.0, 'REAL', 'LINEAR')]


def _trials():
    trials = []
    for k in range(40):
        a, b = (k * 0.618) % 1.0, (k * 0.382 + 0.1) % 1.0
        value = -((a - 0.3) ** 2) - 3.0 * (b - 0.7) ** 2  # B matters more than A
        trials.append(Trial(name='j%d' % k, index=k, params={'A': a, 'B': b}, state='succeeded',
                            reports=(Report(1.0, value),)))
    return trials


def test_a_candidate_is_scored_by_its_ratios_summed_over_the_parameters_models():
    trials = _trials()
    sampler = TPESampler(SPECS, goal='max', seed=5, multivariate=False, startup_jobs=5, candidates=24)
    history = sampler._make_history(trials)  # pylint: disable=protected-access
    rng = sampler._rng(history)  # pylint: disable=protected-access
    models = sampler.models(trials)
    assert [group for group, _, _ in models] == [[0], [1]]
    points = [[None, None] for _ in range(24)]
    ratios = [[0.0] * 24 for _ in models]
    for g, (group, below, above) in enumerate(models):
        for c, drawn in enumerate(below.sample(rng, 24)):
            points[c][group[0]] = drawn[0]
            ratios[g][c] = below.log_pdf(drawn) - above.log_pdf(drawn)
    summed = [math.fsum(r[c] for r in ratios) for c in range(24)]
    best = max(range(24), key=lambda c: (summed[c], -c))
    last_only = max(range(24), key=lambda c: (ratios[-1][c], -c))
    assert best != last_only  # the rule matters here
    expected = {dim.name: dim.to_value(x) for dim, x in zip(sampler.dims, points[best])}
    assert [s.params for s in TPESampler(SPECS, goal='max', seed=5, multivariate=False, startup_jobs=5,
                                         candidates=24).suggest(trials, 1)] == [expected]
