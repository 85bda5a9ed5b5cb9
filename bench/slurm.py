"""Benchmark: N short jobs through `az batchai sweep submit --wait` to the local service on Slurm, against a plain
`sbatch` loop of the same N commands plus a `squeue` wait, side by side in one run on one Slurm cluster.

Usage: python bench/slurm.py [--jobs 1000] [--nodes 4] [--cpus 16] [--interval 1] [--poll 1] [--rounds 3]

The cluster is the tests' (tests/slurm/cluster.py: Debian's slurmctld + slurmd on loopback; needs root and the
packages). Both sides run the same command per job (`echo x=<i>`, output to a file per job) on the same nodes x
cpus slots; the baseline is what a user would type: `for i in ...; do sbatch -o out/%j.txt --wrap "echo x=$i";
done`, then `squeue` every --interval s until it is empty. The service side is the whole az path: plan, N PUTs
(16 in flight), the service's sbatch calls (job arrays of the jobs queued together), its squeue polls (--poll s),
az's own status polls (--interval s). The two alternate for --rounds rounds (the machine's load moves both), and
the ratio quoted is the median of the rounds' ratios. Where the service's time goes comes from its log (the Slurm
scheduler logs its command counts and times at stop).
Then the cost of one poll (`squeue -t all -j <ids>`) is measured for 10, 100 and N ids.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=wrong-import-position
from tests.fixtures_az import AZ, base_env  # noqa: E402
from tests.fixtures_service import start_service, stop_service  # noqa: E402
from tests.slurm.cluster import SlurmCluster, why_unavailable  # noqa: E402


def plain(cluster, jobs, interval, out_dir):
    """The sbatch loop and the squeue wait; (submit seconds, total seconds)."""
    os.makedirs(out_dir)
    started = time.monotonic()
    for i in range(jobs):
        cluster.run('sbatch', '-Q', '-o', os.path.join(out_dir, '%j.txt'), '--wrap', 'echo x={}'.format(i),
                    check=True)
    submitted = time.monotonic() - started
    while cluster.run('squeue', '-h', '-o', '%i').stdout.strip():
        time.sleep(interval)
    total = time.monotonic() - started
    assert len(os.listdir(out_dir)) == jobs
    return submitted, total


def through_service(cluster, jobs, interval, poll, work):
    os.makedirs(work)
    service = start_service(os.path.join(work, 'service'), extra_args=[
        '--scheduler', 'slurm', '--slurm-conf', cluster.conf, '--slurm-poll', str(poll), '--log-level', 'INFO'])
    job = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_MOUNT_ROOT/logs',
           'customToolkitSettings': {'commandLine': 'echo x={{X}}'}}
    with open(os.path.join(work, 'sweep.yaml'), 'w', encoding='utf-8') as f:
        f.write('jobNamePrefix: b\nparameters:\n  - {{name: X, type: discrete, values: {}}}\njob: {}\n'.format(
            json.dumps(list(range(jobs))), json.dumps(job)))
    config = os.path.join(work, 'azure-config')
    os.mkdir(config)
    env = base_env(config, {'AZURE_BATCHAI_SWEEP_ENDPOINT': service.endpoint,
                            'AZURE_BATCHAI_SWEEP_TOKEN_FILE': service.token_file})
    try:
        started = time.monotonic()
        done = subprocess.run([AZ, 'batchai', 'sweep', 'submit', '-g', service.resource_group, '-w',
                               service.workspace, '-e', 'bench', '-n', 'bench', '--spec', 'sweep.yaml', '-c',
                               service.cluster, '--parallel', '16', '--wait', '--interval', str(interval),
                               '--max-jobs', str(jobs), '-o', 'none'], cwd=work, env=env, capture_output=True,
                              text=True, check=False)
        total = time.monotonic() - started
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        stop_service(service)
    with open(os.path.join(service.data_dir, 'service.log'), encoding='utf-8') as f:
        summary = [line for line in f if 'Slurm commands run' in line][-1]
    return total, summary.split('Slurm commands run: ', 1)[1].strip()


def poll_cost(cluster, ids):
    times = []
    for _ in range(5):
        started = time.monotonic()
        cluster.run('squeue', '-h', '-t', 'all', '-j', ','.join(ids), '-o', '%i|%T|%r')
        times.append(time.monotonic() - started)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--jobs', type=int, default=1000)
    parser.add_argument('--nodes', type=int, default=4)
    parser.add_argument('--cpus', type=int, default=16)
    parser.add_argument('--interval', type=float, default=1.0, help='seconds between two waits\' checks')
    parser.add_argument('--poll', type=float, default=1.0, help='seconds between two service squeue polls')
    parser.add_argument('--rounds', type=int, default=3, help='plain then service, this many times (ratio: median)')
    args = parser.parse_args()
    reason = why_unavailable()
    if reason:
        sys.exit('bench/slurm.py: ' + reason)
    work = tempfile.mkdtemp(prefix='bench-slurm.')
    cluster = SlurmCluster(nodes=args.nodes, cpus=args.cpus).start()
    try:
        print('{} jobs on {} nodes x {} CPUs; {} {}, {} CPUs, Python {}'.format(
            args.jobs, args.nodes, args.cpus, platform.system(), platform.machine(), os.cpu_count(),
            platform.python_version()), flush=True)
        ratios = []
        for round_ in range(1, args.rounds + 1):
            submit_s, plain_s = plain(cluster, args.jobs, args.interval, os.path.join(work, 'plain{}'.format(round_)))
            print('round {}: plain sbatch loop: submitted in {:.1f} s ({:.1f} ms per sbatch), all done after {:.1f} '
                  's'.format(round_, submit_s, 1000 * submit_s / args.jobs, plain_s), flush=True)
            ids = re.findall(r'JobId=(\d+)', open(cluster.jobcomp, encoding='utf-8').read())[-args.jobs:]
            cluster.wait_idle()
            service_s, summary = through_service(cluster, args.jobs, args.interval, args.poll,
                                                 os.path.join(work, 'service{}'.format(round_)))
            cluster.wait_idle()
            ratios.append(service_s / plain_s)
            print('round {}: az sweep submit --wait on the service: {:.1f} s; service: {}; ratio {:.2f}x'.format(
                round_, service_s, summary, ratios[-1]), flush=True)
        print('ratio az+service / plain: median {:.2f}x (min {:.2f}x, max {:.2f}x over {} rounds)'.format(
            statistics.median(ratios), min(ratios), max(ratios), len(ratios)))
        for count in sorted({10, 100, len(ids)}):
            print('one poll (squeue -t all -j <{} ids>): {:.1f} ms'.format(count, 1000 * poll_cost(cluster,
                                                                                                  ids[:count])))
    finally:
        cluster.stop()


if __name__ == '__main__':
    main()
