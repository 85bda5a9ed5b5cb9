"""Benchmark of grid expansion: jobs/s and peak memory, beside json.dumps of the same job bodies.

Usage: python bench/expand.py [--sizes 10000,100000,1000000]

Each size runs in its own interpreter, so that its peak RSS (ru_maxrss) is its own. In that interpreter:

1. expansion: every job of the grid is generated with its name and its body rendered as JSON (``body_json()``);
2. streaming: the same, each job written as one JSON Lines record to a file and dropped (plan-file style);
3. baseline: ``json.dumps`` of the same bodies as dicts, timed chunk by chunk (the dicts are built untimed, 10^4 at a
   time, so that the baseline does not hold 10^6 bodies either).

The target is expansion at most 3x the baseline.
"""
import argparse
import itertools
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHUNK = 10 ** 4
# Grid shapes: three parameters whose value counts multiply to the size.
SHAPES = {10 ** 4: (10, 10, 100), 10 ** 5: (10, 100, 100), 10 ** 6: (100, 100, 100)}

# The recipe job of the Batch AI Chainer recipe (job.json), with three placeholders.
RECIPE_JOB = {
    '$schema': 'https://raw.githubusercontent.com/Azure/BatchAI/master/schemas/2018-05-01/job.json',
    'properties': {
        'nodeCount': 2,
        'chainerSettings': {
            'pythonScriptFilePath': '$AZ_BATCHAI_JOB_MOUNT_ROOT/scripts/chainer/train_mnist.py',
            'commandLineArgs': '-g -o $AZ_BATCHAI_OUTPUT_MODEL --lr {{LEARNING_RATE}} --batchsize {{BATCH_SIZE}} '
                               '--data $AZ_BATCHAI_JOB_MOUNT_ROOT/data/{{DATA_SHARD}}',
        },
        'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs',
        'mountVolumes': {
            'azureFileShares': [
                {'azureFileUrl': 'https://recipestorage.file.core.windows.net/logs', 'relativeMountPath': 'logs'},
                {'azureFileUrl': 'https://recipestorage.file.core.windows.net/scripts',
                 'relativeMountPath': 'scripts'},
            ],
        },
        'outputDirectories': [{'id': 'MODEL', 'pathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs'}],
        'containerSettings': {'imageSourceRegistry': {'image': 'batchaitraining/chainermn:openMPI'}},
    },
}


def child(size, scratch):
    sys.path.insert(0, REPO)
    # Load the core as a plain library: the package's __init__ is az's command loader and pulls in azure.cli.
    import types
    package = types.ModuleType('azext_batchai_sweep')
    package.__path__ = [os.path.join(REPO, 'azext_batchai_sweep')]
    sys.modules['azext_batchai_sweep'] = package
    from azext_batchai_sweep.core import DiscreteParamSpec, NumParamSpec, ParameterSweep

    n_lr, n_bs, n_data = SHAPES[size]
    sweep = ParameterSweep([
        NumParamSpec(parameterName='LEARNING_RATE', start=1e-5, end=1e-1, dataType='REAL', scale='LOG',
                     numValues=n_lr),
        NumParamSpec(parameterName='BATCH_SIZE', start=1, end=n_bs, step=1, dataType='INTEGER', scale='LINEAR'),
        DiscreteParamSpec(parameterName='DATA_SHARD', values=['shard-{:03d}.csv'.format(i) for i in range(n_data)]),
    ])
    start = time.perf_counter()
    jobs = sweep.generate_jobs(RECIPE_JOB, job_name_prefix='recipe-sweep', sweep_name='recipe-sweep')
    count = len(jobs)
    count_s = time.perf_counter() - start

    start = time.perf_counter()
    body_bytes = 0
    for job in jobs:
        body_bytes += len(job.body_json()) + len(job.name)
    expand_s = time.perf_counter() - start

    path = os.path.join(scratch, 'plan-{}.jsonl'.format(size))
    start = time.perf_counter()
    with open(path, 'w', encoding='utf-8') as plan:
        for job in jobs:
            plan.write('{"name":"%s","body":%s}\n' % (job.name, job.body_json()))
    stream_s = time.perf_counter() - start
    plan_bytes = os.path.getsize(path)
    os.remove(path)
    peak_rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    dumps_s = 0.0
    iterator = iter(jobs)
    while True:
        bodies = [json.loads(job.body_json()) for job in itertools.islice(iterator, CHUNK)]
        if not bodies:
            break
        start = time.perf_counter()
        for body in bodies:
            json.dumps(body)
        dumps_s += time.perf_counter() - start
    return {'size': count, 'count_s': count_s, 'expand_s': expand_s, 'stream_s': stream_s, 'dumps_s': dumps_s,
            'peak_rss_mb': peak_rss_kb / 1024, 'avg_body_bytes': body_bytes / count, 'plan_mb': plan_bytes / 2 ** 20}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', default='10000,100000,1000000')
    parser.add_argument('--child', type=int, help=argparse.SUPPRESS)
    parser.add_argument('--scratch', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.scratch)))
        return
    print('{} | {} | Python {} | {} CPUs'.format(time.strftime('%Y-%m-%d'), platform.platform(),
                                                 platform.python_version(), os.cpu_count()))
    print('| jobs | count | expansion jobs/s | json.dumps bodies/s | expansion / dumps | streamed to JSONL jobs/s '
          '| peak RSS (MB) | body (bytes) |')
    print('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    with tempfile.TemporaryDirectory() as scratch:
        for size in (int(s) for s in args.sizes.split(',')):
            out = subprocess.run([sys.executable, __file__, '--child', str(size), '--scratch', scratch],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            print('| {size:,} | {count_ms:.2f} ms | {expand:,.0f} | {dumps:,.0f} | {ratio:.2f}x | {stream:,.0f} '
                  '| {rss:.0f} | {body:.0f} |'.format(
                      size=r['size'], count_ms=r['count_s'] * 1000, expand=r['size'] / r['expand_s'],
                      dumps=r['size'] / r['dumps_s'], ratio=r['expand_s'] / r['dumps_s'],
                      stream=r['size'] / r['stream_s'], rss=r['peak_rss_mb'], body=r['avg_body_bytes']))
            sys.stdout.flush()


if __name__ == '__main__':
    main()
