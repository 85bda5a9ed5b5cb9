"""The Azure Batch data-plane calls of the scheduler, through the SDK's `azure.batch.BatchClient` (imported lazily:
`--scheduler processes` never loads it), with the project's retry rules.

Bodies go out and answers come back as Batch REST JSON (camelCase dicts, as in the spec): the mapping modules build
and read them, independent of the SDK's model classes and version.

Retries (core/service/retry.py's rules, the SDK's own retry policy off): throttling and server errors (429, 500,
503...) and lost connections are retried with exponential backoff and full jitter, or after the answer's
Retry-After plus a little jitter (so that many services throttled at once do not come back at once). Adds are
idempotent by construction: task ids are deterministic, so a retried add whose first try was applied answers
TaskExists, which counts as success when the task there runs the same job (its job identity, tasks.task_identity;
the command line is the same wrapper for every task); PoolExists and
JobExists likewise for the cluster's pool and job. Deletes of what is gone already count as done.
"""
import logging
import random

from .auth import LoginError
from .spelling import same
from .states import redact_sas
from ....core.service.retry import (NO_SDK_RETRY, RetrySettings, call_with_retries, is_retryable, retry_after_seconds,
                                   status_of)

logger = logging.getLogger(__name__)

# Batch's task collection add takes at most this many tasks per request (and a request of at most 1 MB:
# tasks.MAX_ADD_BYTES).
MAX_TASKS_PER_ADD = 100
# The fields of a task one poll reads: its state and what decides its outcome; nothing else (environment, command
# line) travels back.
POLL_SELECT = ['id', 'state', 'stateTransitionTime', 'previousState', 'executionInfo', 'nodeInfo', 'constraints']


class BatchCallError(Exception):
    """A data-plane call failed for good: `status` (None: no answer), Batch's error `code` and message."""

    def __init__(self, what, status, code, message):
        message = redact_sas(message) if message else message  # Batch may quote a task's outputFiles URL
        super().__init__('{} failed: {}{}'.format(what, code or 'HTTP {}'.format(status), ': ' + message
                                                  if message else ''))
        self.status, self.code, self.message = status, code, message


class _JitteredRetryAfter(RetrySettings):
    """The project's backoff, with jitter added to a server's Retry-After (up to a quarter of it, at most 5 s)."""

    def backoff(self, attempt, exc=None):
        delay = super().backoff(attempt, exc)
        if exc is not None and retry_after_seconds(exc) is not None:
            delay += self.random() * min(5.0, delay * 0.25)
        return delay


def error_code(exc):
    """(Batch error code, message) of a failed call, from its JSON answer ({"code", "message": {"value"}})."""
    model = getattr(exc, 'model', None)
    code = getattr(model, 'code', None)
    message = getattr(model, 'message', None)
    if code is None:
        response = getattr(exc, 'response', None)
        try:
            answer = response.json() if response is not None else None
        except Exception:  # pylint: disable=broad-except
            answer = None
        if isinstance(answer, dict):
            code, message = answer.get('code'), answer.get('message')
    if isinstance(message, dict):
        message = message.get('value')
    elif message is not None and not isinstance(message, str):
        message = getattr(message, 'value', None) or str(message)
    return code, message


def _add_collection(client, job_id, body):
    """One `addtaskcollection` request, as the REST API defines it.

    The SDK's public create_task_collection (its _patch.py) takes a list, chunks it itself, counts every TaskExists
    as success whatever the task there is, and retries server errors without bound; the scheduler needs each
    request's own answer, so it calls the generated operation beneath it (the public one where that is missing).
    """
    try:
        from azure.batch._operations._operations import (  # pylint: disable=import-outside-toplevel
            BatchClientOperationsMixin as Generated)
    except ImportError:  # another SDK layout: the public operation, which also takes the REST JSON tasks
        return _add_collection_public(client, job_id, body)
    return Generated.create_task_collection(client, job_id, body, **NO_SDK_RETRY)


