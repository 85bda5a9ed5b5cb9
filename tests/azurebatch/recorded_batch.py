"""The recorded answers of the real Azure Batch service (tests/azurebatch/recorded/*.json) and a check of JSON
against the Batch data-plane spec (TEST CODE ONLY).

`load(name)` gives an excerpt file; `interaction(name, title)` one of its interactions (request, status, headers,
response). `spec_violations(interaction)` lists where a recorded request or answer body breaks the spec
(tests/specs/batch-2024-02-01.19.0): the operation is found by method and path, the body schema of its request
and of its answer (by status, else `default`) are checked with jsonschema (Draft 4, as swagger 2.0 is), as the
spec says them (no property is forbidden unless the spec forbids it; `format` is not checked).
"""
import functools
import json
import os
import re

from jsonschema import Draft4Validator

from tests.azurebatch.prism import BATCH_SPEC

RECORDED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'recorded')


def load(name):
    with open(os.path.join(RECORDED_DIR, name + '.json'), encoding='utf-8') as f:
        return json.load(f)


def interaction(name, title):
    for item in load(name)['interactions']:
        if item['name'] == title:
            return item
    raise KeyError('{}: no interaction {!r}'.format(name, title))


@functools.lru_cache(maxsize=None)
def _spec():
    with open(BATCH_SPEC, encoding='utf-8') as f:
        return json.load(f)


def operation(method, path):
    """(swagger path, operation object) for a request path (query and percent-escapes ignored)."""
    for template, operations in _spec()['paths'].items():
        pattern = '^' + re.sub(r'\\\{(\w+)\\\}', lambda m: '.+' if m.group(1) == 'filePath' else '[^/]+',
                               re.escape(template)) + '$'
        if re.match(pattern, path) and method.lower() in operations:
            return template, operations[method.lower()]
    raise KeyError('no operation for {} {}'.format(method, path))


def _validator(schema):
    root = dict(_spec())
    root.update(schema)
    return Draft4Validator(root)


def _check(schema, body, where):
    if schema is None or body is None:
        return []
    return ['{}{}: {}'.format(where, ''.join('/{}'.format(p) for p in error.absolute_path), error.message)
            for error in sorted(_validator(schema).iter_errors(body), key=lambda e: list(e.absolute_path))]


def spec_violations(item):
    """Every way the recorded request body and answer body of `item` break the spec (empty when they conform)."""
    _, op = operation(item['method'], item['path'])
    problems = []
    body_parameter = next((p for p in op.get('parameters', []) if p.get('in') == 'body'), None)
    if 'request' in item:
        problems += _check(body_parameter and body_parameter['schema'], item['request'], 'request')
    answers = op['responses']
    answer = answers.get(str(item['status'])) or answers.get('default')
    if answer is None:
        problems.append('status {} is not an answer of {}'.format(item['status'], op['operationId']))
    elif 'response' in item and answer.get('schema', {}).get('format') != 'file':
        problems += _check(answer.get('schema'), item['response'], 'response')
    return problems
