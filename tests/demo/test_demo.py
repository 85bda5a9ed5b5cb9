"""The fresh-machine smoke test of `make demo`: the real Makefile target, in the repo, with the venv already built
(its stamps make the setup steps no-ops), so it checks the demo a new user runs, end to end through az."""
import os
import re
import shutil
import subprocess
import time

import pytest

from tests.fixtures_az import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.az, pytest.mark.service]

DEMO_BUDGET_SECONDS = 45


def _section(output, command_prefix):
    """The lines printed by the first echoed command starting with command_prefix, up to the next comment/command."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('$ ' + command_prefix))
    section = []
    for line in lines[start + 1:]:
        if line.startswith(('$ ', '# ')) or not line.strip():
            break
        section.append(line)
    return section


@pytest.mark.skipif(shutil.which('make') is None, reason='needs make')
def test_make_demo_runs_a_sweep_and_ranks_it():
    env = {k: v for k, v in os.environ.items() if not k.startswith(('AZURE_', 'AZ_BATCHAI', 'MAKE'))}
    started = time.monotonic()
    proc = subprocess.run(['make', 'demo'], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout

    # Every step is echoed as the user would type it, the service is started and stopped.
    for command in ('az batchai sweep local start', 'cp examples/demo/train.py', 'az batchai sweep create',
                    'az batchai sweep submit', 'az batchai sweep status', 'az batchai sweep local stop'):
        assert '$ ' + command in out, command

    # The metrics table: a header, a dashed rule, then the 9 jobs of the grid, best first.
    table = _section(out, 'az batchai sweep metrics')
    rule = next(i for i, line in enumerate(table) if re.fullmatch(r'[- ]+', line))
    rows = table[rule + 1:]
    assert len(rows) == 9, '\n'.join(table)
    assert all(row.startswith('moons-') for row in rows), '\n'.join(table)
    header = table[rule - 1].lower().split()
    column = next(i for i, name in enumerate(header) if name in ('metric', 'val_accuracy'))
    values = [float(row.split()[column]) for row in rows]
    assert values == sorted(values, reverse=True)

    # The tail of the best job's log is its last epochs in Katib's format.
    tail = _section(out, 'az batchai sweep status -g batchai-local -w local -e demo -n moons --job')
    assert len(tail) == 5 and all(line.startswith('epoch=') for line in tail), tail

    # The grid's report: one summary row, and the HTML file with the best job in it.
    report = _section(out, 'az batchai sweep report')
    assert report[-1].split()[:2] == ['moons', '9'], report
    with open(os.path.join(REPO_ROOT, '.demo', 'moons-report.html'), encoding='utf-8') as f:
        html = f.read()
    assert html.startswith('<!DOCTYPE html>') and rows[0].split()[0] in html
    # The demo ends with the adaptive sweep's report, its stopped jobs marked with the rule that stopped them.
    last_command = [line for line in out.splitlines() if line.startswith('$ az ')][-2]
    assert last_command.startswith('$ az batchai sweep report') and 'moons-adaptive' in last_command
    with open(os.path.join(REPO_ROOT, '.demo', 'moons-adaptive-report.html'), encoding='utf-8') as f:
        adaptive = f.read()
    assert 'class="end end-stopped"' in adaptive and 'by bandit' in adaptive
    assert elapsed < DEMO_BUDGET_SECONDS, elapsed
