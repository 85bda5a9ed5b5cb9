"""A sweep file cannot hang the client (rule 7 of issue 13): alias bombs, self-referring aliases, deep nesting and
oversize files are refused with a SpecError naming the file, checked before anything walks the document.

The refusals are the project's own whatever YAML parser az brings: each depth case runs with libyaml's loader (when
PyYAML has it), with the pure-Python one, and with a stand-in for a parser release that refuses nesting past 65 on
its own (PyYAML 6.0.4's libyaml did so at its own depth, in its own words, and broke these tests on a fresh machine).
"""
import json
import os

import pytest
import yaml

from azext_batchai_sweep.core.spec import document_limits, sweepfile
from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file

JOB = {'cluster': {'id': '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/g/providers/'
                   'Microsoft.BatchAI/workspaces/w/clusters/c'}, 'nodeCount': 1,
       'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_TEMP', 'customToolkitSettings': {'commandLine': 'echo {{LR}}'}}
VALID = 'parameters: [{name: LR, type: discrete, values: [1, 2]}]\njob: ' + json.dumps({'properties': JOB}) + '\n'


def _laughs(levels, width=9, mapping=False):
    lines = ['l0: &l0 [{}]'.format(','.join(['lol'] * width))]
    for level in range(1, levels):
        refs = ['*l{}'.format(level - 1)] * width
        if mapping:  # the same bomb through merge keys and mapping values
            lines.append('l{0}: &l{0} {{{1}}}'.format(level, ', '.join('k{}: {}'.format(i, r)
                                                                         for i, r in enumerate(refs))))
        else:
            lines.append('l{0}: &l{0} [{1}]'.format(level, ','.join(refs)))
    return '\n'.join(lines) + '\n' + VALID


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


class _PureLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """The pure-Python parser, with the sweep file's float resolver."""


_PureLoader.yaml_implicit_resolvers = sweepfile._Loader.yaml_implicit_resolvers  # pylint: disable=protected-access


class _StrictParser(_PureLoader):  # pylint: disable=too-many-ancestors
    """A stand-in for a parser release with its own, lower nesting limit and its own words."""

    def compose_node(self, parent, index):
        self._nesting = getattr(self, '_nesting', 0) + 1
        try:
            if self._nesting > 65:
                raise yaml.YAMLError('exceeded maximum nesting depth')
            return super().compose_node(parent, index)
        finally:
            self._nesting -= 1


LOADERS = {'libyaml': sweepfile._Loader, 'pure-python': _PureLoader,  # pylint: disable=protected-access
           'strict-parser': _StrictParser}


@pytest.fixture(params=sorted(LOADERS))
def any_parser(request, monkeypatch):
    monkeypatch.setattr(sweepfile, '_Loader', LOADERS[request.param])
    return request.param


def _nested(depth, style):
    """A `deep:` value nesting `depth` levels: flow brackets, block mappings, block sequences, or both mixed."""
    if style == 'flow':
        return 'deep: ' + '[' * depth + ']' * depth + '\n'
    if style == 'block-map':  # one space of indentation a level: 1,000 levels stay under the 1 MB limit
        return 'deep:\n' + ''.join(' ' * (level + 1) + 'k{}:\n'.format(level) for level in range(depth)) + \
            ' ' * (depth + 1) + 'leaf\n'
    if style == 'block-seq':
        return 'deep:\n' + ''.join(' ' * (level + 1) + '-\n' for level in range(depth)) + ' ' * (depth + 1) + 'leaf\n'
    return 'deep:\n  - ' + '- ' * depth + '{a: ' * depth + '[x]' + '}' * depth + '\n'


@pytest.mark.parametrize('style, depth', [(style, depth) for style in ('flow', 'block-map', 'block-seq', 'mixed')
                                          for depth in (64, 65, 1000, 5000) if depth < 5000 or 'block' not in style])
def test_deep_documents_get_the_projects_message_from_any_parser(tmp_path, any_parser, style, depth):
    text = _nested(depth, style) + VALID
    path = _write(tmp_path, 'sweep.yaml', text)
    with pytest.raises(SpecError) as refused:
        load_sweep_file(path)
    message = str(refused.value)
    assert message.startswith(path) and 'expected a sweep file of at most' in message, (any_parser, message)
    assert 'it nests more than 64 deep' in message and 'maximum nesting' not in message


@pytest.mark.parametrize('style', ['flow', 'block-map', 'block-seq'])
def test_a_document_just_within_the_depth_limit_loads_with_any_parser(tmp_path, any_parser, style):
    depth = 64 - 3  # the document, `deep`'s mapping entry and the leaf take three of the 64 levels
    document = sweepfile._read_document(_write(tmp_path, 'sweep.yaml', _nested(depth, style) + VALID))  # pylint: disable=protected-access
    assert document['parameters'][0]['name'] == 'LR' and 'deep' in document


@pytest.mark.parametrize('text, where', ids=['yaml-int', 'yaml-float', 'yaml-nested-int', 'json-int', 'json-float'],
                         argvalues=[
                             ('seed: ' + '7' * 5000 + '\n' + VALID, 'line 1, column 7'),
                             ('lr: 0.' + '1' * 5000 + '\n' + VALID, 'line 1, column 5'),
                             ('x: [1, {y: ' + '9' * 4301 + '}]\n' + VALID, 'line 1, column 12'),
                             ('{"seed": ' + '7' * 5000 + '}', None),
                             ('{"lr": 1.' + '5' * 300 + '}', None)])
