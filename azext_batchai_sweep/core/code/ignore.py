"""Which files of a code folder stay home: `.git`, and what `.gitignore` and `.sweepignore` files ignore.

The subset of gitignore(5) implemented, with git's meaning (tests/core/test_code_ignore.py compares it with git):
blank lines and `#` comments; trailing spaces trimmed unless escaped; `\\` escaping a leading `#` or `!`; `!`
re-including what an earlier pattern excluded (never inside an excluded folder, which is not entered); a trailing
`/` matching folders only; a pattern with a `/` at its start or middle anchored at its file's folder, one without
matching a name at any depth; `*`, `?`, `[...]` within one path component; `**/` (any leading folders), `/**`
(everything inside) and `/**/` (zero or more folders). A `.gitignore` or `.sweepignore` in a sub-folder applies
below it and wins over those above; in one folder `.sweepignore` comes after `.gitignore`.
Not implemented: git's global excludes and `.git/info/exclude` (a code snapshot should not depend on one machine).
"""
import os
import re

IGNORE_FILES = ('.gitignore', '.sweepignore')
ALWAYS_LEFT_OUT = ('.git',)


class Pattern:  # pylint: disable=too-few-public-methods
    """One gitignore line of the file in folder `base` ('' for the top; '/'-separated, relative)."""

    def __init__(self, line, base):
        self.text = line
        self.base = base
        self.negated = line.startswith('!')
        if self.negated:
            line = line[1:]
        elif line.startswith('\\!') or line.startswith('\\#'):
            line = line[1:]
        self.directory_only = line.endswith('/')
        line = line.rstrip('/')
        anchored = '/' in line
        line = line.lstrip('/')
        body = _translate(line)
        if not anchored:
            body = '(?:.*/)?' + body
        self.regex = re.compile('^' + body + '$', re.DOTALL)

    def matches(self, path, is_dir):
        """Whether the pattern matches `path` (relative to the top, '/'-separated)."""
        if self.directory_only and not is_dir:
            return False
        if self.base:
            if not path.startswith(self.base + '/'):
                return False
            path = path[len(self.base) + 1:]
        return self.regex.match(path) is not None


def _translate(pattern):
    """The regular expression of a gitignore glob (no leading `/`, no trailing `/`)."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        char = pattern[i]
        if pattern.startswith('**', i) and (i == 0 or pattern[i - 1] == '/'):
            after = i + 2
            if after == n:  # `/**` at the end (or `**` alone): everything inside
                out.append('.*')
                i = after
                continue
            if pattern[after] == '/':  # `**/`: zero or more folders
                out.append('(?:.*/)?')
                i = after + 1
                continue
        if char == '*':
            out.append('[^/]*')
        elif char == '?':
            out.append('[^/]')
        elif char == '\\' and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        elif char == '[':
            end = _class_end(pattern, i)
            if end is None:
                out.append(re.escape(char))
            else:
                inner = pattern[i + 1:end]
                if inner[:1] in ('!', '^'):
                    inner = '^' + inner[1:]
                out.append('(?!/)[' + inner.replace('\\', '\\\\') + ']')
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return ''.join(out)


def _class_end(pattern, start):
    """The index of the `]` closing the character class opened at `start`, or None."""
    i = start + 1
    if i < len(pattern) and pattern[i] in '!^':
        i += 1
    if i < len(pattern) and pattern[i] == ']':
        i += 1
    end = pattern.find(']', i)
    return None if end < 0 else end


def parse_lines(text, base=''):
    """The patterns of an ignore file's text, in order."""
    patterns = []
    for line in text.splitlines():
        line = _trim_trailing_spaces(line)
        if not line or line.startswith('#'):
            continue
        if line in ('!', '/'):
            continue
        patterns.append(Pattern(line, base))
    return patterns


def _trim_trailing_spaces(line):
    stripped = line.rstrip(' ')
    if stripped.endswith('\\') and len(stripped) < len(line):
        return stripped[:-1] + ' '  # an escaped space is kept
    return stripped


def is_ignored(patterns, path, is_dir):
    """The last matching pattern decides; None matching keeps the path."""
    ignored = False
    for pattern in patterns:
        if pattern.matches(path, is_dir):
            ignored = not pattern.negated
    return ignored


def kept_files(root):
    """The files of folder `root` a snapshot takes: (relative '/'-separated path, absolute path), sorted by path.

    Symbolic links to files are followed when they stay inside `root`; links to folders and links leading out are
    left out (a snapshot holds the folder's own content, nothing of the machine around it).
    """
    root = os.path.realpath(root)
    kept = []
    _walk(root, '', [], kept, root)
    kept.sort()
    return kept


def _walk(folder, relative, inherited, kept, root):
    patterns = list(inherited)
    for name in IGNORE_FILES:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, encoding='utf-8', errors='replace') as f:
                patterns.extend(parse_lines(f.read(), relative))
    with os.scandir(folder) as entries:
        listed = sorted(entries, key=lambda entry: entry.name)
    for entry in listed:
        if entry.name in ALWAYS_LEFT_OUT:
            continue
        path = entry.name if not relative else relative + '/' + entry.name
        if entry.is_symlink():
            target = os.path.realpath(entry.path)
            if not os.path.isfile(target) or os.path.commonpath([root, target]) != root:
                continue
        is_dir = entry.is_dir(follow_symlinks=False)
        if is_ignored(patterns, path, is_dir):
            continue
        if is_dir:
            _walk(entry.path, path, patterns, kept, root)
        elif entry.is_file():
            kept.append((path, entry.path))
