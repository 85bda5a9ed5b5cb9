"""The sweep file's keys of issue 28: Hyperband's `sampler: bayesian` (BOHB), bayesian `multiFidelity` under ASHA,
`randomFraction`, `startupJobs` and `warmStart`: resolved, built into their samplers, and refused where nothing would
use them, each with the file, the field and what is allowed, before any request."""
import json

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file
from azext_batchai_sweep.core.tuning.samplers import HyperbandSampler, make_sampler
from azext_batchai_sweep.core.tuning.samplers.multifidelity import MultiFidelityTPESampler
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler

JOB = {'nodeCount': 1, 'cluster': {'id': 'c'}, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
       'customToolkitSettings': {'commandLine': 'python train.py --lr {{LR}} --epochs {{EPOCHS}}'}}
PARAMS = [{'name': 'LR', 'type': 'numeric', 'dataType': 'REAL', 'start': 1e-4, 'end': 1e-1, 'scale': 'LOG'}]
BOHB = {'type': 'hyperband', 'sampler': 'bayesian', 'resource': 'EPOCHS', 'minResource': 1, 'maxResource': 9,
        'seed': 1}
ASHA = {'policy': 'asha', 'minResource': 1, 'maxResource': 27}
OBJECTIVE = {'metric': 'val_accuracy', 'goal': 'max', 'step': 'epoch'}


def load(tmp_path, adaptive=True, **sections):
    job = JOB if sections['sampling']['type'] == 'hyperband' else dict(
        JOB, customToolkitSettings={'commandLine': 'python train.py --lr {{LR}}'})
    document = {'parameters': PARAMS, 'job': job, 'objective': OBJECTIVE}
    document.update(sections)
    path = tmp_path / 'sweep.json'
    path.write_text(json.dumps(document))
    return load_sweep_file(str(path), adaptive=adaptive)


def error(tmp_path, **sections):
    with pytest.raises(SpecError) as info:
        load(tmp_path, **sections)
    return info.value


def test_hyperband_with_the_bayesian_sampler(tmp_path):
    definition = load(tmp_path, sampling=BOHB)
    assert definition.sampling == dict(BOHB, eta=3, count=None, startupJobs=None, randomFraction=1 / 3)
    sampler = make_sampler(definition, 'max')
    assert isinstance(sampler, HyperbandSampler) and sampler.model.min_points == 1 + 3
    assert sampler.model.random_fraction == 1 / 3 and sampler.model.resource == 'EPOCHS'
    definition = load(tmp_path, sampling=dict(BOHB, startupJobs=6, randomFraction=0.2))
    model = make_sampler(definition, 'max').model
    assert (model.min_points, model.random_fraction) == (6, 0.2)
    definition = load(tmp_path, sampling=dict(BOHB, iterations=3))
    assert definition.sampling['iterations'] == 3 and len(make_sampler(definition, 'max').brackets) == 3 * 3
    # today's Hyperband, written as before or with sampler: random, is unchanged: no model, nothing added
    for sampling in (dict(BOHB, sampler='random'), {k: v for k, v in BOHB.items() if k != 'sampler'}):
        definition = load(tmp_path, sampling=sampling)
        assert make_sampler(definition, 'max').model is None and 'randomFraction' not in definition.sampling
        assert 'iterations' not in definition.sampling and len(make_sampler(definition, 'max').brackets) == 3


def test_bayesian_multi_fidelity_under_asha(tmp_path):
    definition = load(tmp_path, sampling={'type': 'bayesian', 'count': 20, 'seed': 2, 'multiFidelity': True},
                      earlyTermination=ASHA)
    assert definition.sampling == {'type': 'bayesian', 'count': 20, 'seed': 2, 'multiFidelity': True,
                                   'startupJobs': None, 'randomFraction': 1 / 3}
    sampler = make_sampler(definition, 'max')
    assert isinstance(sampler, MultiFidelityTPESampler) and sampler.rungs == [1, 3, 9]
    assert sampler.max_resource == 27 and sampler.model.min_points == 4 and sampler.model.resource == 'epoch'
    # without multiFidelity: the plain TPE, startupJobs' default as before
    definition = load(tmp_path, sampling={'type': 'bayesian', 'count': 20, 'seed': 2}, earlyTermination=ASHA)
    assert isinstance(make_sampler(definition, 'max'), TPESampler) and definition.sampling['startupJobs'] == 10


