"""Placeholders and the compiled job template.

Two placeholder syntaxes, one engine:

- ``parameters['X']`` / ``parameters['D']['K']`` (the seed README's Python form) give :class:`Placeholder` objects.
  Used with ``str.format``, ``%``, f-strings or ``+`` they turn into the text ``{{X}}`` / ``{{D.K}}``; used as a whole
  field value (``node_count=parameters['NODE_COUNT']``) they stay objects;
- ``{{X}}`` / ``{{D.K}}`` (optionally ``{{X:<format spec>}}``) inside the strings of a job definition (the sweep
  file syntax).

A field whose whole value is one placeholder takes the parameter's value with its type (an int stays an int); in a
longer string the value is rendered as text: ints as ints, floats by repr() (0.0001), strings as they are. In
``str``-typed fields of an SDK model the value is always text. Only ``{{`` + identifier + ``}}`` is a placeholder:
``$PARAM_LR`` (for the shell) and Go-template text such as ``{{.ID}}`` are left alone, and ``{{LR}}`` never touches
``{{LR_DECAY}}``. Dict keys are not substituted.

Bugs of the old library this module does not repeat: lists inside the job definition (input directories, command
line argument lists, environment variables) were never substituted, and the user's environment variables were
replaced by the generated ``PARAM_*`` ones. Here the whole definition is walked, and generated variables are added
after the user's.

A template is compiled once into a JSON string holding unique tokens where values go; rendering a job is then one
join of the literal pieces with the rendered values, which keeps expansion close to the cost of ``json.dumps``.
"""
import enum
import json
import re
import secrets
import shlex
from json.encoder import encode_basestring_ascii

from ..errors import SpecError
from .shellquote import BARE, DOUBLE, quote_context, quote_for

PLACEHOLDER_PATTERN = re.compile(r'\{\{\s*([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?(?::([^{}]*?))?\s*\}\}')

# Fields the Batch AI service runs through a shell (REST names and the snake_case names of as_dict() forms). Values
# from outside the user's file (file names listed from storage) are quoted there for the context they land in.
SHELL_FIELDS = frozenset(('commandLine', 'commandLineArgs', 'masterCommandLineArgs', 'workerCommandLineArgs',
                          'command_line', 'command_line_args', 'master_command_line_args',
                          'worker_command_line_args'))
# Paths a toolkit puts into its command line as one double-quoted word (so that $AZ_BATCHAI_* variables expand).
DOUBLE_QUOTED_FIELDS = frozenset(('pythonScriptFilePath', 'pythonInterpreterPath', 'configFilePath',
                                  'python_script_file_path', 'python_interpreter_path', 'config_file_path'))

ENV_SWEEP_NAME = 'BATCHAI_SWEEP_NAME'
ENV_SWEEP_PARAMS = 'BATCHAI_SWEEP_PARAMS'
ENV_PARAM_PREFIX = 'PARAM_'


class ExternalValue(str):
    """A string value that comes from outside the user's file: ``trusted`` (from the user) + ``external``.

    Only the external part is shell-quoted, so that ``$AZ_BATCHAI_MOUNT_ROOT/bfs`` still expands in the shell while a
    file named ``a; touch /tmp/pwned`` stays one argument.
    """

    def __new__(cls, trusted, external):
        value = super().__new__(cls, trusted + external)
        value.trusted, value.external = trusted, external
        return value

    def __getnewargs__(self):
        return (self.trusted, self.external)

    def shell_quoted(self, context=BARE):
        """For a shell command line: the trusted part as written, the external part quoted for `context`."""
        return self.trusted + quote_for(context, self.external)


