"""The Batch AI 2018-05-01 ARM routes: workspaces, clusters, experiments, jobs, operation results.

Long-running operations (cluster and job creates, deletes, terminate) answer 202 as Batch AI did (azure-cli's
recorded answers): `Azure-AsyncOperation` names the operation status resource,
`.../locations/<loc>/operationresults/<id>`, which answers `{id, name, status: InProgress|Succeeded, startTime,
endTime}`; `Location` names
`.../operationstatuses/<id>`, which answers 202 while the operation runs and then what it produced (the created
resource, or nothing); `Retry-After: 1`. The operation id is the operation itself (action + resource key + start
time, base64url), so polling needs no table: a create is done once its resource exists, a delete once the
resource is gone, a terminate once the job is no longer terminating.

Re-PUT of an existing job (ARM PUT semantics): Batch AI jobs are immutable, so an identical body (as stored) gets
200 and the existing job; any difference gets 409 Conflict (`JobAlreadyExists`). The same rule holds for clusters.
Workspaces only accept a tags change; experiments have no body. A workspace or experiment create answers 200 with
the resource at once, as Batch AI did (recorded), though the swagger makes them long-running too.
"""
import base64
import datetime
import json
import logging
import os
import threading
import time
import urllib.parse
from stat import S_ISDIR

from .. import API_VERSION, DEFAULT_LOCATION, LOCAL_VIEW
from ..auth import sign_link
from .downloads import servable_path
from ..errors import ArmError, bad_request, conflict, not_found
from ..fileio import is_within
from ..layout import JobLayout
from ..resources import (PRIORITIES, RESOURCE_GROUP_RE, check_name, check_subscription, cluster_body,
                        experiment_body, iso, job_body, parse_cluster_id, utcnow, validate_job, workspace_body)
from ..data.store import resource_key

logger = logging.getLogger(__name__)

JSON = 'application/json; charset=utf-8'
RETRY_AFTER = '1'
DELETE_WAIT_SECONDS = 15.0


def _op_token(action, key, started):
    """The id of an operation: what it does, to which resource, and when it started (ms since the epoch)."""
    payload = json.dumps([action, key, int(started.timestamp() * 1000)])
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip('=')


def _op_parse(token):
    """(action, key, start datetime) of an operation id; 404 OperationNotFound when it is not one of ours."""
    try:
        action, key, started = json.loads(base64.urlsafe_b64decode(token + '=' * (-len(token) % 4)))
        started = datetime.datetime.fromtimestamp(started / 1000, datetime.timezone.utc)
        if action not in ('create', 'delete', 'terminate') or not isinstance(key, str):
            raise ValueError(action)
    except (ValueError, TypeError, OverflowError, OSError):
        raise ArmError(404, 'OperationNotFound', "Operation '{}' was not found.".format(token)) from None
    return action, key, started


def _internal_resource_id(arm_resource_id):
    """'/subscriptions/S/resourceGroups/G/providers/Microsoft.BatchAI/workspaces/W/clusters/C' -> 'S$G$W$C'."""
    parts = arm_resource_id.strip('/').split('/')
    del parts[4:6]  # providers/Microsoft.BatchAI
    return '$'.join(parts[1::2])


def _json_response(status, body, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body, separators=(',', ':')).encode('utf-8')
    return status, {'Content-Type': JSON, **(headers or {})}, data


