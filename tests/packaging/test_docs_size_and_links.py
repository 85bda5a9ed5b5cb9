"""Docs that are read (issue 45, "Docs"): each page stays under its size, so that it reads in one sitting (history goes
to bench/NOTES.md, detail to the modules' docstrings), and every relative markdown link of the README, docs/ and
bench/NOTES.md leads somewhere: the file exists and, when the link names an #anchor in a markdown page, a heading of
that page makes that anchor (GitHub's rule: lower case, punctuation dropped, spaces to hyphens, -1, -2 for repeats)."""
import glob
import os
import re

import pytest

from tests.fixtures_az import REPO_ROOT

KB = 1024
# A page's cap in bytes. Reference pages that a user reads front to back: 20 KB; a reader's doc (the benchmarks'
# current figures, `sweep run`'s reference): 30 KB, the house rule (sweep-run.md split its several objectives into
# docs/sweep-objectives.md to fit); any other page: 40 KB (past 40, split it).
CAPS = {
    'README.md': 20 * KB,
    'docs/benchmarks.md': 30 * KB,
    'docs/architecture.md': 20 * KB,
    'docs/reliability.md': 20 * KB,
    'docs/azure-batch.md': 20 * KB,
    'docs/sweep-run.md': 30 * KB,
}
DEFAULT_CAP = 40 * KB
PAGES = ['README.md', 'bench/NOTES.md'] + sorted(
    os.path.relpath(path, REPO_ROOT) for path in glob.glob(os.path.join(REPO_ROOT, 'docs', '*.md')))
LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)|!\[[^\]]*\]\(([^)\s]+)\)')
FENCE = re.compile(r'^(```|~~~)')


def _text(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def _unfenced(content):
    """The page's lines outside its fenced code blocks."""
    lines, fenced = [], False
    for line in content.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(content):
    """The anchors GitHub makes from a page's headings (inline code keeps its words, loses its backticks)."""
    made, seen = set(), {}
    for line in _unfenced(content):
        heading = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
        if not heading:
            continue
        slug = re.sub(r'[^\w\- ]', '', heading.group(1).strip().lower()).replace(' ', '-')
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        made.add(slug if count == 0 else '{}-{}'.format(slug, count))
    return made


def links(content):
    """The relative targets a page links to, outside code (http(s):, mailto: and the like are someone else's)."""
    found = []
    for line in _unfenced(content):
        for match in LINK.finditer(re.sub(r'`[^`]*`(?!\])', '', line)):
            target = match.group(1) or match.group(2)
            if not re.match(r'^[a-z][a-z0-9+.-]*:', target):
                found.append(target)
    return found


def broken_links(page, content):
    """The links of `page` (a path from the repository root) whose file or anchor is not there."""
    broken = []
    for target in links(content):
        path, _, anchor = target.partition('#')
        resolved = os.path.normpath(os.path.join(REPO_ROOT, os.path.dirname(page), path)) if path else \
            os.path.join(REPO_ROOT, page)
        if not os.path.exists(resolved):
            broken.append(target)
        elif anchor and resolved.endswith('.md') and anchor.lower() not in anchors(_text(resolved)):
            broken.append(target)
    return broken


@pytest.mark.parametrize('page', PAGES)
def test_each_page_stays_under_its_size(page):
    size = len(_text(os.path.join(REPO_ROOT, page)).encode('utf-8'))
    cap = CAPS.get(page, DEFAULT_CAP)
    assert size < cap, '{} is {:,} bytes, over its {:,}: history to bench/NOTES.md, detail to the docstrings'.format(
        page, size, cap)


@pytest.mark.parametrize('page', PAGES)
def test_every_relative_link_resolves(page):
    assert not broken_links(page, _text(os.path.join(REPO_ROOT, page)))


def test_the_capped_pages_exist():
    """A cap on a page that was renamed away would guard nothing."""
    for page in CAPS:
        assert os.path.exists(os.path.join(REPO_ROOT, page)), page


def test_the_checks_catch_a_broken_link_and_anchor():
    """The rules above on pages that drifted: a missing file, a missing anchor, a heading's anchor and its repeat."""
    page = '# Title\n\n## Where it goes (`pathPrefix`), and why\n\n## Twice\n\n## Twice\n\n```\n## not a heading\n```\n'
    assert anchors(page) == {'title', 'where-it-goes-pathprefix-and-why', 'twice', 'twice-1'}
    drifted = ('See [the map](architecture.md), [gone](docs/no-such-page.md), [an anchor](README.md#no-such-heading), '
               '[a web page](https://example.invalid/x), [here](#title) and `[code](not-a-link.md)`.\n'
               '```\n[fenced](nor-this.md)\n```\n')
    assert links(drifted) == ['architecture.md', 'docs/no-such-page.md', 'README.md#no-such-heading', '#title']
    assert broken_links('README.md', drifted) == ['architecture.md', 'docs/no-such-page.md',
                                                  'README.md#no-such-heading', '#title']
    assert broken_links('docs/x.md', '[ok](architecture.md) [ok](../README.md) [bad](../README.md#nope)') == \
        ['../README.md#nope']
