"""Benchmark of the local Batch AI service through the real SDK client.

Usage: python bench/service.py [--creates 1000] [--gets 2000] [--list 10000] [--threads 16]

The service runs as the foreground module in a subprocess on a temporary data dir. Jobs go to a one-node cluster
held by a long blocker job, so they stay queued: the figures measure the API, not the jobs competing for the CPUs.

1. creates/s: `--threads` threads, each with its own client, one PUT per job (`begin_create(polling=False)`);
2. gets/s: the same threads GET those jobs;
3. list: jobs are created up to `--list` in one experiment, then listed (pages of 1000, following nextLink).
"""
import argparse
import os
import platform
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=wrong-import-position
from azure.mgmt.batchai import models  # noqa: E402

from azext_batchai_sweep.core.service.client import local_batchai_client  # noqa: E402
from tests.fixtures_service import start_service, stop_service  # noqa: E402


def _params(cluster_id, command='true'):
    return models.JobCreateParameters(
        cluster=models.ResourceId(id=cluster_id), node_count=1,
        std_out_err_path_prefix='$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
        mount_volumes=models.MountVolumes(azure_file_shares=[models.AzureFileShareReference(
            account_name='bench', azure_file_url='https://bench.file.core.windows.net/logs',
            credentials=models.AzureStorageCredentialsInfo(account_key='x'), relative_mount_path='logs')]),
        environment_variables=[models.EnvironmentVariable(name='PARAM_LR', value='0.01')],
        custom_toolkit_settings=models.CustomToolkitSettings(command_line=command))


def run_on_clients(clients, items, action):
    """Run action(client, item) over items with one thread per client; return the elapsed seconds."""
    chunks = [items[i::len(clients)] for i in range(len(clients))]
    errors = []

    def work(client, chunk):
        try:
            for item in chunk:
                action(client, item)
        except Exception as ex:  # pylint: disable=broad-except
            errors.append(ex)
    threads = [threading.Thread(target=work, args=(c, chunk)) for c, chunk in zip(clients, chunks)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--creates', type=int, default=1000)
    parser.add_argument('--gets', type=int, default=2000)
    parser.add_argument('--list', type=int, default=10000)
    parser.add_argument('--threads', type=int, default=16)
    args = parser.parse_args()
    info = start_service(tempfile.mkdtemp(prefix='bench-service-'), slots=1)
    try:
        clients = [local_batchai_client(info.endpoint, info.token_file) for _ in range(args.threads)]
        client = clients[0]
        rg, ws = info.resource_group, info.workspace
        client.experiments.begin_create(rg, ws, 'bench').result()
        client.jobs.begin_create(rg, ws, 'bench', 'blocker', _params(info.cluster_id, 'sleep 3600')).result()
        params = _params(info.cluster_id)
        names = ['job-{:05d}'.format(i) for i in range(args.creates)]
        create = run_on_clients(clients, names, lambda c, n: c.jobs.begin_create(rg, ws, 'bench', n, params,
                                                                            polling=False))
        get_names = [names[i % len(names)] for i in range(args.gets)]
        get = run_on_clients(clients, get_names, lambda c, n: c.jobs.get(rg, ws, 'bench', n))
        more = ['job-{:05d}'.format(i) for i in range(args.creates, args.list - 1)]
        run_on_clients(clients, more, lambda c, n: c.jobs.begin_create(rg, ws, 'bench', n, params, polling=False))
        start = time.perf_counter()
        listed = sum(1 for _ in client.jobs.list_by_experiment(rg, ws, 'bench'))
        listing = time.perf_counter() - start
        assert listed == max(args.list, args.creates + 1), listed
    finally:
        stop_service(info)
    print('{} {} CPUs, Python {}'.format(platform.system(), os.cpu_count(), platform.python_version()))
    print('| threads | creates | creates/s | 1,000 creates (s) | gets | gets/s | list {:,} jobs (s) |'.format(listed))
    print('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    print('| {} | {:,} | {:,.0f} | {:.2f} | {:,} | {:,.0f} | {:.2f} |'.format(
        args.threads, args.creates, args.creates / create, 1000 * create / args.creates, args.gets,
        args.gets / get, listing))


if __name__ == '__main__':
    main()