def _add_collection_public(client, job_id, body):
    """The public operation gives up on a request it does not retry itself (a 429: throttled) with one
    CreateTasksError for the whole add; the request's own error is raised instead, so that the client's rules retry
    it as they retry every other request (Retry-After, the backoff, the retry settings' limit)."""
    from azure.core.exceptions import HttpResponseError  # pylint: disable=import-outside-toplevel
    try:
        return client.create_task_collection(job_id, body['value'], **NO_SDK_RETRY)
    except HttpResponseError as exc:
        errors = getattr(exc, 'errors', None)  # (CreateTasksError's: each request's own; one request here)
        if not errors:
            raise  # only tasks Batch refused (the public add raises for those too): the add fails whole, as before
        raise errors[0] from exc


def _enable_autoscale(client, pool_id, body):
    """One `enableautoscale` request with the REST JSON body as given. The SDK's public operation (its _patch.py)
    takes the interval as a timedelta and writes it `PT05M00S`; the pool add sends `PT5M` and every recorded
    request writes the short form (Azure PowerShell's TestAutoScaleActions: `PT8M`), so the generated operation
    beneath it is called with the body itself (the public one where that is missing)."""
    try:
        from azure.batch._operations._operations import (  # pylint: disable=import-outside-toplevel
            BatchClientOperationsMixin as Generated)
    except ImportError:  # another SDK layout: the public operation
        from ...resources import parse_duration  # pylint: disable=import-outside-toplevel
        interval = body.get('autoScaleEvaluationInterval')
        return client.enable_pool_auto_scale(
            pool_id, auto_scale_formula=body.get('autoScaleFormula'),
            auto_scale_evaluation_interval=parse_duration(interval) if interval else None, **NO_SDK_RETRY)
    return Generated.enable_pool_auto_scale(client, pool_id, dict(body), **NO_SDK_RETRY)


def _task_list(client, job_id, query):
    """Every page of one task list as the REST JSON it is (the answers' dicts, as the spec has them).

    The SDK's public list_tasks turns each task into a model and the poll turned it back into JSON: 0.3 ms of CPU
    per task, over 3 s for a poll of 10,000 tasks (issue 44). The generated request builder beneath it makes the same
    request (URL, api-version, $filter, $select); the pages are read with json, the next ones by their
    odata.nextLink with the client's api-version, as the SDK reads them. Errors raise HttpResponseError, as the
    SDK's do (the answer's JSON holds Batch's code). The public operation where that builder is missing."""
    try:
        from azure.batch._operations._operations import (  # pylint: disable=import-outside-toplevel
            build_batch_list_tasks_request)
    except ImportError:  # another SDK layout
        return [_plain(t) for t in client.list_tasks(job_id, **query, **NO_SDK_RETRY)]
    import urllib.parse  # pylint: disable=import-outside-toplevel
    from azure.core.exceptions import HttpResponseError  # pylint: disable=import-outside-toplevel
    from azure.core.rest import HttpRequest  # pylint: disable=import-outside-toplevel
    api_version = client._config.api_version  # pylint: disable=protected-access
    request = build_batch_list_tasks_request(job_id=job_id, api_version=api_version, **query)
    tasks = []
    while request is not None:
        response = client.send_request(request, **NO_SDK_RETRY)
        if response.status_code != 200:
            raise HttpResponseError(response=response)
        page = response.json()
        tasks.extend(page.get('value') or ())
        next_link = page.get('odata.nextLink')
        request = None
        if next_link:
            parsed = urllib.parse.urlparse(next_link)
            params = dict(urllib.parse.parse_qsl(parsed.query))
            params['api-version'] = api_version
            request = HttpRequest('GET', urllib.parse.urljoin(next_link, parsed.path), params=params,
                                  headers={'Accept': 'application/json'})
    return tasks


