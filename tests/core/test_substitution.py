"""The substitution engine: both placeholder syntaxes, typed whole values, environment variables, shell quoting."""
import copy
import json
import os
import shlex
import subprocess

import pytest
from azure.mgmt.batchai import models

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.naming import canonical_json
from azext_batchai_sweep.core.spec.params import DictParamSpec, DiscreteParamSpec
from azext_batchai_sweep.core.spec.substitution import (CompiledTemplate, ExternalValue, Placeholder, placeholder_names,
                                                        render_value, shell_quote)
from azext_batchai_sweep.core.spec.sweep import ParameterSweep

SPECS = [
    DiscreteParamSpec(parameterName='LR', values=[0.0001, 0.5]),
    DiscreteParamSpec(parameterName='LR_DECAY', values=[0.9]),
    DiscreteParamSpec(parameterName='NODE_COUNT', values=[2, 4]),
    DiscreteParamSpec(parameterName='NAME', values=['run a', 'b"c']),
    DictParamSpec(parameterName='HYPERPARAMS', values=[{'LEARNING_RATE': 0.001, 'HIDDEN': 100}]),
]
VALUES = {'LR': 0.0001, 'LR_DECAY': 0.9, 'NODE_COUNT': 2, 'NAME': 'run a',
          'HYPERPARAMS': {'LEARNING_RATE': 0.001, 'HIDDEN': 100}}


def render(template, values=VALUES, specs=SPECS, sweep_name=None):
    compiled = CompiledTemplate(template, specs, sweep_name=sweep_name)
    return compiled.render(values, canonical_json(values))


def env_of(body):
    return {item['name']: item['value'] for item in body['properties']['environmentVariables']}


def test_render_value_rules():
    assert render_value(3) == '3'
    assert render_value(0.0001) == '0.0001'
    assert render_value(1e-05) == '1e-05'
    assert render_value(0.1 + 0.2) == '0.30000000000000004'  # repr: the exact float, round-trips
    assert render_value('as is') == 'as is'


def test_whole_value_keeps_type_embedded_is_text():
    body = render({'properties': {'nodeCount': '{{NODE_COUNT}}', 'args': '--n={{NODE_COUNT}} --lr={{LR}}',
                                  'lr': '{{ LR }}'}})
    props = body['properties']
    assert props['nodeCount'] == 2 and type(props['nodeCount']) is int
    assert props['args'] == '--n=2 --lr=0.0001'
    assert props['lr'] == 0.0001


def test_lists_and_nested_dicts_are_substituted():
    body = render({'properties': {'inputDirectories': [{'id': 'A', 'path': 'p/{{NAME}}'}],
                                  'args': ['--lr', '{{LR}}', ['x{{NODE_COUNT}}']]}})
    assert body['properties']['inputDirectories'][0]['path'] == 'p/run a'
    assert body['properties']['args'] == ['--lr', 0.0001, ['x2']]


def test_no_prefix_collision_and_shell_variables_left_alone():
    text = '{{LR}} {{LR_DECAY}} $PARAM_LR ${PARAM_LR_DECAY} {{.ID}} {{json .}}'
    body = render({'properties': {'commandLine': text}})
    assert body['properties']['commandLine'] == '0.0001 0.9 $PARAM_LR ${PARAM_LR_DECAY} {{.ID}} {{json .}}'


def test_dict_parameter_placeholders_both_syntaxes():
    sweep = ParameterSweep(SPECS)
    template = {'properties': {
        'a': '--lr={0}'.format(sweep['HYPERPARAMS']['LEARNING_RATE']),
        'b': '{{HYPERPARAMS.HIDDEN}}',
        'c': sweep['HYPERPARAMS']['HIDDEN'],
        'd': 'h={{HYPERPARAMS.HIDDEN}}'}}
    props = render(template)['properties']
    assert (props['a'], props['b'], props['c'], props['d']) == ('--lr=0.001', 100, 100, 'h=100')


def test_placeholder_objects_in_str_format_percent_fstring_and_plus():
    sweep = ParameterSweep(SPECS)
    lr = sweep['LR']
    template = {'properties': {'a': '--lr={0}'.format(lr), 'b': '--lr=%s' % lr, 'c': f'--lr={lr}',
                               'd': '--lr=' + lr, 'e': lr + '!', 'f': '{0:.2e}'.format(lr), 'g': lr}}
    props = render(template)['properties']
    assert [props[k] for k in 'abcde'] == ['--lr=0.0001'] * 4 + ['0.0001!']
    assert props['f'] == '1.00e-04'
    assert props['g'] == 0.0001


def test_format_spec_in_template_text():
    assert render({'properties': {'a': '{{LR:.1e}}'}})['properties']['a'] == '1.0e-04'


