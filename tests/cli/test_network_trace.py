"""The filter that keeps Batch AI secrets out of az's --debug network trace (_network_trace.py), on the records az's
own SafeNetworkTraceLoggingPolicy writes; the whole path through az --debug is in tests/reliability/test_secrets.py."""
import contextlib
import io
import json
import logging

import pytest

from azext_batchai_sweep._network_trace import NETWORK_TRACE_LOGGER, redact_network_trace, redact_trace
from azext_batchai_sweep._targeting import _az_logging_policies
from azext_batchai_sweep.core.service.client import local_batchai_client
from azext_batchai_sweep.core.service.rest import jobs_url, send_json

from ..loopback_http import ScriptedHandler, serving

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


class _Job(ScriptedHandler):
    def do_GET(self):  # noqa: N802
        self.reply(200, json.dumps({'name': 'j', 'properties': {'secrets': [{'name': 'S', 'value': 'tok-123'}]}})
                   .encode(), headers={'Content-Type': 'application/json'})


@contextlib.contextmanager
def _az_like_logging():
    """As knack sets az's logging up: its loggers at DEBUG, the handlers choosing (WARNING without --debug); yields
    the names of the records made while it lasts."""
    made, factory = [], logging.getLogRecordFactory()

    def counting(*args, **kwargs):
        record = factory(*args, **kwargs)
        made.append(record.name)
        return record
    root, cli = logging.getLogger(), logging.getLogger('cli')
    saved, console = (root.level, cli.level, root.handlers[:]), logging.StreamHandler(io.StringIO())
    console.setLevel(logging.WARNING)
    root.setLevel(logging.DEBUG)
    cli.setLevel(logging.DEBUG)
    root.handlers[:] = [console]  # pytest's own capture handlers (level 0) would take every record
    logging.setLogRecordFactory(counting)
    try:
        yield made
    finally:
        logging.setLogRecordFactory(factory)
        root.handlers[:] = saved[2]
        root.setLevel(saved[0])
        cli.setLevel(saved[1])


def _get_twice(tmp_path):
    token = tmp_path / 'token'
    token.write_text('TOKEN-XYZ')
    with serving(_Job) as endpoint:
        client = local_batchai_client(endpoint, str(token), **_az_logging_policies())
        url = jobs_url(client, 'g', 'w', 'e', '/j')
        return [send_json(client, 'GET', url) for _ in range(2)]


def test_the_local_clients_trace_makes_no_record_that_no_handler_takes(tmp_path):
    """Without --debug, az's network-trace policy made ~10 DEBUG records a request that its handlers dropped (a
    quarter of a GET's CPU): the local client's makes none, and the requests are answered as before."""
    redact_network_trace()
    with _az_like_logging() as made:
        answers = _get_twice(tmp_path)
    assert [a['name'] for a in answers] == ['j', 'j']
    assert NETWORK_TRACE_LOGGER not in made


@pytest.mark.parametrize('where', ['cli', NETWORK_TRACE_LOGGER])
def test_with_a_debug_handler_the_local_clients_trace_is_written_and_redacted(tmp_path, where):
    """--debug (a DEBUG handler on az's loggers): every request and response is traced as az's policy traces it,
    Authorization and the body's secrets masked."""
    redact_network_trace()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.DEBUG)
    with _az_like_logging() as made:
        logging.getLogger(where).addHandler(handler)
        try:
            _get_twice(tmp_path)
        finally:
            logging.getLogger(where).removeHandler(handler)
    text = stream.getvalue()
    assert text.count('Request URL:') == 2 and text.count('Response status: 200') == 2
    assert "'Authorization': '*****'" in text
    assert 'TOKEN-XYZ' not in text and 'tok-123' not in text and '"value": "*****"' in text
    assert made.count(NETWORK_TRACE_LOGGER) >= 20
