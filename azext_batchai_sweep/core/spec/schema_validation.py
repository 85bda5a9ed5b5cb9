"""A small JSON-Schema (draft-04 subset) validator.

Why not `jsonschema`: the extension must install offline with nothing but what az ships, and az does not ship
jsonschema. The subset is what our two schemas use: type, properties, required, additionalProperties, items,
enum, pattern, minimum/maximum, exclusiveMinimum, minLength, minItems, oneOf/anyOf/allOf and `$ref` (local
`#/definitions/...`, plus the ARM "expression" reference of the Batch AI schemas, read as "any string").
A test cross-checks the verdicts against jsonschema's Draft4Validator.

Errors are reported for people editing a file by hand: a field path (`parameters[1].start`) and what was
expected there. All errors are reported, the most specific (deepest path) first; a failed oneOf/anyOf reports the
branch that got furthest rather than every branch.
"""
import difflib
import math
import re
from collections import namedtuple

# The Batch AI schemas allow an ARM template expression wherever a number or an object is expected; offline we
# cannot fetch that definition, and for validation purposes it is a string.
ARM_EXPRESSION_REF = 'https://schema.management.azure.com/schemas/2015-01-01/deploymentTemplate.json' \
                     '#/definitions/expression'
_ARM_EXPRESSION_SCHEMA = {'type': 'string'}

_TYPE_WORDS = {
    'integer': 'an integer',
    'number': 'a number',
    'string': 'a string',
    'boolean': 'true or false',
    'null': 'null',
    'array': 'a list',
    'object': 'a mapping',
}
_IDENTIFIER = re.compile(r'^[A-Za-z_$][\w$]*$')


# The kinds of issue that tell oneOf/anyOf how far the document got into an alternative.
TYPE_MISMATCH = 'type'      # the value is not even of the alternative's type
DISCRIMINATOR = 'tag'       # a single-value enum failed (such as `type: numeric`): the document meant another branch
OTHER = 'other'
REQUIRED = 'required'      # a required field is missing


class SchemaIssue(namedtuple('SchemaIssue', ['path', 'expected', 'got', 'kind'])):
    """One validation error: `path` (a tuple of keys and indexes), what was `expected` there and what it `got`."""
    __slots__ = ()

    @property
    def field(self):
        return format_path(self.path)

    @property
    def message(self):
        return 'expected {}{}'.format(self.expected, ', got {}'.format(self.got) if self.got else '')

    def __str__(self):
        return '{}: {}'.format(self.field or '(top level)', self.message)


def format_path(path):
    """`('parameters', 1, 'start')` -> `parameters[1].start`; keys that are not identifiers are quoted."""
    out = ''
    for part in path:
        if isinstance(part, int):
            out += '[{}]'.format(part)
        elif _IDENTIFIER.match(part):
            out += ('.' if out else '') + part
        else:
            out += '[{!r}]'.format(part)
    return out


def describe(value):
    """A short description of a value for an error message: its JSON type and, for scalars, the value."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if value is None:
        return 'null'
    if isinstance(value, (int, float)):
        return 'the number {!r}'.format(value)
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + '...'
        return 'the string {!r}'.format(shown)
    if isinstance(value, list):
        return 'a list'
    return 'a mapping'


def is_type(value, type_name):
    # bool is an int in Python but never a JSON number; draft-04 integers are ints only (1.0 is a number).
    if type_name == 'integer':
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == 'number':
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_name == 'string':
        return isinstance(value, str)
    if type_name == 'boolean':
        return isinstance(value, bool)
    if type_name == 'null':
        return value is None
    if type_name == 'array':
        return isinstance(value, list)
    if type_name == 'object':
        return isinstance(value, dict)
    raise ValueError('Unsupported schema type {!r}'.format(type_name))


def json_equal(a, b):
    """Equality as JSON sees it: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b or _is_num(a) and _is_num(b) and a == b


