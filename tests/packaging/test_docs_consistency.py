"""The README is a front door and the docs do not drift (issue 27, item 8): the README stays well under 20 KB and
links every page of docs/; every wheel the README or a docs page names is the version setup.py builds; every file a
page names or links exists. Versions and file names come from one place: setup.py's VERSION and the repository."""
import glob
import os
import re

import pytest

from tests.fixtures_az import REPO_ROOT

README = os.path.join(REPO_ROOT, 'README.md')
PAGES = sorted(glob.glob(os.path.join(REPO_ROOT, 'docs', '*.md')))
# A path in the repository as the docs write it: `examples/demo/train.py`, docs/architecture.md, scripts/demo.py.
REPO_PATH = re.compile(r'(?<![\w./<$-])((?:examples|docs|scripts|tests|bench|azext_batchai_sweep)/[\w./-]*\w)')
LINK = re.compile(r'\]\(([^)\s]+)\)')
WHEEL = re.compile(r'batchai_sweep-([0-9][^-\s"]*)-py3-none-any\.whl')


def setup_version():
    with open(os.path.join(REPO_ROOT, 'setup.py'), encoding='utf-8') as f:
        return re.search(r"^VERSION = '([^']+)'", f.read(), re.M).group(1)


def text(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def named_paths(content):
    """The repository paths a page names, without the ones that are patterns or placeholders."""
    for path in REPO_PATH.findall(content):
        path = path.rstrip('.')
        if not any(mark in path for mark in ('<', '*', '...')):
            yield path


def test_the_readme_is_a_front_door_linking_every_docs_page():
    content = text(README)
    assert len(content.encode('utf-8')) < 12 * 1024, 'the README is a front door: reference goes to docs/'
    for command in ('make demo', 'make test'):
        assert command in content
    for step in ('--plan-only', 'sweep run', 'sweep status', 'sweep report', 'sweep stop'):
        assert step in content, step
    linked = {os.path.normpath(os.path.join(REPO_ROOT, target)) for target in LINK.findall(content)}
    assert set(PAGES) <= linked, sorted(set(PAGES) - linked)
    assert '[docs/pipelines.md](docs/pipelines.md)' in content  # the "Scripted pipelines" line


@pytest.mark.parametrize('page', [README] + PAGES, ids=lambda p: os.path.relpath(p, REPO_ROOT))
def test_every_wheel_named_is_the_version_setup_py_builds(page):
    version = setup_version()
    named = WHEEL.findall(text(page))
    assert all(found == version for found in named), (named, version)


@pytest.mark.parametrize('page', [README] + PAGES, ids=lambda p: os.path.relpath(p, REPO_ROOT))
def test_every_file_a_page_names_or_links_exists(page):
    content = text(page)
    missing = [path for path in named_paths(content) if not os.path.exists(os.path.join(REPO_ROOT, path))]
    for target in LINK.findall(content):
        if re.match(r'^[a-z]+:', target) or target.startswith('#'):
            continue
        if not os.path.exists(os.path.join(os.path.dirname(page), target.split('#')[0])):
            missing.append(target)
    assert not missing, missing


def test_the_checks_catch_drift(tmp_path):
    """The rules above on a page that drifted: an old wheel, a file that is not there."""
    drifted = 'make wheel  # dist/batchai_sweep-0.1.1-py3-none-any.whl, see docs/no-such-page.md and ' \
              '[x](gone.md)\n'
    assert WHEEL.findall(drifted) == ['0.1.1'] != [setup_version()]
    assert list(named_paths(drifted)) == ['docs/no-such-page.md']
    assert LINK.findall(drifted) == ['gone.md']