class ArmApi:
    """Routes an authenticated ARM request to its operation; returns (status, headers, body bytes)."""

    def __init__(self, store, runner, data_dir, link_key):
        self._store = store
        self._runner = runner
        self._data_dir = data_dir
        self._real_data_dir = os.path.realpath(data_dir)
        self._link_key = link_key
        # When asynchronous operations ended (resource key -> time), for their status resource's endTime. In
        # memory only: after a restart an operation that is over reports the time it was first asked about.
        self._ended = {}
        self._ended_lock = threading.Lock()

    def note_ended(self, action, key):
        with self._ended_lock:
            if len(self._ended) > 10000:  # bounded: old entries only serve late pollers
                self._ended.clear()
            self._ended[(action, key)] = utcnow()

    def ended_at(self, action, key, started):
        with self._ended_lock:
            ended = self._ended.get((action, key))
        return ended if ended is not None and ended >= started else utcnow()

    # ---- dispatch --------------------------------------------------------------------------------------------

    def handle(self, method, path, query, base_url, body):
        """Serve one request. `query` maps lower-cased names to values; `base_url` is how the client reached us."""
        version = query.get('api-version')
        if version is None:
            raise bad_request('MissingApiVersionParameter',
                              "The api-version query parameter (?api-version=) is required for all requests.")
        if version != API_VERSION:
            raise bad_request('InvalidApiVersionParameter',
                              "The api-version '{}' is invalid. The supported versions are '{}'.".format(
                                  version, API_VERSION))
        segments = [urllib.parse.unquote(s) for s in path.split('/') if s]
        lower = [s.lower() for s in segments]
        local_view = lower[:1] == [LOCAL_VIEW]
        if local_view:  # /local/<an experiment's jobs collection>: the local service's own view of its jobs
            segments, lower = segments[1:], lower[1:]
        if len(segments) < 4 or lower[0] != 'subscriptions':
            raise ArmError(404, 'InvalidResourceType', "No route for '{}'.".format(path))
        sub = segments[1]
        check_subscription(sub)  # it becomes a store key and a folder of job output paths
        ctx = _Request(self, method, path, query, base_url, body, sub)
        if local_view:
            return ctx.local_view(segments, lower)
        if lower[2:4] == ['providers', 'microsoft.batchai']:
            tail, rg = segments[4:], None
        elif lower[2] == 'resourcegroups' and len(segments) >= 6 and lower[4:6] == ['providers', 'microsoft.batchai']:
            rg, tail = segments[3], segments[6:]
            check_name('resource group', rg, RESOURCE_GROUP_RE, max_length=90)
        else:
            raise ArmError(404, 'InvalidResourceType', "No route for '{}'.".format(path))
        return ctx.route(rg, tail)

    # ---- helpers shared by the routes ------------------------------------------------------------------------

    def cluster_view(self, body):
        """A cluster body with its live state, as its scheduler knows it (node state counts; for a Batch pool also
        its node count, allocation state and errors)."""
        key = resource_key(*self._key_parts(body['id']))
        self._runner.cluster_view(key, body['properties'])
        return body

    @staticmethod
    def _key_parts(arm_resource_id):
        parts = [p for p in arm_resource_id.split('/') if p]
        # subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.BatchAI/workspaces/<ws>/...
        return [parts[1], parts[3], *parts[7:]]

    def public_body(self, row):
        body = json.loads(row['body'])
        if row['kind'] == 'job':
            return self._runner.view(row['key'], body)
        return self.cluster_view(body) if row['kind'] == 'cluster' else body

    def job_views(self, bodies):
        """Listed job bodies (JSON text) with the ends still kept in memory applied (only while there are any)."""
        if not self._runner.has_unrecorded():
            return bodies
        views = []
        for text in bodies:
            body = json.loads(text)
            key = resource_key(*self._key_parts(body['id']))
            views.append(json.dumps(self._runner.view(key, body), separators=(',', ':')))
        return views

    def delete_async(self, key, kind):
        """Mark a resource (and what is below it) deleting, then remove it once its running jobs are killed."""
        with self._runner.locked():
            self._store.update(key, lambda b: b['properties'].update(
                provisioningState='deleting', provisioningStateTransitionTime=iso(utcnow())))
            self._store.set_state_below(key, 'deleting')
            running = self._runner.running_below(key)
        if kind == 'cluster':
            running = [r['key'] for r in self._store.in_states(('running', 'terminating', 'queued'))
                       if r['cluster'] == key]
        # The clusters going with it (itself, or those of a workspace) release what backs them once their jobs end.
        clusters = [r['key'] for r in self._store.in_states(('deleting',), kind='cluster')
                    if r['key'] == key or r['key'].startswith(key + '/')]

        def finish():
            for job in running:
                if not self._runner.kill(job, 'cluster' if kind == 'cluster' else 'deleted'):
                    self._runner.fail_queued(job, 'cluster')
            self._runner.wait_for(running, DELETE_WAIT_SECONDS)
            for cluster in clusters:
                row = self._store.get(cluster)
                if row is not None:
                    try:
                        self._runner.delete_cluster(cluster, json.loads(row['body']))
                    except Exception:  # pylint: disable=broad-except
                        # The record goes anyway (as Batch AI's delete did); the scheduler logged what is left.
                        logger.exception('releasing what backs cluster %s failed', cluster)
            self._store.delete_tree(key)
            self.note_ended('delete', key)
            logger.info('deleted %s', key)
        threading.Thread(target=finish, name='delete', daemon=True).start()

    def _output_file(self, entry, real_base, base_url, expiry):
        """One listOutputFiles item. A symlink is followed only when it stays inside the output directory; one that
        leads out of it, or in a loop, is listed as a file with neither link nor properties (a download reports it
        failed, the files beside it are unaffected)."""
        path = entry.path
        if entry.is_symlink():
            path = os.path.realpath(entry.path)
            if not is_within(real_base, path) or path == real_base:
                return {'name': entry.name, 'fileType': 'file'}
        try:
            stat = os.stat(path)
        except OSError:  # a symlink loop, or gone since the scan
            return {'name': entry.name, 'fileType': 'file'}
        if S_ISDIR(stat.st_mode):
            return {'name': entry.name, 'fileType': 'directory'}
        item = {'name': entry.name, 'fileType': 'file', 'properties': {
            'lastModified': iso(_from_timestamp(stat.st_mtime)), 'contentLength': stat.st_size}}
        # `path` is resolved: an entry of the resolved directory that is no symlink, or a symlink's realpath.
        relpath = servable_path(self._real_data_dir, path, resolved=True)
        if relpath is not None:  # anything out of the job storage (or the data dir) gets no link
            item['downloadUrl'] = '{}/download/{}?{}'.format(
                base_url, urllib.parse.quote(relpath), sign_link(self._link_key, relpath, expiry))
        return item

    def list_files(self, row, query, base_url):
        """listOutputFiles: the entries of one directory of a job's stdouterr or output directory, paged."""
        body = json.loads(row['body'])
        directory_id = query.get('outputdirectoryid')
        if not directory_id:
            raise bad_request('MissingRequiredParameter', "The 'outputdirectoryid' query parameter is required.")
        layout = JobLayout(self._data_dir, body, row['cluster'])
        base = layout.directory(directory_id)
        if base is None:
            raise bad_request('InvalidOutputDirectoryId',
                              "The job has no output directory '{}'.".format(directory_id))
        target = os.path.normpath(os.path.join(base, query.get('directory') or '.'))
        if not is_within(base, target):
            raise bad_request('InvalidDirectory', "'directory' must stay inside the output directory.")
        expiry = _int_param(query, 'linkexpiryinminutes', 60, 5, 600)
        limit = _int_param(query, 'maxresults', 1000, 1, 1000)
        start = _int_param(query, '$skiptoken', 0, 0, None)
        # Symlinks are resolved and must stay inside the job's own directory: a job that links its output to /etc,
        # the data dir or another job's output gets nothing listed through the link, and no link is followed.
        real_base = os.path.realpath(base)
        real_target = os.path.realpath(target)
        if is_within(real_base, real_target) and os.path.isdir(real_target):
            try:
                entries = sorted(os.scandir(real_target), key=lambda e: e.name)
            except OSError:  # gone, or not a directory any more
                entries = []
        else:
            entries = []
        page = entries[start:start + limit]
        files = [self._output_file(entry, real_base, base_url, expiry) for entry in page]
        result = {'value': files}
        if start + limit < len(entries):
            params = {k: v for k, v in query.items() if k != '$skiptoken'}
            params['$skiptoken'] = str(start + limit)
            result['nextLink'] = '{}{}?{}'.format(base_url, urllib.parse.quote(body['id']) + '/listOutputFiles',
                                                  urllib.parse.urlencode(params))
        return result


