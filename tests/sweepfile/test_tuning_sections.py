"""The sweep file's tuning sections: objective, limits, earlyTermination, hyperband sampling; clear SpecErrors before
any request, and create/submit refusing what only `sweep run` does."""
import json

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file

JOB = {'nodeCount': 1, 'cluster': {'id': 'c'}, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
       'customToolkitSettings': {'commandLine': 'python train.py --lr {{LR}} --epochs {{EPOCHS}}'}}
PARAMS = [{'name': 'LR', 'type': 'discrete', 'values': [0.1, 0.01, 0.001]}]
HYPERBAND = {'type': 'hyperband', 'resource': 'EPOCHS', 'minResource': 1, 'maxResource': 9, 'eta': 3, 'seed': 1}
OBJECTIVE = {'metric': 'val_accuracy', 'goal': 'max', 'step': 'epoch'}


def load(tmp_path, adaptive=True, **sections):
    document = {'parameters': PARAMS, 'job': sections.pop('job', JOB)}
    document.update(sections)
    path = tmp_path / 'sweep.json'
    path.write_text(json.dumps(document))
    return load_sweep_file(str(path), adaptive=adaptive)


def error(tmp_path, adaptive=True, **sections):
    with pytest.raises(SpecError) as info:
        load(tmp_path, adaptive=adaptive, **sections)
    return info.value


def test_a_full_adaptive_sweep_loads(tmp_path):
    definition = load(tmp_path, sampling=HYPERBAND, objective=OBJECTIVE,
                      limits={'maxTotalJobs': 20, 'maxConcurrentJobs': 3, 'timeoutMinutes': 1.5,
                              'jobTimeoutMinutes': 0.25})
    assert definition.sampling['type'] == 'hyperband' and definition.sampling['eta'] == 3
    assert definition.resource_spec.name == 'EPOCHS' and definition.resource_spec.values() == [1, 3, 9]
    assert definition.template['constraints'] == {'maxWallClockTime': 'PT15S'}
    assert definition.objective == OBJECTIVE and definition.limits['maxConcurrentJobs'] == 3


@pytest.mark.parametrize('sections,path,words', [
    ({'earlyTermination': {'policy': 'patience', 'slackFactor': 0.1}, 'objective': OBJECTIVE},
     'earlyTermination.policy', "one of 'bandit'"),
    ({'earlyTermination': {'policy': 'bandit', 'slackFactor': 0.1, 'patience': 2}, 'objective': OBJECTIVE},
     'earlyTermination.patience', 'slackFactor, got the unknown field'),
    ({'earlyTermination': {'policy': 'bandit', 'slackFactor': 0.1}}, 'objective', 'bandit compares'),
    ({'sampling': dict(HYPERBAND)}, 'objective', 'hyperband sampling compares'),
    ({'sampling': dict(HYPERBAND, eta=1), 'objective': OBJECTIVE}, 'sampling.eta', 'at least 2'),
    ({'sampling': dict(HYPERBAND, maxResource=2), 'objective': OBJECTIVE}, 'sampling.maxResource', 'at least'),
    ({'sampling': HYPERBAND, 'objective': OBJECTIVE,
      'job': dict(JOB, customToolkitSettings={'commandLine': 'python train.py --lr {{LR}}'})},
     'sampling.resource', '{{EPOCHS}}'),
    ({'sampling': dict(HYPERBAND, resource='LR'), 'objective': OBJECTIVE}, 'sampling.resource', 'not a parameter'),
    ({'sampling': HYPERBAND, 'objective': OBJECTIVE, 'earlyTermination': {'policy': 'median'}}, 'earlyTermination',
     'Hyperband stops'),
    ({'earlyTermination': {'policy': 'asha', 'minResource': 4, 'maxResource': 2}, 'objective': OBJECTIVE},
     'earlyTermination.maxResource', 'larger'),
    ({'limits': {'maxConcurrentJobs': 0}}, 'limits.maxConcurrentJobs', 'at least 1'),
    ({'limits': {'timeoutMinutes': -1}}, 'limits.timeoutMinutes', ''),
    ({'objective': {'metric': 'acc'}}, 'objective.goal', 'required'),
    ({'objective': {'regex': 'acc', 'goal': 'max'}}, 'objective.regex', 'capture group'),
    ({'objective': {'regex': 'acc=(\\S+)', 'goal': 'max', 'step': 'epoch'}}, 'objective.step', 'group "step"'),
])
def test_tuning_errors_name_the_field(tmp_path, sections, path, words):
    ex = error(tmp_path, **sections)
    assert ex.path == path and words in ex.message, str(ex)
    assert ex.source.endswith('sweep.json')


def test_create_and_submit_take_the_objective_but_point_to_run_for_the_rest(tmp_path):
    job = dict(JOB, customToolkitSettings={'commandLine': 'python train.py --lr {{LR}}'})
    definition = load(tmp_path, adaptive=False, job=job, objective=OBJECTIVE, limits={'jobTimeoutMinutes': 90})
    assert definition.template['constraints']['maxWallClockTime'] == 'PT1H30M'
    for sections, path in [({'earlyTermination': {'policy': 'median'}, 'objective': OBJECTIVE}, 'earlyTermination'),
                           ({'sampling': HYPERBAND, 'objective': OBJECTIVE}, 'sampling.type'),
                           ({'limits': {'maxConcurrentJobs': 2}}, 'limits.maxConcurrentJobs')]:
        ex = error(tmp_path, adaptive=False, **sections)
        assert ex.path == path and 'az batchai sweep run' in ex.message
