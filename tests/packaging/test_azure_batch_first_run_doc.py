"""docs/azure-batch.md opens for a beginner (issue 42, item 9): what you need, the five commands, what it costs,
how to watch it, how to clean up, then the reference. The section's commands are real: every `az` command it shows
exists in the venv's az with the options it gives (checked against `az ... -h`, the real az and this extension), and
the roles it asks for are the ones the service checks (the strings its code names in the refusals)."""
import glob
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.fixtures_az import AZ, REPO_ROOT, base_env

PAGE = os.path.join(REPO_ROOT, 'docs', 'azure-batch.md')
ROLES = ('Azure Batch Data Contributor', 'Storage File Data Privileged Reader', 'Storage Blob Data Reader',
         'Storage Blob Data Contributor')


def _opening():
    with open(PAGE, encoding='utf-8') as f:
        content = f.read()
    first = content.index('\n## ')
    return content[first:content.index('\n## ', first + 1)], content


def test_the_page_opens_with_the_first_run_in_a_beginners_order():
    opening, content = _opening()
    assert opening.startswith('\n## First run')
    order = ['**What you need**', '**Five commands**', '**What it costs**', '**Watching it**', '**Cleaning up**']
    positions = [opening.index(title) for title in order]
    assert positions == sorted(positions)
    # the reference after it, as it was: the mapping, states, storage, recovery
    assert content.index('## The mapping') > content.index('## First run')
    five = opening[opening.index('**Five commands**'):opening.index('**What it costs**')]
    assert len([line for line in five.splitlines() if line.startswith('    az ')]) == 5


def test_the_roles_it_asks_for_are_the_ones_the_service_checks():
    opening, _ = _opening()
    code = ''
    azure_batch = os.path.join(REPO_ROOT, 'azext_batchai_sweep', 'localservice', 'schedulers', 'azurebatch')
    for path in glob.glob(os.path.join(azure_batch, '**', '*.py'), recursive=True):
        with open(path, encoding='utf-8') as f:
            code += f.read()
    for role in ROLES:
        assert role in code, role
        assert role in opening, role


def _commands(opening):
    """(command words, options) of every `az ...` line of the section's code blocks."""
    found = {}
    for line in opening.splitlines():
        if not line.startswith('    az '):
            continue
        words = line.split('#')[0].split()[1:]
        command = tuple(word for word in words[:next((i for i, w in enumerate(words) if w.startswith('-')),
                                                     len(words))])
        found.setdefault(command, set()).update(w for w in words if re.match(r'^--?[a-z]', w))
    return found


@pytest.mark.az
@pytest.mark.slow
def test_every_command_it_shows_exists_with_its_options(tmp_path):
    opening, _ = _opening()
    commands = _commands(opening)
    assert ('batchai', 'sweep', 'local', 'start') in commands and ('batchai', 'cluster', 'delete') in commands
    env = base_env(str(tmp_path))
    wanted = sorted(command for command in commands if command != ('login',))  # az's own login: not ours to check

    def help_of(command):
        return subprocess.run([AZ, *command, '-h'], capture_output=True, text=True, env=env, timeout=300,
                              check=False, stdin=subprocess.DEVNULL)
    with ThreadPoolExecutor(max_workers=4) as pool:  # each az is a process: the wall time of the slowest
        helps = dict(zip(wanted, pool.map(help_of, wanted)))
    for command in wanted:
        shown, options = helps[command], commands[command]
        assert shown.returncode == 0, (command, shown.stderr)
        for option in options:
            assert re.search(r'(^|[\s,\[]){}([\s,\]]|$)'.format(re.escape(option)), shown.stdout, re.M), \
                (command, option)
