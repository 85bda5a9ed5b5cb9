"""Benchmark of the `az batchai sweep` commands through the real az, each against a baseline measured in the same run.

Usage: python bench/cli.py [--only status,help,submit,metrics,scan] [--status-jobs 10000] [--submit-jobs 1000]
                           [--metrics-jobs 500] [--log-mb 5] [--repeat 3] [--help-repeat 10]

Services are the local Batch AI service (foreground module in a subprocess, temporary data dir, as
`az batchai sweep local start` runs it); az reaches them through AZURE_BATCHAI_SWEEP_ENDPOINT/_TOKEN_FILE and a
throw-away AZURE_CONFIG_DIR. Setup (creating jobs) is never timed. Every command's time is its wall clock,
interpreter start-up included; `az version` is measured alongside as az's own start-up.

1. status: `az batchai sweep status` of a 10,000-job sweep (-o json) vs a plain script listing the same jobs with
   the azure.mgmt.batchai client and printing them as JSON. Ratio: az / (script + az start-up).
2. help: `az batchai sweep -h` vs `az batchai -h`, interleaved, medians: what the extension adds to start-up.
3. submit: `submit --parallel 16` of 1,000 planned jobs with 200 ms of injected latency per request, vs the limit
   16 / 0.2 s = 80 jobs/s. The jobs stay queued behind a blocker job, so the CPUs serve the API, not 1,000 jobs.
4. metrics: `metrics --metric val_accuracy` over 500 jobs with 5 MB logs vs downloading the same files raw
   (same 8 threads, same chunk size as metrics' streamed reads, bytes dropped); peak RSS of the az process
   (bench/procmem.py). Two log shapes: the metric on every line (`--reduce last` and `max`), and once per 100 lines
   (`max`). A full scan (`--reduce max`) is measured against a plain script that downloads the same bytes the same
   way and takes ``max(map(float, re.findall(...)))`` of each file (its baseline since issue 44): a scan's floor is
   parsing every value, which the raw download skips.
5. scan: the CPU time of metrics' scan of one log of each shape in this process, against the script's parse of
   the same bytes (no HTTP, no other process): what the extractor itself adds, whatever the machine's load.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=wrong-import-position
from azure.mgmt.batchai import models  # noqa: E402

from azext_batchai_sweep.core.service.client import local_batchai_client  # noqa: E402
from azext_batchai_sweep.core.outputs.download import CHUNK_SIZE  # noqa: E402
from bench.procmem import run_measured  # noqa: E402
from bench.service import run_on_clients  # noqa: E402
from tests.fixtures_az import AZ, base_env  # noqa: E402
from tests.fixtures_service import start_service, stop_service  # noqa: E402

EXPERIMENT = 'bench'
SWEEP = 'bench'
SUBMIT_PARALLEL = 16
LATENCY_MS = 200

# The "plain Python script" of benchmark 1: list the jobs with the SDK client, print them as JSON.
LIST_SCRIPT = r'''
import json, sys
from azure.core.pipeline.policies import SansIOHTTPPolicy
from azure.mgmt.batchai import BatchAI
from azure.mgmt.batchai.models import JobsListByExperimentOptions

endpoint, token_file, rg, ws, exp = sys.argv[1:]
class Token(SansIOHTTPPolicy):
    def on_request(self, request):
        request.http_request.headers['Authorization'] = 'Bearer ' + open(token_file).read().strip()
class NoCredential:
    def get_token(self, *scopes, **kwargs):
        raise RuntimeError
client = BatchAI(NoCredential(), '00000000-0000-0000-0000-000000000000', base_url=endpoint,
                 authentication_policy=Token())
jobs = client.jobs.list_by_experiment(rg, ws, exp, JobsListByExperimentOptions(max_results=1000))
json.dump([job.as_dict() for job in jobs], sys.stdout, default=str)
'''

# The baseline of benchmark 4: download every URL (one per line of argv[1]) on 8 threads, dropping the bytes, in
# chunks of argv[2] bytes: the size `metrics` reads (core/outputs/download.CHUNK_SIZE), so both read alike.
DOWNLOAD_SCRIPT = r'''
import sys, threading, requests
size = int(sys.argv[2])
urls = open(sys.argv[1]).read().split()
total = [0]
lock = threading.Lock()
def work(part):
    with requests.Session() as session:
        for url in part:
            with session.get(url, stream=True, timeout=60) as response:
                response.raise_for_status()
                n = sum(len(chunk) for chunk in response.iter_content(size))
            with lock:
                total[0] += n
threads = [threading.Thread(target=work, args=(urls[i::8],)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(total[0])
'''

# The baseline of a full scan (`--reduce max`): the same download, then each file's largest value the plain way,
# max(map(float, re.findall(...))) over the file's bytes joined (argv[3]: the metric's name).
PARSE_SCRIPT = r'''
import re, sys, threading, requests
size = int(sys.argv[2])
urls = open(sys.argv[1]).read().split()
pattern = re.compile(re.escape(sys.argv[3]).encode() + rb'=([-+0-9.eE]+)')
best = {}
lock = threading.Lock()
def work(part):
    with requests.Session() as session:
        for url in part:
            with session.get(url, stream=True, timeout=60) as response:
                response.raise_for_status()
                data = b''.join(response.iter_content(size))
            value = max(map(float, pattern.findall(data)), default=None)
            with lock:
                best[url] = value
threads = [threading.Thread(target=work, args=(urls[i::8],)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(len(best), max(v for v in best.values() if v is not None))
'''

# The metrics runs: (log shape, reduce). `last` (the default) reads each log from its end; `max` has to read every
# byte. "dense" logs carry the metric on every line (the worst case for a scan); "epochs" logs are what a training
# script prints: 99 step lines (loss and accuracy, not the metric) for each epoch line with val_accuracy.
METRICS_RUNS = (('dense', 'last'), ('dense', 'max'), ('epochs', 'max'))

# What each metrics job runs: a log of about MB megabytes in Katib's format, written at once.
LOG_SCRIPT = r'''
import os, sys
size, job, shape = int(sys.argv[1]) * 1024 * 1024, int(sys.argv[2]), sys.argv[3]
line = 'epoch={0} loss=0.{1:04d} accuracy=0.{2:04d} val_accuracy=0.{3:04d} lr=0.05 elapsed_s={0}.25\n'
step = 'step={0} loss=0.{1:04d} accuracy=0.{2:04d} lr=0.05 samples_per_s=1{1:04d}.5 elapsed_s={0}.25\n'
lines, n = [], 0
while n < size:
    i = len(lines)
    if shape == 'dense' or i % 100 == 99:
        lines.append(line.format(i, i % 9973, (job * 7 + i) % 9973, (job * 31 + i // 100) % 9973))
    else:
        lines.append(step.format(i, i % 9973, (job * 7 + i) % 9973))
    n += len(lines[-1])
sys.stdout.write(''.join(lines))
'''


def run(cmd, env=None, stdout=subprocess.DEVNULL):
    """Run a command; return (wall seconds, peak RSS in MB of that process, measured on it: bench/procmem.py)."""
    with tempfile.TemporaryFile() as stderr:
        code, elapsed, peak = run_measured(cmd, env=env, stdout=stdout, stderr=stderr)
        if code != 0:
            stderr.seek(0)
            raise RuntimeError('{} exited with {}:\n{}'.format(' '.join(cmd[:6]), code,
                                                               stderr.read().decode(errors='replace')[-3000:]))
    return elapsed, peak


class Bench:
    def __init__(self, args):
        self.args = args
        self.root = tempfile.mkdtemp(prefix='bench-cli-')
        self.config_dir = os.path.join(self.root, 'azure-config')
        os.makedirs(self.config_dir)
        self.rows = []

    def az_env(self, info):
        return base_env(self.config_dir, {'AZURE_BATCHAI_SWEEP_ENDPOINT': info.endpoint,
                                          'AZURE_BATCHAI_SWEEP_TOKEN_FILE': info.token_file,
                                          'AZURE_CORE_ONLY_SHOW_ERRORS': 'true'})

    def az(self, info, *args, stdout=subprocess.DEVNULL):
        return run([AZ, *args], env=self.az_env(info) if info else base_env(self.config_dir), stdout=stdout)

    def startup(self):
        """Median wall time of `az version`: az's own start-up, the yardstick of the command benchmarks."""
        return statistics.median(self.az(None, 'version')[0] for _ in range(3))

    def sweep_args(self, info):
        return ['-g', info.resource_group, '-w', info.workspace, '-e', EXPERIMENT, '-n', SWEEP]


