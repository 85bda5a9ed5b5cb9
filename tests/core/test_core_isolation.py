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
    assert 'azext_batchai_sweep.core.spec.sweep' in modules
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
from azext_batchai_sweep.core.spec import naming, params, substitution, sweep
from azext_batchai_sweep.core import errors
print([name for name in sys.modules if name.startswith(('azure.mgmt', 'msrest'))])
'''
    result = run_core_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '[]'


def utilities_modules():
    utilities_dir = os.path.join(PACKAGE_DIR, 'utilities')
    return ['azext_batchai_sweep.utilities'] + sorted(
        name for _, name, _ in pkgutil.walk_packages([utilities_dir], 'azext_batchai_sweep.utilities.'))


def test_the_utilities_adapters_import_without_azure_cli_and_bring_the_sdk_models():
    # A notebook's `import azext_batchai_sweep.utilities as utils` on a machine without azure-cli.
    modules = utilities_modules()
    assert {'azext_batchai_sweep.utilities.job_factory', 'azext_batchai_sweep.utilities.experiment',
            'azext_batchai_sweep.utilities.job'} <= set(modules)
    code = FORBID_AZURE_CLI + '''
import importlib
import azext_batchai_sweep.utilities as utils
for name in {!r}:
    importlib.import_module(name)
assert utils.job.MetricExtractor and utils.experiment.ExperimentUtils and utils.job_factory.ParameterSweep
print('azure.mgmt.batchai.models' in sys.modules)
'''.format(modules)
    result = run_core_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'True'


def test_the_command_layer_and_the_core_never_load_the_utilities():
    # The CLI's start-up (the command loader, its table, arguments and help modules) and every core and service
    # module: none of them pays for the adapters and the SDK models they import.
    command_layer = sorted('azext_batchai_sweep.' + name for _, name, is_package in pkgutil.iter_modules([PACKAGE_DIR])
                           if not is_package)
    assert 'azext_batchai_sweep.commands' in command_layer
    modules = ['azext_batchai_sweep'] + command_layer + core_modules() + service_modules()
    code = '''
import importlib, sys
for name in {!r}:
    importlib.import_module(name)
from azext_batchai_sweep import COMMAND_LOADER_CLS
print([name for name in sys.modules if name.startswith('azext_batchai_sweep.utilities')])
'''.format(modules)
    result = run_core_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '[]'


def test_no_module_outside_the_utilities_imports_them():
    offenders = []
    for folder, _, files in os.walk(PACKAGE_DIR):
        if os.path.join(PACKAGE_DIR, 'utilities') in (folder, os.path.dirname(folder)):
            continue
        for file_name in files:
            if file_name.endswith('.py'):
                with open(os.path.join(folder, file_name), encoding='utf-8') as source:
                    text = source.read()
                if 'utilities' in text and ('import utilities' in text or '.utilities' in text):
                    offenders.append(os.path.join(folder, file_name))
    assert not offenders
