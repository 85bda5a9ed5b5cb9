"""A pipeline script run as CI runs it (issue 32): tests/cli/data/pipeline.sh under bash with `set -euo pipefail`,
no terminal (a new session, stdout and stderr pipes), stdin closed, every az call under `timeout`, against its own
local service. Each outcome's exit code is the one of docs/pipelines.md, stdout carries only results (one JSON
document or nothing), stderr has no colour or carriage return, and the cancelled run leaves nothing running."""
import json
import os
import subprocess

import pytest

from tests.cli.test_sweep_identity import write_sweep
from tests.fixtures_az import VENV_BIN, base_env
from tests.tuning.run_helpers import write_sweep as write_run_sweep

pytestmark = [pytest.mark.az, pytest.mark.service, pytest.mark.slow]

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'pipeline.sh')

EXPECTED = {
    'local-start': 0, 'bad-input': 6, 'not-found': 3, 'usage': 2, 'jobs-failed': 4, 'submit-slow': 0, 'timeout': 5,
    'stop': 0, 'stop-again': 0, 'stopped': 4, 'run': 0, 'cancelled': 143, 'after-cancel': 0, 'delete': 0,
    'delete-again': 0, 'local-stop': 0, 'no-service': 7,
}
# The steps that print a result (the rest print nothing on stdout).
WITH_RESULT = {'local-start', 'jobs-failed', 'submit-slow', 'timeout', 'stop', 'stop-again', 'stopped', 'run',
               'after-cancel', 'delete', 'delete-again', 'local-stop'}


def test_a_ci_pipeline_branches_on_each_outcomes_exit_code(tmp_path):
    work = str(tmp_path)
    write_sweep(work, values=(1, 2), command='echo "x={{X}}"; test {{X}} -lt 2', name='failing.yaml')
    write_sweep(work, values=(1,), command='sleep 60', name='slow.yaml')
    with open(os.path.join(work, 'bad.yaml'), 'w', encoding='utf-8') as f:
        f.write('parameters: [{name: X, type: discrete, values: []}]\njob: {nodeCount: 1}\n')
    os.replace(write_run_sweep(work, 'tuned', [], [0.3, 0.6], epochs=2, sleep=0.01), os.path.join(work, 'tuned.yaml'))
    os.replace(write_run_sweep(work, 'hanging', [], [-1, -2], epochs=1), os.path.join(work, 'hanging.yaml'))
    env = base_env(os.path.join(work, 'unused-config'), {'PATH': VENV_BIN + os.pathsep + os.environ['PATH']})
    env.pop('AZURE_CORE_NO_COLOR')  # as CI has it: az must not colour a pipe by itself
    proc = subprocess.run(['bash', SCRIPT, work], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                          timeout=400, start_new_session=True, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = os.path.join(work, 'out')
    codes = {}
    for step in EXPECTED:
        with open(os.path.join(out, step + '.rc'), encoding='utf-8') as f:
            codes[step] = int(f.read())
    assert codes == EXPECTED, proc.stderr[-4000:]
    results = {}
    for step in EXPECTED:
        with open(os.path.join(out, step + '.out'), encoding='utf-8') as f:
            text = f.read()
        if step in WITH_RESULT:
            results[step] = json.loads(text)  # one JSON document, nothing else
        else:
            assert text == '', (step, text)
    assert results['jobs-failed']['counts']['failed'] == 1
    assert results['timeout']['counts']['running'] == 1
    assert results['stopped']['counts']['terminated'] == 1
    assert results['run']['best']['parameters'] == {'Q': 0.6}
    assert results['after-cancel'].get('running', 0) == 0 and results['after-cancel'].get('queued', 0) == 0
    assert results['after-cancel']['terminated'] == 2  # --stop-on-exit stopped them on the way out
    assert results['delete-again']['deleted'] == [] and len(results['delete']['deleted']) == 2
    assert '\r' not in proc.stderr and '\x1b[' not in proc.stderr
    assert 'interrupted by SIGTERM' in proc.stderr and 'stopped its 2 queued or running job(s)' in proc.stderr
    assert 'jobs of sweep failing failed' in proc.stderr  # the script's own branch on exit code 4
