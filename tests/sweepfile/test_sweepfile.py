"""Loading sweep files: YAML and JSON, the three job forms, overrides, and every error naming file, field and fix."""
import json
import logging
import os
import textwrap

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file

EXAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', 'examples')

JOB_PROPERTIES = {
    'nodeCount': 1,
    'customToolkitSettings': {'commandLine': 'python train.py --lr {{LR}} --units {{UNITS}}'},
    'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
}
PARAMETERS = """\
parameters:
  - {name: LR, type: numeric, dataType: REAL, start: 1e-4, end: 1e-1, numValues: 4, scale: LOG}
  - {name: UNITS, type: discrete, values: [10, 20]}
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text) if isinstance(text, str) else json.dumps(text), encoding='utf-8')
    return str(path)


def load_error(path, **kwargs):
    with pytest.raises(SpecError) as error:
        load_sweep_file(path, **kwargs)
    return error.value


def test_yaml_with_job_path(tmp_path):
    write(tmp_path, 'job.json', {'$schema': 'x', 'properties': JOB_PROPERTIES})
    path = write(tmp_path, 'sweep.yaml', 'jobNamePrefix: lr\n' + PARAMETERS + 'job: job.json\n')
    definition = load_sweep_file(path)
    assert definition.source == path
    assert definition.job_name_prefix == 'lr'
    assert definition.sampling == {'type': 'grid', 'count': None, 'seed': None}
    assert [type(spec) for spec in definition.parameters] == [NumParamSpec, DiscreteParamSpec]
    # YAML 1.1 reads 1e-4 as a string; the sweep file loader reads it as the number it is.
    assert definition.parameters[0].values() == [1e-4, 1e-3, 1e-2, 1e-1]
    assert definition.parameter_summaries[0]['start'] == 1e-4
    assert definition.template == JOB_PROPERTIES
    jobs = definition.jobs(sweep_name='s1')
    assert len(jobs) == 8
    first = next(iter(jobs))
    assert first.name.startswith('lr-')
    body = json.loads(first.body_json())
    assert body['properties']['customToolkitSettings']['commandLine'] == 'python train.py --lr 0.0001 --units 10'
    assert {'name': 'BATCHAI_SWEEP_NAME', 'value': 's1'} in body['properties']['environmentVariables']


@pytest.mark.parametrize('job', [{'$schema': 'x', 'properties': JOB_PROPERTIES}, JOB_PROPERTIES],
                         ids=['schema-form', 'properties-alone'])
def test_json_with_inline_job(tmp_path, job):
    path = write(tmp_path, 'sweep.json', {
        'jobNamePrefix': 'lr', 'sampling': {'type': 'random', 'count': 3, 'seed': 7},
        'parameters': [{'name': 'LR', 'type': 'numeric', 'dataType': 'REAL', 'start': 1e-4, 'end': 1e-1,
                        'scale': 'LOG'},
                       {'name': 'UNITS', 'type': 'discrete', 'values': [10, 20]}],
        'job': job})
    definition = load_sweep_file(path)
    assert definition.template == JOB_PROPERTIES
    assert definition.sampling == {'type': 'random', 'count': 3, 'seed': 7}
    assert [job.parameters for job in definition.jobs()] == [job.parameters for job in load_sweep_file(path).jobs()]
    assert len(definition.jobs()) == 3


def test_yaml_inline_job_and_every_parameter_kind(tmp_path):
    path = write(tmp_path, 'sweep.yaml', """\
        sampling: {type: random, count: 4, seed: 1}
        parameters:
          - {name: LR, type: numeric, dataType: REAL, start: 1e-4, end: 1e-1, numValues: 4, scale: LOG}
          - {name: BATCH_SIZE, type: numeric, dataType: INTEGER, start: 10, end: 50, step: 10, scale: LINEAR}
          - {name: DEVICE_ID, type: discrete, values: [Device_1, Device_2]}
          - {name: HYPERPARAMS, type: dict,
             values: [{LEARNING_RATE: 1e-4, HIDDEN: 100}, {LEARNING_RATE: 1e-3, HIDDEN: 200}]}
        job:
          nodeCount: 1
          customToolkitSettings:
            commandLine: "train --lr {{LR}} --bs {{BATCH_SIZE}} --dev {{DEVICE_ID}} --hidden {{HYPERPARAMS.HIDDEN}}"
        """)
    definition = load_sweep_file(path)
    assert definition.parameter_summaries[3]['values'][0] == {'LEARNING_RATE': 1e-4, 'HIDDEN': 100}
    assert definition.unused_parameters == []
    assert len(list(definition.jobs(sweep_name='s'))) == 4


def test_command_line_overrides_sampling(tmp_path):
    path = write(tmp_path, 'sweep.yaml', PARAMETERS + 'job: {nodeCount: 1, customToolkitSettings: {commandLine: '
                                                      '"x {{LR}} {{UNITS}}"}}\n')
    definition = load_sweep_file(path, sampling='random', count=5, seed=3)
    assert definition.sampling == {'type': 'random', 'count': 5, 'seed': 3}
    # Without a seed one is chosen and reported, so that the random sweep can be replayed.
    chosen = load_sweep_file(path, sampling='random', count=5).sampling['seed']
    assert isinstance(chosen, int)
    again = load_sweep_file(path, sampling='random', count=5, seed=chosen)
    assert [j.name for j in again.jobs('s')] == [j.name for j in load_sweep_file(
        path, sampling='random', count=5, seed=chosen).jobs('s')]


def test_template_path_overrides_the_job_and_fills_cluster_and_storage_account(tmp_path):
    template = write(tmp_path, 'other.json', {'properties': {
        'nodeCount': '{{UNITS}}',  # a whole-field placeholder takes its parameter's type: validated as an integer
        'customToolkitSettings': {'commandLine': 'x {{LR}}'},
        'mountVolumes': {'azureFileShares': [{
            'azureFileUrl': 'https://<AZURE_BATCHAI_STORAGE_ACCOUNT>.file.core.windows.net/logs',
            'relativeMountPath': 'logs'}]}}})
    path = write(tmp_path, 'sweep.yaml', PARAMETERS + 'job: missing.json\n')
    definition = load_sweep_file(path, template_path=template, storage_account_name='acct', cluster_id='/c/id')
    assert definition.template['cluster'] == {'id': '/c/id'}
    share = definition.template['mountVolumes']['azureFileShares'][0]
    assert share['azureFileUrl'] == 'https://acct.file.core.windows.net/logs'
    assert share['accountName'] == 'acct'  # as `az batchai job create` derives it from the URL
    assert 'credentials' not in share  # the key comes from the environment at submit time, never from the plan


def test_storage_account_defaults_to_the_environment(tmp_path, monkeypatch):
    path = write(tmp_path, 'sweep.yaml', PARAMETERS + textwrap.dedent("""\
        job:
          customToolkitSettings: {commandLine: "x {{LR}} {{UNITS}}"}
          stdOutErrPathPrefix: "$AZ_BATCHAI_MOUNT_ROOT/<AZURE_BATCHAI_STORAGE_ACCOUNT>"
        """))
    monkeypatch.setenv('AZURE_BATCHAI_STORAGE_ACCOUNT', 'fromenv')
    assert load_sweep_file(path).template['stdOutErrPathPrefix'] == '$AZ_BATCHAI_MOUNT_ROOT/fromenv'
    monkeypatch.delenv('AZURE_BATCHAI_STORAGE_ACCOUNT')
    error = load_error(path)
    assert (error.source, error.path) == (path, 'job.stdOutErrPathPrefix')
    assert 'AZURE_BATCHAI_STORAGE_ACCOUNT environment variable' in error.message
    assert '--storage-account-name' in error.message


def test_unused_parameter_is_a_warning(tmp_path, caplog):
    path = write(tmp_path, 'sweep.yaml', PARAMETERS + 'job: {nodeCount: 1, customToolkitSettings: {commandLine: '
                                                      '"x {{LR}}"}, cluster: {id: c}}\n')
    with caplog.at_level(logging.WARNING):
        definition = load_sweep_file(path)
    assert definition.unused_parameters == ['UNITS']
    assert [r.getMessage() for r in caplog.records] == [
        'Parameter UNITS is not used by any {{UNITS}} placeholder of the job: it still varies the jobs only through '
        'the PARAM_UNITS environment variable.']


def test_missing_cluster_is_a_warning(tmp_path, caplog):
    path = write(tmp_path, 'sweep.yaml', PARAMETERS + 'job: {customToolkitSettings: {commandLine: "{{LR}}{{UNITS}}"}}')
    with caplog.at_level(logging.WARNING):
        load_sweep_file(path)
    assert any('no cluster' in r.getMessage() for r in caplog.records)


def test_the_example_sweep_loads(monkeypatch):
    monkeypatch.delenv('AZURE_BATCHAI_STORAGE_ACCOUNT', raising=False)
    definition = load_sweep_file(os.path.join(EXAMPLES, 'sweep.yaml'), storage_account_name='acct', cluster_id='c')
    assert len(definition.jobs('s')) == 9
    assert definition.unused_parameters == []


JOB_LINE = 'job: {nodeCount: 1, customToolkitSettings: {commandLine: "x {{LR}} {{UNITS}}"}}\n'


@pytest.mark.parametrize('text, where, expected', [
    ('parameters:\n  - {name: LR, type: numeric, dataType: REAL, start: abc, end: 1, numValues: 2, scale: LOG}\n'
     + JOB_LINE, 'parameters[0].start', "expected a number, got the string 'abc'"),
    ('parameters:\n  - {name: LR, type: numeric, dataType: REAL, end: 1, numValues: 2, scale: LOG}\n' + JOB_LINE,
     'parameters[0].start', 'expected a value (the field is required)'),
    ('parameters:\n  - {name: lr, type: discrete, values: [1]}\n' + JOB_LINE,
     'parameters[0].name', 'expected a string matching ^[A-Z_][A-Z0-9_]*$'),
    ('parameters:\n  - {name: LR, type: choice, values: [1]}\n' + JOB_LINE,
     'parameters[0].type', "expected one of 'numeric', 'discrete', 'dict', 'file'"),
    ('sampling: {type: bayes}\n' + PARAMETERS + JOB_LINE, 'sampling.type', "expected one of 'grid', 'random'"),
    ('sampling: {type: random}\n' + PARAMETERS + JOB_LINE, 'sampling.count', 'expected the number of jobs'),
    ('parameters:\n  - {name: LR, type: numeric, dataType: REAL, start: 1, end: 2, scale: LINEAR}\n' + JOB_LINE,
     'parameters[0].numValues', 'needs step or numValues'),
    ('parameters:\n  - {name: LR, type: numeric, dataType: REAL, start: 2, end: 1, numValues: 2, scale: LINEAR}\n'
     + JOB_LINE, 'parameters[0].start', 'must be less than end'),
    ('parameters:\n  - {name: LR, type: discrete, values: [1]}\n  - {name: LR, type: discrete, values: [2]}\n'
     + JOB_LINE, 'parameters[1].name', 'expected a name not used by another parameter'),
    ('parameters:\n  - {name: LR, type: discrete, values: [1], storageAccountKey: k}\n' + JOB_LINE,
     'parameters[0].storageAccountKey', 'set AZURE_STORAGE_KEY, AZURE_STORAGE_CONNECTION_STRING or '
                                        'AZURE_STORAGE_SAS_TOKEN in the environment'),
    (PARAMETERS, 'job', 'expected a job'),
    (PARAMETERS + 'job: {nodeCount: 1, customToolkitSettings: {commandLine: "x {{LR}} {{NOPE}}"}}\n',
     'job.customToolkitSettings.commandLine', "unknown parameter 'NOPE'"),
    (PARAMETERS + 'job: {nodeCount: "{{LR}}", customToolkitSettings: {commandLine: "x {{UNITS}}"}}\n',
     'job.nodeCount', "expected an integer, got the number"),
    (PARAMETERS + 'job: {properties: {nodeCount: two, customToolkitSettings: {commandLine: "{{LR}}{{UNITS}}"}}}\n',
     'job.properties.nodeCount', "expected an integer, got the string 'two'"),
    (PARAMETERS + 'job: {nodeCount: 1, secrets: [{name: T, value: hunter2}], customToolkitSettings: {commandLine: '
                  '"{{LR}}{{UNITS}}"}}\n', 'job.secrets[0].value', 'expected a reference like "$env:NAME"'),
    (PARAMETERS + 'jobs: job.json\n', 'jobs', 'expected only the fields'),
    ('parameters: [{name: LR\n', 'line 2, column 1', 'expected valid YAML'),
])
def test_errors_name_file_field_and_expectation(tmp_path, text, where, expected):
    path = write(tmp_path, 'sweep.yaml', text)
    error = load_error(path)
    assert error.source == path
    assert error.path == where
    assert expected in error.message
    assert str(error).startswith('{}: {}: '.format(path, where))


def test_template_errors_name_the_template_file(tmp_path):
    job = write(tmp_path, 'job.json', {'properties': {'nodeCount': 1, 'schedulingPriority': 'urgent',
                                                      'customToolkitSettings': {'commandLine': '{{LR}}{{UNITS}}'}}})
    error = load_error(write(tmp_path, 'sweep.yaml', PARAMETERS + 'job: job.json\n'))
    assert (error.source, error.path) == (job, 'properties.schedulingPriority')
    assert "expected one of 'low', 'normal', 'high'" in error.message


def test_all_schema_errors_are_reported(tmp_path):
    error = load_error(write(tmp_path, 'sweep.yaml', """\
        sampling: {type: random, count: 0}
        parameters:
          - {name: LR, type: numeric, dataType: REAL, start: x, end: 1, numValues: 2, scale: LOG}
        job: 3
        """))
    assert error.path == 'parameters[0].start'
    assert 'sampling.count: expected a number at least 1' in error.message
    assert 'job: expected a string or a mapping' in error.message


def test_a_missing_template_file_is_named(tmp_path):
    path = write(tmp_path, 'sweep.yaml', PARAMETERS + 'job: nowhere.json\n')
    error = load_error(path)
    assert error.source == str(tmp_path / 'nowhere.json')
    assert 'expected a readable job template' in error.message


def test_count_without_random_sampling_is_refused(tmp_path):
    error = load_error(write(tmp_path, 'sweep.yaml', PARAMETERS + JOB_LINE), count=3)
    assert error.path == 'sampling.type'