def test_a_number_too_long_to_read_is_refused_with_the_projects_message(tmp_path, text, where):
    path = _write(tmp_path, 'sweep.json' if text.startswith('{') else 'sweep.yaml', text)
    with pytest.raises(SpecError) as refused:
        load_sweep_file(path)
    message = str(refused.value)
    assert message.startswith(path) and 'expected numbers of at most 100 characters in a sweep file' in message
    assert 'JSON' not in message and 'integer string conversion' not in message
    if where:
        assert where in message


def test_numbers_up_to_the_limit_still_load(tmp_path):
    seed = '1' * 100
    text = VALID.replace('values: [1, 2]', 'values: [{}, 2.{}]'.format(seed, '5' * 98))
    sweep = load_sweep_file(_write(tmp_path, 'sweep.yaml', text))
    assert sweep.parameters[0].values()[0] == int(seed)


@pytest.mark.parametrize('text, detail', ids=['laughs-9x9', 'laughs-12x3', 'laughs-mapping', 'self-alias',
                                                'nested-self-alias', 'depth-65', 'depth-5000', 'wide'], argvalues=[
    (_laughs(9), 'more than 200,000 values through its aliases'),
    (_laughs(12, width=3), 'more than 200,000 values through its aliases'),
    (_laughs(8, mapping=True), 'more than 200,000 values through its aliases'),
    ('a: &a [*a]\n' + VALID, 'an alias refers to itself'),
    ('a: &a {b: {c: *a}}\n' + VALID, 'an alias refers to itself'),
    ('deep: ' + '[' * 65 + ']' * 65 + '\n' + VALID, 'it nests more than 64 deep'),
    ('deep: ' + '[' * 5000 + ']' * 5000 + '\n' + VALID, 'nest'),
    ('wide: [' + ','.join(['1'] * 200001) + ']\n' + VALID, 'it expands to more than 200,000 values\n'),
])
def test_yaml_bombs_and_deep_documents_are_refused(tmp_path, text, detail):
    detail = detail.replace('\n', ')')  # the wide one has no alias: said so
    path = _write(tmp_path, 'sweep.yaml', text)
    with pytest.raises(SpecError) as refused:
        load_sweep_file(path)
    message = str(refused.value)
    assert message.startswith(path) and detail in message and 'expected a sweep file of at most' in message


@pytest.mark.parametrize('text, detail', ids=['depth-65', 'depth-100000', 'wide'], argvalues=[
    ('{"deep": ' + '[' * 65 + ']' * 65 + '}', 'it nests more than 64 deep'),
    ('{"deep": ' + '[' * 100000 + ']' * 100000 + '}', 'nest'),
    ('{"wide": [' + ','.join(['1'] * 200001) + ']}', 'more than 200,000 values'),
])
def test_json_deep_and_wide_documents_are_refused(tmp_path, text, detail):
    path = _write(tmp_path, 'sweep.json', text)
    with pytest.raises(SpecError) as refused:
        load_sweep_file(path)
    assert detail in str(refused.value) and str(refused.value).startswith(path)


def test_an_oversize_file_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(sweepfile, 'MAX_DOCUMENT_BYTES', 1024)
    assert document_limits.MAX_DOCUMENT_BYTES > 1024
    path = _write(tmp_path, 'sweep.yaml', VALID + '#' * 2000 + '\n')
    with pytest.raises(SpecError, match='the file is larger'):
        load_sweep_file(path)


def test_a_job_template_gets_the_same_limits(tmp_path):
    _write(tmp_path, 'job.json', '{"properties": ' + '[' * 70 + ']' * 70 + '}')
    path = _write(tmp_path, 'sweep.yaml', 'parameters: [{name: LR, type: discrete, values: [1, 2]}]\njob: job.json\n')
    with pytest.raises(SpecError) as refused:
        load_sweep_file(path)
    assert 'expected a job template of at most' in str(refused.value) and 'job.json' in str(refused.value)


def test_reasonable_anchors_and_sizes_still_load(tmp_path):
    job = dict(JOB, customToolkitSettings={'commandLine': 'echo {{LR}} {{B}}'})
    text = ('parameters:\n  - {name: LR, type: discrete, values: &v [1, 2, 3]}\n'
            '  - {name: B, type: discrete, values: *v}\njob: ' + json.dumps({'properties': job}) + '\n')
    sweep = load_sweep_file(_write(tmp_path, 'sweep.yaml', text))
    assert len(sweep.jobs(sweep_name='s')) == 9
    many = 'parameters: [{name: LR, type: discrete, values: [' + ','.join(str(i) for i in range(5000)) + ']}]\n'
    sweep = load_sweep_file(_write(tmp_path, 'many.yaml', many + 'job: ' + json.dumps({'properties': JOB}) + '\n'))
    assert len(sweep.jobs(sweep_name='s')) == 5000
    assert os.path.getsize(str(tmp_path / 'many.yaml')) < sweepfile.MAX_DOCUMENT_BYTES
