"""az's connection settings reach this extension's requests: the client az builds through _targeting, in a
subprocess (az reads its configuration once per process), against the session's local service."""
import json
import subprocess
import sys

import pytest

from ..fixtures_az import REPO_ROOT, base_env, service_env

PROGRAM = r'''
import json
from azure.cli.core import get_default_cli
from azext_batchai_sweep._targeting import batchai_client
from azext_batchai_sweep.core.outputs.download import download_session
client = batchai_client(get_default_cli())
transport = client._client._pipeline._transport
print(json.dumps({'transport_verify': transport.connection_config.verify,
                  'download_verify': download_session().verify,
                  'trust_env': transport.session.trust_env}))
'''


@pytest.mark.parametrize('disabled', [False, True])
def test_disabling_connection_verification_reaches_the_client_and_downloads(local_service, tmp_path, disabled):
    extra = service_env(local_service)
    if disabled:
        extra['AZURE_CLI_DISABLE_CONNECTION_VERIFICATION'] = '1'
    done = subprocess.run([sys.executable, '-c', PROGRAM], env=base_env(str(tmp_path), extra), cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    settings = json.loads(done.stdout.strip().splitlines()[-1])
    assert settings['transport_verify'] is not disabled and settings['download_verify'] is not disabled
    assert settings['trust_env'] is False  # the environment is read once per host (core/service/sessions.py)
