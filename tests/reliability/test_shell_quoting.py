"""File names enumerated from storage reach job command lines shell-quoted: a blob named `a; touch <tmp>/pwned`
is one argument of the job's command and runs nothing.

The local service's Blob endpoint holds the blobs (what its jobs mount: a BLOB parameter with the local target lists
the local container), the real az plans and submits the sweep (`submit --spec`), the local service runs the jobs.
"""
import json

import pytest

from tests.fixtures_az import service_env

from .helpers import wait_until

pytestmark = [pytest.mark.service, pytest.mark.az, pytest.mark.slow]


def test_hostile_blob_names_are_one_argument_each(az, service_factory, tmp_path):
    import os  # pylint: disable=import-outside-toplevel
    from azure.storage.blob import BlobServiceClient  # pylint: disable=import-outside-toplevel
    marker = tmp_path / 'pwned'
    hostile = ['a; touch {}'.format(marker), '$(touch {})'.format(marker), "q'uote `touch {}`".format(marker),
               'plain.txt']
    svc = service_factory(name='quoting', slots=2)
    with open(os.path.join(svc.data_dir, 'storage.key'), encoding='ascii') as f:
        key = f.read().strip()
    account = 'quotingstore'
    connection_string = 'DefaultEndpointsProtocol=http;AccountName={};AccountKey={};BlobEndpoint={}/{};'.format(
        account, key, svc.blob_endpoint, account)
    service = BlobServiceClient.from_connection_string(connection_string)
    container = service.get_container_client('quoting')
    container.create_container()
    for name in hostile:
        container.upload_blob(name, b'x')

    sweep = {'jobNamePrefix': 'q', 'parameters': [
        {'name': 'F', 'type': 'file', 'storageType': 'BLOB', 'storageAccountName': account,
         'container': 'quoting', 'mountPath': 'data'}],
        'job': {'nodeCount': 1, 'cluster': {'id': svc.cluster_id},
                'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
                'customToolkitSettings': {'commandLine': "printf 'ARG[%s]\\n' {{F}}"}}}
    (tmp_path / 'sweep.json').write_text(json.dumps(sweep))
    env = service_env(svc)
    common = ['-g', svc.resource_group, '-w', svc.workspace, '-e', 'quoting', '-n', 'quoting']
    submitted = az('batchai', 'sweep', 'submit', *common, '--spec', 'sweep.json', '--wait', '--interval', '0.5',
                   env=env)
    assert submitted.exit_code == 0, submitted.stderr[-3000:]
    status = az('batchai', 'sweep', 'status', *common, env=env).json()
    assert status['counts']['succeeded'] == len(hostile)
    seen = []
    for row in status['jobs']:
        tail = az('batchai', 'sweep', 'status', *common, '--job', row['name'], '--tail', '5', env=env)
        assert tail.exit_code == 0, tail.stderr[-2000:]
        output = tail.json()
        output = output if isinstance(output, list) else output.get('lines', [])
        lines = [line for line in output if isinstance(line, str) and line.startswith('ARG[')]
        assert len(lines) == 1, tail.stdout  # one argument, whatever the name holds
        seen.append(lines[0])
    for name in hostile:
        assert any(line.endswith('/data/{}]'.format(name)) for line in seen), (name, seen)
    # Nothing the names hold was run (wait a moment: a backgrounded touch would be quick).
    with pytest.raises(AssertionError):
        wait_until(marker.exists, 1, what='marker file')
