"""The sweep file's objectives and constraints (issue 29): loaded for `sweep run`, clear SpecErrors naming the field
before any request, refused by create/submit, and a file without them loading exactly as before."""
import pytest

from azext_batchai_sweep.core.tuning.objectives import Objectives
from azext_batchai_sweep.core.tuning.samplers import make_sampler
from azext_batchai_sweep.core.tuning.samplers.motpe import MOTPESampler
from azext_batchai_sweep.core.tuning.samplers.tpe import TPESampler

from .test_tuning_sections import JOB, OBJECTIVE
from .test_tuning_sections import error as _error
from .test_tuning_sections import load as _load

TWO = [{'metric': 'val_accuracy', 'goal': 'max'}, {'metric': 'latency_ms', 'goal': 'min'}]
BAYESIAN = {'type': 'bayesian', 'count': 20, 'seed': 1}
PLAIN_JOB = dict(JOB, customToolkitSettings={'commandLine': 'python train.py --lr {{LR}}'})


def load(tmp_path, **sections):
    return _load(tmp_path, job=PLAIN_JOB, **sections)


def error(tmp_path, **sections):
    return _error(tmp_path, job=PLAIN_JOB, **sections)


def test_two_objectives_and_a_constraint_load_with_the_first_as_objective(tmp_path):
    definition = load(tmp_path, objectives=TWO, constraints=[{'metric': 'memory_gb', 'max': 12},
                                                             {'metric': 'val_loss', 'min': 0, 'max': 0.5}],
                      sampling=BAYESIAN)
    assert definition.objective == {'metric': 'val_accuracy', 'goal': 'max'}  # what policies and Hyperband judge by
    assert definition.objective_set == {'objectives': TWO, 'constraints': [
        {'metric': 'memory_gb', 'max': 12}, {'metric': 'val_loss', 'max': 0.5, 'min': 0}]}
    sampler = make_sampler(definition, 'max')
    assert isinstance(sampler, MOTPESampler) and sampler.objectives.names == ['val_accuracy', 'latency_ms']
    assert Objectives.from_spec(definition.objective_set).extra_metrics() == ['latency_ms', 'memory_gb', 'val_loss']


def test_constraints_with_one_objective_use_motpe_and_old_files_do_not(tmp_path):
    constrained = load(tmp_path, objective=OBJECTIVE, constraints=[{'metric': 'memory_gb', 'max': 12}],
                       sampling=BAYESIAN)
    assert isinstance(make_sampler(constrained, 'max'), MOTPESampler)
    assert make_sampler(constrained, 'max').gamma(300) == 25  # one objective: TPE's capped gamma
    plain = load(tmp_path, objective=OBJECTIVE, sampling=BAYESIAN)
    assert plain.objective_set is None and type(make_sampler(plain, 'max')) is TPESampler  # pylint: disable=C0123


@pytest.mark.parametrize('sections,path,words', [
    ({'objectives': TWO[:1]}, 'objectives', 'at least 2'),
    ({'objectives': [TWO[0], {'metric': 'latency_ms'}]}, 'objectives[1].goal', 'required'),
    ({'objectives': [TWO[0], dict(TWO[1], goal='lowest')]}, 'objectives[1].goal', "'max'"),
    ({'objectives': [TWO[0], dict(TWO[1], step='epoch')]}, 'objectives[1].step', 'unknown field'),
    ({'objectives': TWO, 'objective': OBJECTIVE}, 'objectives', 'not both'),
    ({'objectives': [TWO[0], dict(TWO[1], metric='val_accuracy')]}, 'objectives[1].metric', 'is objectives[0]'),
    ({'objective': OBJECTIVE, 'constraints': [{'metric': 'memory_gb'}]}, 'constraints[0].max', 'required'),
    ({'objective': OBJECTIVE, 'constraints': [{'metric': 'memory_gb', 'max': 'twelve'}]}, 'constraints[0].max',
     'number'),
    ({'objective': OBJECTIVE, 'constraints': [{'metric': 'm', 'max': 1, 'min': 2}]}, 'constraints[0].min',
     'no larger than max'),
    ({'objective': OBJECTIVE, 'constraints': [{'metric': 'm', 'max': 1}, {'metric': 'm', 'min': 0}]},
     'constraints[1].metric', 'both min and max in one'),
    ({'constraints': [{'metric': 'm', 'max': 1}]}, 'constraints', 'objective'),
    ({'constraints': []}, 'constraints', ''),
])
def test_objectives_errors_name_the_field(tmp_path, sections, path, words):
    ex = error(tmp_path, **sections)
    assert ex.path == path and words in ex.message, str(ex)
    assert ex.source.endswith('sweep.json')


@pytest.mark.parametrize('sections,path', [({'objectives': TWO}, 'objectives'),
                                           ({'objective': OBJECTIVE, 'constraints': [{'metric': 'm', 'max': 1}]},
                                            'constraints')])
def test_create_and_submit_point_to_run(tmp_path, sections, path):
    ex = error(tmp_path, adaptive=False, **sections)
    assert ex.path == path and 'az batchai sweep run' in ex.message


def test_run_says_which_rules_judge_by_the_first_objective(tmp_path):
    from azext_batchai_sweep.core.tuning.objectives_settings import first_objective_note
    bandit = {'policy': 'bandit', 'slackFactor': 0.1}
    definition = load(tmp_path, objectives=TWO, earlyTermination=bandit, limits={'stopAt': 0.9})
    assert first_objective_note(definition) == (
        'earlyTermination (bandit), limits.stopAt judge(s) by the first objective alone, val_accuracy (max); '
        'latency_ms count(s) for the Pareto front only')
    assert first_objective_note(load(tmp_path, objectives=TWO)) is None  # no rule compares by one number
    assert first_objective_note(load(tmp_path, objective=OBJECTIVE, earlyTermination=bandit)) is None