@pytest.mark.parametrize('sections,path,words', [
    ({'sampling': dict(BOHB, sampler='tpe')}, 'sampling', 'sampler'),
    ({'sampling': dict(BOHB, randomFraction=1.5)}, 'sampling', 'randomFraction'),
    ({'sampling': dict(BOHB, startupJobs=0)}, 'sampling', 'startupJobs'),
    ({'sampling': dict(BOHB, warmStart=[])}, 'sampling', 'warmStart'),
    ({'sampling': dict(BOHB, iterations=0)}, 'sampling', 'iterations'),
    ({'sampling': dict(BOHB, warmStart=[''])}, 'sampling', 'warmStart'),
    ({'sampling': dict(BOHB, sampler='random', randomFraction=0.5)}, 'sampling.randomFraction',
     'expected randomFraction only with a multi-fidelity model'),
    ({'sampling': dict(BOHB, sampler='random', startupJobs=5)}, 'sampling.startupJobs',
     'expected startupJobs only with sampler: bayesian'),
    ({'sampling': {'type': 'bayesian', 'count': 5, 'multiFidelity': True}}, 'sampling.multiFidelity',
     'expected earlyTermination {policy: asha, ...} with multiFidelity'),
    ({'sampling': {'type': 'bayesian', 'count': 5, 'randomFraction': 0.5}, 'earlyTermination': ASHA},
     'sampling.randomFraction', 'expected randomFraction only with a multi-fidelity model'),
    ({'sampling': {'type': 'random', 'count': 5, 'warmStart': ['old']}}, 'sampling', 'warmStart'),
    ({'sampling': dict(BOHB, sampler='random', warmStart=['old'])}, 'sampling.warmStart',
     'expected warmStart only with a sampler that learns from results'),
    ({'sampling': {'type': 'bayesian', 'count': 5, 'warmStart': ['old', 'old']}}, 'sampling.warmStart[1]',
     'expected each warm-start source once (old is given twice)'),
    ({'sampling': {'type': 'bayesian', 'count': 5, 'warmStart': ['missing.json']}}, 'sampling.warmStart[0]',
     'expected a readable warm-start results file'),
])
def test_refused_before_any_request(tmp_path, sections, path, words):
    ex = error(tmp_path, **sections)
    assert ex.source.endswith('sweep.json') and ex.path.startswith(path) and words in str(ex), str(ex)


def test_warm_start_files_are_read_with_the_sweep_file(tmp_path):
    (tmp_path / 'runs').mkdir()
    rows = [{'name': 'a', 'state': 'succeeded', 'parameters': {'LR': 0.01}, 'metric': 0.7,
             'metricName': 'val_accuracy'}]
    (tmp_path / 'runs' / 'old.json').write_text(json.dumps(rows))
    definition = load(tmp_path, sampling={'type': 'bayesian', 'count': 5, 'warmStart': ['runs/old.json', 'lr-a']})
    assert definition.sampling['warmStart'] == ['runs/old.json', 'lr-a']
    assert [r.name for r in definition.warm_start_files['runs/old.json']] == ['a']
    assert 'lr-a' not in definition.warm_start_files  # a sweep name: read from the service by `sweep run`
    (tmp_path / 'bad.json').write_text(json.dumps({'rows': rows}))
    ex = error(tmp_path, sampling={'type': 'bayesian', 'count': 5, 'warmStart': ['bad.json']})
    assert ex.path == 'sampling.warmStart[0]' and 'az batchai sweep report -o json' in ex.message
    (tmp_path / 'broken.json').write_text('[{')
    ex = error(tmp_path, sampling={'type': 'bayesian', 'count': 5, 'warmStart': ['broken.json']})
    assert ex.path == 'sampling.warmStart[0]' and 'expected valid JSON' in ex.message
