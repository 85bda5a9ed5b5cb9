"""How `make test` shares the suite between its pytest-xdist workers (`-n auto --dist loadgroup`, see the Makefile).

Each worker is a pytest session of its own: session fixtures (the local service, Azurite, Prism, the Slurm cluster)
are started once per worker, on free loopback ports and in the worker's own basetemp, so workers never share one.
What is expensive to make is kept on one worker by giving its tests one xdist group:
- a module's tests form one group (by default): its module-scoped fixtures (e2e sweeps run through az, logins)
  are made once, not once per worker;
- tests that use one of SHARED_SESSION_FIXTURES form one group per fixture: the Slurm cluster (one slurmctld and its
  slurmds, each test waiting for an idle cluster), the report's real sweep, the fresh venvs of the utilities extra.
Groups are handed out longest first (LONGEST_FIRST, measured), so no long group starts last and leaves one worker
waiting on it at the end. Things made once per machine (the wheel) go through `once_per_run`.

Serial runs (`-n 0`, or plain `python -m pytest`) are unchanged: no group, collection order.
"""
import contextlib
import fcntl
import os

import pytest

# A test using one of these fixtures (directly or through another fixture) runs in the group named after it.
SHARED_SESSION_FIXTURES = ('slurm_cluster', 'reported_sweep', 'utilities_venv')

# Groups scheduled before the others, in this order: the longest ones (`--durations` of a parallel run on the 2-core
# machine: the Slurm tests, two fresh venvs installed from the package index, the Batch AI recipes' module fixture,
# the Azure Batch smoke script's three runs and the stdOutErrPathPrefix spellings through az; the README's tour and CI
# snippet and the pipeline script, which run the az executable in a plain shell: a minute or more each).
# Every other group follows in collection order. Update when another group grows past these.
LONGEST_FIRST = (
    'slurm_cluster',
    'utilities_venv',
    'tests/packaging/test_batchai_recipes.py',
    'tests/azurebatch/test_smoke_script.py',
    'tests/azurebatch/test_e2e_stdouterr_prefix.py',
    'tests/packaging/test_readme_verbatim.py',
    'tests/cli/test_pipeline_script.py',
)


def _group_of(item):
    for name in SHARED_SESSION_FIXTURES:
        if name in getattr(item, 'fixturenames', ()):
            return name
    return item.nodeid.split('::', 1)[0]


def _distributed(config):
    """Whether this is a worker of a `--dist loadgroup` run (xdist sets its dist to "no" and keeps loadgroup)."""
    return hasattr(config, 'workerinput') and getattr(config.option, 'loadgroup', False)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns the markers into the node ids' @group suffix
def pytest_collection_modifyitems(config, items):
    if not _distributed(config):
        return
    for item in items:
        if item.get_closest_marker('xdist_group') is None:
            item.add_marker(pytest.mark.xdist_group(_group_of(item)))
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(_marked_group(item), len(rank)))


def _marked_group(item):
    mark = item.get_closest_marker('xdist_group')
    return mark.args[0] if mark.args else mark.kwargs.get('name', 'default')


def shared_dir(tmp_path_factory):
    """A directory every worker of this run sees (the parent of the workers' basetemps), the basetemp when serial."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get('PYTEST_XDIST_WORKER') else base


@contextlib.contextmanager
def once_per_run(tmp_path_factory, name):
    """Yield a directory `name` shared by the run's workers, holding an exclusive lock on it: the first worker makes
    what goes in, the others wait for it and find it made."""
    directory = shared_dir(tmp_path_factory) / name
    directory.mkdir(parents=True, exist_ok=True)
    with open(str(directory) + '.lock', 'w', encoding='ascii') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield directory
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
