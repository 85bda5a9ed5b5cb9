"""docs/versions.md names the same packages and programs that every `make test` prints (tests/resolved_versions.py),
so the record of the last green versions cannot drift from what a run shows."""
import os
import re

from tests.fixtures_az import REPO_ROOT
from tests.resolved_versions import PROGRAMS, RUNTIME, TEST_TOOLS, header_lines


def _table_names(text, heading):
    section = text.split('## ' + heading, 1)[1].split('\n## ', 1)[0]
    return [match.group(1) for match in re.finditer(r'^\| ([^|]+?) \| [^|]+ \|$', section, re.M)
            if match.group(1) not in ('package', 'tool', '---')]


def test_the_doc_lists_what_make_test_prints():
    with open(os.path.join(REPO_ROOT, 'docs', 'versions.md'), encoding='utf-8') as f:
        text = f.read()
    assert _table_names(text, 'Runtime') == list(RUNTIME)
    assert _table_names(text, 'Tests') == ['Python', *TEST_TOOLS, *(command for command, _ in PROGRAMS)]


def test_the_printed_block_names_every_package_with_a_version():
    lines = header_lines()
    assert len(lines) == 3
    for name in RUNTIME + TEST_TOOLS:
        assert re.search(re.escape(name) + r' \d', '\n'.join(lines)), name  # installed in the test venv
