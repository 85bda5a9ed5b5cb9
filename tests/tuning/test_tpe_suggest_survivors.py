"""What a TPE suggestion says and takes, where mutation testing found it untested (issue 49): a random startup
suggestion's note counts the jobs with an objective and the startup size; a batch of suggestions after jobs whose
indices skip numbers (the history's pending suggestions are numbered after the trials' count, so one may share a
job's index) is made whole, each pending one counted; the bad group's weights are asked again only when its size
changes."""
import dataclasses
import random

import pytest

from azext_batchai_sweep.core.spec.params import NumParamSpec
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

SPECS = [NumParamSpec('X', 0.0, 1.0, 'REAL', 'LINEAR'), NumParamSpec('Y', 0.0, 1.0, 'REAL', 'LINEAR')]


def _jobs(count, step=1, seed=1):
    rng = random.Random(seed)
    return [Trial(name='j%d' % k, index=step * k, params={'X': rng.random(), 'Y': rng.random()}, state='succeeded',
                  reports=(Report(1, rng.random()),)) for k in range(count)]


@pytest.mark.parametrize('done', [0, 3, 9])
def test_a_startup_suggestions_note_counts_the_jobs_with_an_objective(done):
    found = TPESampler(SPECS, goal='min', seed=2, startup_jobs=10).suggest(_jobs(done), 1)
    assert found[0].note == 'bayesian: random startup job ({} of 10 with an objective)'.format(done)


@pytest.mark.parametrize('step', [1, 2, 3])
def test_a_batch_after_jobs_whose_indices_skip_numbers_is_made_whole(step):
    found = TPESampler(SPECS, goal='min', seed=4).suggest(_jobs(40, step), 5)
    assert [s.note for s in found] == ['bayesian: TPE over 40 jobs with an objective, {} pending'.format(k)
                                       for k in range(5)]
    assert all(0.0 <= s.params['X'] <= 1.0 and 0.0 <= s.params['Y'] <= 1.0 for s in found)
    assert len({tuple(s.params.values()) for s in found}) == 5


def test_the_bad_groups_weights_are_asked_again_only_when_its_size_changes():
    """The weights of n observations depend on n alone: a sampler asked again after a poll that changed no job
    (most polls of a long sweep) asks its weights function for the good group's only."""
    from azext_batchai_sweep.core.tuning.samplers.tpe import default_weights
    asked = []

    def weights(n):
        asked.append(n)
        return default_weights(n)
    sampler = TPESampler(SPECS, goal='min', seed=5, weights=weights)
    jobs = _jobs(60)
    sampler.suggest(jobs, 1)
    assert sorted(asked) == [6, 54]  # the good group (10%) and the bad one
    for _ in range(3):
        del asked[:]
        sampler.suggest(list(jobs), 1)
        assert asked == [6]
    jobs = jobs + [dataclasses.replace(job, index=60 + k) for k, job in enumerate(_jobs(2, seed=9))]
    del asked[:]
    sampler.suggest(jobs, 1)
    assert sorted(asked) == [7, 55]  # two more jobs: both groups' sizes changed


def test_the_bad_groups_weights_are_kept_for_its_last_size_only():
    """Kept across suggestions, the weights are those of the bad group's last size: a sweep of 10,000 jobs would
    otherwise keep a list for each size it went through (~50 million floats)."""
    sampler = TPESampler(SPECS, goal='min', seed=6)
    jobs = _jobs(60)
    for step in range(5):
        jobs = jobs + [dataclasses.replace(job, index=len(jobs) + k) for k, job in enumerate(_jobs(3, seed=step))]
        sampler.suggest(jobs, 1)
        kept = [key for key in sampler.model_cache if key[0] == 'weights']  # pylint: disable=no-member
        assert kept == [('weights', len(jobs) - -(-len(jobs) // 10))], step  # the bad group: all but ceil(10%)


@pytest.mark.parametrize('prior_weight', [0.5, 3.0])
def test_both_models_weigh_their_prior_by_the_samplers_prior_weight(prior_weight):
    """l(x) and g(x) alike: the prior kernel's share of each mixture is prior_weight over it plus the observations'
    weights (the good group's 6 and the bad group's 54 of 60 jobs, by default_weights)."""
    from azext_batchai_sweep.core.tuning.samplers.tpe import default_weights
    sampler = TPESampler(SPECS, goal='min', seed=7, prior_weight=prior_weight)
    for _, below, above in sampler.models(_jobs(60)):
        assert below.weights[-1] == pytest.approx(prior_weight / (sum(default_weights(6)) + prior_weight))
        assert above.weights[-1] == pytest.approx(prior_weight / (sum(default_weights(54)) + prior_weight))