def _from_timestamp(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)


def _int_param(query, name, default, minimum, maximum):
    text = query.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum or (maximum is not None and value > maximum):
        raise bad_request('InvalidQueryParameterValue', "Query parameter '{}' must be an integer{}.".format(
            name, ' from {} to {}'.format(minimum, maximum) if maximum is not None else ' >= {}'.format(minimum)))
    return value


class _Request:
    """One request's routing state; methods are the operations of the swagger."""

    def __init__(self, api, method, path, query, base_url, body, sub):
        self.api = api
        self.path = path
        self.store = api._store  # pylint: disable=protected-access
        self.runner = api._runner  # pylint: disable=protected-access
        self.method = method
        self.query = query
        self.base_url = base_url
        self.body = body
        self.sub = sub

    def route(self, rg, tail):
        lower = [t.lower() for t in tail]
        n = len(tail)
        if rg is None:
            if lower == ['workspaces']:
                return self._only('GET', lambda: self.list_page('workspace', None, self.sub.lower() + '/'))
            if n == 3 and lower[0] == 'locations' and lower[2] == 'usages':
                return self._only('GET', lambda: self.usages(tail[1]))
            if n == 4 and lower[0] == 'locations' and lower[2] == 'operationresults':
                return self._only('GET', lambda: self.operation_status(tail[3], tail[1]))
            if n == 4 and lower[0] == 'locations' and lower[2] == 'operationstatuses':
                return self._only('GET', lambda: self.operation_result(tail[3], tail[1]))
            raise ArmError(404, 'InvalidResourceType', 'No such Batch AI resource type.')
        if not tail or lower[0] != 'workspaces':
            raise ArmError(404, 'InvalidResourceType', 'No such Batch AI resource type.')
        if n == 1:
            return self._only('GET', lambda: self.list_page('workspace', resource_key(self.sub, rg)))
        workspace = tail[1]
        check_name('workspace', workspace)
        ws_key = resource_key(self.sub, rg, workspace)
        if n == 2:
            return self.workspace(rg, workspace, ws_key)
        if lower[2] not in ('clusters', 'experiments'):
            raise ArmError(404, 'InvalidResourceType', "No such Batch AI resource type '{}'.".format(tail[2]))
        if n == 3:
            return self._only('GET', lambda: self.list_children(ws_key, 'workspace', lower[2][:-1]))
        child = tail[3]
        check_name(lower[2][:-1], child)
        child_key = '{}/{}/{}'.format(ws_key, lower[2], child.lower())
        if lower[2] == 'clusters' and n == 4:
            return self.cluster(rg, workspace, child, ws_key, child_key)
        if lower[2] == 'clusters':
            raise ArmError(404, 'InvalidResourceType', 'No such Batch AI resource type.')
        if n == 4:
            return self.experiment(rg, workspace, child, ws_key, child_key)
        if lower[4] != 'jobs':
            raise ArmError(404, 'InvalidResourceType', "No such Batch AI resource type '{}'.".format(tail[4]))
        if n == 5:
            return self._only('GET', lambda: self.list_children(child_key, 'experiment', 'job'))
        job = tail[5]
        check_name('job', job)
        job_key = '{}/jobs/{}'.format(child_key, job.lower())
        if n == 6:
            return self.job(rg, workspace, child, job, child_key, job_key)
        if n == 7 and lower[6] == 'terminate':
            return self._only('POST', lambda: self.terminate(job_key))
        if n == 7 and lower[6] == 'listoutputfiles':
            # POST is the operation; GET is how the SDK follows its nextLink.
            return self._only(('POST', 'GET'), lambda: _json_response(200, self.api.list_files(
                self._get(job_key, 'job', job), self.query, self.base_url)))
        raise ArmError(404, 'InvalidResourceType', 'No such Batch AI operation.')

    def local_view(self, segments, lower):
        """GET /local/subscriptions/S/resourceGroups/G/providers/Microsoft.BatchAI/workspaces/W/experiments/E/jobs:
        what Batch AI's job resource has no field for, the local service's own answer (not a Batch AI API, so
        nothing of it goes into Batch AI's resources): each job's id at its scheduler (Slurm's job id, or
        `<array>_<task>` for a job array's task), {"scheduler": name, "value": [{"name", "schedulerJobId"}]}; and the
        scheduler's notes of a job (Azure Batch: "waiting", why a queued job waits; "requeues", how often Batch
        requeued its task after a preemption)."""
        if len(segments) != 11 or lower[2] != 'resourcegroups' or lower[4:7] != ['providers', 'microsoft.batchai',
                                                                                   'workspaces'] \
                or lower[8] != 'experiments' or lower[10] != 'jobs':
            raise ArmError(404, 'InvalidResourceType', 'No such local view.')
        rg, workspace, experiment = segments[3], segments[7], segments[9]
        for kind, name in (('workspace', workspace), ('experiment', experiment)):
            check_name(kind, name)
        exp_key = '{}/experiments/{}'.format(resource_key(self.sub, rg, workspace), experiment.lower())
        self._only('GET', lambda: self._get(exp_key, 'experiment', experiment))
        ids = self.store.scheduler_ids(exp_key)
        notes = self.runner.job_notes(exp_key)
        return _json_response(200, {'scheduler': self.runner.describe().get('scheduler'), 'value': [
            dict({'name': name, 'schedulerJobId': ids.get(name)}, **notes.get(name, {}))
            for name in sorted(set(ids) | set(notes))]})

    # ---- generic pieces --------------------------------------------------------------------------------------

    def _only(self, methods, action):
        if self.method not in ((methods,) if isinstance(methods, str) else methods):
            raise ArmError(405, 'MethodNotAllowed', "The method '{}' is not allowed here.".format(self.method))
        return action()

    def _get(self, key, kind, name):
        row = self.store.get(key)
        if row is None:
            raise not_found(kind, name)
        return row

    def _params(self):
        if not self.body:
            return {}
        try:
            return json.loads(self.body)
        except ValueError:
            raise bad_request('InvalidRequestContent', 'The request body is not valid JSON.') from None

    def _operation_url(self, kind, token, location):
        return '{}/subscriptions/{}/providers/Microsoft.BatchAI/locations/{}/{}/{}?api-version={}'.format(
            self.base_url, self.sub, location, kind, token, API_VERSION)

    def _location_of(self, key):
        """The location of the workspace holding the resource `key` (Batch AI's operations are regional)."""
        row = self.store.get('/'.join(key.split('/')[:3]))
        return json.loads(row['body'])['location'] if row is not None else DEFAULT_LOCATION

    def _accepted(self, action, key, started=None, location=None):
        """202 with the operation's Azure-AsyncOperation (its status resource), Location and Retry-After."""
        token = _op_token(action, key, started or utcnow())
        location = location or self._location_of(key)
        return 202, {'Azure-AsyncOperation': self._operation_url('operationresults', token, location),
                     'Location': self._operation_url('operationstatuses', token, location),
                     'Retry-After': RETRY_AFTER}, b''

    def _deletable(self, key, kind, name):
        row = self.store.get(key)
        if row is None:
            # ARM DELETE of a missing resource: 204 No Content, nothing to do.
            return 204, {}, b''
        if row['state'] != 'deleting':
            self.api.delete_async(key, kind)
        return self._accepted('delete', key)

    def list_page(self, kind, parent, prefix=None):
        """A page of a list operation: stored bodies joined as-is, nextLink with a $skiptoken when more remain."""
        limit = _int_param(self.query, 'maxresults', 1000, 1, 1000)
        after = _int_param(self.query, '$skiptoken', 0, 0, None)
        if prefix is not None:
            rows = self.store.page_by_prefix(kind, prefix, after, limit + 1)
        else:
            rows = self.store.page(kind, parent, after, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        if kind == 'cluster':
            bodies = [json.dumps(self.api.cluster_view(json.loads(b)), separators=(',', ':')) for _, b in rows]
        elif kind == 'job':
            bodies = self.api.job_views([b for _, b in rows])
        else:
            bodies = [b for _, b in rows]
        data = '{"value":[' + ','.join(bodies) + ']'
        if more:
            params = {k: v for k, v in self.query.items() if k != '$skiptoken'}
            params['$skiptoken'] = str(rows[-1][0])
            data += ',"nextLink":' + json.dumps('{}{}?{}'.format(self.base_url, self.path,
                                                                 urllib.parse.urlencode(params)))
        return _json_response(200, (data + '}').encode('utf-8'))

    def list_children(self, parent_key, parent_kind, kind):
        self._get(parent_key, parent_kind, parent_key.rsplit('/', 1)[-1])
        return self.list_page(kind, parent_key)

    def _busy(self, action, row):
        """Whether an operation on the resource `row` (None: gone) is still under way."""
        if action == 'create':
            return False  # a resource exists as soon as its create is accepted
        if action == 'delete':  # a resource of the same name created since is another one: the delete is over
            # The body says so as well as the state: a running job's end, recorded while its delete waits for it,
            # changes its state (failed) but not its provisioningState, and the delete is over only once it is gone.
            return row is not None and (row['state'] == 'deleting' or json.loads(row['body'])['properties'].get(
                'provisioningState') == 'deleting')
        return row is not None and row['state'] == 'terminating'

    def operation_status(self, token, location):
        """The operation status resource (Azure-AsyncOperation), as Batch AI answered it."""
        action, key, started = _op_parse(token)
        row = self.store.get(key)
        busy = self._busy(action, row)
        body = {'id': self._operation_url('operationresults', token, location).split('?', 1)[0], 'name': token,
                'status': 'InProgress' if busy else 'Succeeded', 'startTime': iso(started)}
        if not busy:
            body['endTime'] = iso(started if action == 'create' else self.api.ended_at(action, key, started))
        if not busy and action == 'create' and row is not None:
            # As Batch AI answered a create that succeeded: the resource, in its own internal form (the names of
            # its id joined by '$': subscription$group$workspace[$experiment]$name).
            body['properties'] = {'resourceId': _internal_resource_id(json.loads(row['body'])['id'])}
        headers = {'Retry-After': RETRY_AFTER} if busy else {}
        return _json_response(200, body, headers)

    def operation_result(self, token, location):
        """The Location of an operation: 202 while it runs, then the created resource (or nothing)."""
        action, key, started = _op_parse(token)
        row = self.store.get(key)
        if self._busy(action, row):
            return self._accepted(action, key, started, location)
        if action == 'create':
            if row is None:
                raise ArmError(404, 'ResourceNotFound', 'The resource of this operation no longer exists.')
            return _json_response(200, self.api.public_body(row))
        return 200, {}, b''

    def usages(self, location):
        """Usages_List: the local service's own limits in Batch AI's shape (ListUsagesResult), for the clusters of
        the subscription whose workspace is in `location` (the scheduler's: scheduler.usages)."""
        check_name('location', location, RESOURCE_GROUP_RE, max_length=90)
        prefix = self.sub.lower() + '/'
        here = {key for key, _, body in self.store.all_by_prefix('workspace', prefix)
                if json.loads(body)['location'].lower() == location.lower()}
        clusters = [(key, json.loads(body)) for key, parent, body in self.store.all_by_prefix('cluster', prefix)
                    if parent in here]
        return _json_response(200, {'value': [
            {'unit': 'Count', 'currentValue': current, 'limit': limit, 'name': {'value': name, 'localizedValue': label}}
            for name, label, current, limit in self.runner.usages(clusters)]})

    # ---- workspaces ------------------------------------------------------------------------------------------

    def workspace(self, rg, name, key):
        if self.method != 'PUT':
            return self._read_or_delete(key, 'workspace', name)
        params = self._params()
        body = workspace_body(self.sub, rg, name, params, utcnow())
        if self.store.insert(key, 'workspace', resource_key(self.sub, rg), body, spec=params):
            return _json_response(200, body)  # as Batch AI answered a workspace create: at once, with the workspace
        row = self.store.get(key)
        existing = json.loads(row['body'])
        if row['state'] == 'deleting':
            raise conflict('Conflict', "The workspace '{}' is being deleted.".format(name))
        if existing['location'].lower() != body['location'].lower():
            raise conflict('InvalidResourceLocation', "The workspace '{}' already exists in location '{}'.".format(
                name, existing['location']))
        def retag(stored):
            stored.pop('tags', None)
            stored.update({'tags': body['tags']} if body.get('tags') else {})
        updated = self.store.update(key, retag)
        return _json_response(200, updated)

    # ---- clusters --------------------------------------------------------------------------------------------

    def cluster(self, rg, workspace, name, ws_key, key):
        if self.method == 'PATCH':
            return self.cluster_update(rg, workspace, name, key)
        if self.method != 'PUT':
            return self._read_or_delete(key, 'cluster', name)
        self._get(ws_key, 'workspace', workspace)
        params = self._params()
        body = cluster_body(self.sub, rg, workspace, name, params, utcnow())
        existing = self.store.get(key)
        if existing is None:
            self.runner.check_cluster(key, body, params)  # what this scheduler cannot make: 400, nothing stored
        # pylint: disable=import-outside-toplevel
        from ..data.stored_spec import same_cluster_request, without_credentials
        if self.store.insert(key, 'cluster', ws_key, body, spec=without_credentials(params)):
            try:
                self.runner.create_cluster(key, body, params)
            except BaseException:
                self.store.delete(key)
                raise
            self.runner.wake()
            return self._accepted('create', key)
        return self._same_or_conflict(key, lambda row: same_cluster_request(json.loads(row['spec']), params),
                                      'cluster', name)

    def cluster_update(self, rg, workspace, name, key):
        """PATCH (Batch AI's Clusters_Update: `az batchai cluster resize` and `auto-scale`): new scale settings,
        applied by the scheduler (scheduler.py: a share of the service's own nodes, or an Azure Batch pool); answered
        at once (200, the cluster), as Batch AI did, its allocationState `resizing` until it is steady."""
        row = self._get(key, 'cluster', name)
        if row['state'] == 'deleting':
            raise conflict('Conflict', "The cluster '{}' is being deleted.".format(name))
        update = self._params().get('properties')
        if not isinstance(update, dict) or set(update) != {'scaleSettings'}:
            raise bad_request('InvalidRequestContent', 'A cluster update changes properties.scaleSettings only.')
        spec = json.loads(row['spec'])
        spec = dict(spec, properties=dict(spec.get('properties') or {}, scaleSettings=update['scaleSettings']))
        body = cluster_body(self.sub, rg, workspace, name, spec, utcnow())  # validates the new scale settings
        self.runner.resize_cluster(key, body, update['scaleSettings'])

        now = iso(utcnow())

        def rescale(stored):
            # Resizing from now; the scheduler's view says when the cluster is steady again (at once where nothing
            # has to drain).
            stored['properties'].update(scaleSettings=body['properties']['scaleSettings'],
                                        currentNodeCount=body['properties']['currentNodeCount'],
                                        allocationState='resizing', allocationStateTransitionTime=now)
        self.store.update(key, rescale)
        return _json_response(200, self.api.public_body(self.store.get(key)))

    def _read_or_delete(self, key, kind, name):
        """The answer to any method of a resource but PUT (which each kind handles itself): GET, DELETE or 405."""
        if self.method == 'GET':
            return _json_response(200, self.api.public_body(self._get(key, kind, name)))
        if self.method == 'DELETE':
            return self._deletable(key, kind, name)
        raise ArmError(405, 'MethodNotAllowed', "The method '{}' is not allowed here.".format(self.method))

    def _same_or_conflict(self, key, same, kind, name):
        """200 with the resource when same(its stored row) says the repeated PUT is the same request, else 409."""
        row = self.store.get(key)
        if row['state'] == 'deleting':
            raise conflict('Conflict', "The {} '{}' is being deleted.".format(kind, name))
        if not same(row):
            raise conflict('{}AlreadyExists'.format(kind.capitalize()),
                           "The {} '{}' already exists with different properties; Batch AI {}s cannot be changed: "
                           'delete it first or use another name.'.format(kind, name, kind))
        return _json_response(200, self.api.public_body(row))

    # ---- experiments -----------------------------------------------------------------------------------------

    def experiment(self, rg, workspace, name, ws_key, key):
        if self.method != 'PUT':
            return self._read_or_delete(key, 'experiment', name)
        self._get(ws_key, 'workspace', workspace)
        body = experiment_body(self.sub, rg, workspace, name, utcnow())
        if self.store.insert(key, 'experiment', ws_key, body):
            # As Batch AI answered an experiment create (azure-cli's recorded test_batchai_auto_scale_scenario,
            # 2020): at once, 200 with the experiment, though the operation is a long-running one in the swagger.
            return _json_response(200, body)
        row = self.store.get(key)
        if row['state'] == 'deleting':
            raise conflict('Conflict', "The experiment '{}' is being deleted.".format(name))
        return _json_response(200, self.api.public_body(row))

    # ---- jobs ------------------------------------------------------------------------------------------------

    def job(self, rg, workspace, experiment, name, exp_key, key):
        if self.method != 'PUT':
            return self._read_or_delete(key, 'job', name)
        self._get(exp_key, 'experiment', experiment)
        params = self._params()
        props, toolkit = validate_job(params)
        from ..data.stored_spec import same_job_request, sealed_job  # pylint: disable=import-outside-toplevel
        existing = self.store.get(key)
        if existing is not None:
            return self._same_or_conflict(key, lambda row: same_job_request(row, props), 'job', name)
        cluster_sub, cluster_rg, cluster_ws, cluster_name = parse_cluster_id(props['cluster']['id'])
        cluster_key = resource_key(cluster_sub, cluster_rg, cluster_ws, 'clusters', cluster_name)
        cluster_row = self.store.get(cluster_key)
        if cluster_row is None or cluster_row['state'] == 'deleting':
            raise bad_request('ClusterNotFound', "The cluster '{}' does not exist.".format(props['cluster']['id']))
        cluster_props = json.loads(cluster_row['body'])
        slots = self.runner.node_ceiling(cluster_props['properties'])
        if props['nodeCount'] > slots:
            raise bad_request('InvalidNodeCount', 'The job needs {} nodes; the cluster has {}.'.format(
                props['nodeCount'], slots))
        self.runner.check_job(props, toolkit, cluster_props)  # what this scheduler cannot run: 400 now
        body = job_body(self.sub, rg, workspace, experiment, name, props, toolkit, utcnow())
        JobLayout(self.api._data_dir, body, cluster_key).check_inside_data_dir()  # pylint: disable=protected-access
        inserted = self.store.insert(key, 'job', exp_key, body, spec=sealed_job(props, key), cluster=cluster_key,
                                     state='queued',
                                     priority=PRIORITIES[props.get('schedulingPriority', 'normal')],
                                     node_count=props['nodeCount'])
        if not inserted:  # a concurrent PUT of the same name won the race
            return self._same_or_conflict(key, lambda row: same_job_request(row, props), 'job', name)
        self.runner.wake()
        return self._accepted('create', key)

    def terminate(self, key):
        """POST .../terminate (202 + Location, or 200 for a job that has already finished): a queued job fails at
        once, a running one is killed; either way Batch AI's error JobTerminated says why. The job and its outputs
        stay. A job that starts (or ends) between the read and the action is read again, so none escapes."""
        name = key.rsplit('/', 1)[-1]
        for _ in range(100):
            row = self._get(key, 'job', name)
            if row['state'] == 'queued' and self.runner.fail_queued(key, 'terminated'):
                break
            if row['state'] in ('running', 'terminating') and self.runner.kill(key, 'terminated', state='terminating'):
                break
            if row['state'] not in ('queued', 'running', 'terminating'):
                return 200, {}, b''
            time.sleep(0.01)  # between the scheduler's state change and its process start: read again
        return self._accepted('terminate', key)
