"""The offline schema validator: its messages, and its verdicts cross-checked against jsonschema (test-only)."""
import copy
import json
import os

import jsonschema
import pytest
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from azext_batchai_sweep.core.spec.schema_validation import ARM_EXPRESSION_REF, SchemaValidator, format_path

SCHEMAS = os.path.join(os.path.dirname(__file__), '..', '..', 'azext_batchai_sweep', 'core', 'spec', 'schemas')
UPSTREAM_JOB_SCHEMA = os.path.join(os.path.dirname(__file__), '..', 'specs', 'batchai-schemas-2018-05-01', 'job.json')


def load_schema(name):
    with open(os.path.join(SCHEMAS, name), encoding='utf-8') as f:
        return json.load(f)


def reference_validator(schema):
    """jsonschema's Draft-04 validator, with the ARM expression definition served locally as "any string"."""
    arm_document = ARM_EXPRESSION_REF.split('#')[0]
    arm = Resource.from_contents({'definitions': {'expression': {'type': 'string'}}}, default_specification=DRAFT4)
    return jsonschema.Draft4Validator(schema, registry=Registry().with_resource(arm_document, arm))


GOOD_PARAMETERS = [
    {'name': 'LEARNING_RATE', 'type': 'numeric', 'dataType': 'REAL', 'start': 1e-4, 'end': 1e-1, 'numValues': 4,
     'scale': 'LOG'},
    {'name': 'BATCH_SIZE', 'type': 'numeric', 'dataType': 'INTEGER', 'start': 10, 'end': 50, 'step': 10,
     'scale': 'LINEAR'},
    {'name': 'DEVICE_ID', 'type': 'discrete', 'values': ['Device_1', 'Device_2']},
    {'name': 'HYPERPARAMS', 'type': 'dict', 'values': [{'LEARNING_RATE': 1e-4, 'HIDDEN': 100}]},
    {'name': 'DATA_INPUT', 'type': 'file', 'storageType': 'BLOB', 'storageAccountName': 'acct', 'container': 'data',
     'mountPath': 'bfs', 'filterStr': '/data/.+'},
    {'name': 'SHARE_INPUT', 'type': 'file', 'storageType': 'FILE', 'storageAccountName': 'acct', 'fileshare': 'data',
     'mountPath': 'afs', 'mountMethod': 'CLUSTER', 'directory': 'data'},
]
GOOD_SWEEP = {'jobNamePrefix': 'lr', 'sampling': {'type': 'random', 'count': 16, 'seed': 7},
              'parameters': GOOD_PARAMETERS, 'job': 'job.json'}


def sweep_with(**changes):
    doc = copy.deepcopy(GOOD_SWEEP)
    for key, value in changes.items():
        doc[key] = value
    return doc


def with_parameter(index, **fields):
    doc = copy.deepcopy(GOOD_SWEEP)
    for key, value in fields.items():
        if value is None:
            del doc['parameters'][index][key]
        else:
            doc['parameters'][index][key] = value
    return doc


SWEEP_DOCUMENTS = {
    'good': GOOD_SWEEP,
    'grid minimal': {'parameters': [GOOD_PARAMETERS[2]], 'sampling': {'type': 'grid'}},
    'inline job': sweep_with(job={'properties': {'nodeCount': 1}}),
    'no parameters': sweep_with(parameters=[]),
    'unknown top field': sweep_with(jobs='job.json'),
    'unknown sampling': sweep_with(sampling={'type': 'evolutionary'}),
    'grid with count': sweep_with(sampling={'type': 'grid', 'count': 3}),
    'zero count': sweep_with(sampling={'type': 'random', 'count': 0}),
    'string start': with_parameter(0, start='1e-4'),
    'missing start': with_parameter(0, start=None),
    'bad scale': with_parameter(1, scale='QUADRATIC'),
    'negative step': with_parameter(1, step=-1),
    'zero step': with_parameter(1, step=0),
    'float numValues': with_parameter(0, numValues=4.0),
    'lower-case name': with_parameter(2, name='device'),
    'bool discrete value': with_parameter(2, values=[True]),
    'dict value not a mapping': with_parameter(3, values=[1]),
    'blob without container': with_parameter(4, container=None),
    'file share without share': with_parameter(5, fileshare=None),
    'unknown parameter type': with_parameter(2, type='choice'),
    'job is a number': sweep_with(job=3),
    'not a mapping': [GOOD_SWEEP],
}

