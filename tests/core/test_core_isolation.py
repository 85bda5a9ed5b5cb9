"""The core never imports azure.cli (docs/architecture.md), and importing it does not load the Batch AI SDK."""
import ast
import os
import pkgutil

from .helpers import PACKAGE_DIR, run_core_python

CORE_DIR = os.path.join(PACKAGE_DIR, 'core')

FORBID_AZURE_CLI = '''
import importlib.abc, sys

class ForbidAzureCli(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == 'azure.cli' or name.startswith('azure.cli.'):
            raise ImportError('the core imported ' + name)
        return None

sys.meta_path.insert(0, ForbidAzureCli())
'''


def core_modules():
    return sorted(name for _, name, _ in pkgutil.walk_packages([CORE_DIR], 'azext_batchai_sweep.core.'))


def service_modules():
    service_dir = os.path.join(PACKAGE_DIR, 'localservice')
    return sorted(name for _, name, _ in pkgutil.walk_packages([service_dir], 'azext_batchai_sweep.localservice.')
                  if not name.endswith('__main__'))


def test_every_core_and_service_module_imports_without_azure_cli():
    # Through the real package __init__: it must fall back quietly where azure.cli cannot be imported.
    modules = ['azext_batchai_sweep.core'] + core_modules() + service_modules()
    assert 'azext_batchai_sweep.core.sweep' in modules
    assert 'azext_batchai_sweep.localservice.server' in modules
    code = FORBID_AZURE_CLI + '''
import importlib
for name in {!r}:
    importlib.import_module(name)
loaded = [name for name in sys.modules if name == 'azure.cli' or name.startswith('azure.cli.')]
assert not loaded, loaded
print('ok')
'''.format(modules)
    result = run_core_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'ok'


def test_the_hook_does_catch_an_azure_cli_import():
    # Proves the test above can fail.
    result = run_core_python(FORBID_AZURE_CLI + 'import azure.cli.core\n')
    assert result.returncode != 0 and 'the core imported azure.cli' in result.stderr


def test_no_azure_cli_import_in_core_source():
    offenders = []
    for folder, _, files in os.walk(CORE_DIR):
        for file_name in files:
            if not file_name.endswith('.py'):
                continue
            path = os.path.join(folder, file_name)
            with open(path, encoding='utf-8') as source:
                tree = ast.parse(source.read(), path)
            for node in ast.walk(tree):
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ''] if isinstance(node, ast.ImportFrom) else []
                # also the dynamic form: importlib.import_module('azure.cli...')
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                        node.value.startswith('azure.cli') and ' ' not in node.value:
                    names.append(node.value)
                offenders += ['{}:{}: {}'.format(path, node.lineno, n) for n in names
                              if n == 'azure.cli' or n.startswith('azure.cli.')]
    assert not offenders


def test_importing_the_sweep_api_does_not_load_the_sdk():
    code = '''
import sys
from azext_batchai_sweep.core import ParameterSweep, NumParamSpec
from azext_batchai_sweep.core import naming, params, substitution, sweep, errors
print([name for name in sys.modules if name.startswith(('azure.mgmt', 'msrest'))])
'''
    result = run_core_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '[]'
