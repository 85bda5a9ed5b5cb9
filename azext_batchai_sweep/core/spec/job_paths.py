"""Where Batch AI puts a job's directories: `stdOutErrPathPrefix` and each output's `pathPrefix`.

Batch AI (API 2018-05-01) documents both as an absolute path on the node, "e.g. $AZ_BATCHAI_MOUNT_ROOT/MyNFS/MyLogs",
to which it adds the job's `jobOutputDirectoryPathSegment` (then `stdouterr`, or `outputs[/pathSuffix]`). The rule
every scheduler of the local service follows (docs/job-environment.md):

- a prefix starts with one of Batch AI's roots, `$AZ_BATCHAI_MOUNT_ROOT`, `$AZ_BATCHAI_JOB_MOUNT_ROOT` or
  `$AZ_BATCHAI_JOB_TEMP` (also written `${NAME}`), or with `/` (a plain absolute path);
- it is a path: `a//b`, `a/./b` and a trailing slash name the folder `a/b` (layout.output_paths normalises it);
- it may not climb out of its root with `..` (the job's directories would land beside the root, where no
  scheduler reads them).

`prefix_problem` says what is wrong with a value (None when it is accepted); the sweep file is checked with it before
the first request (sweepfile.py), and the local service's job create with it (resources.validate_job).
"""
import re

ROOTS = ('AZ_BATCHAI_MOUNT_ROOT', 'AZ_BATCHAI_JOB_MOUNT_ROOT', 'AZ_BATCHAI_JOB_TEMP')
_ROOT = re.compile(r'^\$(?:({0})(?!\w)|\{{({0})\}})'.format('|'.join(ROOTS)))
ALLOWED = 'an absolute path, or one starting with {}'.format(', '.join('$' + name for name in ROOTS))


def prefix_problem(value):
    """None when `value` is a path prefix Batch AI accepts, else what is expected instead (a sentence's end)."""
    if not isinstance(value, str) or not value:
        return 'expected a path prefix: {}'.format(ALLOWED)
    match = _ROOT.match(value)
    rest = value[match.end():] if match else value
    if not match and not value.startswith('/'):
        return 'expected {}, got {!r}'.format(ALLOWED, value)
    if rest and not rest.startswith('/'):
        return 'expected {} followed by "/" or nothing, got {!r}'.format(value[:match.end()], value)
    if _climbs(rest):
        return 'expected a path that stays under {} (no ".." above it), got {!r}'.format(
            value[:match.end()] if match else '/', value)
    return None


def _climbs(rest):
    """`rest` (what follows the root) goes above the root with `..`."""
    depth = 0
    for part in rest.split('/'):
        if part == '..':
            depth -= 1
            if depth < 0:
                return True
        elif part not in ('', '.'):
            depth += 1
    return False
