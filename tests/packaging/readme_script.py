"""The README's commands as test data: its indented code blocks, section by section, and a plain shell to run them in.

A block whose lines start with `$ ` is a transcript (commands, each with `\\` continuations, then what it printed); any
other block is a script, every line a command. Nothing here rewrites a command: the tests run the README's text.
"""
import os
import shutil
import subprocess

from tests.fixtures_az import REPO_ROOT

README = os.path.join(REPO_ROOT, 'README.md')


def readme_section(heading, path=README):
    """The text of the README section `## heading`, up to the next `## `."""
    with open(path, encoding='utf-8') as f:
        content = f.read()
    start = content.index('\n## ' + heading + '\n') + len(heading) + 5
    end = content.find('\n## ', start)
    return content[start:] if end < 0 else content[start:end]


def code_blocks(section):
    """The section's indented code blocks, each a list of its lines without the four spaces."""
    blocks, current = [], []
    for line in section.splitlines():
        if line.startswith('    '):
            current.append(line[4:])
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def steps(block):
    """[(command, printed lines)]: a transcript's commands with what it shows each printed; a script is one step
    (its whole text, nothing shown)."""
    if not any(line.startswith('$ ') for line in block):
        return [('\n'.join(block), None)]
    result, command, printed, continued = [], None, [], False
    for line in block:
        if continued or line.startswith('$ '):
            if not continued:
                if command is not None:
                    result.append((command, printed))
                command, printed = line[2:], []
            else:
                command += '\n' + line
            continued = line.endswith('\\')
        else:
            printed.append(line)
    result.append((command, printed))
    return result


def system_path():
    """The PATH of a shell that has not activated this repository's venv: the test runner's, without the repo."""
    entries = os.environ.get('PATH', '').split(os.pathsep)
    return os.pathsep.join(entry for entry in entries
                           if entry and not os.path.realpath(entry).startswith(os.path.realpath(REPO_ROOT)))


def plain_shell(script, cwd, home, path, extra=None, timeout=600):
    """Run `script` with bash in a clean environment: PATH and HOME only (and `extra`, what a CI runner sets)."""
    env = {'PATH': path, 'HOME': str(home)}
    env.update(extra or {})
    return subprocess.run(['bash', '-c', script], cwd=str(cwd), env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, check=False)


def make_clone(target):
    """A fresh checkout's files in `target` (what git tracks and what it would, with their times, so that make sees
    the venv's stamps as up to date), sharing this checkout's venv (built by `make dev`/`make test-tools`)."""
    listed = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode('utf-8').split('\0')
    for name in filter(None, listed):
        source = os.path.join(REPO_ROOT, name)
        if not os.path.isfile(source):  # deleted in the work tree, not yet in the index
            continue
        destination = os.path.join(str(target), name)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.copy2(source, destination)
    os.symlink(os.path.join(REPO_ROOT, '.venv'), os.path.join(str(target), '.venv'))
