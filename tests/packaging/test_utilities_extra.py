"""A notebook user's install: the wheel with the `utilities` extra in a fresh venv without azure-cli.

Two installs, each in a fresh venv, pip resolving the extra's requirements by name from the package index configured
on this machine:
- `registry`: exactly as the docs say (`pip install "<wheel>[utilities]"`): whatever versions resolve today (the
  newest azure-mgmt-batchai, 7.0.0, imports msrest without declaring it; 7.0.0b1, which az ships, declares it);
- `az-versions`: constrained to the versions this project's azure-cli venv holds (az's pins: what `az extension
  add` users run with).
In each, every module of the drop-in imports, and the README's second-version example (parameter specification,
ParameterSweep, JobCreateParameters, generate_jobs, then the README's submit_jobs(jobs_to_submit, parameters,
"job_name_prefix")) runs with its import lines changed, against the session's local service. The versions each
install resolved are printed (`-s` shows them; a failure names them).
"""
import pkgutil
import json
import os
import subprocess
import sys
from importlib import metadata

import pytest

from tests.fixtures_az import REPO_ROOT
from tests.utilities.migration import migrate, readme_blocks

pytestmark = [pytest.mark.slow, pytest.mark.service]

EXTRA_PACKAGES = ('azure-mgmt-batchai', 'azure-storage-blob', 'azure-storage-file-share', 'azure-mgmt-storage', 'six',
                  'msrest')
IMPORT_ALL = '''
import importlib, pkgutil, sys
import azext_batchai_sweep.utilities as utilities
names = [utilities.__name__] + [utilities.__name__ + '.' + m.name for m in pkgutil.iter_modules(utilities.__path__)]
for name in names:
    importlib.import_module(name)
print(len(names))
'''

SCRIPT = '''
import json, os, sys
import azure.mgmt.batchai.models as models
import azext_batchai_sweep
from azext_batchai_sweep.core.service.client import local_batchai_client

settings = json.load(open(sys.argv[1]))
namespace = {
    'models': models, 'cluster': models.ResourceId(id=settings['cluster_id']),
    'input_directories': [models.InputDirectory(id='SCRIPT', path=settings['script_dir'])],
    'std_output_path_prefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
    'client': local_batchai_client(settings['endpoint'], settings['token_file']),
    'resource_group_name': settings['resource_group'], 'workspace_name': settings['workspace'],
    'experiment_name': 'readme-fresh-venv',
}
for block in settings['blocks']:
    exec(block, namespace)
finished = namespace['experiment_utils'].wait_all_jobs(job_names=[job.name for job in namespace['jobs']])
print(json.dumps({
    'package': os.path.dirname(azext_batchai_sweep.__file__),
    'combinations': namespace['param_combinations'],
    'jobs': sorted([job.name, job.execution_state, job.tensor_flow_settings.master_command_line_args]
                   for job in finished),
}))
'''


def run_checked(args, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False, **kwargs)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result


def installed_versions(python):
    listed = run_checked([python, '-m', 'pip', 'list', '--format', 'json', '--disable-pip-version-check'])
    return {item['name'].lower(): item['version'] for item in json.loads(listed.stdout)}


@pytest.fixture(scope='session', params=['registry', 'az-versions'])
def utilities_venv(request, wheel, tmp_path_factory):
    """A fresh venv with the wheel and its `utilities` extra installed (python path), the user's way or at az's
    versions."""
    root = tmp_path_factory.mktemp('utilities-venv-' + request.param)
    venv = root / 'venv'
    run_checked([sys.executable, '-m', 'venv', str(venv)])
    python = str(venv / 'bin' / 'python')
    constraints = []
    if request.param == 'az-versions':
        constraint_file = root / 'constraints.txt'
        constraint_file.write_text(''.join('{}=={}\n'.format(name, metadata.version(name)) for name in EXTRA_PACKAGES))
        constraints = ['-c', str(constraint_file)]
    run_checked([python, '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', *constraints,
                 wheel + '[utilities]'], cwd=str(root))
    versions = installed_versions(python)
    print('utilities extra ({}): {}'.format(request.param, ', '.join(
        '{} {}'.format(name, versions.get(name)) for name in EXTRA_PACKAGES)))
    return python, request.param, versions


def test_every_module_of_the_drop_in_imports(utilities_venv):
    python, kind, versions = utilities_venv
    env = {key: value for key, value in os.environ.items() if key not in ('PYTHONPATH', 'PYTHONHOME')}
    result = subprocess.run([python, '-c', IMPORT_ALL], capture_output=True, text=True, timeout=120, env=env,
                            cwd=os.path.dirname(python), check=False)
    assert result.returncode == 0, '{} install ({}): {}'.format(kind, versions, result.stderr[-3000:])
    import azext_batchai_sweep.utilities as utilities  # pylint: disable=import-outside-toplevel
    assert int(result.stdout.split()[-1]) == 1 + len(list(pkgutil.iter_modules(utilities.__path__)))


def test_the_extra_installs_the_sdks_without_azure_cli(utilities_venv):
    _, kind, versions = utilities_venv
    assert 'azure-cli' not in versions and 'azure-cli-core' not in versions and 'knack' not in versions
    for name in EXTRA_PACKAGES:
        assert name in versions
        if kind == 'az-versions':
            assert versions[name] == metadata.version(name)


def test_a_readme_example_runs_in_the_fresh_venv(utilities_venv, local_service, tmp_path):
    python, _, _ = utilities_venv
    script_dir = tmp_path / 'script'
    script_dir.mkdir()
    (script_dir / 'train.py').write_text('print("trained")\n')
    blocks = readme_blocks(2)
    settings = {'cluster_id': local_service.cluster_id, 'script_dir': str(script_dir),
                'endpoint': local_service.endpoint, 'token_file': local_service.token_file,
                'resource_group': local_service.resource_group, 'workspace': local_service.workspace,
                'blocks': [migrate(blocks[index])[0] for index in (0, 1, 2, 3, 5)]}
    (tmp_path / 'settings.json').write_text(json.dumps(settings))
    (tmp_path / 'example.py').write_text(SCRIPT)
    # cwd and a clean environment: the installed wheel, never this source tree.
    env = {key: value for key, value in os.environ.items() if key not in ('PYTHONPATH', 'PYTHONHOME')}
    result = run_checked([python, str(tmp_path / 'example.py'), str(tmp_path / 'settings.json')],
                         cwd=str(tmp_path), env=env)
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert 'site-packages' in out['package'] and not out['package'].startswith(REPO_ROOT)
    assert [c['PARAM_LEARNING_RATE'] for c in out['combinations']] == [1e-4, 1e-3, 1e-2, 1e-1]
    assert len(out['jobs']) == 4 and {state for _, state, _ in out['jobs']} == {'succeeded'}
    assert sorted(float(args.split('=')[1]) for _, _, args in out['jobs']) == [1e-4, 1e-3, 1e-2, 1e-1]


def test_the_extra_has_lower_bounds_only():
    # az's pins decide the versions inside az; the extra only says what a plain Python environment needs.
    import ast
    with open(os.path.join(REPO_ROOT, 'setup.py'), encoding='utf-8') as f:
        tree = ast.parse(f.read())
    setup_call = next(node for node in ast.walk(tree)
                      if isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'setup')
    extras = ast.literal_eval(next(k.value for k in setup_call.keywords if k.arg == 'extras_require'))
    names = {requirement.split('>=')[0] for requirement in extras['utilities']}
    assert names == set(EXTRA_PACKAGES)
    assert not any(op in requirement for requirement in extras['utilities'] for op in ('==', '<', '~=', '!='))
