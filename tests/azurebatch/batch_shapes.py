"""Validate Batch data-plane bodies (2024-02-01.19.0) the mapping writes, strictly: no property the API lacks, every
required one, the right types and enum values (test-only: uses `jsonschema`).

The contract is the Batch data-plane swagger. Where its copy is in the repository
(tests/specs/batch-2024-02-01.19.0/BatchService.json, brought in by the Batch double's work) its definitions are
used, made strict as tests/spec_conformance.py makes the Batch AI swagger's. Until then the same definitions are
derived from the Batch SDK that azure-cli ships (azure-batch, generated from that API version: each model's REST
names, types and required fields) and the version it speaks is checked: a stand-in for the spec file, said here so
that nobody mistakes it for the spec.
"""
import datetime
import enum
import functools
import json
import os
import typing

from jsonschema import Draft4Validator

from tests.fixtures_az import SPECS_DIR
from tests.spec_conformance import _strict

API_VERSION = '2024-02-01.19.0'
SPEC_FILE = os.path.join(SPECS_DIR, 'batch-' + API_VERSION, 'BatchService.json')
# swagger definition -> the SDK model generated from it
SDK_MODELS = {'PoolAddParameter': 'BatchPoolCreateContent', 'TaskAddParameter': 'BatchTaskCreateContent',
              'TaskAddCollectionParameter': 'BatchTaskGroup'}


def source():
    """'spec' or 'sdk': where the definitions come from in this run."""
    return 'spec' if os.path.exists(SPEC_FILE) else 'sdk'


@functools.lru_cache(maxsize=None)
def _spec_root():
    with open(SPEC_FILE, encoding='utf-8') as f:
        spec = json.load(f)
    definitions = spec['definitions']
    return {'definitions': {name: _strict(schema, definitions) for name, schema in definitions.items()}}


def _sdk_schema(annotation, definitions):
    from azure.batch import _model_base  # pylint: disable=import-outside-toplevel
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin is typing.Union:
        enums = [a for a in args if isinstance(a, type) and issubclass(a, enum.Enum)]
        if enums:
            return {'type': 'string', 'enum': [member.value for member in enums[0]]}
        return _sdk_schema(args[0], definitions)
    if origin in (list, typing.List):
        return {'type': 'array', 'items': _sdk_schema(args[0], definitions)}
    if origin in (dict, typing.Dict):
        return {'type': 'object', 'additionalProperties': _sdk_schema(args[1], definitions)}
    if isinstance(annotation, type) and issubclass(annotation, _model_base.Model):
        _sdk_definition(annotation, definitions)
        return {'$ref': '#/definitions/' + annotation.__name__}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {'type': 'string', 'enum': [member.value for member in annotation]}
    simple = {str: {'type': 'string'}, bool: {'type': 'boolean'}, int: {'type': 'integer'},
              float: {'type': 'number'}, datetime.timedelta: {'type': 'string', 'pattern': '^-?P'},
              datetime.datetime: {'type': 'string'}, datetime.date: {'type': 'string'}}
    return simple.get(annotation, {})


def _sdk_definition(model, definitions):
    if model.__name__ in definitions:
        return
    definitions[model.__name__] = {}  # before recursing: models refer to each other
    from azure.batch import _model_base, models  # pylint: disable=import-outside-toplevel
    hints = typing.get_type_hints(model, localns={"_models": models})  # the module imports it for type checkers only
    properties, required = {}, []
    fields = {attr: value for klass in reversed(model.__mro__) for attr, value in vars(klass).items()
              if isinstance(value, _model_base._RestField)}  # pylint: disable=protected-access
    for attr, field in fields.items():
        annotation = hints[attr]
        name = field._rest_name_input or attr  # pylint: disable=protected-access  (the model's own default)
        properties[name] = _sdk_schema(annotation, definitions)
        if type(None) not in typing.get_args(annotation):
            required.append(name)
    schema = {'type': 'object', 'properties': properties, 'additionalProperties': False}
    if required:
        schema['required'] = sorted(required)
    definitions[model.__name__] = schema


@functools.lru_cache(maxsize=None)
def _sdk_root():
    import azure.batch  # pylint: disable=import-outside-toplevel
    from azure.batch import models  # pylint: disable=import-outside-toplevel
    from azure.batch._configuration import BatchClientConfiguration  # pylint: disable=import-outside-toplevel
    spoken = BatchClientConfiguration('https://x.batch.azure.com', credential=object()).api_version
    assert spoken == API_VERSION, 'azure-batch {} speaks {}, not {}: bring in the spec file {}'.format(
        azure.batch.__version__ if hasattr(azure.batch, '__version__') else '?', spoken, API_VERSION, SPEC_FILE)
    definitions = {}
    for definition, model in SDK_MODELS.items():
        _sdk_definition(getattr(models, model), definitions)
        definitions[definition] = {'$ref': '#/definitions/' + model}
    return {'definitions': definitions}


@functools.lru_cache(maxsize=None)
def _validator(definition):
    root = dict(_spec_root() if source() == 'spec' else _sdk_root())
    root['$ref'] = '#/definitions/' + definition
    return Draft4Validator(root)


def validate(definition, body):
    """Raise AssertionError listing every violation of `body` against a data-plane definition
    ('PoolAddParameter', 'TaskAddParameter', 'TaskAddCollectionParameter')."""
    errors = sorted(_validator(definition).iter_errors(body), key=lambda e: list(e.absolute_path))
    if errors:
        raise AssertionError('{} does not conform to {} ({}):\n{}'.format(
            json.dumps(body)[:2000], definition, source(),
            '\n'.join('  at {}: {}'.format('/'.join(map(str, e.absolute_path)), e.message) for e in errors)))