def _job(cluster_id, command, index, account='bench', sweep=SWEEP):
    """A queued sweep job as `create` plans them: PARAM_*, BATCHAI_SWEEP_NAME and BATCHAI_SWEEP_PARAMS variables."""
    return models.JobCreateParameters(
        cluster=models.ResourceId(id=cluster_id), node_count=1,
        std_out_err_path_prefix='$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
        mount_volumes=models.MountVolumes(azure_file_shares=[
            models.AzureFileShareReference(
                account_name=account, azure_file_url='https://{}.file.core.windows.net/{}'.format(account, share),
                credentials=models.AzureStorageCredentialsInfo(account_key='x'), relative_mount_path=share)
            for share in ('logs', 'scripts')]),
        environment_variables=[
            models.EnvironmentVariable(name='PARAM_I', value=str(index)),
            models.EnvironmentVariable(name='BATCHAI_SWEEP_NAME', value=sweep),
            models.EnvironmentVariable(name='BATCHAI_SWEEP_PARAMS', value=json.dumps({'I': index}))],
        custom_toolkit_settings=models.CustomToolkitSettings(command_line=command))


def _create_jobs(info, names_and_params, threads=16, experiment=EXPERIMENT):
    """Create jobs on `threads` threads, each with its own client (setup, not timed)."""
    clients = [local_batchai_client(info.endpoint, info.token_file) for _ in range(threads)]

    def create(client, item):
        name, params = item
        client.jobs.begin_create(info.resource_group, info.workspace, experiment, name, params, polling=False)
    run_on_clients(clients, list(names_and_params), create)


