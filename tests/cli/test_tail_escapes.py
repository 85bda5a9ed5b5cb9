"""A job cannot write to the user's terminal (issue 41, item 8): `status --job --tail` in table and tsv shows a job's
control characters escaped as `-o json` does (the window title, cursor moves, a carriage return, C1's CSI, a bidi
override), through the real az and the session's local service; `-o json` keeps the text exact."""
import json
import os
import sys

import pytest

from azext_batchai_sweep.core.outputs.terminal import escape_controls

from tests.tuning.run_helpers import run_args, service_setup, target

pytestmark = [pytest.mark.az, pytest.mark.service]

# What the job prints: a real value, then a line that would retitle the window, go up a line, erase it and print a
# fake value over the real one; a carriage return overwrite; C1's single-byte CSI; a right-to-left override; a tab.
HOSTILE = ['acc=0.5', '\x1b]0;pwned\x07\x1b[1A\x1b[2Kacc=99', 'acc=0.1\racc=98', 'x\x9b2Jy', 'a\u202eb', 'k\tv',
           'bell\x07 nul-free \x7f del']
# A bare carriage return ends a line for the tail reader (splitlines), so it never reaches the terminal either.
SHOWN = '\n'.join(HOSTILE).splitlines()
RAW = ('\x1b', '\x07', '\r', '\x9b', '\u202e', '\t', '\x7f')

SCRIPT = '''import sys
lines = {lines!r}
sys.stdout.write('\\n'.join(lines) + '\\n')
'''


@pytest.mark.parametrize('text, shown', [
    ('\x1b[2K', '\\u001b[2K'), ('a\tb', 'a\\tb'), ('\r', '\\r'), ('\x9b', '\\u009b'), ('\u202e', '\\u202e'),
    ('plain é ✓', 'plain é ✓'), (None, None),
])
def test_escape_controls(text, shown):
    assert escape_controls(text) == shown
    if text:
        assert json.loads('"{}"'.format(escape_controls(text))) == text  # what -o json would show, undone


@pytest.fixture(scope='module')
def sweep(local_service, tmp_path_factory):
    az, directory, experiment = service_setup(local_service, tmp_path_factory, 'escapes')
    script = os.path.join(directory, 'hostile.py')
    with open(script, 'w', encoding='utf-8') as f:
        f.write(SCRIPT.format(lines=HOSTILE))
    spec = os.path.join(directory, 'escapes.yaml')
    with open(spec, 'w', encoding='utf-8') as f:
        f.write('\n'.join(['jobNamePrefix: escapes', 'objective: {metric: acc, goal: max}', 'parameters:',
                           '  - {name: Q, type: discrete, values: [1]}', 'job:', '  nodeCount: 1',
                           '  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs',
                           '  customToolkitSettings: {{commandLine: "{} {} {{{{Q}}}}"}}'.format(sys.executable,
                                                                                              script)]) + '\n')
    run = az(*run_args(local_service, experiment, 'escapes', spec))
    assert run.exit_code == 0, run.stderr
    job = run.json()['best']['name']
    return az, experiment, job


@pytest.mark.parametrize('output', ['table', 'tsv'])
def test_tail_as_table_and_tsv_escapes_every_control_character(sweep, local_service, output):
    az, experiment, job = sweep
    shown = az('batchai', 'sweep', 'status', *target(local_service, experiment, 'escapes'), '--job', job,
               '--tail', '20', '-o', output)
    assert shown.exit_code == 0, shown.stderr
    text = shown.stdout
    found = [repr(ch) for ch in RAW if ch in text]
    assert found == [], 'raw control characters in -o {}: {}'.format(output, found)
    for line in SHOWN:
        assert escape_controls(line) in text
    assert '\\u001b]0;pwned\\u0007\\u001b[1A\\u001b[2Kacc=99' in text


def test_tail_as_json_keeps_the_text_exact(sweep, local_service):
    az, experiment, job = sweep
    shown = az('batchai', 'sweep', 'status', *target(local_service, experiment, 'escapes'), '--job', job,
               '--tail', '20', '-o', 'json')
    assert shown.exit_code == 0, shown.stderr
    assert shown.json() == SHOWN
    assert '\x1b' not in shown.stdout  # JSON escapes them itself
