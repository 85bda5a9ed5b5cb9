"""az's own `az batchai` commands while the local target is set (azext_batchai_sweep/_builtin_routing.py), through the
real az (extension from source) against the session's local service: what is routed, what is refused and why, and
that routing fails closed when az's internals are not what the extension expects. The recipe as a whole, through the
installed wheel, is tests/packaging/test_batchai_recipes.py."""
import json
import os
import subprocess
import sys

import pytest

from tests.fixtures_az import REPO_ROOT, base_env, service_env

pytestmark = [pytest.mark.az, pytest.mark.service]

UNAVAILABLE = 'Local routing of the built-in "az batchai" commands is unavailable with azure-cli'


@pytest.fixture
def targeted(az, local_service):
    """`az` pointed at the session's service the way `local start` points it (the variables override az config)."""
    az.env.update(service_env(local_service))
    return az


def using(local_service):
    return 'Using the Batch AI service at {}'.format(local_service.endpoint)


def test_builtin_show_and_list_commands_use_the_local_service_without_a_login(targeted, local_service):
    shown = targeted('batchai', 'workspace', 'show', '-g', local_service.resource_group, '-n',
                     local_service.workspace, '--query', 'name', '-o', 'tsv')
    assert shown.exit_code == 0 and shown.stdout.strip() == local_service.workspace, shown.stderr
    assert using(local_service) in shown.stderr
    clusters = targeted('batchai', 'cluster', 'list', '-g', local_service.resource_group, '-w',
                        local_service.workspace, '--query', '[].name', '-o', 'tsv')
    assert clusters.exit_code == 0 and local_service.cluster in clusters.stdout.split(), clusters.stderr
    missing = targeted('batchai', 'experiment', 'show', '-g', local_service.resource_group, '-w',
                       local_service.workspace, '-n', 'no-such-experiment')
    assert missing.exit_code == 3 and 'ExperimentNotFound' in missing.stderr and 'no-such-experiment' in missing.stderr


def test_commands_the_local_service_cannot_serve_say_why_and_send_nothing(targeted, local_service):
    refused = targeted('batchai', 'cluster', 'node', 'list', '-c', local_service.cluster, '-g',
                       local_service.resource_group, '-w', local_service.workspace)
    assert refused.exit_code == 1, refused.stderr
    assert 'is not available on the local Batch AI service at {}: a local cluster has no nodes'.format(
        local_service.endpoint) in refused.stderr
    assert 'az batchai sweep local stop' in refused.stderr and 'Traceback' not in refused.stderr


def test_other_management_clients_are_refused_instead_of_using_an_azure_login(targeted, local_service):
    # Without -l, workspace create reads the resource group's location from Azure Resource Manager.
    created = targeted('batchai', 'workspace', 'create', '-g', local_service.resource_group, '-n', 'no-location')
    assert created.exit_code == 1, created.stderr
    assert 'asked for an Azure Resource Manager client' in created.stderr
    assert 'give the location with -l/--location' in created.stderr
    assert "az login" not in created.stderr and 'Traceback' not in created.stderr


@pytest.mark.parametrize('endpoint', ['http://192.0.2.1:8080', 'https://192.0.2.1'])
def test_the_local_token_goes_to_loopback_only(az, local_service, endpoint):
    result = az('batchai', 'workspace', 'list', '-g', 'rg', env={
        'AZURE_BATCHAI_SWEEP_ENDPOINT': endpoint, 'AZURE_BATCHAI_SWEEP_TOKEN_FILE': local_service.token_file})
    assert result.exit_code == 1, result.stderr
    assert 'is routed only to a local Batch AI service on this machine' in result.stderr
    assert 'nothing was sent' in result.stderr and 'Traceback' not in result.stderr


def run_az_patched(patch, args, env):
    """az's own entry point (`python -m azure.cli`) after `patch` (Python source) ran: az internals as another az
    version might have them. Real az otherwise, with the extension from source."""
    code = '{}\nimport runpy, sys\nsys.argv = ["az"] + {!r}\nrunpy.run_module("azure.cli", run_name="__main__")' \
        .format(patch, list(args))
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env, cwd=REPO_ROOT,
                          timeout=300, check=False)


@pytest.mark.parametrize('patch, why', [
    # The built-in factory module binds get_mgmt_service_client at import time instead of at call time.
    ('import azure.cli.command_modules.batchai._client_factory as f\n'
     'from azure.cli.core.commands.client_factory import get_mgmt_service_client\n'
     'f.get_mgmt_service_client = get_mgmt_service_client',
     'holds its own reference to get_mgmt_service_client'),
    # The built-in factory builds its client some other way.
    ('import azure.cli.command_modules.batchai._client_factory as f\n'
     'from azure.mgmt.batchai import BatchAI\n'
     'f.batchai_client_factory = lambda cli_ctx, _=None: BatchAI(object(), "sub")',
     'did not build the client through azure.cli.core.commands.client_factory.get_mgmt_service_client'),
], ids=['module-level-reference', 'own-client'])
def test_routing_fails_closed_when_az_internals_differ(az_config_dir, local_service, patch, why):
    env = base_env(az_config_dir, service_env(local_service))
    result = run_az_patched(patch, ['batchai', 'workspace', 'list', '-g', local_service.resource_group], env)
    assert result.returncode == 1, result.stderr
    assert UNAVAILABLE in result.stderr and why in result.stderr, result.stderr
    assert 'Nothing was sent' in result.stderr and 'Traceback' not in result.stderr
    assert result.stdout == ''


