"""Replay the real Batch service's recorded answers (tests/azurebatch/recorded/) through the scheduler's own client
(TEST CODE; the harness of tests/azurebatch/test_recorded_readers.py, for any test that wants the real answers).

`replaying_api(*items)` gives a `client.BatchApi` whose real `azure.batch.BatchClient` sends its requests to a
`requests` adapter instead of the network: each request is answered by the next recorded interaction with the same
method and path (its status, headers and body as the service sent them), so that what the scheduler reads is what
Batch wrote, through the SDK az ships. `.sent` lists the requests the scheduler built (method, path, query dict,
JSON body), to compare with the recorded requests (`request_shape`, `field_names`).

A request that matches no recorded interaction raises `Unrecorded` in the adapter (BatchApi reports it as a
BatchCallError with that code): the replay never invents an answer.
"""
import io
import json
import urllib.parse

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from urllib3.response import HTTPResponse

from azext_batchai_sweep.localservice.schedulers.azurebatch.client import BatchApi

ENDPOINT = 'https://recorded.region.batch.azure.com'


class Unrecorded(AssertionError):
    """A request the recordings hold no answer for (the replay never invents one)."""


class _Token:
    """A TokenCredential whose token is a placeholder (nothing leaves this process)."""

    def get_token(self, *scopes, **kwargs):  # pylint: disable=unused-argument
        from azure.core.credentials import AccessToken
        return AccessToken('recorded-replay', 2 ** 31)


class RecordedAdapter(BaseAdapter):
    """A requests adapter answering each request with the next unused recorded interaction of its method and path."""

    def __init__(self, items):
        super().__init__()
        self.pending = list(items)
        self.sent = []

    def send(self, request, **kwargs):  # pylint: disable=arguments-differ,unused-argument
        url = urllib.parse.urlsplit(request.url)
        path = urllib.parse.unquote(url.path)
        query = {k: v[0] if len(v) == 1 else v for k, v in urllib.parse.parse_qs(url.query).items()}
        body = request.body
        if isinstance(body, bytes):
            body = body.decode('utf-8')
        self.sent.append({'method': request.method, 'path': path, 'query': query,
                          'body': json.loads(body) if body else None})
        for index, item in enumerate(self.pending):
            if item['method'] == request.method and urllib.parse.unquote(item['path']) == path:
                del self.pending[index]
                return _response(request, item)
        raise Unrecorded('no recorded answer for {} {}'.format(request.method, path))

    def close(self):
        pass


def _response(request, item):
    response = requests.Response()
    response.status_code = item['status']
    headers = dict(item.get('headers') or {})
    if 'response' in item:
        content = json.dumps(item['response']).encode('utf-8')
        headers.setdefault('content-type', 'application/json; odata=minimalmetadata')
    else:
        content = (item.get('responseText') or '').encode('utf-8')
    headers['content-length'] = str(len(content))
    response.headers = CaseInsensitiveDict(headers)
    response.raw = HTTPResponse(body=io.BytesIO(content), headers=headers, status=item['status'],
                                preload_content=False, decode_content=False)
    response.url = request.url
    response.request = request
    response.reason = 'recorded'
    return response


def replaying_api(*items):
    """(BatchApi answering from `items`, the adapter: `.sent`, `.pending`)."""
    from azure.core.pipeline.transport import RequestsTransport
    session = requests.Session()
    adapter = RecordedAdapter(items)
    session.mount('https://', adapter)
    from azure.batch import BatchClient
    client = BatchClient(ENDPOINT, _Token(), transport=RequestsTransport(session=session, session_owner=False))
    return BatchApi(ENDPOINT, _Token(), client=client, retry=_settings()), adapter


def _settings():
    from azext_batchai_sweep.localservice.schedulers.azurebatch.client import _JitteredRetryAfter
    return _JitteredRetryAfter(max_retries=2, base_delay=0.0, max_delay=0.0, sleep=lambda _s: None,
                               random=lambda: 0.0)


def field_names(body, prefix=''):
    """Every property path of a JSON body ('virtualMachineConfiguration.imageReference.publisher'; list items
    share their list's path)."""
    names = set()
    if isinstance(body, dict):
        for key, value in body.items():
            names.add(prefix + key)
            names |= field_names(value, prefix + key + '.')
    elif isinstance(body, list):
        for value in body:
            names |= field_names(value, prefix)
    return names


def path_template(path, ids):
    """`path` with each of `ids` (the recording's or ours) replaced by '{}', to compare the two paths' shape."""
    parts = [('{}' if urllib.parse.unquote(p) in ids else p) for p in path.split('/')]
    return '/'.join(parts)


def unknown_fields(body, schema, prefix=''):
    """The property paths of `body` that the spec schema (a swagger schema of tests/specs' Batch spec, `$ref` and
    `allOf` followed) does not name, spelled exactly: a misspelled or mis-cased field the service would ignore."""
    from tests.azurebatch.recorded_batch import _spec
    spec = _spec()

    def resolve(node):
        while isinstance(node, dict) and '$ref' in node:
            node = spec['definitions'][node['$ref'].rsplit('/', 1)[-1]]
        return node or {}

    def properties(node):
        node = resolve(node)
        found = dict(node.get('properties') or {})
        for part in node.get('allOf') or []:
            found.update(properties(part))
        return found

    unknown = []
    schema = resolve(schema)
    if isinstance(body, dict):
        known = properties(schema)
        for key, value in body.items():
            if key not in known:
                unknown.append(prefix + key)
            else:
                unknown += unknown_fields(value, known[key], prefix + key + '.')
    elif isinstance(body, list):
        for value in body:
            unknown += unknown_fields(value, schema.get('items') or {}, prefix)
    return unknown