def test_unknown_placeholder_is_an_error_with_its_path():
    with pytest.raises(SpecError, match="unknown parameter 'BATCH'") as exc_info:
        render({'properties': {'x': [{'y': 'a {{BATCH}}'}]}})
    assert exc_info.value.path == 'properties.x[0].y'
    with pytest.raises(SpecError, match="no key 'NOPE'"):
        render({'properties': {'x': '{{HYPERPARAMS.NOPE}}'}})
    with pytest.raises(SpecError, match='unknown parameter'):
        render({'properties': {'x': '{{lr}}'}})


def test_placeholder_object_rejects_unknown_names_and_keys_early():
    sweep = ParameterSweep(SPECS)
    with pytest.raises(SpecError, match="'NOPE'"):
        sweep['NOPE']
    with pytest.raises(SpecError, match='not a dict parameter'):
        sweep['LR']['K']
    with pytest.raises(SpecError, match="no key 'K'"):
        sweep['HYPERPARAMS']['K']
    assert repr(sweep['HYPERPARAMS']['HIDDEN']) == "parameters['HYPERPARAMS']['HIDDEN']"


def test_placeholder_names_lists_used_parameters_in_order():
    sweep = ParameterSweep(SPECS)
    template = {'a': ['{{NAME}}', {'b': '{{HYPERPARAMS.HIDDEN}} {{LR}}'}], 'c': sweep['NODE_COUNT'], 'd': '{{NAME}}'}
    assert placeholder_names(template) == ['NAME', 'HYPERPARAMS', 'LR', 'NODE_COUNT']
    assert sweep.unused_parameters({'a': '{{LR}}'}) == ['LR_DECAY', 'NODE_COUNT', 'NAME', 'HYPERPARAMS']


def test_environment_variables_added_after_the_users():
    template = {'properties': {'environmentVariables': [{'name': 'USER_VAR', 'value': 'kept {{LR}}'}]}}
    original = copy.deepcopy(template)
    body = render(template, sweep_name='my-sweep')
    env = body['properties']['environmentVariables']
    assert env[0] == {'name': 'USER_VAR', 'value': 'kept 0.0001'}
    assert env_of(body) == {
        'USER_VAR': 'kept 0.0001', 'PARAM_LR': '0.0001', 'PARAM_LR_DECAY': '0.9', 'PARAM_NODE_COUNT': '2',
        'PARAM_NAME': 'run a', 'PARAM_HYPERPARAMS_LEARNING_RATE': '0.001', 'PARAM_HYPERPARAMS_HIDDEN': '100',
        'BATCHAI_SWEEP_NAME': 'my-sweep',
        'BATCHAI_SWEEP_PARAMS': '{"HYPERPARAMS":{"HIDDEN":100,"LEARNING_RATE":0.001},"LR":0.0001,"LR_DECAY":0.9,'
                                '"NAME":"run a","NODE_COUNT":2}'}
    assert template == original  # the template itself is not modified


def test_environment_without_properties_wrapper_and_without_sweep_name():
    body = render({'environmentVariables': []})
    assert 'BATCHAI_SWEEP_NAME' not in {e['name'] for e in body['environmentVariables']}
    assert json.loads({e['name']: e['value'] for e in body['environmentVariables']}['BATCHAI_SWEEP_PARAMS']) == VALUES


@pytest.mark.parametrize('name', ['PARAM_LR', 'BATCHAI_SWEEP_PARAMS'])
def test_user_variable_clashing_with_a_generated_one_is_an_error(name):
    with pytest.raises(SpecError, match=name):
        render({'properties': {'environmentVariables': [{'name': name, 'value': 'x'}]}})


def test_special_characters_are_json_escaped():
    values = dict(VALUES, NAME='b"c\\d\n')
    body = render({'properties': {'a': 'x {{NAME}}', 'b': '{{NAME}}'}}, values=values)
    assert body['properties']['a'] == 'x b"c\\d\n' and body['properties']['b'] == 'b"c\\d\n'


def test_template_containing_token_like_text_renders_it_verbatim():
    body = render({'properties': {'a': '@@0123456789abcdef:W0@@ {{LR}}'}})
    assert body['properties']['a'] == '@@0123456789abcdef:W0@@ 0.0001'


# Shell quoting of values from outside the user's file.
FILE_SPEC = DiscreteParamSpec(parameterName='DATA', values=['x'])
FILE_SPEC.external = True  # stands for a FileParamSpec without storage


def file_value(path):
    return ExternalValue('$AZ_BATCHAI_MOUNT_ROOT/bfs', path)


def test_shell_quote():
    assert shell_quote(0.001) == '0.001' and shell_quote('abc_1') == 'abc_1'
    assert shell_quote(file_value('/data/c.txt')) == '$AZ_BATCHAI_MOUNT_ROOT/bfs/data/c.txt'
    quoted = shell_quote(file_value('/a; touch /tmp/pwned'))
    assert shlex.split(quoted) == ['$AZ_BATCHAI_MOUNT_ROOT/bfs/a; touch /tmp/pwned']