def test_storage_commands_reach_the_local_files_endpoint_with_the_shown_connection_string(az, local_service,
                                                                                          tmp_path):
    with open(os.path.join(local_service.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    status = az('batchai', 'sweep', 'local', 'status', '--data-dir', local_service.data_dir, '-o', 'json')
    assert status.exit_code == 0, status.stderr
    assert ('export AZURE_STORAGE_CONNECTION_STRING="$(az batchai sweep local show-connection-string -n <storage '
            'account name> --data-dir {} --query connectionString -o tsv)"'.format(local_service.data_dir)
            in status.stderr)
    assert key not in status.stdout + status.stderr

    shown = az('batchai', 'sweep', 'local', 'show-connection-string', '-n', 'routingtest', '--data-dir',
               local_service.data_dir, '--query', 'connectionString', '-o', 'tsv', '--debug')
    assert shown.exit_code == 0 and key in shown.stdout and key not in shown.stderr, shown.stderr
    env = {'AZURE_STORAGE_CONNECTION_STRING': shown.stdout.strip()}
    # Larger than one 4 MiB Put Range: az uploads it in several ranges.
    payload = os.urandom(5 * 1024 * 1024 + 123)
    (tmp_path / 'data.bin').write_bytes(payload)
    assert az('storage', 'share', 'create', '-n', 'routing', env=env).exit_code == 0
    uploaded = az('storage', 'file', 'upload', '-s', 'routing', '--source', str(tmp_path / 'data.bin'),
                  '--account-name', 'routingtest', '-o', 'none', env=env)
    assert uploaded.exit_code == 0, uploaded.stderr
    stored = os.path.join(local_service.data_dir, 'storage', 'routingtest', 'shares', 'routing', 'data.bin')
    with open(stored, 'rb') as f:
        assert f.read() == payload
    listed = az('storage', 'file', 'list', '-s', 'routing', '--query', '[].[name, properties.contentLength]',
                '-o', 'json', env=env)
    assert listed.json() == [['data.bin', len(payload)]], listed.stderr
    shares = az('storage', 'share', 'list', '--query', '[].name', '-o', 'json', env=env)
    assert 'routing' in shares.json(), shares.stderr
    # Blob commands with the string reach the local Blob endpoint: the container is the folder jobs mount.
    blob = az('storage', 'container', 'create', '-n', 'data', env=env)
    assert blob.exit_code == 0, blob.stderr
    assert os.path.isdir(os.path.join(local_service.data_dir, 'storage', 'routingtest', 'containers', 'data'))
    # Queue commands stay on this machine and are refused there (the string names the Files endpoint for them).
    queue = az('storage', 'queue', 'create', '-n', 'myqueue', env=env)
    assert queue.exit_code == 1 and 'The local Azure Files endpoint does not support' in queue.stderr, queue.stderr


def test_job_create_gets_the_local_storage_key_and_no_secret_reaches_debug_output(targeted, local_service,
                                                                                  tmp_path):
    """`--storage-account-name` without a key: az would look the key up in Azure; the local key is filled in, and
    neither it nor the service's token shows up anywhere, --debug included."""
    job = {'properties': {
        'nodeCount': 1, 'customToolkitSettings': {'commandLine': 'echo routed'},
        'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
        'mountVolumes': {'azureFileShares': [{
            'azureFileUrl': 'https://<AZURE_BATCHAI_STORAGE_ACCOUNT>.file.core.windows.net/logs',
            'relativeMountPath': 'logs'}]}}}
    (tmp_path / 'job.json').write_text(json.dumps(job))
    group = ['-g', local_service.resource_group, '-w', local_service.workspace]
    assert targeted('batchai', 'experiment', 'create', *group, '-n', 'routing', '-o', 'none').exit_code == 0
    created = targeted('batchai', 'job', 'create', *group, '-e', 'routing', '-n', 'keyed', '-c',
                       local_service.cluster, '-f', 'job.json', '--storage-account-name', 'routingtest', '--debug')
    assert created.exit_code == 0, created.stderr[-3000:]
    assert json.loads(created.stdout)['mountVolumes']['azureFileShares'][0]['accountName'] == 'routingtest'
    with open(os.path.join(local_service.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    for secret in (key, local_service.token):
        assert secret not in created.stdout + created.stderr
    assert '"accountKey": "*****"' in created.stderr  # it was sent (masked in the trace), not looked up in Azure


def test_a_configured_storage_account_gets_the_local_key_not_the_configured_one(az_config_dir, local_service):
    """az config batchai.storage_account/storage_key (here from their environment variables) name an account and
    maybe an Azure key: on the local service the account gets the local key, and the configured key is never sent.
    Runs the hook on a real az CLI context (the same code az's post-parse event calls)."""
    code = ('import argparse, json\n'
            'from azure.cli.core import get_default_cli\n'
            'from azext_batchai_sweep._builtin_routing import _fill_local_storage_key\n'
            'cli = get_default_cli()\n'
            'for key in (None, "given-on-the-command-line"):\n'
            '    args = argparse.Namespace(account_name=None, account_key=key)\n'
            '    _fill_local_storage_key(cli, "batchai job create", args)\n'
            '    print(json.dumps([args.account_name, args.account_key]))\n')
    env = base_env(az_config_dir, {**service_env(local_service),
                                   'AZURE_BATCHAI_STORAGE_ACCOUNT': 'configured',
                                   'AZURE_BATCHAI_STORAGE_KEY': 'an-azure-key'})
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env, cwd=REPO_ROOT,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(local_service.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [
        ['configured', key], [None, 'given-on-the-command-line']]
