"""The README runs as written (issue 42, items 1 and 2): its tour, its Install section and its CI snippet, each command
taken from README.md as it stands and run in the README's order by bash in a plain shell (PATH and HOME only, a fresh
HOME, no AZURE_* variable from the test), in a fresh checkout (readme_script.make_clone) that shares this checkout's
venv. Nothing tells az where the extension is but what the README itself says.

- The tour: after `make dev` (the test session's own), `. .venv/bin/activate` is what makes `az batchai sweep` known;
  each transcript command must exit 0 and print the README's table header, and the plan-only table and the stderr
  lines the README shows (but the preview notice and the endpoint note it says it leaves out) are printed as shown.
- Install then CI: `make wheel` (the wheel fixture, built once per run), `az extension add` into the default
  ~/.azure with the az on PATH (no dev source), then the CI snippet, whose own AZURE_CONFIG_DIR must not hide it.
"""
import json
import os
import re

import pytest

from tests.fixtures_az import REPO_ROOT
from tests.packaging.readme_script import code_blocks, plain_shell, readme_section, steps, system_path

pytestmark = [pytest.mark.az, pytest.mark.slow]

# What the README says it leaves out of its transcripts ("each command also prints az's preview notice and, on the
# local service, the endpoint it uses").
UNSHOWN = ('is in preview and under development', 'Using the Batch AI service at')


def _kind(line):
    """What a progress line says, without its figures: its text up to the first digit."""
    return re.split(r'[0-9]', line, maxsplit=1)[0]


def _tour_script(out_dir):
    """The tour as one bash script: every command as the README writes it, the transcripts' stdout and stderr kept per
    command (a redirection around the command's own lines), stopping at the first failure."""
    parts, shown = ['set -e'], []
    for block in code_blocks(readme_section('A five-command tour')):
        for index, (command, printed) in enumerate(steps(block)):
            if printed is None:
                parts.append(command)
                continue
            number = len(shown)
            shown.append((command, printed))
            parts.append('{\n%s\n} >"%s/%d.out" 2>"%s/%d.err"' % (command, out_dir, number, out_dir, number))
    return '\n'.join(parts), shown


def test_the_tour_runs_as_written_in_a_plain_shell(readme_clone, tmp_path):
    out_dir = tmp_path / 'out'
    out_dir.mkdir()
    home = tmp_path / 'home'
    home.mkdir()
    script, shown = _tour_script(out_dir)
    assert script.split('\n')[1] == '. .venv/bin/activate', 'the tour starts in the venv'
    assert [command.split(' -g ')[0] for command, _ in shown] == [
        'az batchai sweep run', 'az batchai sweep run', 'az batchai sweep status', 'az batchai sweep report',
        'az batchai sweep stop']
    # After `make demo` too (the same .demo/data): the tour's sweeps are in an experiment the demo does not use, so a
    # run never finds the demo's sweep of the same name (which it would refuse to take over).
    with open(os.path.join(REPO_ROOT, 'scripts', 'demo.py'), encoding='utf-8') as f:
        demo_experiments = set(re.findall(r"'-e', '([^']+)'", f.read()))
    tour_experiments = set(re.findall(r' -e (\S+)', script))
    assert demo_experiments and tour_experiments and not tour_experiments & demo_experiments
    # A fresh state: the tour's data dir in a checkout of its own, nothing in ~/.azure yet.
    stop = '. .venv/bin/activate && az batchai sweep local stop --data-dir .demo/data -o none'
    try:
        ran = plain_shell(script, readme_clone, home, system_path())
    finally:
        plain_shell(stop, readme_clone, home, system_path())
    last = len(list(out_dir.glob('*.err'))) - 1  # the transcript command that ran last (set -e)
    failed_step = (out_dir / ('%d.err' % last)).read_text() if last >= 0 else ''
    assert ran.returncode == 0, ran.stdout + ran.stderr + failed_step
    for number, (command, printed) in enumerate(shown):
        stdout = [line for line in (out_dir / ('%d.out' % number)).read_text().splitlines() if line.strip()]
        stderr = (out_dir / ('%d.err' % number)).read_text().splitlines()
        shown_stdout = [line for line in printed if not line.startswith('WARNING: ')]
        shown_stderr = [line for line in printed if line.startswith('WARNING: ')]
        # The table's columns, in order (a column that only a stopped job fills may come in between).
        columns = iter(stdout[0].split() if stdout else [])
        assert bool(stdout) == bool(shown_stdout), (command, stdout)
        assert all(column in columns for column in (shown_stdout[0].split() if shown_stdout else [])), (command, stdout)
        assert len(stdout) == len(shown_stdout), (command, stdout)  # as many rows
        stderr = [line for line in stderr if not any(mark in line for mark in UNSHOWN)]
        if '--plan-only' in command:  # planned, not run: the same jobs every time
            assert stdout == shown_stdout
            assert stderr == shown_stderr
        else:  # a run's decisions depend on when its polls land: each line shown, its figures aside, and in order
            assert [_kind(line) for line in shown_stderr] == [_kind(line) for line in stderr
                                                              if _kind(line) in map(_kind, shown_stderr)], command
        if 'sweep status' in command:
            assert sorted(line.split()[0] for line in stdout[2:]) == sorted(line.split()[0] for line in printed[3:])
    assert os.path.isfile(os.path.join(str(readme_clone), '.demo', 'tour-report.html'))


SWEEP_YAML = """\
objective: {metric: loss, goal: min, step: epoch}
parameters:
  - {name: X, type: discrete, values: [3, 1, 2]}
job:
  nodeCount: 1
  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs
  customToolkitSettings: {commandLine: 'echo epoch=1 loss={{X}}'}
"""


def test_install_then_the_ci_snippet_as_written(readme_clone, tmp_path):
    """The README's Install section (its `make wheel` ran in the wheel fixture) with the az a user has on PATH, then
    its CI snippet in a pipeline's shell: the extension that `az extension add` put in ~/.azure stays visible under the
    pipeline's own AZURE_CONFIG_DIR, and the run's result is on stdout."""
    home = tmp_path / 'home'
    home.mkdir()
    user_path = os.pathsep.join([os.path.join(REPO_ROOT, '.venv', 'bin'), system_path()])  # az installed, no dev source
    (install,) = code_blocks(readme_section('Install'))
    assert install[0].startswith('make wheel')
    added = plain_shell('set -e\n' + '\n'.join(install[1:]), readme_clone, home, user_path)
    assert added.returncode == 0, added.stdout + added.stderr
    assert (home / '.azure' / 'cliextensions' / 'batchai-sweep').is_dir()

    pipeline = tmp_path / 'pipeline'
    pipeline.mkdir()
    (pipeline / 'sweep.yaml').write_text(SWEEP_YAML)
    (snippet,) = code_blocks(readme_section('In a CI pipeline'))
    ran = plain_shell('set -euo pipefail\n' + '\n'.join(snippet), pipeline, home, user_path,
                      extra={'CI_PIPELINE_ID': '4242'})
    assert ran.returncode == 0, ran.stdout + ran.stderr
    result = json.loads(ran.stdout)
    assert (result['best']['objective'], result['best']['parameters'], result['counts']) == \
        (1.0, {'X': 1}, {'succeeded': 3}), result
    # The pipeline's config dir was its own: nothing of the service was written into ~/.azure.
    assert not (home / '.azure' / 'config').exists() or 'batchai_sweep' not in (home / '.azure' / 'config').read_text()