RECIPE_JOB = {
    '$schema': 'https://raw.githubusercontent.com/Azure/BatchAI/master/schemas/2018-05-01/job.json',
    'properties': {
        'nodeCount': 2,
        'chainerSettings': {'pythonScriptFilePath': 'train.py', 'commandLineArgs': '-g', 'processCount': 2},
        'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
        'mountVolumes': {'azureFileShares': [{'azureFileUrl': 'https://acct.file.core.windows.net/logs',
                                               'accountName': 'acct', 'relativeMountPath': 'logs',
                                               'credentials': {'accountKey': '$env:AZURE_STORAGE_KEY'}}]},
        'outputDirectories': [{'id': 'MODEL', 'pathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs'}],
        'containerSettings': {'imageSourceRegistry': {'image': 'batchaitraining/chainermn:openMPI'}},
        'secrets': [{'name': 'TOKEN', 'value': '$env:TOKEN'}],
        'environmentVariables': [{'name': 'A', 'value': 'b'}],
    },
}


def job_with(**properties):
    doc = copy.deepcopy(RECIPE_JOB)
    doc['properties'].update(properties)
    return doc


JOB_DOCUMENTS = {
    'recipe': RECIPE_JOB,
    'process count as expression': job_with(chainerSettings={'pythonScriptFilePath': 'a', 'processCount': '[x]'}),
    'node count as string': job_with(nodeCount='2'),
    'node count as float': job_with(nodeCount=2.0),
    'bad priority': job_with(schedulingPriority='urgent'),
    'chainer without script': job_with(chainerSettings={'commandLineArgs': '-g'}),
    'process count true': job_with(chainerSettings={'pythonScriptFilePath': 'a', 'processCount': True}),
    'key vault reference incomplete': job_with(secrets=[{'name': 'S', 'valueSecretReference': {'secretUrl': 'u'}}]),
    'key vault reference complete': job_with(secrets=[{'name': 'S', 'valueSecretReference': {
        'secretUrl': 'u', 'sourceVault': {'id': '/subscriptions/x'}}}]),
    'environment variable without name': job_with(environmentVariables=[{'value': 'b'}]),
    'output directories not a list': job_with(outputDirectories={'id': 'MODEL'}),
    'mount without credentials': job_with(mountVolumes={'azureFileShares': [{'azureFileUrl': 'u', 'accountName': 'a',
                                                                             'relativeMountPath': 'logs'}]}),
}


@pytest.mark.parametrize('name', sorted(SWEEP_DOCUMENTS))
def test_sweep_schema_verdicts_agree_with_jsonschema(name):
    schema = load_schema('sweep.schema.json')
    document = SWEEP_DOCUMENTS[name]
    ours = SchemaValidator(schema).errors(document)
    theirs = list(reference_validator(schema).iter_errors(document))
    assert bool(ours) == bool(theirs), (ours, [e.message for e in theirs])
    assert bool(ours) == (name not in ('good', 'grid minimal', 'inline job'))


@pytest.mark.parametrize('name', sorted(JOB_DOCUMENTS))
def test_job_schema_verdicts_agree_with_jsonschema(name):
    schema = load_schema('job.schema.json')
    document = JOB_DOCUMENTS[name]
    ours = SchemaValidator(schema).errors(document)
    theirs = list(reference_validator(schema).iter_errors(document))
    assert bool(ours) == bool(theirs), (ours, [e.message for e in theirs])


def test_the_shipped_schemas_are_valid_draft4_and_the_job_schema_is_the_unmodified_upstream_copy():
    jsonschema.Draft4Validator.check_schema(load_schema('sweep.schema.json'))
    jsonschema.Draft4Validator.check_schema(load_schema('job.schema.json'))
    with open(os.path.join(SCHEMAS, 'job.schema.json'), 'rb') as ours, open(UPSTREAM_JOB_SCHEMA, 'rb') as upstream:
        assert ours.read() == upstream.read()


def messages(document, schema_name='sweep.schema.json'):
    return [str(issue) for issue in SchemaValidator(load_schema(schema_name)).errors(document)]


