"""A job's environment is what Batch AI would give it (localservice/schedulers/jobenv.py): a minimal base, the Batch AI
variables, the job's own; never the environment of the shell that started the service."""
import pytest

from azext_batchai_sweep.localservice.schedulers.jobenv import (BASE_VARIABLES, DEFAULT_PATH, base_environment,
                                                               job_environment)
from tests.localservice.conftest import job_params, wait_state
from azext_batchai_sweep.core.service.client import local_batchai_client

# What a developer's shell holds and a job must never see.
LEAKY = {
    'AZURE_CLIENT_SECRET': 'client-secret-value', 'AZURE_STORAGE_KEY': 'storage-key-value',
    'AZURE_CONFIG_DIR': '/home/me/.azure', 'AZURE_EXTENSION_DEV_SOURCES': '/src', 'PYTHONPATH': '/ext/src',
    'AZURE_BATCHAI_STORAGE_ACCOUNT': 'acct', 'HTTPS_PROXY': 'http://user:pw@proxy:3128', 'GITHUB_TOKEN': 'ghp_x',
    'MY_SECRET': 'hunter2', 'VIRTUAL_ENV': '/venv', 'LD_PRELOAD': '/tmp/evil.so',
}
# bash adds these itself.
SHELL_ADDED = {'PWD', 'SHLVL', '_', 'OLDPWD'}


@pytest.mark.parametrize('source, expected', [
    ({'PATH': '/p', 'HOME': '/h', 'LANG': 'C.UTF-8', **LEAKY}, {'PATH': '/p', 'HOME': '/h', 'LANG': 'C.UTF-8'}),
    ({'LC_ALL': 'C', 'LC_CTYPE': 'C', 'TZ': 'UTC', 'USER': 'u', 'LOGNAME': 'u', 'SHELL': '/bin/sh', **LEAKY},
     {'PATH': DEFAULT_PATH, 'LC_ALL': 'C', 'LC_CTYPE': 'C', 'TZ': 'UTC', 'USER': 'u', 'LOGNAME': 'u',
      'SHELL': '/bin/sh'}),
    ({}, {'PATH': DEFAULT_PATH}),
    ({'PATH': '', 'HOME': ''}, {'PATH': DEFAULT_PATH}),  # empty counts as unset
])
def test_the_base_keeps_only_the_login_variables(source, expected):
    assert base_environment(source) == expected


def test_the_job_and_batchai_variables_come_after_the_base_in_that_order():
    spec = {'environmentVariables': [{'name': 'HOME', 'value': '/job-home'}, {'name': 'X', 'value': 'env'}],
            'secrets': [{'name': 'X', 'value': 'secret'}, {'name': 'AZ_BATCHAI_JOB_NAME', 'value': 'mine'}]}
    env = job_environment({'AZ_BATCHAI_JOB_NAME': 'j', 'AZ_BATCHAI_JOB_TEMP': '/t', 'PATH': '/batchai'}, spec,
                          source={'PATH': '/p', 'HOME': '/h', **LEAKY})
    assert env == {'PATH': '/batchai', 'HOME': '/job-home', 'X': 'secret', 'AZ_BATCHAI_JOB_NAME': 'mine',
                   'AZ_BATCHAI_JOB_TEMP': '/t'}
    assert set(BASE_VARIABLES) >= {'PATH', 'HOME', 'LANG'}


def test_a_job_never_sees_the_environment_of_the_shell_that_started_the_service(service_factory, monkeypatch,
                                                                                 tmp_path):
    for name, value in LEAKY.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv('LANG', 'C.UTF-8')
    info = service_factory(slots=1)
    client = local_batchai_client(info.endpoint, info.token_file, info.subscription)
    rg, ws = info.resource_group, info.workspace
    client.experiments.begin_create(rg, ws, 'env').result()
    dump = tmp_path / 'env.txt'
    params = job_params(info, 'env -0 > {}'.format(dump), environment_variables=[
        {'name': 'OWN', 'value': 'mine'}], secrets=[{'name': 'SECRET', 'value': 's'}])
    client.jobs.begin_create(rg, ws, 'env', 'dump', params).result()
    assert wait_state(client, info, 'env', 'dump').execution_state == 'succeeded'
    env = dict(item.split('=', 1) for item in dump.read_text().split('\0') if item)
    leaked = {name for name in env if name in LEAKY or name.startswith('AZURE_')}
    assert not leaked
    assert not [value for value in LEAKY.values() if value in env.values()]
    assert env['OWN'] == 'mine' and env['SECRET'] == 's' and env['LANG'] == 'C.UTF-8'
    assert env['AZ_BATCHAI_JOB_NAME'] == 'dump' and env['BATCHAI_LOCAL_JOB']
    allowed = set(BASE_VARIABLES) | SHELL_ADDED | {'OWN', 'SECRET', 'BATCHAI_LOCAL_JOB'}
    assert {name for name in env if not name.startswith(('AZ_BATCHAI_', 'AZ_BATCH_', 'LC_'))} <= allowed
