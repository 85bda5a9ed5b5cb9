"""Validate Batch data-plane bodies (API 2024-02-01.19.0) strictly against the spec in the repository
(tests/specs/batch-2024-02-01.19.0/BatchService.json): no property the API lacks, every required one, the right
types and enum values (test-only: uses `jsonschema`). Definitions are made strict as tests/spec_conformance.py makes
the Batch AI swagger's (allOf merged, additionalProperties false where properties are listed).

Used for the bodies the mapping writes (PoolAddParameter, TaskAddParameter, TaskAddCollectionParameter,
JobAddParameter) and for the answers it reads in tests (CloudTask, CloudPool, ComputeNode, ImageInformation), so its
names are Batch's own.
"""
import functools
import json
import os

from jsonschema import Draft4Validator

from tests.fixtures_az import SPECS_DIR
from tests.spec_conformance import _strict, check

API_VERSION = '2024-02-01.19.0'
SPEC_FILE = os.path.join(SPECS_DIR, 'batch-' + API_VERSION, 'BatchService.json')


@functools.lru_cache(maxsize=None)
def _definitions():
    with open(SPEC_FILE, encoding='utf-8') as f:
        spec = json.load(f)
    # (the copy's info.version still reads 2023-11-01.18.0: see the README of its folder)
    definitions = spec['definitions']
    return {name: _strict(schema, definitions) for name, schema in definitions.items()}


@functools.lru_cache(maxsize=None)
def _validator(definition):
    definitions = _definitions()
    if definition not in definitions:
        raise KeyError(definition)
    return Draft4Validator({'definitions': definitions, '$ref': '#/definitions/' + definition})


def validate(definition, body):
    """Raise AssertionError listing every violation of `body` against a data-plane swagger definition."""
    check(_validator(definition), definition, body)
