"""How the Batch double runs tasks (TEST CODE ONLY): scheduling on free node slots, local process groups started
without a shell (Batch does not use one) in Batch's directory layout with the AZ_BATCH_* variables Batch sets,
multi-instance tasks (the coordination command on every node, then the command on the primary), retries, the wall
clock, resourceFiles downloads, outputFiles uploads, terminate and requeue. A mixin of account.BatchAccount, which
holds the lock.
"""
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import urllib.parse

from tests.azurebatch.double.entities import iso, now

KILL_GRACE_SECONDS = 1.0


def _expand(text, env):
    return re.sub(r'\$(\w+)|\$\{(\w+)\}', lambda m: env.get(m.group(1) or m.group(2), m.group(0)), text)


def _kill_group(process, sig):
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _exit_code(returncode):
    """A process's exit code as a Linux node reports it (a signal N as 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def _put_blob(container_url, name, path, ca_file):
    """Put Blob of a file to `<container>/<name>` with the container URL's SAS, over the URL's scheme (the test
    CA trusted); the failure's words (status and storage error code, never the SAS), or None."""
    import ssl  # pylint: disable=import-outside-toplevel
    import urllib.error  # pylint: disable=import-outside-toplevel
    import urllib.request  # pylint: disable=import-outside-toplevel
    parsed = urllib.parse.urlparse(container_url)
    url = urllib.parse.urlunparse(parsed._replace(path=parsed.path.rstrip('/') + '/' + urllib.parse.quote(name)))
    with open(path, 'rb') as f:
        data = f.read()
    request = urllib.request.Request(url, data=data, method='PUT', headers={
        'x-ms-blob-type': 'BlockBlob', 'x-ms-version': '2021-08-06', 'Content-Type': 'text/plain'})
    try:
        with urllib.request.urlopen(request, timeout=10,  # noqa: S310 (a loopback test server)
                                    context=ssl.create_default_context(cafile=ca_file)) as answer:
            return None if answer.status == 201 else 'HTTP {}'.format(answer.status)
    except urllib.error.HTTPError as ex:
        return 'HTTP {} {}'.format(ex.code, ex.headers.get('x-ms-error-code') or '').strip()
    except OSError as ex:
        return type(ex).__name__


def _get_blob(url, path, ca_file):
    """Download `url` (a blob URL with its SAS, from a loopback Blob service) to `path`; the failure's words
    (status and storage error code, never the SAS), or None."""
    import ssl  # pylint: disable=import-outside-toplevel
    import urllib.error  # pylint: disable=import-outside-toplevel
    import urllib.request  # pylint: disable=import-outside-toplevel
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={'x-ms-version': '2021-08-06'}),  # noqa: S310
                                    timeout=10, context=ssl.create_default_context(cafile=ca_file)) as answer:
            data = answer.read()
    except urllib.error.HTTPError as ex:
        return 'HTTP {} {}'.format(ex.code, ex.headers.get('x-ms-error-code') or '').strip()
    except OSError as ex:
        return type(ex).__name__
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(data)
    os.chmod(path, 0o770)
    return None


def resource_file_failure(task, working_dir, ca_file, common_dir=None):
    """Batch's resourceFiles contract (Batch spec 2024-02-01.19.0, ResourceFile, TaskAddParameter.resourceFiles and
    MultiInstanceSettings.commonResourceFiles; no recorded answer holds a download): each `httpUrl` is downloaded to
    `filePath`, mode 0770, before the command line runs. A task's `resourceFiles` go to its working directory (which
    a filePath cannot leave), on the primary node only; a multi-instance task's `commonResourceFiles` go to every
    node (primary and subtasks), before the coordination command, into the task's root directory, "one directory
    above the working directory" (the spec's words), given as ``common_dir`` for a node that downloads them (None:
    only the task's own resourceFiles, ``working_dir`` None: only the common ones).
    Only `httpUrl` on a loopback Blob service is honoured here. A failed download fails the task without running
    its command; the failure's code is the one tests/azurebatch/test_states_outcomes.py maps (not from a
    recording). Returns that failureInfo, or None."""
    wanted = []
    if working_dir is not None:
        wanted += [(spec, working_dir) for spec in task.body.get('resourceFiles') or []]
    if common_dir is not None:
        wanted += [(spec, common_dir) for spec in
                   (task.body.get('multiInstanceSettings') or {}).get('commonResourceFiles') or []]
    for spec, base in wanted:
        target = os.path.normpath(os.path.join(base, spec.get('filePath') or ''))
        url = spec.get('httpUrl')
        if not url or not target.startswith(base.rstrip('/') + '/') or \
                urllib.parse.urlparse(url).hostname not in ('127.0.0.1', 'localhost'):
            problem = 'not a loopback httpUrl with a filePath in the task\'s folder (not honoured here)'
        else:
            problem = _get_blob(url, target, ca_file)
        if problem:
            return {'category': 'usererror', 'code': 'ResourceFileDownloadFailed',
                    'message': 'Resource file download failed: {} ({})'.format(spec.get('filePath'), problem)}
    return None