def _experiment_with_blocker(info):
    """The experiment, and a job holding the service's only slot so that the jobs created next stay queued."""
    client = local_batchai_client(info.endpoint, info.token_file)
    client.experiments.begin_create(info.resource_group, info.workspace, EXPERIMENT).result()
    # A sweep of its own: a job of the benchmarked sweep that its plan lacks would stop `submit` (issue 10).
    client.jobs.begin_create(info.resource_group, info.workspace, EXPERIMENT, 'blocker',
                             _job(info.cluster_id, 'sleep 3600', -1, sweep='blocker')).result()
    return client


def bench_status(bench):
    n = bench.args.status_jobs
    info = start_service(os.path.join(bench.root, 'status'), slots=1)
    try:
        _experiment_with_blocker(info)
        _create_jobs(info, (('bench-{:05d}'.format(i), _job(info.cluster_id, 'true', i)) for i in range(n)))
        script = os.path.join(bench.root, 'list_jobs.py')
        with open(script, 'w', encoding='utf-8') as f:
            f.write(LIST_SCRIPT)
        baseline_cmd = [sys.executable, script, info.endpoint, info.token_file, info.resource_group,
                        info.workspace, EXPERIMENT]
        az_times, script_times, startups = [], [], []
        for _ in range(bench.args.repeat):  # interleaved, so load changes hit both alike
            az_times.append(bench.az(info, 'batchai', 'sweep', 'status', *bench.sweep_args(info), '-o', 'json')[0])
            script_times.append(run(baseline_cmd)[0])
            startups.append(bench.az(None, 'version')[0])
        t_az, t_script, t_start = (statistics.median(x) for x in (az_times, script_times, startups))
    finally:
        stop_service(info)
    bench.rows.append(('status, {:,} jobs (-o json)'.format(n), t_az, 'SDK list + json script {:.2f} s + az '
                       'start-up {:.2f} s'.format(t_script, t_start), t_az / (t_script + t_start), '<= 1.5x',
                       'az / script alone {:.2f}x'.format(t_az / t_script)))