def test_external_value_in_command_line_is_one_quoted_argument(tmp_path):
    evil = file_value('/a; touch {}/pwned'.format(tmp_path))
    template = {'properties': {
        'customToolkitSettings': {'commandLine': 'printf "%s\\n" {{DATA}}'},
        'jobPreparation': {'commandLine': '{{DATA}}'},
        'tensorFlowSettings': {'masterCommandLineArgs': '--in {{DATA}}', 'workerCommandLineArgs': '--in {{DATA}}'},
        'chainerSettings': {'commandLineArgs': '--in {{DATA}}'},
        'inputDirectories': [{'id': 'D', 'path': '{{DATA}}'}]}}
    props = render(template, values={'DATA': evil}, specs=[FILE_SPEC])['properties']
    command = props['customToolkitSettings']['commandLine']
    out = subprocess.run(['sh', '-c', command], capture_output=True, text=True, check=True,
                         env=dict(os.environ, AZ_BATCHAI_MOUNT_ROOT='/mnt')).stdout
    assert out == '/mnt/bfs/a; touch {}/pwned\n'.format(tmp_path)
    assert not (tmp_path / 'pwned').exists()
    for args in (props['tensorFlowSettings']['masterCommandLineArgs'], props['chainerSettings']['commandLineArgs'],
                 props['tensorFlowSettings']['workerCommandLineArgs']):
        assert shlex.split(args) == ['--in', str(evil)]
    assert shlex.split(props['jobPreparation']['commandLine']) == [str(evil)]
    # not a shell field, and environment variables are not shell-parsed: the value as it is
    assert props['inputDirectories'][0]['path'] == str(evil)
    assert env_of({'properties': props})['PARAM_DATA'] == str(evil)


def test_values_from_the_users_file_are_not_quoted():
    props = render({'properties': {'commandLine': 'run {{NAME}}'}})['properties']
    assert props['commandLine'] == 'run run a'


# SDK models (azure-mgmt-batchai msrest models).
def model_template(sweep):
    return models.JobCreateParameters(
        cluster=models.ResourceId(id='/subscriptions/s/resourceGroups/g/providers/Microsoft.BatchAI/clusters/c'),
        node_count=sweep['NODE_COUNT'],
        std_out_err_path_prefix='$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
        input_directories=[models.InputDirectory(id='DATA', path='$AZ_BATCHAI_MOUNT_ROOT/{0}'.format(sweep['NAME']))],
        environment_variables=[models.EnvironmentVariable(name='USER_VAR', value='u')],
        container_settings=models.ContainerSettings(
            image_source_registry=models.ImageSourceRegistry(image='tensorflow/tensorflow:1.8.0-gpu')),
        tensor_flow_settings=models.TensorFlowSettings(
            python_script_file_path='$AZ_BATCHAI_INPUT_SCRIPT/train.py',
            master_command_line_args='--learning-rate={0}'.format(sweep['LR']),
            worker_command_line_args=sweep['LR']),
        constraints=models.JobBasePropertiesConstraints(max_wall_clock_time=__import__('datetime').timedelta(hours=2)))


def test_model_template_renders_a_model():
    sweep = ParameterSweep(SPECS)
    template = model_template(sweep)
    body = render(template)
    assert isinstance(body, models.JobCreateParameters)
    assert body.node_count == 2
    assert body.tensor_flow_settings.master_command_line_args == '--learning-rate=0.0001'
    # a whole placeholder in a str field of a model is text
    assert body.tensor_flow_settings.worker_command_line_args == '0.0001'
    assert body.input_directories[0].path == '$AZ_BATCHAI_MOUNT_ROOT/run a'
    assert body.constraints.max_wall_clock_time.total_seconds() == 7200
    env = {e.name: e.value for e in body.environment_variables}
    assert env['USER_VAR'] == 'u' and env['PARAM_LR'] == '0.0001' and env['PARAM_HYPERPARAMS_HIDDEN'] == '100'
    assert isinstance(template.node_count, Placeholder)  # the template itself is left as it was


def test_model_template_json_is_the_rest_form():
    sweep = ParameterSweep(SPECS)
    compiled = CompiledTemplate(model_template(sweep), SPECS)
    data = json.loads(compiled.render_json(VALUES, canonical_json(VALUES)))
    assert data['properties']['nodeCount'] == 2
    assert data['properties']['constraints']['maxWallClockTime'] == 'PT2H'
    assert data['properties']['cluster']['id'].endswith('/clusters/c')
    assert data == models.JobCreateParameters.deserialize(data).serialize()


def test_model_without_placeholders_round_trips():
    template = models.JobCreateParameters(node_count=1, cluster=models.ResourceId(id='c'))
    body = render(template)
    assert body.node_count == 1 and body.cluster.id == 'c'


def test_template_must_be_model_or_dict():
    with pytest.raises(SpecError, match='JobCreateParameters model or a dict'):
        CompiledTemplate(['x'], SPECS)
