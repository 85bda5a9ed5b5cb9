"""The code snapshot's ignore rules against git itself: in a temporary repository, the files a snapshot keeps are
exactly the untracked files `git ls-files --others --exclude-standard` lists (git's own reading of the same
.gitignore files), for several patterns; .sweepignore is checked by giving git the same lines as a .gitignore."""
import os
import shutil
import subprocess

import pytest

from azext_batchai_sweep.core.code.ignore import kept_files, parse_lines, is_ignored

pytestmark = pytest.mark.skipif(shutil.which('git') is None, reason='git is needed as the reference')

TREE = [
    'train.py', 'model.py', 'README.md', 'notes.txt', 'run.log', 'debug.log', 'data/big.bin', 'data/small.csv',
    'data/keep.bin', 'build/out.o', 'build/keep/me.txt', 'src/build/gen.py', 'src/pkg/__init__.py',
    'src/pkg/mod.pyc', 'src/pkg/__pycache__/mod.cpython-311.pyc', 'docs/a/b/deep.md', 'docs/a/x.tmp',
    'logs/2024/jan.log', 'checkpoints/epoch1.pt', 'checkpoints/best.pt', 'foo/bar/baz.txt', 'foo/baz.txt',
    '#hash.txt', '!bang.txt', 'space .txt', 'a1.dat', 'ab.dat', 'a[.dat', 'x/y/z/w.cfg', 'nested/sub/one.tmp',
    'nested/sub/two.txt', 'nested/three.tmp',
]

CASES = {
    'names at any depth': ['*.log', '*.pyc', '__pycache__/'],
    'anchored and folders': ['/build', 'data/*.bin', '!data/keep.bin'],
    'folder only': ['build/', 'notes.txt/'],
    'double stars': ['**/baz.txt', 'docs/**/*.md', 'logs/**', 'x/**/w.cfg'],
    'negation and order': ['checkpoints/*', '!checkpoints/best.pt', '*.txt', '!README.md', '!foo/*.txt'],
    'escapes and classes': ['\\#hash.txt', '\\!bang.txt', 'a[0-9].dat', 'a?.dat', 'space\\ .txt', '#comment', ''],
    'cannot re-include inside an excluded folder': ['build/', '!build/keep/me.txt'],
    'trailing spaces and middle slash': ['src/build   ', 'docs/a/*.tmp'],
}


def _make_tree(root):
    for relative in TREE:
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(relative)


def _git_kept(root):
    subprocess.run(['git', 'init', '-q', root], check=True)
    listed = subprocess.run(['git', 'ls-files', '--others', '--exclude-standard', '-z'], cwd=root, check=True,
                            capture_output=True).stdout.decode('utf-8').split('\0')
    return sorted(name for name in listed if name)


@pytest.mark.parametrize('case', sorted(CASES))
def test_top_level_gitignore_keeps_what_git_keeps(tmp_path, case):
    root = str(tmp_path / 'code')
    _make_tree(root)
    with open(os.path.join(root, '.gitignore'), 'w', encoding='utf-8') as f:
        f.write('\n'.join(CASES[case]) + '\n')
    ours = [relative for relative, _ in kept_files(root)]
    assert ours == _git_kept(root)
    assert len(ours) < len(TREE) + 1  # the case ignores something


def test_nested_ignore_files_and_sweepignore_as_git_reads_gitignore(tmp_path):
    """A sub-folder's file applies below it and wins over the top's; .sweepignore reads like a .gitignore."""
    ours_root, git_root = str(tmp_path / 'ours'), str(tmp_path / 'git')
    for root in (ours_root, git_root):
        _make_tree(root)
        with open(os.path.join(root, '.gitignore'), 'w', encoding='utf-8') as f:
            f.write('*.tmp\n/foo/\n')
    with open(os.path.join(ours_root, 'nested', '.sweepignore'), 'w', encoding='utf-8') as f:
        f.write('!three.tmp\nsub/two.txt\n')
    with open(os.path.join(git_root, 'nested', '.gitignore'), 'w', encoding='utf-8') as f:
        f.write('!three.tmp\nsub/two.txt\n')
    ours = [relative for relative, _ in kept_files(ours_root) if not relative.endswith('ignore')]
    git = [name for name in _git_kept(git_root) if not name.endswith('ignore')]
    assert ours == git
    assert 'nested/three.tmp' in ours and 'nested/sub/two.txt' not in ours and 'foo/baz.txt' not in ours


def test_git_folder_is_always_left_out(tmp_path):
    root = str(tmp_path)
    os.makedirs(os.path.join(root, '.git', 'objects'))
    with open(os.path.join(root, '.git', 'objects', 'x'), 'w', encoding='utf-8') as f:
        f.write('x')
    with open(os.path.join(root, 'train.py'), 'w', encoding='utf-8') as f:
        f.write('print(1)')
    assert [relative for relative, _ in kept_files(root)] == ['train.py']


@pytest.mark.parametrize('pattern,path,is_dir,expected', [
    ('*.log', 'a/b/c.log', False, True),
    ('/a.log', 'sub/a.log', False, False),
    ('out/', 'out', False, False),
    ('out/', 'out', True, True),
    ('a/**/b', 'a/b', False, True),
    ('a/**/b', 'a/x/y/b', False, True),
    ('a?c', 'a/c', False, False),
    ('[!a]x', 'bx', False, True),
    ('[!a]x', 'ax', False, False),
])
def test_single_patterns(pattern, path, is_dir, expected):
    assert is_ignored(parse_lines(pattern), path, is_dir) is expected