class TaskRunner:
    """The task half of BatchAccount (see the module's docstring)."""

    def _spawn(self, command_line, env, cwd, task_dir):
        """Start a command line as Batch does (no shell; its own process group); (process, failureInfo)."""
        try:
            argv = shlex.split(command_line)
        except ValueError as error:
            return None, {'category': 'usererror', 'code': 'CommandProgramNotFound', 'message': str(error)}
        full_env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'), 'LANG': 'C.UTF-8', 'HOME': cwd}
        full_env.update(env)
        out = open(os.path.join(task_dir, 'stdout.txt'), 'ab')  # pylint: disable=consider-using-with
        err = open(os.path.join(task_dir, 'stderr.txt'), 'ab')  # pylint: disable=consider-using-with
        try:
            process = subprocess.Popen(  # pylint: disable=consider-using-with
                argv, cwd=cwd, env=full_env, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as error:
            return None, {'category': 'usererror', 'code': 'CommandProgramNotFound',
                          'message': 'The specified command program is not found: {}'.format(error.strerror)}
        finally:
            out.close()
            err.close()
        return process, None

    def _schedule(self):
        for job in sorted(self.jobs.values(), key=lambda j: (-int(j.body.get('priority') or 0), j.created)):
            if job.state != 'active':
                continue
            pool = self.pools.get(job.pool_id)
            if pool is None or pool.state != 'active':
                continue
            for task in job.tasks.values():
                if task.state != 'active':
                    continue
                needed, slots = task.instance_count, int(task.body.get('requiredSlots') or 1)
                if needed > 1 and not pool.body.get('enableInterNodeCommunication'):
                    continue  # Batch accepts the task (recorded) but cannot run it here: it stays active
                if needed > 1:
                    slots = pool.slots  # a multi-instance subtask takes its whole node
                free = [n for n in sorted(pool.nodes.values(), key=lambda n: n.id)
                        if n.state in ('idle', 'running') and n.leaving is None and n.free_slots() >= slots]
                if len(free) < needed:
                    continue
                self._run(task, free[:needed], slots)

    def _task_env(self, task, node, nodes, instance):
        job = task.job
        env = self._node_env(node)
        task_dir = os.path.join(node.root, 'workitems', job.id, 'job-1', task.id)
        env.update({'AZ_BATCH_JOB_ID': job.id, 'AZ_BATCH_TASK_ID': task.id, 'AZ_BATCH_TASK_DIR': task_dir,
                    'AZ_BATCH_TASK_WORKING_DIR': os.path.join(task_dir, 'wd'),
                    'AZ_BATCH_CERTIFICATES_DIR': os.path.join(task_dir, 'certs'),
                    'AZ_BATCH_TASK_USER': '_azbatch', 'AZ_BATCH_TASK_USER_IDENTITY': 'PoolNonAdmin'})
        if task.instance_count > 1:
            addresses = [n.address for n in nodes]
            env.update({'AZ_BATCH_HOST_LIST': ','.join(addresses), 'AZ_BATCH_NODE_LIST': ';'.join(addresses),
                        'AZ_BATCH_MASTER_NODE': '{}:6000'.format(addresses[0]),
                        'AZ_BATCH_IS_CURRENT_NODE_MASTER': 'true' if instance == 0 else 'false',
                        'AZ_BATCH_TASK_SHARED_DIR': task_dir})
        for source in (job.body.get('commonEnvironmentSettings') or [], task.body.get('environmentSettings') or []):
            env.update({e['name']: e.get('value', '') for e in source})
        return env, task_dir

    def _run(self, task, nodes, slots):
        task.instances = []
        task.started = task.started or now()
        task.ended, task.exit_code, task.failure = None, None, None
        task.set_state('running')
        settings = task.body.get('multiInstanceSettings') or {}
        coordination = settings.get('coordinationCommandLine')
        for index, node in enumerate(nodes):
            env, task_dir = self._task_env(task, node, nodes, index)
            shutil.rmtree(task_dir, ignore_errors=True)  # a new attempt starts in a clean task directory
            os.makedirs(env['AZ_BATCH_TASK_WORKING_DIR'], exist_ok=True)
            node.running[(task.job.id, task.id, index)] = slots
            node.total_run += 1
            node.set_state('running')
            instance = {'node': node, 'env': env, 'dir': task_dir, 'started': now(), 'process': None,
                        'phase': 'coordination' if coordination else 'application'}
            task.instances.append(instance)
            working_dir = env['AZ_BATCH_TASK_WORKING_DIR']
            instance['failure'] = resource_file_failure(
                task, working_dir if index == 0 else None, self.upload_ca_file,
                common_dir=os.path.dirname(working_dir) if task.instance_count > 1 else None)
            if instance['failure']:
                continue
            if coordination or index == 0:
                self._start_instance(task, instance, coordination or task.body['commandLine'])
        primary = nodes[0]
        task.node_info = {'affinityId': 'TVM:{}'.format(primary.id), 'poolId': primary.pool.id,
                          'nodeId': primary.id, 'nodeUrl': '{}/pools/{}/nodes/{}'.format(
                              self.base_url, primary.pool.id, primary.id),
                          'taskRootDirectory': 'workitems/{}/job-1/{}'.format(task.job.id, task.id),
                          'taskRootDirectoryUrl': '{}/pools/{}/nodes/{}/files/workitems/{}/job-1/{}'.format(
                              self.base_url, primary.pool.id, primary.id, task.job.id, task.id)}
        wall = task.wall_clock()
        task.deadline = time.monotonic() + wall / self.speed if wall else None

    def _start_instance(self, task, instance, command_line):
        pool = instance['node'].pool
        if (pool.body.get('virtualMachineConfiguration') or {}).get('containerConfiguration') and \
                not task.body.get('containerSettings'):
            # A pool with a container configuration runs no plain task: it fails on its node (Batch's code and
            # message as users report them, e.g. microsoft/ga4gh-tes issue 525; the spec: containerSettings "must
            # be set" on such a pool).
            instance['failure'] = {'category': 'usererror', 'code': 'ContainerTaskSettingsNotFound',
                                   'message': 'Container-enabled compute node requires task container settings'}
            return
        process, failure = self._spawn(command_line, instance['env'], instance['env']['AZ_BATCH_TASK_WORKING_DIR'],
                                       instance['dir'])
        instance['process'] = process
        if failure:
            instance['failure'] = failure

    def _job_step(self, job):
        for task in list(job.tasks.values()):
            if task.state == 'running':
                self._task_step(task)
        if job.state == 'terminating' and all(t.state == 'completed' for t in job.tasks.values()):
            job.ended = now()
            job.set_state('completed')
        if job.state == 'deleting' and all(not t.instances or t.state != 'running' for t in job.tasks.values()):
            for task in job.tasks.values():
                self._delete_task_files(task)
            self.jobs.pop(job.id, None)
        if (job.state == 'active' and job.body.get('onAllTasksComplete') == 'terminatejob' and job.tasks
                and all(t.state == 'completed' for t in job.tasks.values())):
            job.terminate_reason = 'AllTasksComplete'
            job.ended = now()
            job.set_state('completed')

    def _task_step(self, task):
        if task.deadline and time.monotonic() >= task.deadline:
            self._end_attempt(task, kill=signal.SIGKILL, failure={
                'category': 'usererror', 'code': 'TaskEnded',
                'message': 'The task was ended because it exceeded its maxWallClockTime constraint.'})
            return
        primary = task.instances[0]
        failed = next((i['failure'] for i in task.instances if i.get('failure')), None)
        if failed:  # (on any node: a multi-instance task fails when one of its subtasks does)
            self._finish(task, None, failed)
            return
        if primary['phase'] == 'coordination':
            if all(i['process'] and i['process'].poll() is not None for i in task.instances):
                codes = [i['process'].returncode for i in task.instances]
                if any(codes):
                    self._finish(task, _exit_code(next(c for c in codes if c)), {
                        'category': 'usererror', 'code': 'FailureExitCode',
                        'message': 'The coordination command exited with an exit code representing a failure'})
                    return
                primary['phase'] = 'application'
                self._start_instance(task, primary, task.body['commandLine'])
            return
        code = primary['process'].poll() if primary['process'] else None
        if code is None:
            return
        self._finish(task, _exit_code(code), None if code == 0 else {
            'category': 'usererror', 'code': 'FailureExitCode',
            'message': 'The task exited with an exit code representing a failure'})

    def _release(self, task, kill):
        for instance in task.instances:
            process = instance.get('process')
            if process and process.poll() is None:
                _kill_group(process, kill)
                if kill == signal.SIGTERM:
                    try:
                        process.wait(timeout=KILL_GRACE_SECONDS)
                    except subprocess.TimeoutExpired:
                        _kill_group(process, signal.SIGKILL)
                process.wait()
            elif process:
                _kill_group(process, signal.SIGKILL)  # a multi-instance subtask's leftovers end with the task
            node = instance['node']
            node.running.pop((task.job.id, task.id, task.instances.index(instance)), None)
            if not node.running and node.state == 'running':
                node.set_state('idle')

    def _finish(self, task, exit_code, failure):
        """An attempt ended by itself: retry it (maxTaskRetryCount) or complete the task; upload outputFiles (a
        failed upload fails a task that succeeded otherwise: Batch's fileUploadError, not retried)."""
        if self.blobfuse is not None:  # the task's files on a Blob mount closed: blobfuse uploaded them
            self.blobfuse.flush()
        upload_failure = self._upload_outputs(task, failure is None)
        if failure is None and upload_failure is not None:
            self._release(task, signal.SIGKILL)
            task.exit_code = exit_code
            self._complete(task, upload_failure)
            return
        self._release(task, signal.SIGKILL)
        if failure is None:
            task.instances[0]['node'].succeeded += 1
        task.exit_code = exit_code
        if failure and failure.get('code') == 'FailureExitCode':
            limit = task.max_retries()
            if limit == -1 or task.retries < limit:
                task.retries += 1
                task.last_retry = now()
                task.set_state('active')  # Batch retries on a node it picks again
                return
        self._complete(task, failure)

    def _complete(self, task, failure):
        task.failure = failure
        task.ended = now()
        task.deadline = None
        task.set_state('completed')

    def _end_attempt(self, task, kill, failure):
        """End a running attempt from outside (terminate, wall clock, node removal): the task completes."""
        if task.state == 'running':
            self._upload_outputs(task, False)
            self._release(task, kill)
            code = task.instances[0]['process'].returncode if task.instances and task.instances[0]['process'] \
                else None
            task.exit_code = _exit_code(code) if code is not None else None
        self._complete(task, failure)

    def _requeue(self, task, reason):
        """Batch puts the task back in the queue (preemption, node removal with requeue): no upload, no retry."""
        self._release(task, signal.SIGKILL)
        task.requeues += 1
        task.last_requeue = now()
        task.node_info = None
        task.deadline = None
        task.set_state('active')
        self.events.append(('requeued', task.id, reason))

    def _upload_outputs(self, task, success):
        """outputFiles of the primary instance, as Batch's node agent uploads them when the task process exits
        (`uploadCondition`: tasksuccess, taskfailure or taskcompletion); the failureInfo of the first failed
        upload, or None."""
        primary = task.instances[0] if task.instances else None
        if primary is None:
            return None
        failed = None
        for spec in task.body.get('outputFiles') or []:
            condition = ((spec.get('uploadOptions') or {}).get('uploadCondition') or 'tasksuccess').lower()
            if condition == 'tasksuccess' and not success or condition == 'taskfailure' and success:
                continue
            pattern = _expand(spec['filePattern'], primary['env'])
            if not os.path.isabs(pattern):
                pattern = os.path.join(primary['env']['AZ_BATCH_TASK_WORKING_DIR'], pattern)
            container = (spec.get('destination') or {}).get('container') or {}
            matches = [m for m in sorted(glob.glob(os.path.normpath(pattern), recursive=True)) if os.path.isfile(m)]
            wildcard = any(c in spec['filePattern'] for c in '*?[')
            for match in matches:
                prefix = container.get('path') or ''
                if wildcard or not prefix:
                    name = '/'.join(p for p in (prefix.rstrip('/'), os.path.basename(match)) if p)
                else:
                    name = prefix
                problem = self._upload(container.get('containerUrl', ''), name, match)
                if problem and failed is None:
                    failed = {'category': 'usererror', 'code': 'FileUploadFailed', 'message': (
                        'File upload failed: {} (see fileuploaderr.txt)'.format(problem))}
        return failed

    def _upload(self, container_url, name, path):
        """One file to a blob of the container: a Put Blob with the URL's SAS when the container is on a loopback
        Blob service (Azurite, as the node agent writes to Azure Storage: the SAS must allow it), else a copy to
        a local folder per container (a storage host that cannot be reached offline). Returns the failure, or
        None."""
        parsed = urllib.parse.urlparse(container_url)
        plain = urllib.parse.urlunparse(parsed._replace(query=''))
        target = os.path.join(self.root, 'uploads', parsed.netloc.replace(':', '_'), parsed.path.strip('/'), name)
        if parsed.hostname in ('127.0.0.1', 'localhost'):
            problem = _put_blob(container_url, name, path, self.upload_ca_file)
            self.uploads.append((plain, name, None if problem else path))
            return problem
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(path, target)
        self.uploads.append((plain, name, target))
        return None

    def _delete_task_files(self, task):
        for pool in self.pools.values():
            for node in pool.nodes.values():
                shutil.rmtree(os.path.join(node.root, 'workitems', task.job.id, 'job-1', task.id), ignore_errors=True)
