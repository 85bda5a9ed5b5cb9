"""Running core code in a fresh interpreter, as a plain library.

`azext_batchai_sweep/__init__.py` is az's command loader and must import azure.cli.core; the core must work without
it (docs/architecture.md), so the child process registers the top-level package as a bare namespace whose path is the
source folder, without running that __init__.
"""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE_DIR = os.path.join(REPO, 'azext_batchai_sweep')

BARE_PACKAGE = '''
import sys, types
_package = types.ModuleType('azext_batchai_sweep')
_package.__path__ = [{!r}]
sys.modules['azext_batchai_sweep'] = _package
'''.format(PACKAGE_DIR)


def run_core_python(code, env=None):
    """Run `code` after BARE_PACKAGE in a new interpreter; return the CompletedProcess (text, output captured)."""
    return subprocess.run([sys.executable, '-c', BARE_PACKAGE + code], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, **(env or {})), timeout=120)
