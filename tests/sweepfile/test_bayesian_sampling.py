"""The sweep file's bayesian sampling: resolved settings, an objective required before any request, create/submit
refusing it with a pointer to `sweep run`, and the TPE sampler built from it."""
import json

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file
from azext_batchai_sweep.core.tuning.samplers import ADAPTIVE_SAMPLING, make_sampler
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler

JOB = {'nodeCount': 1, 'cluster': {'id': 'c'}, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
       'customToolkitSettings': {'commandLine': 'python train.py --lr {{LR}} --units {{UNITS}}'}}
PARAMS = [{'name': 'LR', 'type': 'numeric', 'dataType': 'REAL', 'start': 1e-4, 'end': 1e-1, 'scale': 'LOG'},
          {'name': 'UNITS', 'type': 'numeric', 'dataType': 'INTEGER', 'start': 8, 'end': 64, 'scale': 'LINEAR',
           'step': 8}]
OBJECTIVE = {'metric': 'val_accuracy', 'goal': 'max'}
BAYESIAN = {'type': 'bayesian', 'count': 20, 'seed': 3, 'startupJobs': 5}


def load(tmp_path, adaptive=True, sampling_override=None, count=None, **sections):
    document = {'parameters': PARAMS, 'job': JOB}
    document.update(sections)
    path = tmp_path / 'sweep.json'
    path.write_text(json.dumps(document))
    return load_sweep_file(str(path), adaptive=adaptive, sampling=sampling_override, count=count)


def error(tmp_path, **kwargs):
    with pytest.raises(SpecError) as info:
        load(tmp_path, **kwargs)
    return info.value


def test_bayesian_sampling_resolves_and_builds_the_tpe_sampler(tmp_path):
    definition = load(tmp_path, sampling=BAYESIAN, objective=OBJECTIVE)
    assert definition.sampling == {'type': 'bayesian', 'count': 20, 'seed': 3, 'startupJobs': 5}
    sampler = make_sampler(definition, 'max')
    assert isinstance(sampler, TPESampler) and sampler.count == 20 and sampler.startup_jobs == 5
    assert 'bayesian' in ADAPTIVE_SAMPLING
    suggestions = sampler.suggest([], 3)
    assert len(suggestions) == 3 and all(s.params['UNITS'] in range(8, 65, 8) for s in suggestions)


def test_defaults_a_seed_is_chosen_and_reported_and_count_may_come_from_the_limits(tmp_path):
    definition = load(tmp_path, sampling={'type': 'bayesian'}, objective=OBJECTIVE, limits={'maxTotalJobs': 12})
    assert definition.sampling['count'] is None and definition.sampling['startupJobs'] == 10
    assert isinstance(definition.sampling['seed'], int)
    # --sampling bayesian --count N over a file written for a grid
    definition = load(tmp_path, sampling_override='bayesian', count=7, objective=OBJECTIVE)
    assert definition.sampling['type'] == 'bayesian' and definition.sampling['count'] == 7
    # --sampling bayesian over a random search's section: its count and seed carry over
    definition = load(tmp_path, sampling_override='bayesian', objective=OBJECTIVE,
                      sampling={'type': 'random', 'count': 9, 'seed': 4})
    assert definition.sampling == {'type': 'bayesian', 'count': 9, 'seed': 4, 'startupJobs': 10}


@pytest.mark.parametrize('kwargs,path,words', [
    ({'sampling': BAYESIAN}, 'objective', 'bayesian sampling suggests each new job from the objective'),
    ({'sampling': {'type': 'bayesian'}, 'objective': OBJECTIVE}, 'sampling.count', 'limits.maxTotalJobs'),
    ({'sampling': dict(BAYESIAN, startupJobs=-1), 'objective': OBJECTIVE}, 'sampling.startupJobs', ''),
    ({'sampling': dict(BAYESIAN, count=0), 'objective': OBJECTIVE}, 'sampling.count', ''),
    ({'sampling': dict(BAYESIAN, gamma=0.2), 'objective': OBJECTIVE}, 'sampling.gamma', ''),
    ({'sampling': BAYESIAN, 'objective': OBJECTIVE, 'adaptive': False}, 'sampling.type', 'az batchai sweep run'),
    ({'sampling_override': 'bayesian', 'objective': OBJECTIVE, 'adaptive': False}, 'sampling.type',
     'bayesian sampling'),
])
def test_bad_bayesian_sections_are_refused_before_any_request(tmp_path, kwargs, path, words):
    ex = error(tmp_path, **kwargs)
    assert ex.path == path and words in str(ex)
    assert 'sweep.json' in str(ex)
