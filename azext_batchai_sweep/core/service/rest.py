"""Batch AI list calls read as JSON through the SDK client's own pipeline, for the lists a sweep reads per job.

The SDK's list operations turn every item into an msrest model: about 0.4 ms of CPU per job listed and 0.15 ms
per listOutputFiles call, which is most of what `status` of 10,000 jobs and `metrics` over 500 jobs cost. These
calls build the same requests (the operations' URLs and api-version) and send them through the client's pipeline
(`_send_request`, the generated client's escape hatch), so authentication, az's policies, retries switched off
per call, and the errors raised are the SDK's; only the models are skipped, by callers that read a few fields.
"""
import json
import urllib.parse

from .retry import NO_SDK_RETRY

API_VERSION = '2018-05-01'
JOBS_PATH = ('/subscriptions/{{subscriptionId}}/resourceGroups/{}/providers/Microsoft.BatchAI/workspaces/{}'
             '/experiments/{}/jobs')


# The path parameters as the SDK's operations format them (its serializer quotes them; the patterns and lengths
# are only checked where the client turns client_side_validation on, which this SDK does not: the service checks).
_NAME_RULES = {'resource_group_name': {'pattern': r'^[-\w\._]+$'},
               'workspace_name': {'max_length': 64, 'min_length': 1, 'pattern': r'^[-\w_]+$'},
               'experiment_name': {'max_length': 64, 'min_length': 1, 'pattern': r'^[-\w_]+$'},
               'job_name': {'max_length': 64, 'min_length': 1, 'pattern': r'^[-\w_]+$'}}


def _path_name(client, kind, value):
    """A name quoted (and checked, where the client validates) by the client's own serializer, as the SDK does."""
    return client._serialize.url(kind, value, 'str', **_NAME_RULES[kind])  # pylint: disable=protected-access


def jobs_url(client, resource_group, workspace, experiment, suffix='', **query):
    """The URL template of the jobs collection (or, with a suffix, of something under it); {subscriptionId} is
    left for _send_request to fill in."""
    path = JOBS_PATH.format(_path_name(client, 'resource_group_name', resource_group),
                            _path_name(client, 'workspace_name', workspace),
                            _path_name(client, 'experiment_name', experiment)) + suffix
    return path + '?' + urllib.parse.urlencode(dict(query, **{'api-version': API_VERSION}))


def job_path_name(client, job):
    """A job's name as a path segment of its URL (quoted and checked as the SDK does)."""
    return _path_name(client, 'job_name', job)


def job_url(client, resource_group, workspace, experiment, job, operation, **query):
    """The URL template of an operation of one job (e.g. listOutputFiles)."""
    return jobs_url(client, resource_group, workspace, experiment,
                    '/{}/{}'.format(_path_name(client, 'job_name', job), operation), **query)


def send_json(client, method, url):
    """The JSON body of a 200 answer; any other status raises what the SDK's operations raise for it."""
    from azure.core.exceptions import (  # pylint: disable=import-outside-toplevel
        ClientAuthenticationError, HttpResponseError, ResourceExistsError, ResourceNotFoundError, map_error)
    from azure.core.pipeline.transport import HttpRequest  # pylint: disable=import-outside-toplevel
    from azure.mgmt.core.exceptions import ARMErrorFormat  # pylint: disable=import-outside-toplevel
    request = HttpRequest(method, url, headers={'Accept': 'application/json'})
    # The generated client's escape hatch in the azure-mgmt-batchai that az ships (7.0.0b1, unchanged since the
    # batchai module was deprecated); tests/experiment/test_listing.py compares what it returns with the SDK's.
    response = client._send_request(request, stream=False, **NO_SDK_RETRY)  # pylint: disable=protected-access
    if response.status_code != 200:
        map_error(status_code=response.status_code, response=response, error_map={
            401: ClientAuthenticationError, 404: ResourceNotFoundError, 409: ResourceExistsError})
        raise HttpResponseError(response=response, error_format=ARMErrorFormat)
    return json.loads(response.text())


def next_page_url(page):
    """The page's continuation link, as a template for _send_request, which fills {subscriptionId} in with
    str.format: braces in the link are doubled. None on the last page."""
    link = page.get('nextLink')
    return link.replace('{', '{{').replace('}', '}}') if link else None
