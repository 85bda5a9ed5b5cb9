"""The TPE sampler's random phase on a finite space almost all tried (tpe.py's ``_random_point``): when 100 draws
hit only tried configurations it picks among the untried ones (listed, or drawn past _ENUMERATION_LIMIT), never a
tried one and never "exhausted" while one is left; and one-parameter models' cached projections (``_columns``)
forgotten when the jobs they were of are gone. Written from mutation testing (issue 49): no test reached the
random phase's fallback."""
import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.samplers import tpe
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

SIZE = 1000
SPECS = [NumParamSpec('N', 0, SIZE - 1, 'INTEGER', 'LINEAR')]


def _pending_all_but(left):
    """Queued jobs on every configuration but those in ``left``: nothing scored, so the random phase."""
    return [Trial(name='j%d' % n, index=k, params={'N': n}, state='queued')
            for k, n in enumerate(n for n in range(SIZE) if n not in left)]


@pytest.mark.parametrize('listed', [True, False])
def test_the_random_phase_finds_the_last_untried_configuration(listed, monkeypatch):
    if not listed:  # past the limit the untried ones are drawn (10,000 draws), not listed
        monkeypatch.setattr(tpe, '_ENUMERATION_LIMIT', SIZE // 2)
    fallbacks = 0
    for left in (7, 500, 993):
        trials = _pending_all_but({left})
        for seed in range(4):
            sampler = TPESampler(SPECS, goal='max', seed=seed)
            drawn = []
            draw = sampler._untried_points  # pylint: disable=protected-access
            sampler._untried_points = lambda *args: drawn.append(1) or draw(*args)  # pylint: disable=W0212
            suggestions = sampler.suggest(trials, 1)
            assert [s.params for s in suggestions] == [{'N': left}], (left, seed)
            fallbacks += bool(drawn)
    assert fallbacks >= 6  # 100 draws miss the one untried configuration of 1,000 90% of the time


def test_the_random_phase_picks_among_the_untried_configurations_only():
    left = {3, 250, 251, 998}
    trials = _pending_all_but(left)
    picked = set()
    for seed in range(12):
        sampler = TPESampler(SPECS, goal='max', seed=seed)
        params = [s.params['N'] for s in sampler.suggest(trials, 4)]
        assert set(params) == left, seed  # a batch of 4: each untried one once
        picked.add(params[0])
    assert len(picked) > 1  # the first is drawn among them, not always the first listed


def _finished(index, n, value):
    return Trial(name='j%d' % index, index=index, params={'N': n, 'M': n % 7}, state='succeeded',
                 reports=(Report(1.0, value),))


def test_one_parameter_models_forget_the_projections_of_jobs_gone():
    specs = SPECS + [NumParamSpec('M', 0, 6, 'INTEGER', 'LINEAR')]
    many = [_finished(k, (37 * k) % SIZE, -abs((37 * k) % SIZE - 400)) for k in range(200)]
    few = [_finished(k, (11 * k + 5) % SIZE, -abs((11 * k + 5) % SIZE - 600)) for k in range(30)]
    warm = TPESampler(specs, goal='max', seed=1, multivariate=False, startup_jobs=5)
    warm.suggest(many, 1)
    assert len(warm.singles) >= 200
    suggested = warm.suggest(few, 2)  # another sweep's jobs: the 200 points are gone
    assert len(warm.singles) <= 2 * 30 + 64
    cold = TPESampler(specs, goal='max', seed=1, multivariate=False, startup_jobs=5)
    assert [s.params for s in suggested] == [s.params for s in cold.suggest(few, 2)]
    assert [s.params for s in warm.suggest(few, 3)] == [s.params for s in cold.suggest(few, 3)]
