"""Benchmark of `az batchai sweep report`, beside `metrics --reduce max` (which reads the same bytes) in the same run.

Usage: python bench/report.py [--jobs 1000] [--epochs 30] [--repeat 3] [--large 10000]

1. Through az, on the local service (foreground module, temporary data dir): a sweep of `--jobs` finished jobs, each
   printing `epoch=N loss=.. val_accuracy=..` for `--epochs` epochs (awk, a curve set by the job's 3 parameters).
   Timed (medians of `--repeat`, interleaved): `report --metric val_accuracy -o none` and `-o json`, `metrics --metric
   val_accuracy --reduce max -o none`, and `az version` (az's start-up); peak RSS of the az process.
2. In process, at `--large` jobs (synthetic, tests/report/synthetic.py: 30 epochs, a fifth stopped early): the time
   to make the report's data and its HTML, the HTML's size, the JSON's size, and the time headless Chromium takes
   to load and draw it (until the page's script has filled the table), when Chromium is installed.
3. With `live` (on the sweep of 1.): one update of the live page (core/report/live.py) after 10 jobs' logs changed,
   and one with nothing new, beside one full report of the same sweep in the same process (time, bytes read).
4. With `second` (on the sweep of 1., through az): `report -o none` with no cache (the first report of a sweep: its
   cache file, core/report/log_cache.py, removed before each), then again at once (a second report of the unchanged
   sweep, reading only what changed: nothing), interleaved; wall and CPU time (the az process's, from
   getrusage of the children), medians of `--repeat`.
Setup (creating and running the jobs) is never timed.
"""
import argparse
import json
import math
import os
import platform
import random
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
from bench.cli import _wait_all_finished, run  # noqa: E402
from bench.service import run_on_clients  # noqa: E402
from tests.fixtures_az import AZ, base_env  # noqa: E402
from tests.fixtures_service import start_service, stop_service  # noqa: E402

EXPERIMENT = 'bench-report'
SWEEP = 'bench'
CURVE = ("awk 'BEGIN{{for(e=1;e<={epochs};e++) printf \"epoch=%d loss=%.4f val_accuracy=%.4f\\n\", e, 1/e, "
         "{top}*(1-exp(-e/4))}}'")


def _job(cluster_id, index, epochs, rng):
    params = {'LEARNING_RATE': 10 ** rng.uniform(-4, 0), 'UNITS': rng.choice([4, 8, 16, 32, 64]),
              'OPT': rng.choice(['adam', 'sgd'])}
    top = 0.95 - 0.08 * (math.log10(params['LEARNING_RATE']) + 1) ** 2 - 0.4 / params['UNITS']
    env = [models.EnvironmentVariable(name='PARAM_' + k, value=str(v)) for k, v in params.items()]
    env += [models.EnvironmentVariable(name='BATCHAI_SWEEP_NAME', value=SWEEP),
            models.EnvironmentVariable(name='BATCHAI_SWEEP_PARAMS', value=json.dumps(params, sort_keys=True))]
    return models.JobCreateParameters(
        cluster=models.ResourceId(id=cluster_id), node_count=1, std_out_err_path_prefix='$AZ_BATCHAI_MOUNT_ROOT/logs',
        environment_variables=env,
        custom_toolkit_settings=models.CustomToolkitSettings(command_line=CURVE.format(epochs=epochs, top=top)))


