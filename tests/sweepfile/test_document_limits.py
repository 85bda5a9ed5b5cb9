"""A sweep file cannot hang the client (rule 7 of issue 13): alias bombs, self-referring aliases, deep nesting and
oversize files are refused with a SpecError naming the file, checked before anything walks the document."""
import json
import os

import pytest

from azext_batchai_sweep.core.spec import sweepfile
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
