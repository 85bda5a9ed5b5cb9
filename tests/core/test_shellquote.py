"""Values from storage quoted for where they land in a command line: bare, inside "...", inside '...'.

Every case runs the rendered command under bash with hostile file names: the command must print the file's path
exactly, as one argument where the user meant one, and must run nothing the name contains.
"""
import os
import subprocess

import pytest

from azext_batchai_sweep.core.spec.shellquote import BARE, DOUBLE, SINGLE, quote_context
from azext_batchai_sweep.core.spec.substitution import ExternalValue

from .test_substitution import FILE_SPEC, render

HOSTILE = ['/a; touch {marker}', '/$(touch {marker})', '/`touch {marker}`', '/"; touch {marker}; "',
           "/'; touch {marker}; '", '/a\\"b $HOME', '/x)"; touch {marker}; echo "(', '/plain.txt', '/sp ace/ü.csv']


@pytest.mark.parametrize('prefix, expected', [
    ('run ', BARE), ('run "', DOUBLE), ("run '", SINGLE), ('run "a" ', BARE), ("run 'a' ", BARE),
    ('run "it\'s ', DOUBLE), ("run 'say \"", SINGLE), ('run \\" ', BARE), ('run "a\\" ', DOUBLE),
    ('run "$(cat ', BARE), ('run "$(cat "', DOUBLE), ('run "$(cat x) ', DOUBLE), ('run `cat ', BARE),
    ('run "`cat ', BARE), ('run $( (cd x) && cat ', BARE), ('run $( (cd x) ) "', DOUBLE),
])
def test_quote_context(prefix, expected):
    assert quote_context(prefix) == expected


@pytest.mark.parametrize('command, printed', [
    ('printf "%s\\n" {{DATA}}', '{root}{path}'),
    ('printf "%s\\n" "{{DATA}}"', '{root}{path}'),
    ('printf "%s\\n" "--data={{DATA}}" "second"', '--data={root}{path}'),
    ("printf '%s\\n' '{{DATA}}'", '$AZ_BATCHAI_MOUNT_ROOT/bfs{path}'),  # single quotes: nothing expands, as written
    ('printf "%s\\n" "$(printf %s "{{DATA}}")"', '{root}{path}'),
    ('printf "%s\\n" "$(printf %s {{DATA}})"', '{root}{path}'),
    ('printf "%s\\n" `printf %s {{DATA}}`', None),  # backticks word-split their output: only "runs nothing" holds
])
@pytest.mark.parametrize('hostile', HOSTILE)
def test_hostile_file_names_are_data_in_every_quoting_context(tmp_path, command, printed, hostile):
    marker = tmp_path / 'pwned'
    path = hostile.format(marker=marker)
    value = ExternalValue('$AZ_BATCHAI_MOUNT_ROOT/bfs', path)
    props = render({'properties': {'customToolkitSettings': {'commandLine': command}}},
                   values={'DATA': value}, specs=[FILE_SPEC])['properties']
    rendered = props['customToolkitSettings']['commandLine']
    result = subprocess.run(['bash', '-c', rendered], capture_output=True, text=True, check=False,
                            env=dict(os.environ, AZ_BATCHAI_MOUNT_ROOT='/mnt'))
    assert not marker.exists(), rendered
    if printed is not None:
        assert result.returncode == 0, (rendered, result.stderr)
        assert result.stdout.split('\n')[0] == printed.format(root='/mnt/bfs', path=path), rendered


@pytest.mark.parametrize('field', ['pythonScriptFilePath', 'configFilePath', 'pythonInterpreterPath'])
def test_toolkit_paths_are_escaped_for_the_double_quoted_word_they_become(tmp_path, field):
    # The service puts these paths into its command line as one "..." word so that $AZ_BATCHAI_* variables expand.
    marker = tmp_path / 'pwned'
    value = ExternalValue('$AZ_BATCHAI_MOUNT_ROOT/bfs', '/$(touch {})"; touch {}; "'.format(marker, marker))
    for template in ('{{DATA}}', '{{DATA}}.py'):
        props = render({'properties': {'cntkSettings': {field: template}}}, values={'DATA': value},
                       specs=[FILE_SPEC])['properties']
        word = '"{}"'.format(props['cntkSettings'][field])
        result = subprocess.run(['bash', '-c', 'printf "%s\\n" ' + word], capture_output=True, text=True,
                                check=True, env=dict(os.environ, AZ_BATCHAI_MOUNT_ROOT='/mnt'))
        assert result.stdout == '/mnt/bfs' + value.external + template[8:] + '\n'
        assert not marker.exists()
