"""TEST CODE ONLY: the smallest Batch AI <-> Batch mapping the scheduler's tests need, until the mapping modules
(azurebatch/names.py, pools.py, tasks.py, states.py: azurebatch/mapping.py's AbMapMapping) are merged. It has the
methods of AbMapMapping and handles what the end-to-end tests submit: custom toolkit jobs, their environment,
stdout/stderr and output directories written in the task's working directory (read back through the task file
API), pools of a fixed node count. It is no statement of how the real mapping works.
"""
import hashlib
import os
import shlex

from azext_batchai_sweep.localservice.resources import cluster_slots


class StandInMapping:
    retired = {'standard_nc6': 'Standard_NC4as_T4_v3'}

    @staticmethod
    def pool_id(prefix, workspace, cluster):
        return '{}-{}-{}'.format(prefix, workspace, cluster)

    @staticmethod
    def batch_job_id(prefix, workspace, cluster):
        return '{}-{}-{}-jobs'.format(prefix, workspace, cluster)

    @staticmethod
    def task_id(job_key):
        name = job_key.rsplit('/', 1)[-1][:40]
        return '{}-{}'.format(''.join(c if c.isalnum() or c in '-_' else '_' for c in name),
                              hashlib.sha256(job_key.encode()).hexdigest()[:16])

    def check_pool(self, cluster_body, account):  # pylint: disable=unused-argument
        size = cluster_body['properties']['vmSize']
        successor = self.retired.get(size.lower())
        if successor:
            return 'Azure has retired the VM size {}: use {} (-s {}).'.format(size, successor, successor)
        return None

    @staticmethod
    def pool_body(pool_id, cluster_body, spec, account):  # pylint: disable=unused-argument
        props = cluster_body['properties']
        return {'id': pool_id, 'vmSize': props['vmSize'], 'targetDedicatedNodes': cluster_slots(props),
                'virtualMachineConfiguration': {
                    'imageReference': {'publisher': 'canonical', 'offer': 'ubuntu-24_04-lts', 'sku': 'server'},
                    'nodeAgentSKUId': 'batch.node.ubuntu 24.04'}}

    @staticmethod
    def job_body(job_id, pool_id):
        return {'id': job_id, 'poolInfo': {'poolId': pool_id}, 'onAllTasksComplete': 'noaction'}

    @staticmethod
    def task_body(task_id, job_body, spec, toolkit, cluster_body, layout):  # pylint: disable=unused-argument
        assert toolkit == 'customToolkitSettings', 'the stand-in mapping only runs custom toolkit jobs'
        outputs = [entry['id'] for entry in spec.get('outputDirectories') or []]
        prelude = ''.join('export AZ_BATCHAI_OUTPUT_{0}="$AZ_BATCH_TASK_WORKING_DIR/outputs/{0}"; '
                          'mkdir -p "$AZ_BATCHAI_OUTPUT_{0}"; '.format(o) for o in outputs)
        env = [{'name': 'AZ_BATCHAI_JOB_NAME', 'value': job_body['name']}]
        for kind in ('environmentVariables', 'secrets'):
            env += [{'name': e['name'], 'value': e['value']} for e in spec.get(kind) or []]
        body = {'id': task_id, 'displayName': job_body['name'],
                'commandLine': '/bin/bash -c {}'.format(shlex.quote(prelude + spec[toolkit]['commandLine'])),
                'environmentSettings': env}
        if spec['nodeCount'] > 1:
            body['multiInstanceSettings'] = {'numberOfInstances': spec['nodeCount'],
                                             'coordinationCommandLine': '/bin/true'}
        return body

    @staticmethod
    def chunks(bodies, max_count):
        return [bodies[i:i + max_count] for i in range(0, len(bodies), max_count)]

    @staticmethod
    def local_path(remote, layout):
        if remote in ('stdout.txt', 'stderr.txt'):
            return os.path.join(layout.stdouterr_dir, remote)
        parts = remote.split('/')
        if parts[:2] == ['wd', 'outputs'] and len(parts) > 3:
            base = layout.directory(parts[2])
            return os.path.join(base, *parts[3:]) if base else None
        return None

    @staticmethod
    def task_outcome(task):
        state = task.get('state')
        if state == 'active':
            return 'queued', None, []
        if state in ('preparing', 'running'):
            return 'running', None, []
        info = task.get('executionInfo') or {}
        code = info.get('exitCode')
        failure = info.get('failureInfo')
        if info.get('result') == 'success' and not failure:
            return 'succeeded', code, []
        if failure and failure.get('code') != 'FailureExitCode':
            return 'failed', code, [{'code': failure.get('code'), 'message': failure.get('message')}]
        return 'failed', code, [{'code': 'NonZeroExitCode', 'message': 'The job exited with code {}.'.format(code)}]