def render_value(value):
    """A parameter value as text: ints as ints, floats by repr() (shortest round trip), strings as they are."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(',', ':'))
    return str(value)


def shell_quote(value):
    """A parameter value as one shell word (shlex.quote); an :class:`ExternalValue` keeps its trusted part as is."""
    if isinstance(value, ExternalValue):
        return value.shell_quoted()
    return shlex.quote(render_value(value))


class Placeholder:
    """Stands for a parameter (``parameters['X']``) or one key of a dict parameter (``parameters['D']['K']``).

    :param name: the parameter name.
    :param key: the key, for a dict parameter's value.
    :param keys: the keys a dict parameter has (None for other parameters), to refuse unknown ones early.
    """

    __slots__ = ('name', 'key', 'keys')

    def __init__(self, name, key=None, keys=None):
        self.name, self.key, self.keys = name, key, keys

    @property
    def reference(self):
        return self.name if self.key is None else '{}.{}'.format(self.name, self.key)

    def __getitem__(self, key):
        if self.key is not None or self.keys is None:
            raise SpecError('{!r} is not a dict parameter: it has no key {!r}'.format(self.reference, key))
        if key not in self.keys:
            raise SpecError('dict parameter {!r} has no key {!r} (its keys: {})'.format(
                self.name, key, ', '.join(self.keys)))
        return Placeholder(self.name, key)

    def __str__(self):
        return '{{%s}}' % self.reference

    def __format__(self, format_spec):
        return '{{%s:%s}}' % (self.reference, format_spec) if format_spec else str(self)

    def __add__(self, other):
        if isinstance(other, str):
            return str(self) + other
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, str):
            return other + str(self)
        return NotImplemented

    def __repr__(self):
        return 'parameters[{!r}]'.format(self.name) + ('' if self.key is None else '[{!r}]'.format(self.key))


def is_model(obj):
    """True for an msrest SDK model (such as JobCreateParameters): duck typing keeps azure.mgmt.batchai unimported."""
    return hasattr(type(obj), '_attribute_map') and hasattr(type(obj), 'deserialize')


class _Text(str):
    """A string that is always text, even when it is exactly one placeholder (``str`` fields of SDK models)."""


class _Ref:
    """A reference inserted by the engine itself (the PARAM_* variables): always text, never shell-quoted."""

    __slots__ = ('name', 'key')

    def __init__(self, name, key=None):
        self.name, self.key = name, key


class _ParamsJson:
    """Where the compact JSON of the job's parameter values goes (BATCHAI_SWEEP_PARAMS)."""


def _split_key(key):
    # msrest flattens 'properties.nodeCount' into nested objects; a literal dot is escaped as '\\.'.
    return [part.replace('\\.', '.') for part in re.split(r'(?<!\\)\.', key)]


def _model_to_tree(model):
    """The REST (serialize()) form of an SDK model, keeping Placeholder objects where serialize() would choke."""
    tree = {}
    validation = getattr(model, '_validation', {})
    for attr, info in model._attribute_map.items():  # pylint: disable=protected-access
        value = getattr(model, attr, None)
        if value is None or validation.get(attr, {}).get('readonly'):
            continue
        node = tree
        *parents, leaf = _split_key(info['key'])
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = _model_value_to_tree(value, info['type'])
    return tree


def _model_value_to_tree(value, type_name):
    if isinstance(value, Placeholder):
        return _Text(value) if type_name == 'str' else value
    if isinstance(value, str):
        return _Text(value) if type_name == 'str' else value
    if is_model(value):
        return _model_to_tree(value)
    if isinstance(value, (list, tuple)):
        item_type = type_name[1:-1] if type_name.startswith('[') else ''
        return [_model_value_to_tree(item, item_type) for item in value]
    if isinstance(value, dict):
        item_type = type_name[1:-1] if type_name.startswith('{') else ''
        return {key: _model_value_to_tree(item, item_type) for key, item in value.items()}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (bool, int, float)):
        return value
    # Durations, dates and the like: msrest's own serializer (present whenever an SDK model is).
    from msrest.serialization import Serializer
    return Serializer().serialize_data(value, type_name)