def bench_help(bench):
    # Also `az batchai -h` without the extension: what merely having it installed costs other commands.
    bare_env = {k: v for k, v in base_env(bench.config_dir).items() if k != 'AZURE_EXTENSION_DEV_SOURCES'}
    sweep, batchai, bare = [], [], []
    for _ in range(bench.args.help_repeat):
        sweep.append(bench.az(None, 'batchai', 'sweep', '-h')[0])
        batchai.append(bench.az(None, 'batchai', '-h')[0])
        bare.append(run([AZ, 'batchai', '-h'], env=bare_env)[0])
    t_sweep, t_batchai, t_bare = (statistics.median(x) for x in (sweep, batchai, bare))
    bench.rows.append(('`batchai sweep -h` (median of {})'.format(len(sweep)), t_sweep,
                       '`batchai -h` {:.2f} s'.format(t_batchai), t_sweep / t_batchai, '<= 1.15x',
                       '`batchai -h` without the extension {:.2f} s: the extension adds {:+.0f}% to it'.format(
                           t_bare, 100 * (t_batchai / t_bare - 1))))


def _write_sweep(directory, n, command):
    """A sweep file planning n jobs of `command` (a grid over I, the job index)."""
    job = {'properties': {
        'nodeCount': 1,
        'customToolkitSettings': {'commandLine': command},
        'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
        'mountVolumes': {'azureFileShares': [
            {'azureFileUrl': 'https://<AZURE_BATCHAI_STORAGE_ACCOUNT>.file.core.windows.net/logs',
             'relativeMountPath': 'logs'}]}}}
    spec = {'jobNamePrefix': 'bench', 'sampling': {'type': 'grid'},
            'parameters': [{'name': 'I', 'type': 'numeric', 'dataType': 'INTEGER', 'start': 0, 'end': n - 1,
                            'step': 1, 'scale': 'LINEAR'}],
            'job': job}
    path = os.path.join(directory, 'sweep.json')
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(spec, f)
    return path


def bench_submit(bench):
    n = bench.args.submit_jobs
    directory = os.path.join(bench.root, 'submit')
    info = start_service(directory, slots=1, faults='latency-ms={}'.format(LATENCY_MS))
    try:
        client = _experiment_with_blocker(info)
        plan = os.path.join(directory, 'bench.plan.jsonl')
        spec = _write_sweep(directory, n, 'echo {{I}}')
        bench.az(info, 'batchai', 'sweep', 'create', *bench.sweep_args(info), '--spec', spec, '-c', info.cluster,
                 '--storage-account-name', 'bench', '--plan-file', plan)
        t_submit = bench.az(info, 'batchai', 'sweep', 'submit', *bench.sweep_args(info), '--plan-file', plan,
                            '--parallel', str(SUBMIT_PARALLEL))[0]
        listed = sum(1 for _ in client.jobs.list_by_experiment(info.resource_group, info.workspace, EXPERIMENT))
        if listed != n + 1:
            raise RuntimeError('{} jobs on the service after submit, expected {}'.format(listed, n + 1))
        t_start = bench.startup()
    finally:
        stop_service(info)
    limit = SUBMIT_PARALLEL / (LATENCY_MS / 1000.0)
    rate = n / t_submit
    bench.rows.append(('submit {:,} jobs, --parallel {}, {} ms/request'.format(n, SUBMIT_PARALLEL, LATENCY_MS),
                       t_submit, 'limit {:.0f} jobs/s ({:.1f} s)'.format(limit, n / limit), rate / limit,
                       '>= 0.80 of limit', '{:.1f} jobs/s; without az start-up ({:.2f} s): {:.1f} jobs/s = {:.2f}'
                       .format(rate, t_start, n / (t_submit - t_start), n / (t_submit - t_start) / limit)))