def through_az(args, root):
    info = start_service(os.path.join(root, 'service'), slots=os.cpu_count() or 2)
    config = os.path.join(root, 'azure-config')
    os.makedirs(config)
    env = base_env(config, {'AZURE_BATCHAI_SWEEP_ENDPOINT': info.endpoint,
                            'AZURE_BATCHAI_SWEEP_TOKEN_FILE': info.token_file, 'AZURE_CORE_ONLY_SHOW_ERRORS': 'true'})
    sweep = ['-g', info.resource_group, '-w', info.workspace, '-e', EXPERIMENT, '-n', SWEEP]
    try:
        client = local_batchai_client(info.endpoint, info.token_file)
        client.experiments.begin_create(info.resource_group, info.workspace, EXPERIMENT).result()
        rng = random.Random(7)
        jobs = [('bench-{:05d}'.format(i), _job(info.cluster_id, i, args.epochs, rng)) for i in range(args.jobs)]
        clients = [local_batchai_client(info.endpoint, info.token_file) for _ in range(8)]
        started = time.monotonic()
        run_on_clients(clients, jobs, lambda c, item: c.jobs.begin_create(
            info.resource_group, info.workspace, EXPERIMENT, item[0], item[1], polling=False))
        _wait_all_finished(client, info, args.jobs, experiment=EXPERIMENT)
        print('setup: {} jobs ran in {:.0f} s'.format(args.jobs, time.monotonic() - started), flush=True)
        report_file = os.path.join(root, 'report.html')
        times = {'report': [], 'report-json': [], 'metrics': [], 'version': []}
        for _ in range(args.repeat if 'az' in args.only else 0):
            times['version'].append(run([AZ, 'version'], env=env))
            times['report'].append(run([AZ, 'batchai', 'sweep', 'report', *sweep, '--metric', 'val_accuracy',
                                        '--output-file', report_file, '-o', 'none'], env=env))
            times['report-json'].append(run([AZ, 'batchai', 'sweep', 'report', *sweep, '--metric', 'val_accuracy',
                                             '--output-file', report_file, '-o', 'json'], env=env))
            times['metrics'].append(run([AZ, 'batchai', 'sweep', 'metrics', *sweep, '--metric', 'val_accuracy',
                                         '--reduce', 'max', '-o', 'none'], env=env))
        size = os.path.getsize(report_file) if times['report'] else 0
        if 'second' in args.only:
            second_report(args, env, sweep, config, root)
        if 'live' in args.only:
            live_update(args, info, root)
    finally:
        stop_service(info)
    if not times['report']:
        return
    median = {key: statistics.median(t for t, _ in runs) for key, runs in times.items()}
    peak = {key: max(rss for _, rss in runs) for key, runs in times.items()}
    print('| `report -o none` of {} jobs x {} epochs | {:.2f} s | `metrics --reduce max` {:.2f} s | {:.2f}x | az '
          'start-up {:.2f} s; peak RSS report {:.0f} MB, metrics {:.0f} MB; HTML {:,.0f} kB |'.format(
              args.jobs, args.epochs, median['report'], median['metrics'], median['report'] / median['metrics'],
              median['version'], peak['report'], peak['metrics'], size / 1024))
    print('| `report -o json` of {} jobs x {} epochs | {:.2f} s | `metrics --reduce max` {:.2f} s | {:.2f}x | peak '
          'RSS {:.0f} MB |'.format(args.jobs, args.epochs, median['report-json'], median['metrics'],
                                   median['report-json'] / median['metrics'], peak['report-json']))