def _plain(value):
    """An SDK model (a MutableMapping of REST names) as plain JSON; dicts and lists as they are."""
    if hasattr(value, 'as_dict'):
        return value.as_dict()
    return value


class BatchApi:
    """The calls the scheduler makes, each retried by the rules above; errors raised as BatchCallError."""

    def __init__(self, endpoint, credential, retry=None, client=None, **client_options):
        self.endpoint = endpoint
        self._credential = credential
        self._retry = retry or _JitteredRetryAfter(max_retries=8, base_delay=0.5, max_delay=20.0,
                                                    random=random.random)
        self._client = client
        self._client_options = client_options
        self.calls = {}  # operation -> requests sent (retries included): what `local status` and tests count

    @property
    def client(self):
        if self._client is None:
            from azure.batch import BatchClient  # pylint: disable=import-outside-toplevel
            self._client = BatchClient(self.endpoint, self._credential, **self._client_options)
        return self._client

    def _call(self, what, fn, ok_codes=(), ok_status=()):
        """fn() with retries; an error whose code is in `ok_codes` (or status in `ok_status`) answers None."""
        def once():
            self.calls[what] = self.calls.get(what, 0) + 1
            return fn()

        rejected = []  # the 401s of this call: the first asks az for a new token and is tried again, once

        def on_error(exc):
            if status_of(exc) == 401:
                rejected.append(exc)
                if hasattr(self._credential, 'invalidate'):
                    self._credential.invalidate()  # rejected before its expiry: the next try asks az again

        def retryable(exc):
            return is_retryable(exc) or (status_of(exc) == 401 and len(rejected) == 1)

        try:
            return call_with_retries(once, settings=self._retry, retryable=retryable, on_error=on_error, what=what)
        except LoginError:
            raise  # az's own words say what to do (az login)
        except Exception as exc:  # pylint: disable=broad-except
            status = status_of(exc)
            code, message = error_code(exc)
            if code in ok_codes or status in ok_status:
                return None
            raise BatchCallError(what, status, code or type(exc).__name__, message) from None

    # ---- pools and jobs ----------------------------------------------------------------------------------------

    def create_pool(self, body):
        """Add a pool; True when added, False when it existed already (a repeated create)."""
        return self._call('create_pool', lambda: self.client.create_pool(body, **NO_SDK_RETRY) or True,
                          ok_codes=('PoolExists',)) is not None

    def get_pool(self, pool_id, select=None):
        """The pool's JSON, or None when there is none."""
        return _plain(self._call('get_pool', lambda: self.client.get_pool(pool_id, select=select, **NO_SDK_RETRY),
                                 ok_status=(404,)))

    def resize_pool(self, pool_id, body):
        self._call('resize_pool', lambda: self.client.resize_pool(pool_id, body, **NO_SDK_RETRY))

    def enable_autoscale(self, pool_id, body):
        """A new autoscale formula (and evaluation interval) on the pool, the body sent as given (REST JSON)."""
        self._call('enable_pool_auto_scale', lambda: _enable_autoscale(self.client, pool_id, body))

    def disable_autoscale(self, pool_id):
        self._call('disable_pool_auto_scale', lambda: self.client.disable_pool_auto_scale(pool_id, **NO_SDK_RETRY))

    def delete_pool(self, pool_id):
        self._call('delete_pool', lambda: self.client.delete_pool(pool_id, **NO_SDK_RETRY),
                   ok_codes=('PoolNotFound', 'PoolBeingDeleted'), ok_status=(404,))

    def list_pools(self, prefix=None):
        """The pools (whose id starts with `prefix`; None: all the account's) with their size, node counts,
        allocation state, resize errors and metadata (their owner: ownership.py)."""
        select = ['id', 'vmSize', 'allocationState', 'currentDedicatedNodes', 'currentLowPriorityNodes',
                  'targetDedicatedNodes', 'targetLowPriorityNodes', 'resizeErrors', 'enableAutoScale',
                  'autoScaleRun', 'autoScaleEvaluationInterval', 'metadata']
        query = {'select': select}
        if prefix is not None:
            query['filter'] = "startswith(id,'{}')".format(prefix.replace("'", "''"))
        return self._call('list_pools', lambda: [_plain(p) for p in self.client.list_pools(
            **query, **NO_SDK_RETRY)])

    def list_nodes(self, pool_id):
        """The nodes of a pool (id, state, start task's outcome, errors: why an unusable node is so)."""
        return self._call('list_nodes', lambda: [_plain(n) for n in self.client.list_nodes(
            pool_id, select=['id', 'state', 'startTaskInfo', 'errors'], **NO_SDK_RETRY)], ok_status=(404,)) or []

    def list_supported_images(self):
        """The account's supported images (imageReference, nodeAgentSKUId, capabilities, end of life)."""
        return self._call('list_supported_images', lambda: [_plain(i) for i in self.client.list_supported_images(
            **NO_SDK_RETRY)])

    def create_job(self, body):
        """Add a Batch job; True when added, False when it existed already."""
        return self._call('create_job', lambda: self.client.create_job(body, **NO_SDK_RETRY) or True,
                          ok_codes=('JobExists',)) is not None

    def get_job(self, job_id, select=None):
        """The Batch job's JSON, or None when there is none."""
        return _plain(self._call('get_job', lambda: self.client.get_job(job_id, select=select, **NO_SDK_RETRY),
                                 ok_status=(404,)))

    def delete_job(self, job_id):
        self._call('delete_job', lambda: self.client.delete_job(job_id, **NO_SDK_RETRY),
                   ok_codes=('JobNotFound', 'JobBeingDeleted'), ok_status=(404,))

    # ---- tasks ------------------------------------------------------------------------------------------------

    def add_tasks(self, job_id, bodies):
        """Add tasks; {task id: None when added (or there already: _same_task), else (code, message)}.

        Whoever built the list, it goes in as many collection adds as Batch's limits need (tasks.chunks: at most
        MAX_TASKS_PER_ADD tasks and tasks.MAX_ADD_BYTES as the SDK sends them), never one Batch refuses whole
        (TooManyTasks, RequestBodyTooLarge); a task too large for any request is answered RequestTooLarge, the others
        are added."""
        from .tasks import MAX_ADD_BYTES, chunks, request_bytes  # pylint: disable=import-outside-toplevel
        results, fit = {}, []
        for body in bodies:
            size = request_bytes({'value': [body]})
            if size > MAX_ADD_BYTES:
                results[body['id']] = ('RequestTooLarge', 'The task is {} bytes, more than a Batch request may carry '
                                       '({}).'.format(size, MAX_ADD_BYTES))
            else:
                fit.append(body)
        for chunk in chunks(fit, max_count=MAX_TASKS_PER_ADD, max_bytes=MAX_ADD_BYTES):
            results.update(self._add_request(job_id, chunk))
        return results

    def _add_request(self, job_id, bodies):
        """One collection add of tasks within Batch's limits; a task the add reports failed with a server error is
        tried again, alone, by the same rules."""
        results = {}
        pending = list(bodies)
        for _ in range(self._retry.max_retries + 1):
            if not pending:
                break
            answer = _plain(self._call('add_task_collection', lambda: _add_collection(
                self.client, job_id, {'value': pending})))
            by_id = {body['id']: body for body in pending}
            again = []
            for item in (answer or {}).get('value') or []:
                task_id = item.get('taskId')
                error = item.get('error') or {}
                code = error.get('code')
                message = error.get('message')
                if isinstance(message, dict):
                    message = message.get('value')
                if same(item.get('status'), 'success'):  # the real service: 'Success'
                    results[task_id] = None
                elif code == 'TaskExists' and task_id in by_id:
                    results[task_id] = self._same_task(job_id, by_id[task_id])
                elif same(item.get('status'), 'servererror') and task_id in by_id:
                    again.append(by_id[task_id])
                else:
                    # (stored as the job's error: a quoted outputFiles URL loses its SAS)
                    results[task_id] = (code or 'TaskAddFailed', redact_sas(message or ''))
            for body in pending:  # not answered at all: tried again
                if body['id'] not in results and body not in again:
                    again.append(body)
            pending = again
        for body in pending:
            results[body['id']] = ('TaskAddFailed', 'Batch kept answering a server error to the task add.')
        return results

    def _same_task(self, job_id, body):
        """A TaskExists answer: None when the task there runs the same job as the one we add (its job identity,
        tasks.task_identity: a retried or re-sent add, a success), else (code, message)."""
        from .tasks import task_identity  # pylint: disable=import-outside-toplevel
        there = _plain(self._call('get_task', lambda: self.client.get_task(
            job_id, body['id'], select=['id', 'displayName', 'environmentSettings'], **NO_SDK_RETRY)))
        ours = task_identity(body)
        if there and ours is not None and task_identity(there) == ours:
            return None
        return ('TaskExists', 'Batch job {} already has a task {} of another job ({}).'.format(
            job_id, body['id'], (there or {}).get('displayName') or 'not made by this service'))

    def list_tasks(self, job_id, since=None):
        """One list call (all pages) for the tasks of a Batch job: those whose state changed at or after `since` (an
        ISO time; None: all), with only the fields a poll reads."""
        query = {'select': POLL_SELECT}
        if since:
            query['filter'] = "stateTransitionTime ge datetime'{}'".format(since)
        return self._call('list_tasks', lambda: _task_list(self.client, job_id, query),
                          ok_codes=('JobNotFound',)) or []

    def terminate_task(self, job_id, task_id):
        self._call('terminate_task', lambda: self.client.terminate_task(job_id, task_id, **NO_SDK_RETRY),
                   ok_codes=('TaskNotFound', 'JobNotFound', 'TaskCompleted'), ok_status=(404,))

    def delete_task(self, job_id, task_id):
        self._call('delete_task', lambda: self.client.delete_task(job_id, task_id, **NO_SDK_RETRY),
                   ok_codes=('TaskNotFound', 'JobNotFound'), ok_status=(404,))

    # ---- task files ------------------------------------------------------------------------------------------

    def list_task_files(self, job_id, task_id):
        """{path relative to the task directory: size} of the task's files (recursive); {} when it has none yet
        (not started, or its node is gone)."""
        files = self._call('list_task_files', lambda: [_plain(f) for f in self.client.list_task_files(
            job_id, task_id, recursive=True, **NO_SDK_RETRY)],
            ok_codes=('TaskNotFound', 'JobNotFound', 'NodeNotFound', 'TaskFilesUnavailable', 'OperationTimedOut',
                      'NodeNotReady'), ok_status=(404, 409)) or []
        return {f['name']: int((f.get('properties') or {}).get('contentLength') or 0)
                for f in files if not f.get('isDirectory')}

    def read_task_file(self, job_id, task_id, path, start, end):
        """Bytes start..end-1 of a task file (`ocp-range`: only what the service has not read yet)."""
        if end <= start:
            return b''
        data = self._call('get_task_file', lambda: b''.join(self.client.get_task_file(
            job_id, task_id, path, ocp_range='bytes={}-{}'.format(start, end - 1), **NO_SDK_RETRY)),
            ok_codes=('FileNotFound', 'TaskNotFound', 'NodeNotFound'), ok_status=(404,))
        return data or b''

    # ---- quotas ------------------------------------------------------------------------------------------------

    def count_active_jobs(self):
        """The account's active Batch jobs (of any tool: they all count against activeJobAndJobScheduleQuota),
        one list call with only their ids."""
        return len(self._call('list_jobs', lambda: list(self.client.list_jobs(
            filter="state eq 'active'", select=['id'], **NO_SDK_RETRY))) or [])
