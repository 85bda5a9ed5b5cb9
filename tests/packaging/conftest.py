"""The extension's wheel, built once per test session and installed the way users install it."""
import glob
import os
import subprocess
import sys

import pytest

from tests.fixtures_az import REPO_ROOT


@pytest.fixture(scope='session')
def wheel(tmp_path_factory):
    out = str(tmp_path_factory.mktemp('wheel'))
    # --no-build-isolation: the venv's setuptools and wheel build it, offline (requirements-test.txt lists wheel).
    built = subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--quiet', '--no-deps', '--no-build-isolation',
                            '-w', out, REPO_ROOT], check=False, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    (path,) = glob.glob(os.path.join(out, '*.whl'))
    return path
