"""The extension's wheel, built once per test run (the first worker to need it builds it, the others wait and reuse
it: the build writes build/ and the egg-info in the source tree) and installed the way users install it."""
import glob
import os
import subprocess
import sys

import pytest

from tests.fixtures_az import REPO_ROOT
from tests.parallel import once_per_run


@pytest.fixture(scope='session')
def wheel(tmp_path_factory):
    with once_per_run(tmp_path_factory, 'wheel') as out:
        if not glob.glob(os.path.join(str(out), '*.whl')):
            # --no-build-isolation: the venv's setuptools and wheel build it, offline (requirements-test.txt lists
            # wheel).
            built = subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--quiet', '--no-deps',
                                    '--no-build-isolation', '-w', str(out), REPO_ROOT],
                                   check=False, capture_output=True, text=True)
            assert built.returncode == 0, built.stderr
        (path,) = glob.glob(os.path.join(str(out), '*.whl'))
    return path
