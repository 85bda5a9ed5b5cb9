"""Benchmark of one `az batchai sweep run` at scale: thousands of short jobs steered by ASHA, on the local service's
processes scheduler, measured end to end (issue 44, item 1); and Azure Batch's poll of 10,000 tasks through the
lifecycle double (item 3: `--batch`).

Usage: python bench/scale.py [--jobs 1000 3000 10000] [--sampling bayesian random] [--slots 32]
                             [--epoch-seconds 0.3] [--poll-interval 1] [--profile DIR] [--batch] [--batch-tasks 10000]
                             [--quick]

1. Per (jobs, sampling): a local service (foreground module, a temporary data dir, `--slots` nodes in its cluster),
   and one `az batchai sweep run` of `--jobs` jobs: ASHA (minResource 1, maxResource 10, eta 3) under TPE
   (`bayesian`, multiFidelity) or `random` sampling, 2 real parameters, maxConcurrentJobs twice the slots (the
   service's queue keeps the slots busy between two polls). Each job is a bash loop printing `epoch=E
   val_accuracy=V` for 10 epochs, `--epoch-seconds` apart (builtin `read -t` as its sleep: no process per epoch, so
   the jobs' own CPU stays small beside the controller's on a 2-core machine). Measured: az's wall time against the
   jobs' own slot-time (the sum of their run times over the slots: the least wall time the same jobs could take),
   idle slot-time (slots x wall - the jobs' run times; over the jobs' span, split by cause from each job's creation,
   start and end times: a job queued at the service, none queued while jobs were left to create, after the last
   create), az's CPU time (user + system, from wait4) per job and per
   decision (a decision: a job submitted or a job stopped), the peak RSS of az (VmHWM) and of the service, the
   service's own CPU (its process, not the jobs: they are its children), and the requests the service answered per
   job, by kind (its DEBUG log of every request). With `--profile DIR`, az and the service run under cProfile.
2. `--batch`: the local service's Azure Batch scheduler against the lifecycle double (tests/azurebatch), with
   `--batch-tasks` tasks queued on a pool that never grows: the requests per submitted job and the CPU and time of one
   poll (one filtered task list), from the scheduler's own counts (bench/scale_batch.py).
Setup is never timed; figures go to stdout as table rows (docs/benchmarks.md).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=wrong-import-position
from bench.procmem import vm_hwm_kb  # noqa: E402
from tests.fixtures_az import base_env, dev_sources  # noqa: E402

EXPERIMENT = 'bench-scale'
EPOCHS = 10
# One job: 10 epochs of a curve set by X and Y (best at 300, 600; their integer parts, in bash's arithmetic), `read -t`
# on an open pipe as a builtin sleep.
JOB = ('x={{{{X}}}}; y={{{{Y}}}}; x=${{x%%.*}}; y=${{y%%.*}}; exec 3<> <(:); for e in 1 2 3 4 5 6 7 8 9 10; do '
       'read -t {seconds} -u 3; echo "epoch=$e val_accuracy=$(( (1000 - (x - 300) ** 2 / 100 - (y - 600) ** 2 / 100) '
       '* e / (e + 2) ))"; done')
REQUEST = re.compile(r'DEBUG azext_batchai_sweep\.localservice\.[\w.]+: (GET|PUT|POST|DELETE|HEAD) (\S+) -> (\d+)')
CLK_TCK = os.sysconf('SC_CLK_TCK')


def sweep_file(directory, jobs, sampling, slots, epoch_seconds, seed=1):
    sampler = ('{{type: bayesian, multiFidelity: true, count: {}, seed: {}}}'.format(jobs, seed)
               if sampling == 'bayesian' else '{{type: random, count: {}, seed: {}}}'.format(jobs, seed))
    text = '\n'.join([
        'jobNamePrefix: scale',
        'objective: {metric: val_accuracy, goal: max, step: epoch}',
        'sampling: ' + sampler,
        'earlyTermination: {{policy: asha, minResource: 1, maxResource: {}, eta: 3}}'.format(EPOCHS),
        'limits: {{maxConcurrentJobs: {}}}'.format(2 * slots),
        'parameters:',
        '  - {name: X, type: numeric, dataType: REAL, start: 0, end: 1000, scale: LINEAR}',
        '  - {name: Y, type: numeric, dataType: REAL, start: 0, end: 1000, scale: LINEAR}',
        'job:',
        '  nodeCount: 1',
        '  stdOutErrPathPrefix: $AZ_BATCHAI_MOUNT_ROOT/logs',
        '  customToolkitSettings: {{commandLine: {}}}'.format(json.dumps(JOB.format(seconds=epoch_seconds))),
    ])
    path = os.path.join(directory, 'scale-{}-{}.yaml'.format(sampling, jobs))
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text + '\n')
    return path


def cpu_seconds(pid):
    """user + system CPU seconds of a live process (itself, not its children), or None."""
    try:
        with open('/proc/{}/stat'.format(pid), encoding='ascii') as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def load_average():
    with open('/proc/loadavg', encoding='ascii') as f:
        return float(f.read().split()[0])


def start_service(data_dir, slots, profile=None):
    """The foreground service (as tests/fixtures_service.py starts it) at DEBUG (a line per request), optionally
    under cProfile; returns (Popen, service.json)."""
    os.makedirs(data_dir, exist_ok=True)
    prefix = ['-m', 'cProfile', '-o', profile] if profile else []
    cmd = [sys.executable, *prefix, '-m', 'azext_batchai_sweep.localservice', '--data-dir', data_dir, '--port', '0',
           '--files-port', '0', '--slots', str(slots), '--log-level', 'DEBUG']
    log = open(os.path.join(data_dir, 'service.log'), 'ab')  # pylint: disable=consider-using-with
    proc = subprocess.Popen(  # pylint: disable=consider-using-with
        cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    log.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(data_dir, 'service.json'), encoding='utf-8') as f:
                info = json.load(f)
            if info['pid'] == proc.pid:
                return proc, info
        except (FileNotFoundError, ValueError):
            pass
        if proc.poll() is not None:
            raise RuntimeError('the service exited with {}'.format(proc.returncode))
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError('the service did not start')


def request_counts(log_path):
    """{kind: requests} from the service's DEBUG log: the sweep's listing, log reads, creates, terminates, other."""
    counts = {}
    with open(log_path, encoding='utf-8', errors='replace') as f:
        for line in f:
            match = REQUEST.search(line)
            if not match:
                continue
            method, path = match.group(1), match.group(2)
            if method == 'GET' and path.endswith('/jobs'):
                kind = 'list'
            elif method == 'GET' and re.search(r'/jobs/[^/]+$', path):
                kind = 'get'
            elif method == 'PUT' and '/jobs/' in path:
                kind = 'create'
            elif path.endswith('/terminate'):
                kind = 'terminate'
            elif path.endswith('/listOutputFiles'):
                kind = 'listOutputFiles'
            elif path.startswith('/download/'):
                kind = 'log read'
            else:
                kind = 'other'
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def _time(text):
    return datetime.datetime.fromisoformat(text.replace('Z', '+00:00')).timestamp()


def job_times(client, info):
    """[(created, start, end)] of every job of the experiment that ran (epoch seconds)."""
    from azext_batchai_sweep.core.service.listing import list_jobs
    spans = []
    for job in list_jobs(client, info['resourceGroup'], info['workspace'], EXPERIMENT):
        props = job._raw.get('properties') or {}  # pylint: disable=protected-access
        execution = props.get('executionInfo') or {}
        if execution.get('startTime') and execution.get('endTime'):
            spans.append((_time(props['creationTime']), _time(execution['startTime']), _time(execution['endTime'])))
    return spans


def idle_split(spans, slots):
    """Idle slot-seconds over the jobs' span, by cause: (while the service had a job queued: its start latency, a
    slot freed and the next queued job not started yet; while none was queued and the sweep still had jobs to
    create: the controller's; after the last job was created: the sweep's end, the last jobs finishing)."""
    events = []
    for created, start, end in spans:
        events += [(created, 0, 1), (start, 0, -1), (start, 1, 1), (end, 1, -1)]
    events.sort()
    first_start = min(start for _, start, _ in spans)
    last_created = max(created for created, _, _ in spans)
    queued = running = 0
    idle = [0.0, 0.0, 0.0]
    last = events[0][0]
    for when, kind, delta in events:
        if last >= first_start:
            seconds = max(0, slots - running) * (when - last)
            idle[0 if queued > 0 else 1 if last < last_created else 2] += seconds
        last = when
        if kind == 0:
            queued += delta
        else:
            running += delta
    return tuple(idle)


def one_run(args, root, jobs, sampling):
    name = '{}-{}'.format(sampling, jobs)
    directory = os.path.join(root, name)
    os.makedirs(directory)
    profile = args.profile and os.path.abspath(args.profile)
    if profile:
        os.makedirs(profile, exist_ok=True)
    proc, info = start_service(os.path.join(directory, 'service'), args.slots,
                               profile and os.path.join(profile, name + '.service.prof'))
    config = os.path.join(directory, 'azure-config')
    os.makedirs(config)
    env = base_env(config, {'AZURE_BATCHAI_SWEEP_ENDPOINT': info['endpoint'],
                            'AZURE_BATCHAI_SWEEP_TOKEN_FILE': info['tokenFile'], 'AZURE_CORE_ONLY_SHOW_ERRORS': 'true',
                            'AZURE_EXTENSION_DEV_SOURCES': dev_sources()})
    spec = sweep_file(directory, jobs, sampling, args.slots, args.epoch_seconds)
    prefix = [sys.executable, '-m', 'cProfile', '-o', os.path.join(profile, name + '.az.prof')] if profile \
        else [sys.executable]
    cmd = prefix + ['-m', 'azure.cli', 'batchai', 'sweep', 'run', '-g', info['resourceGroup'], '-w',
                    info['workspace'], '-e', EXPERIMENT, '-n', 'scale', '--spec', spec, '-c', info['cluster'],
                    '--poll-interval', str(args.poll_interval), '-o', 'json']
    from azext_batchai_sweep.core.service.client import local_batchai_client
    client = local_batchai_client(info['endpoint'], info['tokenFile'])
    client.experiments.begin_create(info['resourceGroup'], info['workspace'], EXPERIMENT).result()
    service_cpu0 = cpu_seconds(proc.pid)
    loads = []
    out = open(os.path.join(directory, 'result.json'), 'wb')  # pylint: disable=consider-using-with
    err = open(os.path.join(directory, 'stderr.txt'), 'wb')  # pylint: disable=consider-using-with
    started = time.time()
    az = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, cwd=directory)  # pylint: disable=consider-using-with
    peak_kb, service_kb, last_load = 0, 0, 0.0
    try:
        while True:
            pid, status, usage = os.wait4(az.pid, os.WNOHANG)
            if pid:
                break
            peak_kb = max(peak_kb, vm_hwm_kb(az.pid) or 0)
            if time.monotonic() - last_load >= 15:
                loads.append(load_average())
                last_load = time.monotonic()
            time.sleep(0.1)
        wall = time.time() - started
        az.returncode = os.waitstatus_to_exitcode(status)
        out.close()
        err.close()
        service_cpu = cpu_seconds(proc.pid) - service_cpu0
        service_kb = vm_hwm_kb(proc.pid) or 0
        spans = job_times(client, info)
    finally:  # interrupted or not: nothing of the run is left behind
        if az.poll() is None and az.returncode is None:
            az.terminate()
            az.wait(60)
        proc.terminate()
        proc.wait(60)
    if az.returncode != 0:
        with open(os.path.join(directory, 'stderr.txt'), encoding='utf-8', errors='replace') as f:
            raise RuntimeError('sweep run exited with {}:\n{}'.format(az.returncode, f.read()[-3000:]))
    with open(os.path.join(directory, 'result.json'), encoding='utf-8') as f:
        result = json.load(f)
    requests = request_counts(os.path.join(directory, 'service', 'service.log'))
    busy = sum(end - begin for _, begin, end in spans)
    span = max(end for _, _, end in spans) - min(begin for _, begin, _ in spans)
    idle_queued, idle_empty, idle_end = idle_split(spans, args.slots)
    az_cpu = usage.ru_utime + usage.ru_stime
    decisions = len(spans) + result['decisions'].get('stopped', 0)
    figures = {
        'jobs': len(spans), 'sampling': sampling, 'wall': wall, 'ideal': busy / args.slots,
        'idle': 1 - busy / (args.slots * wall), 'idle_span': 1 - busy / (args.slots * span),
        'idle_queued': idle_queued / (args.slots * span), 'idle_empty': idle_empty / (args.slots * span),
        'idle_end': idle_end / (args.slots * span),
        # outside the jobs' span: az's start to the first job's start, the last job's end to az's exit
        'lead_in': min(start for _, start, _ in spans) - started,
        'lead_out': started + wall - max(end for _, _, end in spans),
        'az_cpu': az_cpu, 'az_cpu_per_job_ms': 1000 * az_cpu / len(spans),
        'az_cpu_per_decision_ms': 1000 * az_cpu / decisions, 'az_peak_mb': peak_kb / 1024,
        'service_cpu': service_cpu, 'service_peak_mb': service_kb / 1024,
        'requests': requests, 'requests_per_job': sum(requests.values()) / len(spans),
        'stopped': result['decisions'].get('stopped', 0), 'load': loads,
        'best': (result.get('best') or {}).get('objective'),
    }
    with open(os.path.join(directory, 'figures.json'), 'w', encoding='utf-8') as f:
        json.dump(figures, f, indent=1)
    print('| {jobs:,} | {sampling} | {wall:.0f} s | {ideal:.0f} s | {over:.2f}x | {idle:.1%} ({idle_span:.1%}) | '
          '{az_cpu:.0f} s: {az_cpu_per_job_ms:.1f} ms/job, {az_cpu_per_decision_ms:.1f} ms/decision | '
          '{az_peak_mb:.0f} MB | {service_cpu:.0f} s, {service_peak_mb:.0f} MB | {requests_per_job:.2f} | '
          'load {load} |'.format(over=wall / figures['ideal'],
                                 load='-'.join('{:.1f}'.format(x) for x in (min(loads or [0]), max(loads or [0]))),
                                 **{k: v for k, v in figures.items() if k != 'load'}), flush=True)
    print('  requests: {}; stopped {}; best {}'.format(requests, figures['stopped'], figures['best']), flush=True)
    print('  idle slot-time of the span: {:.1%} with jobs queued (the service starting them), {:.1%} with none queued '
          '(the controller), {:.1%} after the last create (the last jobs finishing); outside the span: {:.1f} s from '
          'az\'s start to the first job\'s, {:.1f} s from the last job\'s end to az\'s exit'.format(
              figures['idle_queued'], figures['idle_empty'], figures['idle_end'], figures['lead_in'],
              figures['lead_out']), flush=True)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--jobs', type=int, nargs='+', default=[1000, 3000, 10000])
    parser.add_argument('--sampling', nargs='+', default=['bayesian', 'random'], choices=['bayesian', 'random'])
    parser.add_argument('--slots', type=int, default=32)
    parser.add_argument('--epoch-seconds', type=float, default=0.3)
    parser.add_argument('--poll-interval', type=float, default=1.0)
    parser.add_argument('--profile', default=None, help='a folder: run az and the service under cProfile')
    parser.add_argument('--keep', action='store_true', help='keep the temporary folder')
    parser.add_argument('--batch', action='store_true', help='only the Azure Batch poll benchmark')
    parser.add_argument('--batch-tasks', type=int, default=10000)
    parser.add_argument('--quick', action='store_true',
                        help='the controller\'s CPU curve in a third of the time: random sampling only, epochs 0.1 s '
                             'apart, --poll-interval 0.33 (as many polls per job as the full protocol)')
    args = parser.parse_args()
    if args.quick:
        args.sampling, args.epoch_seconds, args.poll_interval = ['random'], 0.1, 0.33
    print('machine: {} CPUs, {}, Python {}, load average {:.2f}'.format(
        os.cpu_count(), platform.machine(), platform.python_version(), load_average()), flush=True)
    if args.batch:
        from bench.scale_batch import batch_poll
        batch_poll(args.batch_tasks)
        return
    print('| jobs | sampling | wall | jobs\' slot-time / slots | ratio | idle slot-time (of the jobs\' span) | '
          'az CPU | '
          'az peak RSS | service CPU, peak RSS | requests/job | load |', flush=True)
    root = tempfile.mkdtemp(prefix='bench-scale-')
    try:
        for jobs in args.jobs:
            for sampling in args.sampling:
                one_run(args, root, jobs, sampling)
    finally:
        if args.keep:
            print('kept', root)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == '__main__':
    main()
