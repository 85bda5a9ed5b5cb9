"""The extension's wheel, built once per test run as the README's Install section builds it (`make wheel`, in a fresh
checkout: the first worker to need it builds it, the others wait and reuse it) and installed the way users install
it."""
import glob
import os
import shutil

import pytest

from tests.packaging.readme_script import code_blocks, make_clone, plain_shell, readme_section, system_path
from tests.parallel import once_per_run


@pytest.fixture(scope='session')
def readme_clone(tmp_path_factory):
    """A fresh checkout (readme_script.make_clone) in which the README's Install section began as written: its first
    line, `make wheel`, run in a plain shell. Made once per run; the wheel fixture is its wheel."""
    with once_per_run(tmp_path_factory, 'readme-clone') as out:
        clone, made = out / 'clone', out / 'made'
        if not made.exists():
            shutil.rmtree(str(clone), ignore_errors=True)
            make_clone(clone)
            first_line = code_blocks(readme_section('Install'))[0][0]
            assert first_line.startswith('make wheel'), first_line
            home = out / 'home'
            home.mkdir(exist_ok=True)
            built = plain_shell(first_line, clone, home, system_path())
            assert built.returncode == 0, built.stdout + built.stderr
            made.touch()
    return clone


@pytest.fixture(scope='session')
def wheel(readme_clone):
    (path,) = glob.glob(os.path.join(str(readme_clone), 'dist', '*.whl'))
    return path
