"""Validate service responses against the Batch AI 2018-05-01 swagger (test-only: uses `jsonschema`).

The swagger document is the root of every validation (so `#/definitions/...` references resolve). Object
definitions are made strict: `allOf` parents are merged in and `additionalProperties: false` is set wherever a
definition lists its properties, so a misspelt or invented property fails.

`SpecCheckPolicy` is an azure-core policy for the real SDK client: it validates every response body against the
schema of the operation (swagger path + method + status, `default` for errors) and counts what it checked.
"""
import copy
import functools
import json
import os
import re

import jsonschema

from azure.core.pipeline.policies import SansIOHTTPPolicy
from jsonschema import Draft4Validator

from azext_batchai_sweep.core.service.scheduler_ids import LOCAL_VIEW
from tests.fixtures_az import SPECS_DIR

SPEC_FILE = os.path.join(SPECS_DIR, 'batchai-2018-05-01', 'BatchAI.json')
# Operation results are not swagger paths: their 200 body is the resource the operation created.
RESOURCE_TYPES = {
    'Microsoft.BatchAI/workspaces': 'Workspace', 'Microsoft.BatchAI/workspaces/clusters': 'Cluster',
    'Microsoft.BatchAI/workspaces/experiments': 'Experiment', 'Microsoft.BatchAI/workspaces/experiments/jobs': 'Job',
}


def _strict(schema, definitions, seen_refs=()):
    """A copy of a schema node with allOf merged and additionalProperties false on property lists (recursive)."""
    if not isinstance(schema, dict):
        return schema
    node = copy.deepcopy(schema)
    props = dict(node.get('properties') or {})
    required = list(node.get('required') or [])
    for parent in node.pop('allOf', []):
        if '$ref' in parent:
            parent = definitions[parent['$ref'].rsplit('/', 1)[-1]]
        parent = _strict(parent, definitions)
        props = {**parent.get('properties', {}), **props}
        required += parent.get('required', [])
    if props or 'properties' in schema:
        node['properties'] = {name: _strict(sub, definitions) for name, sub in props.items()}
        node.setdefault('additionalProperties', False)
        if required:
            node['required'] = sorted(set(required))
    if isinstance(node.get('items'), dict):
        node['items'] = _strict(node['items'], definitions)
    if isinstance(node.get('additionalProperties'), dict):
        node['additionalProperties'] = _strict(node['additionalProperties'], definitions)
    return node


@functools.lru_cache(maxsize=None)
def load_spec():
    """The swagger document with strict definitions."""
    with open(SPEC_FILE, encoding='utf-8') as f:
        spec = json.load(f)
    definitions = spec['definitions']
    spec['definitions'] = {name: _strict(schema, definitions) for name, schema in definitions.items()}
    return spec


@functools.lru_cache(maxsize=None)
def _validator(definition):
    spec = load_spec()
    if definition not in spec['definitions']:
        raise KeyError(definition)
    root = dict(spec)
    root.update({'$ref': '#/definitions/' + definition})
    return Draft4Validator(root)


def validate(definition, body):
    """Raise AssertionError listing every violation of `body` against a swagger definition."""
    check(_validator(definition), definition, body)


def check(validator, definition, body):
    """Raise AssertionError listing every violation of `body` found by `validator` (of `definition`)."""
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
    if errors:
        raise AssertionError('{} does not conform to {}:\n{}'.format(
            json.dumps(body)[:2000], definition,
            '\n'.join('  at {}: {}'.format('/'.join(map(str, e.absolute_path)), e.message) for e in errors)))


@functools.lru_cache(maxsize=None)
def _operations():
    """(regex over the URL path, METHOD, operation) of every swagger operation."""
    result = []
    for template, item in load_spec()['paths'].items():
        pattern = re.sub(r'\\{[^}]+\\}', '[^/]+', re.escape(template))
        for method, operation in item.items():
            if method != 'parameters':
                result.append((re.compile('^' + pattern + '/?$', re.IGNORECASE), method.upper(), operation))
    return result


def _operation(method, path):
    for regex, op_method, operation in _operations():
        if op_method == method and regex.match(path):
            return operation
    # x-ms-pageable: the next pages of a pageable POST operation (listOutputFiles) are GETs of its nextLink, as
    # autorest's clients follow them; they answer with the operation's own response.
    for regex, op_method, operation in _operations():
        if method == 'GET' and op_method == 'POST' and 'x-ms-pageable' in operation and regex.match(path):
            return operation
    raise KeyError('{} {} is not a swagger operation'.format(method, path))