def _is_num(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _show_enum(values):
    return ', '.join('null' if v is None else repr(v) for v in values)


class SchemaValidator:
    """Validates documents against one schema; `$ref`s resolve against that schema's root.

    :param schema: the schema, a dict as loaded from JSON.
    """

    def __init__(self, schema):
        self.schema = schema

    def is_valid(self, instance):
        return not self.errors(instance)

    def errors(self, instance):
        """All the issues of `instance`, deepest path first (stable for equal depths: document order)."""
        issues = self._check(instance, self.schema, ())
        return sorted(issues, key=lambda issue: -len(issue.path))

    def _resolve(self, ref):
        if ref == ARM_EXPRESSION_REF:
            return _ARM_EXPRESSION_SCHEMA
        if not ref.startswith('#'):
            raise ValueError('Only local $ref are supported, not {!r}'.format(ref))
        node = self.schema
        for token in ref[1:].split('/')[1:]:
            node = node[token.replace('~1', '/').replace('~0', '~')]
        return node

    def _check(self, value, schema, path):  # pylint: disable=too-many-branches
        if '$ref' in schema:
            # Draft-04: a $ref replaces its whole object (siblings such as "description" are ignored).
            return self._check(value, self._resolve(schema['$ref']), path)
        issues = []
        types = schema.get('type')
        if types is not None:
            types = [types] if isinstance(types, str) else types
            if not any(is_type(value, t) for t in types):
                # Every other keyword would only restate the type mismatch.
                return [SchemaIssue(path, ' or '.join(_TYPE_WORDS[t] for t in types), describe(value), TYPE_MISMATCH)]
        if 'enum' in schema and not any(json_equal(value, v) for v in schema['enum']):
            single = len(schema['enum']) == 1
            expected = repr(schema['enum'][0]) if single else 'one of {}'.format(_show_enum(schema['enum']))
            issues.append(SchemaIssue(path, expected, describe(value), DISCRIMINATOR if single else OTHER))
        if isinstance(value, str):
            issues.extend(self._check_string(value, schema, path))
        if _is_num(value):
            issues.extend(self._check_number(value, schema, path))
        if isinstance(value, list):
            issues.extend(self._check_array(value, schema, path))
        if isinstance(value, dict):
            issues.extend(self._check_object(value, schema, path))
        for sub in schema.get('allOf', ()):
            issues.extend(self._check(value, sub, path))
        if 'anyOf' in schema:
            issues.extend(self._check_any_of(value, schema['anyOf'], path))
        if 'oneOf' in schema:
            issues.extend(self._check_one_of(value, schema['oneOf'], path, schema.get('oneOfMessage')))
        return issues

    @staticmethod
    def _check_string(value, schema, path):
        if 'minLength' in schema and len(value) < schema['minLength']:
            yield SchemaIssue(path, 'at least {} characters'.format(schema['minLength']), describe(value), OTHER)
        if 'pattern' in schema and not re.search(schema['pattern'], value):
            yield SchemaIssue(path, 'a string matching {}'.format(schema['pattern']), describe(value), OTHER)

    @staticmethod
    def _check_number(value, schema, path):
        if isinstance(value, float) and not math.isfinite(value):
            yield SchemaIssue(path, 'a finite number', describe(value), OTHER)
            return
        if 'minimum' in schema:
            exclusive = schema.get('exclusiveMinimum', False)
            if value < schema['minimum'] or exclusive and value == schema['minimum']:
                bound = 'greater than' if exclusive else 'at least'
                yield SchemaIssue(path, 'a number {} {!r}'.format(bound, schema['minimum']), describe(value), OTHER)
        if 'maximum' in schema and value > schema['maximum']:
            yield SchemaIssue(path, 'a number at most {!r}'.format(schema['maximum']), describe(value), OTHER)

    def _check_array(self, value, schema, path):
        issues = []
        if 'minItems' in schema and len(value) < schema['minItems']:
            count = schema['minItems']
            issues.append(SchemaIssue(path, 'a list of at least {} item{}'.format(count, '' if count == 1 else 's'),
                                      'a list of {}'.format(len(value)), OTHER))
        if isinstance(schema.get('items'), dict):
            for index, item in enumerate(value):
                issues.extend(self._check(item, schema['items'], path + (index,)))
        return issues

    def _check_object(self, value, schema, path):
        issues = []
        properties = schema.get('properties', {})
        for name in schema.get('required', ()):
            if name not in value:
                # Reported at the missing field's own path: that is where the user has to write something.
                issues.append(SchemaIssue(path + (name,), 'a value (the field is required)', None, REQUIRED))
        for name, item in value.items():
            if name in properties:
                issues.extend(self._check(item, properties[name], path + (name,)))
            else:
                extra = schema.get('additionalProperties', True)
                if extra is False:
                    allowed = 'only the fields {}'.format(', '.join(sorted(properties))) if properties else 'no fields'
                    near = difflib.get_close_matches(str(name), list(properties), n=1)
                    issues.append(SchemaIssue(path + (name,), allowed, 'the unknown field {!r}{}'.format(
                        name, ' (did you mean {}?)'.format(near[0]) if near else ''), OTHER))
                elif isinstance(extra, dict):
                    issues.extend(self._check(item, extra, path + (name,)))
        return issues

    def _check_any_of(self, value, branches, path):
        results = [self._check(value, branch, path) for branch in branches]
        if any(not issues for issues in results):
            return []
        return _furthest(results, path)

    def _check_one_of(self, value, branches, path, message=None):
        """`message` (the schema's own `oneOfMessage`, such as "exactly one of slackFactor and slackAmount") is what
        a user reads when the alternatives differ by which fields are given: neither or both of them."""
        results = [self._check(value, branch, path) for branch in branches]
        matched = sum(1 for issues in results if not issues)
        if matched == 1:
            return []
        if message and (matched > 1 or all(i.kind == REQUIRED for issues in results for i in issues)):
            given = sorted(set(_required_fields(branches)) & set(value)) if isinstance(value, dict) else []
            return [SchemaIssue(path, message, 'both {}'.format(' and '.join(given)) if matched > 1 and given
                                else 'neither' if matched == 0 else None, OTHER)]
        if matched > 1:
            return [SchemaIssue(path, 'a value matching exactly one alternative',
                                'a value matching {} of them'.format(matched), OTHER)]
        return _furthest(results, path)


def _required_fields(branches):
    return [name for branch in branches for name in branch.get('required', ())]


def _furthest(results, path):
    """The issues to report when no alternative matched: those of the branch the document got furthest into."""
    # A branch whose discriminator (such as `type: numeric`) failed is one the document never meant to be.
    def discriminates(issue):
        return issue.kind == DISCRIMINATOR and len(issue.path) == len(path) + 1

    candidates = [issues for issues in results if not any(discriminates(i) for i in issues)]
    if not candidates:
        by_path = {}
        for issues in results:
            for issue in issues:
                if discriminates(issue):
                    by_path.setdefault(issue.path, []).append(issue.expected)
        if len(by_path) == 1:
            ((where, expected),) = by_path.items()
            got = next(i.got for issues in results for i in issues if i.path == where)
            return [SchemaIssue(where, 'one of {}'.format(', '.join(expected)), got, DISCRIMINATOR)]
        candidates = results
    if all(issues[0].kind == TYPE_MISMATCH and issues[0].path == path for issues in candidates):
        # No branch got past the value's type (say, an integer or a string was expected): one combined issue.
        expected = []
        for issues in candidates:
            if issues[0].expected not in expected:
                expected.append(issues[0].expected)
        return [SchemaIssue(path, ' or '.join(expected), candidates[0][0].got, TYPE_MISMATCH)]

    def progress(issues):
        wrong_type = any(i.kind == TYPE_MISMATCH and i.path == path for i in issues)
        return max(len(i.path) for i in issues), not wrong_type, -len(issues)
    return max(candidates, key=progress)