def _plain_to_tree(value):
    if isinstance(value, dict):
        return {key: _plain_to_tree(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_to_tree(item) for item in value]
    if is_model(value):
        return _model_to_tree(value)
    return value


def to_tree(template):
    """The template as JSON-like data (REST form for SDK models), Placeholder objects kept."""
    if is_model(template):
        return _model_to_tree(template)
    if isinstance(template, dict):
        return _plain_to_tree(template)
    raise SpecError('a job template must be a JobCreateParameters model or a dict, not {}'.format(
        type(template).__name__))


def _walk_references(node, found):
    if isinstance(node, Placeholder):
        found.setdefault(node.name)
    elif isinstance(node, str):
        for match in PLACEHOLDER_PATTERN.finditer(node):
            found.setdefault(match.group(1))
    elif isinstance(node, dict):
        for item in node.values():
            _walk_references(item, found)
    elif isinstance(node, list):
        for item in node:
            _walk_references(item, found)


def placeholder_names(template):
    """The parameter names a template's placeholders use, in order of first use (``{{D.K}}`` counts as ``D``).

    Callers use it to warn about parameters that no placeholder uses (they still vary the job through ``PARAM_*``).
    """
    found = {}
    _walk_references(template if isinstance(template, (str, list)) else to_tree(template), found)
    return list(found)


def _json_value(value):
    # json.dumps of a scalar without its per-call set-up cost: this runs once per placeholder per job.
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return json.dumps(value, sort_keys=True, separators=(',', ':'))
    return float.__repr__(value) if isinstance(value, float) else int.__repr__(value)


def _json_text(text):
    return encode_basestring_ascii(text)[1:-1]


def _whole_context(field):
    """The quoting context of a value that is a whole shell field, or None for a field no shell reads."""
    if field in SHELL_FIELDS:
        return BARE
    return DOUBLE if field in DOUBLE_QUOTED_FIELDS else None


class _Slot:
    """One place a value goes: ``whole`` (a JSON value, typed) or text inside a JSON string."""

    __slots__ = ('name', 'key', 'whole', 'format_spec', 'shell')

    def __init__(self, name, key, whole, format_spec=None, shell=None):
        # shell: None, or the quoting context (shellquote.BARE, DOUBLE, SINGLE) of an external value's place
        self.name, self.key, self.whole, self.format_spec, self.shell = name, key, whole, format_spec, shell

    def render(self, values):
        value = values[self.name]
        if self.key is not None:
            value = value[self.key]
        if self.shell and isinstance(value, ExternalValue):
            value = value.shell_quoted(self.shell)
        if self.whole:
            return _json_value(value)
        if self.format_spec:
            return _json_text(format(value, self.format_spec))
        return _json_text(render_value(value))


class CompiledTemplate:
    """A job template compiled for fast rendering, with the sweep's environment variables added.

    :param template: a JobCreateParameters (any msrest model) or a job definition dict.
    :param specs: the sweep's parameter specifications (objects with ``name``, ``keys`` and ``external``).
    :param sweep_name: the sweep's name, set as ``BATCHAI_SWEEP_NAME`` when given.
    :param environment: more constant environment variables of every job, ``{name: text}`` (the sweep's seed).
    """

    def __init__(self, template, specs, sweep_name=None, environment=None):
        self.model_class = type(template) if is_model(template) else None
        self._specs = {spec.name: spec for spec in specs}
        tree = to_tree(template)
        self._add_environment(tree, specs, sweep_name, environment or {})
        self.used_names = []
        while True:
            # The token nonce must not occur in the template itself; 64 random bits make a retry all but impossible.
            self._nonce = secrets.token_hex(8)
            self._slots = []
            text = json.dumps(self._tokenize(tree, '', None))
            if text.count(self._nonce) == len(self._slots):
                break
        token = re.compile(r'"@@{0}:W(\d+)@@"|@@{0}:E(\d+)@@'.format(self._nonce))
        # split() gives literal, whole-slot number, embedded-slot number, literal, ...: the literals stay in place and
        # each slot number becomes a hole, filled per job (the plan lists the holes and their slots).
        self._parts = token.split(text)
        self._plan = []
        for index in range(1, len(self._parts), 3):
            self._plan.append((index, self._slots[int(self._parts[index] or self._parts[index + 1])]))
            self._parts[index] = self._parts[index + 1] = ''

    def _add_environment(self, tree, specs, sweep_name, environment):
        target = tree.get('properties') if isinstance(tree.get('properties'), dict) else tree
        field = 'environment_variables' if 'environment_variables' in target else 'environmentVariables'
        # the error's path from the tree's root, as every other path of the template's errors
        where = field if target is tree else 'properties.' + field
        existing = target.setdefault(field, [])
        if not isinstance(existing, list):
            raise SpecError('must be a list of {"name": ..., "value": ...}', path=where)
        generated = []
        for spec in specs:
            if spec.keys:
                generated += [('{}{}_{}'.format(ENV_PARAM_PREFIX, spec.name, key), _Ref(spec.name, key))
                              for key in spec.keys]
            else:
                generated.append((ENV_PARAM_PREFIX + spec.name, _Ref(spec.name)))
        if sweep_name is not None:
            generated.append((ENV_SWEEP_NAME, _Text(sweep_name)))
        generated += [(name, _Text(value)) for name, value in environment.items()]
        generated.append((ENV_SWEEP_PARAMS, _ParamsJson()))
        taken = {item.get('name') for item in existing if isinstance(item, dict)}
        for name, value in generated:
            if name in taken:
                raise SpecError('environment variable {} is set by the sweep; remove it from the job template'
                                .format(name), path=where)
            existing.append({'name': name, 'value': value})

    def _token(self, slot):
        self._slots.append(slot)
        return '@@{}:{}{}@@'.format(self._nonce, 'W' if slot.whole else 'E', len(self._slots) - 1)

    def _check(self, name, key, path):
        spec = self._specs.get(name)
        if spec is None:
            raise SpecError('unknown parameter {!r} in a placeholder (parameters: {})'.format(
                name, ', '.join(self._specs) or 'none'), path=path or None)
        if key is not None and (not spec.keys or key not in spec.keys):
            raise SpecError('parameter {!r} has no key {!r}'.format(name, key), path=path or None)
        if name not in self.used_names:
            self.used_names.append(name)
        return spec

    def _tokenize(self, node, path, field):
        if isinstance(node, dict):
            return {key: self._tokenize(item, '{}.{}'.format(path, key) if path else key, key)
                    for key, item in node.items()}
        if isinstance(node, list):
            return [self._tokenize(item, '{}[{}]'.format(path, i), field) for i, item in enumerate(node)]
        if isinstance(node, Placeholder):
            spec = self._check(node.name, node.key, path)
            return self._token(_Slot(node.name, node.key, True, shell=_whole_context(field) if spec.external else None))
        if isinstance(node, _Ref):
            return self._token(_Slot(node.name, node.key, False))
        if isinstance(node, _ParamsJson):
            self._slots.append(None)
            return '@@{}:E{}@@'.format(self._nonce, len(self._slots) - 1)
        if isinstance(node, str):
            return self._tokenize_string(node, path, field)
        return node

    def _tokenize_string(self, text, path, field):
        whole = PLACEHOLDER_PATTERN.fullmatch(text)
        if whole and not isinstance(text, _Text) and whole.group(3) is None:
            spec = self._check(whole.group(1), whole.group(2), path)
            return self._token(_Slot(whole.group(1), whole.group(2), True,
                                     shell=_whole_context(field) if spec.external else None))

        def embed(match):
            spec = self._check(match.group(1), match.group(2), path)
            context = None
            if spec.external and field in SHELL_FIELDS:
                context = quote_context(text[:match.start()])
            elif spec.external and field in DOUBLE_QUOTED_FIELDS:
                context = DOUBLE
            return self._token(_Slot(match.group(1), match.group(2), False, match.group(3), shell=context))
        return PLACEHOLDER_PATTERN.sub(embed, str(text))

    def render_json(self, values, params_json):
        """The job body as a JSON string.

        :param values: mapping of parameter name to this job's value.
        :param params_json: the canonical JSON of `values` (see naming.canonical_json), for BATCHAI_SWEEP_PARAMS.
        """
        parts = self._parts.copy()
        for index, slot in self._plan:
            parts[index] = _json_text(params_json) if slot is None else slot.render(values)
        return ''.join(parts)

    def render(self, values, params_json):
        """The job body: a model of the template's class for a model template, else a dict."""
        data = json.loads(self.render_json(values, params_json))
        return self.model_class.deserialize(data) if self.model_class else data
