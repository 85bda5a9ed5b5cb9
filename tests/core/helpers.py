"""Running core code in a fresh interpreter, as a plain library.

The child imports the real package (its __init__ included): that __init__ defines az's command loader only when
azure.cli can be imported, so `import azext_batchai_sweep.core` works on a machine without azure-cli. Tests that
simulate such a machine block azure.cli with a meta-path hook (see test_core_isolation.py).
"""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE_DIR = os.path.join(REPO, 'azext_batchai_sweep')


def run_core_python(code, env=None):
    """Run `code` in a new interpreter from the repo root; return the CompletedProcess (text, output captured)."""
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, **(env or {})), timeout=120)
