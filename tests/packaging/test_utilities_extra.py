"""A notebook user's install: the wheel with the `utilities` extra in a fresh venv without azure-cli.

pip resolves the extra's requirements by name from the package index configured on this machine, constrained to
the versions this project's azure-cli venv holds (az's pins: what `az extension add` users run with). In that venv
the README's second-version example (parameter specification, ParameterSweep, JobCreateParameters, generate_jobs,
then the README's submit_jobs(jobs_to_submit, parameters, "job_name_prefix")) runs with its import lines changed,
against the session's local service. One venv per test session; the install takes a few seconds.
"""
import glob
import json
import os
import subprocess
import sys
from importlib import metadata

import pytest

from tests.fixtures_az import REPO_ROOT
from tests.utilities.migration import migrate, readme_blocks

pytestmark = [pytest.mark.slow, pytest.mark.service]

EXTRA_PACKAGES = ('azure-mgmt-batchai', 'azure-storage-blob', 'azure-storage-file-share', 'azure-mgmt-storage', 'six')

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


@pytest.fixture(scope='session')
def utilities_venv(tmp_path_factory):
    """A fresh venv with the wheel and its `utilities` extra installed (python path)."""
    root = tmp_path_factory.mktemp('utilities-venv')
    run_checked([sys.executable, '-m', 'pip', 'wheel', '--quiet', '--no-deps', '--no-build-isolation', '-w',
                 str(root / 'dist'), REPO_ROOT])
    (wheel,) = glob.glob(str(root / 'dist' / '*.whl'))
    constraints = root / 'constraints.txt'
    constraints.write_text(''.join('{}=={}\n'.format(name, metadata.version(name)) for name in EXTRA_PACKAGES))
    venv = root / 'venv'
    run_checked([sys.executable, '-m', 'venv', str(venv)])
    python = str(venv / 'bin' / 'python')
    run_checked([python, '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-c', str(constraints),
                 wheel + '[utilities]'], cwd=str(root))
    return python


def test_the_extra_installs_the_sdks_at_az_versions_without_azure_cli(utilities_venv):
    listed = run_checked([utilities_venv, '-m', 'pip', 'list', '--format', 'json', '--disable-pip-version-check'])
    versions = {item['name'].lower(): item['version'] for item in json.loads(listed.stdout)}
    assert 'azure-cli' not in versions and 'azure-cli-core' not in versions and 'knack' not in versions
    for name in EXTRA_PACKAGES:
        assert versions[name] == metadata.version(name)


def test_a_readme_example_runs_in_the_fresh_venv(utilities_venv, local_service, tmp_path):
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
    result = run_checked([utilities_venv, str(tmp_path / 'example.py'), str(tmp_path / 'settings.json')],
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