def request_definition(method, path):
    """The definition a request body must conform to, or None when the operation takes no body."""
    spec = load_spec()
    for parameter in _operation(method, path).get('parameters', []):
        if '$ref' in parameter:  # a shared parameter (#/parameters/...): path or query, never a body here
            parameter = spec['parameters'][parameter['$ref'].rsplit('/', 1)[-1]]
        if parameter.get('in') == 'body':
            return parameter['schema']['$ref'].rsplit('/', 1)[-1]
    return None


# The operation status resource Batch AI answered at its Azure-AsyncOperation URL (the swagger has no definition
# for it; the shape is ARM's and the one azure-cli's recorded batchai tests show).
OPERATION_STATUS_SCHEMA = {
    'type': 'object', 'required': ['id', 'name', 'status', 'startTime'], 'additionalProperties': False,
    'properties': {'id': {'type': 'string'}, 'name': {'type': 'string'}, 'startTime': {'type': 'string'},
                   'endTime': {'type': 'string'}, 'properties': {'type': 'object'}, 'error': {'type': 'object'},
                   'status': {'enum': ['InProgress', 'Succeeded', 'Failed', 'Canceled']}},
}
_OPERATION_PATH = re.compile(r'/operation(?:results|statuses)/[^/]+$', re.IGNORECASE)


def validate_operation_status(body):
    """Raise jsonschema.ValidationError unless `body` is an operation status resource (endTime once it ended)."""
    jsonschema.validate(body, OPERATION_STATUS_SCHEMA)
    if body['status'] != 'InProgress' and 'endTime' not in body:
        raise jsonschema.ValidationError('an operation that ended needs its endTime: {}'.format(body))


def response_definition(method, path, status):
    """The definition name a response must conform to; None when it has no body schema; KeyError if unknown."""
    if _OPERATION_PATH.search(path):
        return 'operationresult'
    responses = _operation(method, path)['responses']
    response = responses.get(str(status)) or (responses.get('default') if status >= 400 else None)
    if response is None:
        raise AssertionError('{} {} answered {}, which the swagger does not list'.format(method, path, status))
    ref = (response.get('schema') or {}).get('$ref')
    return ref.rsplit('/', 1)[-1] if ref else None


def _is_local_view(path):
    """The local service's own view (/local/..., outside the Batch AI API: core/service/scheduler_ids.py)."""
    return path.lower().startswith('/{}/'.format(LOCAL_VIEW))


def _path_of(url):
    path = url.split('?', 1)[0].split('://', 1)[-1]
    return path[path.index('/'):] if '/' in path else '/'


class SpecCheckPolicy(SansIOHTTPPolicy):
    """Validates each request body the client sends and each response body it gets against the swagger.

    `checked` counts validated response bodies, `requests_checked` validated request bodies.
    """

    def __init__(self):
        super().__init__()
        self.checked = 0
        self.requests_checked = 0

    def on_request(self, request):
        http_request = request.http_request
        path = _path_of(http_request.url)
        if _OPERATION_PATH.search(path) or _is_local_view(path):
            return  # polling an operation: a GET without a body; or the local service's own view
        definition = request_definition(http_request.method, path)
        body = http_request.body
        if definition is None:
            assert not body, '{} {} takes no body, sent {!r}'.format(http_request.method, path, body[:200])
            return
        if body:  # the SDK sends no body for a PUT whose model is empty (an experiment create)
            validate(definition, json.loads(body))
            self.requests_checked += 1

    def on_response(self, request, response):
        http_request, http_response = request.http_request, response.http_response
        path = _path_of(http_request.url)
        status = http_response.status_code
        if _is_local_view(path):
            return
        definition = response_definition(http_request.method, path, status)
        text = http_response.text()
        if definition == 'operationresult':
            if status >= 400:
                definition = 'CloudError'
            elif text and '/operationresults/' in path.lower():
                validate_operation_status(json.loads(text))
                self.checked += 1
                return
            elif text:
                definition = RESOURCE_TYPES[json.loads(text)['type']]
            else:
                return
        if definition is None:
            assert not text, '{} {} -> {} must have no body, got {!r}'.format(http_request.method, path, status,
                                                                            text[:200])
            return
        validate(definition, json.loads(text))
        self.checked += 1
