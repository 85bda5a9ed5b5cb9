"""Run the real `az` executable of the project's venv against a throw-away config dir.

Tests never touch the user's ~/.azure: every az run gets a temporary AZURE_CONFIG_DIR, and the extension is
loaded from source through AZURE_EXTENSION_DEV_SOURCES: a folder of the test process linking to this checkout (the
one whose tests run), whichever checkout made the venv.
"""
import atexit
import functools
import glob
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import pytest

from tests import az_fork

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.dirname(sys.executable)
AZ = os.path.join(VENV_BIN, 'az') if os.path.exists(os.path.join(VENV_BIN, 'az')) else shutil.which('az')
# az names a dev extension after its folder (here a link), whatever the checkout is called.
EXTENSION_NAME = 'batchai-sweep'
# The Batch AI 2018-05-01 swagger and schemas the tests check against, copied into the repository (see its README).
SPECS_DIR = os.path.join(REPO_ROOT, 'tests', 'specs')


@dataclass
class AzResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


@functools.lru_cache(maxsize=None)
def dev_sources():
    """AZURE_EXTENSION_DEV_SOURCES for the tests' az runs: a folder of this test process holding one link,
    batchai-sweep, to this checkout. Not .venv/az-dev: its link points at the checkout that made the venv, and a
    venv linked into another worktree or clone would have az load the first checkout's code, silently."""
    if not glob.glob(os.path.join(REPO_ROOT, '*.egg-info')):
        raise RuntimeError('az finds a dev extension by its *.egg-info, and {} has none: run `make dev` there (or '
                           '`python setup.py egg_info`)'.format(REPO_ROOT))
    folder = tempfile.mkdtemp(prefix='az-dev-')
    os.symlink(REPO_ROOT, os.path.join(folder, EXTENSION_NAME))
    atexit.register(shutil.rmtree, folder, True)  # removes the link, never what it points at
    return folder


def base_env(config_dir, extra=None):
    """The environment of an az run: no inherited Azure settings, a private config dir, the dev extension."""
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith('AZURE_') or k.startswith('AZ_BATCHAI') or k == 'AZURE_BATCHAI_STORAGE_ACCOUNT')}
    env.update({
        'AZURE_CONFIG_DIR': config_dir,
        'AZURE_EXTENSION_DEV_SOURCES': dev_sources(),
        'AZURE_CORE_COLLECT_TELEMETRY': 'no',
        'AZURE_CORE_NO_COLOR': 'true',
        'AZURE_CORE_ONLY_SHOW_ERRORS': 'false',
        'AZURE_CORE_SURVEY_MESSAGE': 'false',
        'PYTHONWARNINGS': 'ignore',
    })
    if extra:
        env.update(extra)
    return env


@functools.lru_cache(maxsize=None)
def fork_server():
    """This test process's az fork server (tests/az_fork.py: az's libraries imported once, each run forked from
    it), or None where AZ_TESTS_FORK=0 or it cannot start (then every run uses the executable)."""
    if os.environ.get('AZ_TESTS_FORK', '1') == '0':
        return None
    server = az_fork.ForkServer(sys.executable, az_fork.executable_env(base_env(tempfile.gettempdir()), VENV_BIN))
    if not server.start():
        sys.stderr.write(server.failed + '\n')
        return None
    return server


def _text(data):
    """Bytes read as subprocess.run(text=True) reads them: the locale's encoding, universal newlines."""
    return io.TextIOWrapper(io.BytesIO(data)).read()


class AzRunner:
    """Runs `az ...` as a user would, in its own config dir; `env` adds variables for every run. Each run is a
    process of its own: forked from the test process's az fork server (tests/az_fork.py), or the executable."""

    def __init__(self, config_dir, env=None, cwd=None, executable=False):
        self.config_dir = config_dir
        self.env = dict(env or {})
        self.cwd = cwd
        # The executable for every run: for tests that look at the az process from outside (its command line in
        # /proc), which a forked run does not have (it shows the fork server's).
        self.executable = executable

    def __call__(self, *args, env=None, timeout=600, cwd=None, input=None):  # pylint: disable=redefined-builtin
        run_env = base_env(self.config_dir, {**self.env, **(env or {})})
        server = None if self.executable else fork_server()
        forked_env = az_fork.executable_env(run_env, VENV_BIN)
        if server is not None and server.can_run(forked_env):
            code, out, err = server.run([str(a) for a in args], forked_env, cwd or self.cwd,
                                        input.encode() if input else None, timeout)
            return AzResult(code, _text(out), _text(err))
        proc = subprocess.run([AZ, *[str(a) for a in args]], capture_output=True, text=True, env=run_env,
                              timeout=timeout, cwd=cwd or self.cwd, input=input, check=False)
        return AzResult(proc.returncode, proc.stdout, proc.stderr)


def service_env(service):
    """The variables that point az at a local service: its endpoint and its token file."""
    return {'AZURE_BATCHAI_SWEEP_ENDPOINT': service.endpoint, 'AZURE_BATCHAI_SWEEP_TOKEN_FILE': service.token_file}


def service_az(service, directory, executable=False):
    """An az runner pointed at ``service``, working in ``directory`` with its own config dir there."""
    config = os.path.join(directory, 'azure-config')
    os.makedirs(config, exist_ok=True)
    return AzRunner(config, env=service_env(service), cwd=directory, executable=executable)


@pytest.fixture
def az_config_dir(tmp_path):
    path = tmp_path / 'azure-config'
    path.mkdir()
    return str(path)


@pytest.fixture
def az(az_config_dir, tmp_path):
    """An `az` runner with a fresh config dir, working in the test's tmp_path."""
    return AzRunner(az_config_dir, cwd=str(tmp_path))
