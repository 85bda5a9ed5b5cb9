"""The filter that keeps Batch AI secrets out of az's --debug network trace (_network_trace.py), on the records az's
own SafeNetworkTraceLoggingPolicy writes; the whole path through az --debug is in tests/reliability/test_secrets.py."""
import json
import logging

from azext_batchai_sweep._network_trace import NETWORK_TRACE_LOGGER, redact_network_trace, redact_trace

JOB = {'properties': {
    'cluster': {'id': '/subscriptions/s/resourceGroups/g/providers/Microsoft.BatchAI/workspaces/w/clusters/c'},
    'environmentVariables': [{'name': 'PARAM_LR', 'value': '0.1'}],
    'secrets': [{'name': 'API_TOKEN', 'value': 'tok-123'}, {'name': 'VAULTED', 'valueSecretReference': {
        'sourceVault': {'id': 'v'}, 'secretUrl': 'https://v.vault.azure.net/secrets/x'}}],
    'mountVolumes': {'azureFileShares': [{'accountName': 'acct', 'azureFileUrl': 'https://acct.file.core.windows.net/s',
                                          'credentials': {'accountKey': 'KEY=='}, 'relativeMountPath': 's'}]},
    'containerSettings': {'imageSourceRegistry': {'image': 'img', 'credentials': {'username': 'u',
                                                                                  'password': 'pw'}}}}}
LISTING = {'value': [{'name': 'stdout.txt', 'fileType': 'file',
                      'downloadUrl': 'https://acct.file.core.windows.net/s/stdout.txt?sv=2018&se=x&sig=SIGNATURE',
                      'properties': {'contentLength': 10}}]}


def test_job_bodies_lose_their_credentials_and_keep_the_rest():
    text = redact_trace(json.dumps(JOB))
    for secret in ('tok-123', 'KEY==', '"pw"'):
        assert secret not in text
    body = json.loads(text)['properties']
    assert body['secrets'][0] == {'name': 'API_TOKEN', 'value': '*****'}
    assert body['secrets'][1]['valueSecretReference']['secretUrl'].endswith('/secrets/x')  # a reference, kept
    assert body['environmentVariables'] == [{'name': 'PARAM_LR', 'value': '0.1'}]  # not secret: kept
    assert body['mountVolumes']['azureFileShares'][0]['credentials'] == {'accountKey': '*****'}
    assert body['containerSettings']['imageSourceRegistry']['credentials'] == {'username': 'u', 'password': '*****'}


def test_download_links_lose_their_signatures_and_other_lines_stay_as_they_are():
    assert 'SIGNATURE' not in redact_trace(json.dumps(LISTING))
    assert 'SIGNATURE' not in redact_trace("Request URL: 'https://x/y?sig=SIGNATURE&a=1'")
    for line in ('Request method: \'PUT\'', '    \'Content-Type\': \'application/json\'', '{not json',
                 json.dumps({'properties': {'executionState': 'queued'}})):
        assert redact_trace(line) == line


def test_the_filter_rewrites_records_of_azs_network_trace_logger(caplog):
    redact_network_trace()
    redact_network_trace()  # once per process, however often clients are built
    trace = logging.getLogger(NETWORK_TRACE_LOGGER)
    assert sum(type(f).__name__ == 'RedactNetworkTrace' for f in trace.filters) == 1
    with caplog.at_level(logging.DEBUG, logger=NETWORK_TRACE_LOGGER):
        trace.debug(json.dumps(JOB))  # as SafeNetworkTraceLoggingPolicy logs a request body
        trace.debug('Request URL: %r', 'https://acct.file.core.windows.net/s?sig=SIGNATURE')
    logged = '\n'.join(record.getMessage() for record in caplog.records)
    assert 'tok-123' not in logged and 'KEY==' not in logged and 'SIGNATURE' not in logged
    assert '*****' in logged