def _run_cpu(cmd, env):
    """(wall s, CPU s, peak RSS MB) of a command: its CPU from the children's rusage, reaped by run()."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, peak = run(cmd, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, peak


def second_report(args, env, sweep, config, root):
    """The first report of the sweep (no cache) beside a second one of the unchanged sweep (the cache the first
    left), interleaved."""
    import glob
    report = [AZ, 'batchai', 'sweep', 'report', *sweep, '--metric', 'val_accuracy', '--output-file',
              os.path.join(root, 'second.html'), '-o', 'none']
    first, second = [], []
    for _ in range(args.repeat):
        for path in glob.glob(os.path.join(config, '**', '*.report-cache.json'), recursive=True):
            os.unlink(path)
        first.append(_run_cpu(report, env))
        second.append(_run_cpu(report, env))
    caches = glob.glob(os.path.join(config, '**', '*.report-cache.json'), recursive=True)
    wall1, cpu1, peak1 = (statistics.median(r[k] for r in first) for k in range(3))
    wall2, cpu2, peak2 = (statistics.median(r[k] for r in second) for k in range(3))
    print('| second `report -o none` of {} unchanged jobs | {:.2f} s wall, {:.2f} s CPU | first report {:.2f} s wall, '
          '{:.2f} s CPU | {:.2f}x wall, {:.2f}x CPU | peak RSS {:.0f} / {:.0f} MB; cache {:,.0f} kB; runs {} / {} |'
          .format(args.jobs, wall2, cpu2, wall1, cpu1, wall2 / wall1, cpu2 / cpu1, peak2, peak1,
                  sum(os.path.getsize(p) for p in caches) / 1024,
                  ' '.join('{:.2f}'.format(r[0]) for r in second), ' '.join('{:.2f}'.format(r[0]) for r in first)),
          flush=True)


def live_update(args, info, root, changed_jobs=10):
    """One update of the live page (core/report/live.py) beside one full report, in process on the same service:
    the full report reads every log and draws everything; an update after `changed_jobs` jobs' logs are new again
    (their offsets set back to 0: whole logs, more than a poll's appended lines) reads those bytes only and draws the
    page again; an update with nothing new reads no log and draws nothing."""
    from azext_batchai_sweep.core.report.snapshot import make_report
    from azext_batchai_sweep.core.report.live import JobLog, LiveDocument, LiveSweep
    from azext_batchai_sweep.core.report.model import Objective
    client = local_batchai_client(info.endpoint, info.token_file)
    objective = Objective(metric='val_accuracy')
    target = (info.resource_group, info.workspace, EXPERIMENT, SWEEP)
    full = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        make_report(client, *target, objective, os.path.join(root, 'full.html'))
        full.append(time.perf_counter() - started)
    sweep = LiveSweep(client, *target, objective)
    document = LiveDocument(os.path.join(root, 'live.html'))
    sweep.update()
    document.write(sweep.data, True, False)
    changed, unchanged, read = [], [], []
    for _ in range(args.repeat):
        for name in sorted(sweep.logs)[:changed_jobs]:  # these jobs' logs are new again: read from their start
            sweep.logs[name] = JobLog(sweep.logs[name].created)
        sweep._fingerprint = None  # pylint: disable=protected-access
        before = sweep.bytes_read
        started = time.perf_counter()
        was = sweep.update()
        document.write(sweep.data, was, False)
        changed.append(time.perf_counter() - started)
        read.append(sweep.bytes_read - before)
        started = time.perf_counter()
        was = sweep.update()
        document.write(sweep.data, was, False)
        unchanged.append(time.perf_counter() - started)
    t_full, t_changed, t_same = (statistics.median(x) for x in (full, changed, unchanged))
    print('| live update of {} jobs, {} with new bytes | {:.2f} s ({:.2f}x the full report\'s {:.2f} s), {:,} bytes '
          'read | nothing new: {:.2f} s ({:.2f}x), 0 bytes |'.format(
              args.jobs, changed_jobs, t_changed, t_changed / t_full, t_full, int(statistics.median(read)), t_same,
              t_same / t_full))


def in_process(args, root):
    from azext_batchai_sweep.core.report.data import report_data
    from azext_batchai_sweep.core.report.html import render_html
    from tests.report.synthetic import synthetic_record
    record = synthetic_record(args.large, epochs=30, seed=1)
    started = time.perf_counter()
    data = report_data(record)
    t_data = time.perf_counter() - started
    started = time.perf_counter()
    html = render_html(data)
    t_html = time.perf_counter() - started
    path = os.path.join(root, 'large.html')
    with open(path, 'w', encoding='utf-8') as out:
        out.write(html)
    json_size = len(json.dumps(data))
    line = ('| {:,} jobs x 30 epochs, in process | data {:.2f} s, HTML {:.2f} s | HTML {:,.0f} kB | JSON (`-o json`) '
            '{:,.0f} kB |'.format(args.large, t_data, t_html, len(html) / 1024, json_size / 1024))
    from tests.report.chromium import Browser, find_chromium
    executable = find_chromium()
    if executable:
        browser = Browser(executable)
        try:
            page = browser.page()
            loads = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                page.load(path)
                page.evaluate('document.documentElement.getAttribute("data-ready")')
                loads.append(time.perf_counter() - started)
            errors = page.errors()
        finally:
            browser.close()
        line += ' Chromium load and draw {:.2f} s (median of {}); console errors: {} |'.format(
            statistics.median(loads), len(loads), len(errors))
    print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--jobs', type=int, default=1000)
    parser.add_argument('--epochs', type=int, default=30)
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--large', type=int, default=10000)
    parser.add_argument('--only', default='az,large,live,second')
    args = parser.parse_args()
    print('{} {}, {} CPUs, Python {}'.format(platform.system(), platform.machine(), os.cpu_count(),
                                            platform.python_version()))
    root = tempfile.mkdtemp(prefix='bench-report-')
    if 'large' in args.only:
        in_process(args, root)
    if 'az' in args.only or 'live' in args.only or 'second' in args.only:
        through_az(args, root)
    subprocess.run(['rm', '-rf', root], check=False)


if __name__ == '__main__':
    main()