def bench_metrics(bench):
    n, megabytes = bench.args.metrics_jobs, bench.args.log_mb
    directory = os.path.join(bench.root, 'metrics')
    info = start_service(directory, slots=os.cpu_count() or 2)
    try:
        client = local_batchai_client(info.endpoint, info.token_file)
        scripts = os.path.join(info.data_dir, 'storage', 'bench', 'shares', 'scripts')
        os.makedirs(scripts)
        with open(os.path.join(scripts, 'log.py'), 'w', encoding='utf-8') as f:
            f.write(LOG_SCRIPT)
        script = os.path.join(bench.root, 'download.py')
        with open(script, 'w', encoding='utf-8') as f:
            f.write(DOWNLOAD_SCRIPT)
        parse_script = os.path.join(bench.root, 'parse.py')
        with open(parse_script, 'w', encoding='utf-8') as f:
            f.write(PARSE_SCRIPT)
        shapes = sorted({shape for shape, _ in METRICS_RUNS})
        urls, totals = {}, {}
        for shape in shapes:  # one experiment of n jobs per log shape
            experiment = 'bench-' + shape
            client.experiments.begin_create(info.resource_group, info.workspace, experiment).result()
            command = 'python3 $AZ_BATCHAI_JOB_MOUNT_ROOT/scripts/log.py {} {} ' + shape
            _create_jobs(info, (('bench-{:05d}'.format(i), _job(info.cluster_id, command.format(megabytes, i), i))
                                for i in range(n)), experiment=experiment)
            _wait_all_finished(client, info, n, experiment=experiment)
            urls[shape] = os.path.join(bench.root, 'urls-{}.txt'.format(shape))
            totals[shape] = _write_download_urls(client, info, urls[shape], experiment=experiment)
        # Interleaved: each round downloads every shape's files raw and parsed, then runs every metrics command once.
        az_runs, raw_times = {run: [] for run in METRICS_RUNS}, {shape: [] for shape in shapes}
        parse_times = {shape: [] for shape in shapes}
        for _ in range(bench.args.repeat):
            for shape in shapes:
                raw_times[shape].append(run([sys.executable, script, urls[shape], str(CHUNK_SIZE)])[0])
                parse_times[shape].append(run([sys.executable, parse_script, urls[shape], str(CHUNK_SIZE),
                                               'val_accuracy'])[0])
            for shape, reduce in METRICS_RUNS:
                args = ['-g', info.resource_group, '-w', info.workspace, '-e', 'bench-' + shape, '-n', SWEEP]
                az_runs[shape, reduce].append(bench.az(info, 'batchai', 'sweep', 'metrics', *args, '--metric',
                                                       'val_accuracy', '--reduce', reduce, '-o', 'json'))
    finally:
        stop_service(info)
    for shape, reduce in METRICS_RUNS:
        t_az = statistics.median(t for t, _ in az_runs[shape, reduce])
        t_raw = statistics.median(raw_times[shape])
        t_parse = statistics.median(parse_times[shape])
        peak = max(rss for _, rss in az_runs[shape, reduce])
        raw = 'raw download {:.2f} s ({:,.0f} MB/s)'.format(t_raw, totals[shape] / 2 ** 20 / t_raw)
        if reduce == 'last':
            baseline, t_base = raw, t_raw
        else:  # a full scan against the plain download-and-parse script
            baseline, t_base = 'download + re.findall {:.2f} s ({})'.format(t_parse, raw), t_parse
        bench.rows.append(('metrics --reduce {}, {} jobs x {} MB {} logs ({:,.0f} MB)'.format(
            reduce, n, megabytes, shape, totals[shape] / 2 ** 20), t_az, baseline, t_az / t_base,
            '<= 1.3x, < 150 MB', 'peak RSS of az {:.0f} MB; runs {}'.format(
                peak, ' '.join('{:.2f}'.format(t) for t, _ in az_runs[shape, reduce]))))


