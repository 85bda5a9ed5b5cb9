"""Count before you materialise: a sweep too large for --max-jobs is refused in well under a second, in constant memory.

One parameter of 3x10^7 values made `create --plan-only` list them all and pass 4 GB (MemoryError after 44 s) before
the --max-jobs check. The counting is measured in a fresh Python process (time and peak memory, getrusage), then the
commands are run as users run them: `create --plan-only`, `submit --spec` and `run` through the real az.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from azext_batchai_sweep._exit_codes import BAD_INPUT
from tests.fixtures_az import service_az

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

JOB = {'nodeCount': 1, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/out',
       'customToolkitSettings': {'commandLine': 'echo {{A}} {{B}}'}}
BIG_PARAMETERS = {
    # one parameter of 3x10^7 values (LINEAR step)
    'linear-3e7': [{'name': 'A', 'type': 'numeric', 'dataType': 'REAL', 'scale': 'LINEAR', 'start': 0, 'end': 3e7,
                    'step': 1}, {'name': 'B', 'type': 'discrete', 'values': [1]}],
    # 10^12 values (numValues), INTEGER: counted by formula, never rounded one by one
    'integer-1e12': [{'name': 'A', 'type': 'numeric', 'dataType': 'INTEGER', 'scale': 'LINEAR', 'start': 0,
                      'end': 1e15, 'numValues': 10 ** 12}, {'name': 'B', 'type': 'discrete', 'values': [1]}],
    'log-integer-1e12': [{'name': 'A', 'type': 'numeric', 'dataType': 'INTEGER', 'scale': 'LOG', 'start': 1,
                          'end': 1e15, 'numValues': 10 ** 12}, {'name': 'B', 'type': 'discrete', 'values': [1]}],
    # a product that is huge while each parameter is small: 4000 x 4000 = 1.6x10^7
    'product': [{'name': 'A', 'type': 'numeric', 'dataType': 'REAL', 'scale': 'LINEAR', 'start': 0, 'end': 1,
                 'numValues': 4000},
                {'name': 'B', 'type': 'numeric', 'dataType': 'INTEGER', 'scale': 'LINEAR', 'start': 1, 'end': 4000,
                 'step': 1}],
}
EXPECTED = {'linear-3e7': 30000001, 'integer-1e12': 10 ** 12, 'product': 16000000}


def write_sweep(directory, name, sampling=None, limits=None):
    document = {'parameters': BIG_PARAMETERS[name], 'job': JOB}
    if sampling:
        document['sampling'] = sampling
    if limits:
        document['limits'] = limits
    path = os.path.join(str(directory), name + '.json')
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(document, f)
    return path


MEASURE = textwrap.dedent('''
    import json, resource, sys, time
    from azext_batchai_sweep.core.spec.sweepfile import load_sweep_file
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    definition = load_sweep_file(sys.argv[1], storage_account_name='acct', sampling=sys.argv[2] or None,
                                 count=int(sys.argv[3]) if sys.argv[3] else None, seed=1)
    jobs = definition.jobs(sweep_name='big')
    count = len(jobs)
    if sys.argv[2] == 'random':
        first = [job.parameters for _, job in zip(range(3), jobs)]  # drawing from the huge space lists nothing
    seconds = time.perf_counter() - start
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps({'count': count, 'seconds': seconds, 'grownKiB': grown}))
''')


def measure(path, sampling='', count=''):
    proc = subprocess.run([sys.executable, '-c', MEASURE, path, sampling, str(count)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize('name', sorted(BIG_PARAMETERS))
def test_a_huge_grid_is_counted_without_listing_it(tmp_path, name):
    figures = measure(write_sweep(tmp_path, name))
    if name in EXPECTED:
        assert figures['count'] == EXPECTED[name]
    else:
        assert figures['count'] > 10 ** 11
    assert figures['seconds'] < 0.5, figures
    assert figures['grownKiB'] < 20 * 1024, figures  # listing 3x10^7 values alone takes more than 1 GB


def test_random_sampling_of_a_huge_space_lists_nothing(tmp_path):
    figures = measure(write_sweep(tmp_path, 'integer-1e12'), 'random', 50)
    assert figures['count'] == 50
    assert figures['seconds'] < 0.5 and figures['grownKiB'] < 20 * 1024, figures


@pytest.mark.az
def test_create_plan_only_refuses_a_huge_grid_at_once(az, tmp_path):
    path = write_sweep(tmp_path, 'linear-3e7')
    refused = az('batchai', 'sweep', 'create', '--plan-only', '-g', 'rg', '-w', 'ws', '-e', 'exp', '-n', 'big',
                 '--spec', path, timeout=60)
    assert refused.exit_code == BAD_INPUT
    assert 'The sweep has 30000001 jobs, more than --max-jobs (10000)' in refused.stderr
    assert 'Traceback' not in refused.stderr
    assert not (tmp_path / 'big.plan.jsonl').exists()


@pytest.mark.az
@pytest.mark.service
def test_submit_spec_and_run_refuse_a_huge_grid_before_any_request(local_service, tmp_path):
    az = service_az(local_service, str(tmp_path))
    target = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'big-refused', '-n', 'big']
    path = write_sweep(tmp_path, 'integer-1e12')
    submitted = az('batchai', 'sweep', 'submit', *target, '--spec', path, '-c', local_service.cluster, timeout=60)
    assert submitted.exit_code == BAD_INPUT
    assert 'The sweep has 1000000000000 jobs, more than --max-jobs (10000)' in submitted.stderr
    product = write_sweep(tmp_path, 'product')
    ran = az('batchai', 'sweep', 'run', *target, '--spec', product, '-c', local_service.cluster, timeout=60)
    assert ran.exit_code == BAD_INPUT
    assert 'The sweep has 16000000 jobs, more than 10000 that a run submits without a limit' in ran.stderr
    assert '--max-total-jobs' in ran.stderr
    # a limit bounds the jobs, but a parameter of 10^12 values would still be listed: refused too
    limited = az('batchai', 'sweep', 'run', *target, '--spec', path, '-c', local_service.cluster,
                 '--max-total-jobs', '5', timeout=60)
    assert limited.exit_code == BAD_INPUT
    assert 'The parameter A has 1000000000000 values' in limited.stderr, limited.stderr


def test_a_run_with_a_limit_walks_a_huge_grid_lazily():
    from azext_batchai_sweep.core.spec.params import DiscreteParamSpec, NumParamSpec
    from azext_batchai_sweep.core.tuning.samplers.grid import GridSampler
    from azext_batchai_sweep.core.tuning.trial import Trial
    # 10^5 x 10^5 x 2 = 2x10^10 configurations: the parameters' values are listed (2x10^5), their product never is
    sampler = GridSampler([NumParamSpec('A', 1, 100000, 'INTEGER', 'LINEAR', step=1),
                           NumParamSpec('C', 1, 100000, 'INTEGER', 'LINEAR', step=1), DiscreteParamSpec('B', [1, 2])])
    first = sampler.suggest([], 3)
    assert [s.params for s in first] == [{'A': 1, 'C': 1, 'B': 1}, {'A': 1, 'C': 1, 'B': 2}, {'A': 1, 'C': 2, 'B': 1}]
    assert first[0].note == 'grid 1 of 20000000000'
    done = [Trial(name=str(i), index=i, params=s.params, state='succeeded') for i, s in enumerate(first)]
    assert [s.params for s in sampler.suggest(done, 1)] == [{'A': 1, 'C': 2, 'B': 2}]
    assert not sampler.exhausted(done)