@pytest.mark.parametrize('document, expected', [
    (SWEEP_DOCUMENTS['string start'], ["parameters[0].start: expected a number, got the string '1e-4'"]),
    (SWEEP_DOCUMENTS['missing start'], ['parameters[0].start: expected a value (the field is required)']),
    (SWEEP_DOCUMENTS['unknown parameter type'],
     ["parameters[2].type: expected one of 'numeric', 'discrete', 'dict', 'file', got the string 'choice'"]),
    (SWEEP_DOCUMENTS['blob without container'], ['parameters[4].container: expected a value (the field is required)']),
    (SWEEP_DOCUMENTS['zero step'], ['parameters[1].step: expected a number greater than 0, got the number 0']),
    (SWEEP_DOCUMENTS['unknown sampling'],
     ["sampling.type: expected one of 'grid', 'random', 'hyperband', 'bayesian', got the string 'evolutionary'"]),
    (SWEEP_DOCUMENTS['grid with count'],
     ["sampling.count: expected only the fields type, got the unknown field 'count'"]),
    (SWEEP_DOCUMENTS['job is a number'], ['job: expected a string or a mapping, got the number 3']),
    (SWEEP_DOCUMENTS['not a mapping'], ['(top level): expected a mapping, got a list']),
])
def test_messages_name_the_field_and_what_was_expected(document, expected):
    assert messages(document) == expected


def test_all_errors_are_reported_deepest_first():
    document = sweep_with(parameters=[{'name': 'lr', 'type': 'discrete', 'values': [1, True]}], job=3,
                          sampling={'type': 'random', 'count': 0})
    assert messages(document) == [
        'parameters[0].values[1]: expected a string or a number, got true',
        "parameters[0].name: expected a string matching ^[A-Z_][A-Z0-9_]*$, got the string 'lr'",
        'sampling.count: expected a number at least 1, got the number 0',
        'job: expected a string or a mapping, got the number 3',
    ]


def test_one_of_reports_the_branch_that_got_furthest():
    # valueSecretReference is oneOf [KeyVaultSecretReference, ARM expression]: an object went into the first.
    document = JOB_DOCUMENTS['key vault reference incomplete']
    assert messages(document, 'job.schema.json') == [
        'properties.secrets[0].valueSecretReference.sourceVault: expected a value (the field is required)']


def test_one_of_with_no_progress_in_any_branch_names_every_alternative():
    assert messages(JOB_DOCUMENTS['process count true'], 'job.schema.json') == [
        'properties.chainerSettings.processCount: expected an integer or a string, got true']


def test_draft4_integers_are_ints_and_booleans_are_not_numbers():
    validator = SchemaValidator({'type': 'integer'})
    assert validator.is_valid(3)
    assert not validator.is_valid(3.0)
    assert not validator.is_valid(True)
    assert not SchemaValidator({'type': 'number'}).is_valid(False)
    assert not SchemaValidator({'enum': [1]}).is_valid(True)
    assert SchemaValidator({'enum': [1]}).is_valid(1.0)


def test_one_of_matching_two_branches_is_an_error():
    validator = SchemaValidator({'oneOf': [{'type': 'integer'}, {'type': 'number'}]})
    assert [str(i) for i in validator.errors(3)] == [
        '(top level): expected a value matching exactly one alternative, got a value matching 2 of them']
    assert validator.is_valid(3.5)


def test_any_of_and_all_of():
    any_of = SchemaValidator({'anyOf': [{'type': 'integer'}, {'type': 'string', 'minLength': 2}]})
    assert any_of.is_valid(1) and any_of.is_valid('ab')
    assert [str(i) for i in any_of.errors('a')] == ["(top level): expected at least 2 characters, got the string 'a'"]
    all_of = SchemaValidator({'allOf': [{'minimum': 1}, {'maximum': 3}]})
    assert all_of.is_valid(2) and not all_of.is_valid(4) and not all_of.is_valid(0)


def test_additional_properties_as_a_schema():
    validator = SchemaValidator({'type': 'object', 'additionalProperties': {'type': 'integer'}})
    assert [str(i) for i in validator.errors({'a': 1, 'b': 'x'})] == ["b: expected an integer, got the string 'x'"]


def test_only_local_and_arm_expression_references_resolve():
    with pytest.raises(ValueError):
        SchemaValidator({'$ref': 'https://example.com/other.json#/x'}).errors(1)
    assert SchemaValidator({'$ref': ARM_EXPRESSION_REF}).is_valid('[parameters(x)]')


def test_paths_quote_keys_that_are_not_identifiers():
    assert format_path(('properties', 'environmentVariables', 0, 'name')) == 'properties.environmentVariables[0].name'
    assert format_path(('values', 0, 'a key')) == "values[0]['a key']"
    assert format_path(()) == ''