def _wait_all_finished(client, info, n, timeout=1800, experiment=EXPERIMENT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [str(job.execution_state) for job in
                  client.jobs.list_by_experiment(info.resource_group, info.workspace, experiment)]
        done = sum(1 for s in states if s.endswith(('succeeded', 'failed')))
        if done == n:
            failed = sum(1 for s in states if s.endswith('failed'))
            if failed:
                raise RuntimeError('{} metrics jobs failed'.format(failed))
            return
        time.sleep(2)
    raise RuntimeError('metrics jobs did not finish in time')


def _write_download_urls(client, info, path, experiment=EXPERIMENT):
    """The download URL of every job's stdout.txt, one per line; returns their total size in bytes."""
    total = 0
    with open(path, 'w', encoding='utf-8') as out:
        for job in client.jobs.list_by_experiment(info.resource_group, info.workspace, experiment):
            options = models.JobsListOutputFilesOptions(outputdirectoryid='stdouterr')
            for item in client.jobs.list_output_files(info.resource_group, info.workspace, experiment, job.name,
                                                      options):
                if item.name == 'stdout.txt':
                    out.write(item.download_url + '\n')
                    total += item.content_length
    return total


def bench_scan(bench):
    """The CPU time of the scan alone, in this process: metrics' MetricExtractor over one job's log in the chunks
    it downloads, against the baseline script's parse of the same bytes (max(map(float, re.findall(...))) over
    them joined). No HTTP and no other process: what the extractor adds to the floor of a full scan, on a machine
    whose load the wall-clock rows feel."""
    import re  # pylint: disable=import-outside-toplevel
    from azext_batchai_sweep.core.outputs.metrics import MetricExtractor  # pylint: disable=import-outside-toplevel
    pattern = re.compile(re.escape('val_accuracy').encode() + rb'=([-+0-9.eE]+)')
    for shape in sorted({shape for shape, _ in METRICS_RUNS}):
        data = subprocess.run([sys.executable, '-c', LOG_SCRIPT, str(bench.args.log_mb), '7', shape],
                              capture_output=True, check=True).stdout
        chunks = [data[i:i + CHUNK_SIZE] for i in range(0, len(data), CHUNK_SIZE)]
        ours, script = [], []
        for _ in range(bench.args.scan_repeat):  # interleaved
            started = time.process_time()
            value = MetricExtractor(metric_name='val_accuracy', reduce='max').extract_chunks(iter(chunks))
            ours.append(time.process_time() - started)
            started = time.process_time()
            expected = max(map(float, pattern.findall(b''.join(chunks))))
            script.append(time.process_time() - started)
            assert value == expected, (value, expected)
        t_ours, t_script = statistics.median(ours), statistics.median(script)
        bench.rows.append(('scan of one {} MB {} log, --reduce max (CPU, median of {})'.format(
            bench.args.log_mb, shape, len(ours)), t_ours, 're.findall + float {:.1f} ms'.format(1000 * t_script),
            t_ours / t_script, 'none (what a full scan adds)', '{:.1f} ms a log'.format(1000 * t_ours)))


BENCHMARKS = {'status': bench_status, 'help': bench_help, 'submit': bench_submit, 'metrics': bench_metrics,
              'scan': bench_scan}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--only', default=','.join(BENCHMARKS))
    parser.add_argument('--status-jobs', type=int, default=10000)
    parser.add_argument('--submit-jobs', type=int, default=1000)
    parser.add_argument('--metrics-jobs', type=int, default=500)
    parser.add_argument('--log-mb', type=int, default=5)
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--help-repeat', type=int, default=10)
    parser.add_argument('--scan-repeat', type=int, default=21)
    args = parser.parse_args()
    bench = Bench(args)
    for name in args.only.split(','):
        started = time.perf_counter()
        BENCHMARKS[name](bench)
        print('{}: done in {:.0f} s'.format(name, time.perf_counter() - started), file=sys.stderr, flush=True)
    print('{} {}, {} CPUs, Python {}, az {}'.format(time.strftime('%Y-%m-%d'), platform.system(), os.cpu_count(),
                                                   platform.python_version(), _az_version()))
    print('| benchmark | az (s) | baseline | ratio | target | notes |')
    print('| --- | ---: | --- | ---: | --- | --- |')
    for what, seconds, baseline, ratio, target, notes in bench.rows:
        print('| {} | {:.2f} | {} | {:.2f} | {} | {} |'.format(what, seconds, baseline, ratio, target, notes))


def _az_version():
    out = subprocess.run([AZ, 'version', '-o', 'json'], capture_output=True, text=True, check=False,
                         env=base_env(tempfile.mkdtemp(prefix='bench-cli-config-'))).stdout
    try:
        return json.loads(out)['azure-cli']
    except (ValueError, KeyError):
        return '?'


if __name__ == '__main__':
    main()
