"""bench/scale.py --batch: the Azure Batch scheduler's poll of 10,000 queued tasks (issue 44, item 3).

The lifecycle double of the Batch data plane (tests/azurebatch/double: TEST CODE, answering as the real service's
recordings do) runs in a child process, so that its CPU is not counted as the scheduler's, on Batch's clock (its
tests run it 600x fast, and each of its ticks scans every task). A pool that never grows
(0 nodes) holds `tasks` tasks of one Batch job, added by the scheduler's client (client.BatchApi.add_tasks:
collections of at most 100). Then the scheduler's own poll (AzureBatchScheduler._poll: one filtered task list per
Batch job, each answer matched to the job it runs) is run with every task held, as after their add:

- a full list (the first poll after a start), and a poll within CLOCK_MARGIN_SECONDS of the add (the filter
  `stateTransitionTime ge` then still answers every task): CPU (process time) and wall time of the poll, requests;
- a poll once nothing changed in the margin (the steady state while the tasks wait): the same figures.
Also: requests per submitted job (adds, and everything else of the poll), the double's own CPU for each.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DOUBLE = '''
import json, sys, time
sys.path.insert(0, {repo!r})
from tests.azurebatch.double import BatchDouble
double = BatchDouble({directory!r}, speed=1, tick_seconds=0.5)  # Batch's clock, no tick 50x a second
print(json.dumps({{'endpoint': double.endpoint, 'ca': double.ca_file, 'token': double.issue_token(lifetime=7200)}}),
      flush=True)
sys.stdin.read()
double.close()
'''
POOL = {'id': 'p', 'vmSize': 'Standard_D2s_v3', 'targetDedicatedNodes': 0,
        'virtualMachineConfiguration': {
            'imageReference': {'publisher': 'canonical', 'offer': '0001-com-ubuntu-server-jammy', 'sku': '22_04-lts',
                               'version': 'latest'},
            'nodeAgentSKUId': 'batch.node.ubuntu 22.04'}}


def _cpu(pid):
    with open('/proc/{}/stat'.format(pid), encoding='ascii') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def _task_body(index):
    """A task as tasks.task_body makes it, as far as its size and identity go (tests/azurebatch/test_client.py)."""
    from azext_batchai_sweep.localservice.schedulers.azurebatch import node_wrapper
    job = 'sub/rg/ws/exp/job-{:05d}/uid-{:05d}'.format(index, index)
    spec = json.dumps({'name': 'job-{:05d}'.format(index), 'props': {'jobOutputDirectoryPathSegment': job}})
    return {'id': 'task-{:05d}'.format(index), 'commandLine': '/bin/sh -c "python3 $AZ_BATCHAI_WRAPPER"',
            'displayName': 'job-{:05d}'.format(index),
            'environmentSettings': [{'name': node_wrapper.TASK_VARIABLE, 'value': spec}]}


class _Clock:
    """A poll's figures: our process time and wall time, the double's CPU, the requests our client sent."""

    def __init__(self, api, double_pid):
        self.api, self.double_pid = api, double_pid

    def __enter__(self):
        self.calls = sum(self.api.calls.values())
        self.cpu, self.wall, self.double = time.process_time(), time.perf_counter(), _cpu(self.double_pid)
        return self

    def __exit__(self, *exc):
        self.cpu = time.process_time() - self.cpu
        self.wall = time.perf_counter() - self.wall
        self.double = _cpu(self.double_pid) - self.double
        self.calls = sum(self.api.calls.values()) - self.calls


def scheduler_with(api, directory, held):
    """An AzureBatchScheduler (its own store in `directory`) following `held` ({job key: _Task}) as after their add."""
    from azext_batchai_sweep.localservice.data.store import Store
    from azext_batchai_sweep.localservice.schedulers.azurebatch.scheduler import AzureBatchScheduler
    os.makedirs(directory, exist_ok=True)
    store = Store(os.path.join(directory, 'service.db'))
    scheduler = AzureBatchScheduler(store, directory, api, owner='bench')
    scheduler._held.update(held)  # pylint: disable=protected-access
    return scheduler


def batch_poll(tasks):
    sys.path.insert(0, REPO)
    from azext_batchai_sweep.localservice.schedulers.azurebatch.auth import AzLoginCredential
    from azext_batchai_sweep.localservice.schedulers.azurebatch.client import BatchApi
    from azext_batchai_sweep.localservice.schedulers.azurebatch.scheduler import _Task
    root = tempfile.mkdtemp(prefix='bench-scale-batch-')
    child = subprocess.Popen([sys.executable, '-c', DOUBLE.format(repo=REPO, directory=os.path.join(root, 'double'))],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO)
    try:
        info = json.loads(child.stdout.readline())
        api = BatchApi(info['endpoint'], AzLoginCredential(source=lambda: (info['token'], time.time() + 7200)),
                       connection_verify=info['ca'])
        api.create_pool(POOL)
        api.create_job({'id': 'j', 'poolInfo': {'poolId': 'p'}})
        bodies = [_task_body(i) for i in range(tasks)]
        with _Clock(api, child.pid) as add:
            results = api.add_tasks('j', bodies)
        assert all(outcome is None for outcome in results.values()) and len(results) == tasks
        held = {'job-{:05d}'.format(i): _Task(batch_job='j', task_id=body['id'], cluster='c', nodes=1, confirmed=True)
                for i, body in enumerate(bodies)}
        scheduler = scheduler_with(api, os.path.join(root, 'service'), held)
        figures = {}
        for name in ('full list', 'within the margin', 'nothing changed'):
            if name == 'nothing changed':  # the margin past: the filter starts after every task's last change
                later = time.strftime('%Y-%m-%dT%H:%M:%S.000Z', time.gmtime(time.time() + 5))
                scheduler._since['j'] = later  # pylint: disable=protected-access
            with _Clock(api, child.pid) as poll:
                scheduler._poll()  # pylint: disable=protected-access
            figures[name] = poll
            if name == 'full list':
                assert 'j' in scheduler._since  # pylint: disable=protected-access
        print('| Batch tasks queued | add: requests/job | add CPU/job | poll | requests | poll CPU | poll wall | '
              'the double\'s CPU |')
        for name, poll in figures.items():
            print('| {:,} | {:.3f} | {:.2f} ms | {} | {} | {:.3f} s | {:.3f} s | {:.3f} s |'.format(
                tasks, add.calls / tasks, 1000 * add.cpu / tasks, name, poll.calls, poll.cpu, poll.wall,
                poll.double), flush=True)
        scheduler._store.close() if hasattr(scheduler._store, 'close') else None  # pylint: disable=protected-access
    finally:
        child.stdin.close()
        child.wait(30)
        shutil.rmtree(root, ignore_errors=True)
