"""The Slurm mapping without a cluster: checks at start, states Slurm reaches rarely in tests, the batch script."""
import subprocess

import pytest

from azext_batchai_sweep.localservice.schedulers.slurm import mapping
from azext_batchai_sweep.localservice.schedulers.slurm.commands import SlurmCli, SlurmError


def test_start_checks_say_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    with pytest.raises(SlurmError, match='sbatch was not found on PATH'):
        SlurmCli().check()
    for name in ('sbatch', 'squeue', 'scontrol', 'scancel'):
        (tmp_path / name).write_text('#!/bin/sh\nexit 1\n')
        (tmp_path / name).chmod(0o755)
    with pytest.raises(SlurmError, match='does not exist'):
        SlurmCli(str(tmp_path / 'missing.conf')).check()
    (tmp_path / 'squeue').write_text('#!/bin/sh\necho "squeue: error: Could not establish a configuration source" >&2'
                                     '\nexit 1\n')
    with pytest.raises(SlurmError, match='Slurm does not answer: Could not establish a configuration source'):
        SlurmCli().check()


@pytest.mark.parametrize('state, reason, record, exit_text, expected', [
    ('COMPLETED', None, ('main', 0), None, ('succeeded', 0, None)),
    ('FAILED', None, ('main', 3), '3:0', ('failed', 3, 'NonZeroExitCode')),
    ('FAILED', None, ('prep', 2), '2:0', ('failed', 2, 'JobPreparationFailed')),
    ('OUT_OF_MEMORY', None, None, '1:0', ('failed', 1, 'OutOfMemory')),
    ('CANCELLED', None, None, '0:15', ('failed', 143, 'JobCancelled')),
    ('CANCELLED', 'terminated', None, '0:15', ('failed', 143, 'JobTerminated')),
    ('TIMEOUT', None, None, '0:15', ('failed', 143, 'MaxWallClockTimeExceeded')),
    ('NODE_FAIL', None, None, '0:0', ('failed', 0, 'NodeFailure')),
    ('PREEMPTED', None, None, None, ('failed', None, 'JobPreempted')),
    ('LOST', None, None, None, ('failed', None, 'SlurmJobLost')),
    ('WEIRD', None, None, None, ('failed', None, 'SlurmJobFailed')),
])
def test_outcomes(state, reason, record, exit_text, expected):
    got_state, exit_code, errors = mapping.outcome(state, reason, record, exit_text, 'n[1-2]')
    assert (got_state, exit_code, errors[0]['code'] if errors else None) == expected
    if state == 'NODE_FAIL':
        assert 'n[1-2]' in errors[0]['message']


def test_options_follow_the_job():
    props = {'nodeCount': 2, 'customMpiSettings': {'commandLine': 'x', 'processCount': 5},
             'constraints': {'maxWallClockTime': 'PT1H30M1S'}}
    options = mapping.sbatch_options(props, 'customMpiSettings', 2, 'batchai-u', '/d/out', '/d/tmp')
    assert {'--nodes=2', '--ntasks-per-node=3', '--gres=gpu:2', '--time=91', '--no-requeue'} <= set(options)
    plain = mapping.sbatch_options({'nodeCount': 1, 'customToolkitSettings': {}}, 'customToolkitSettings', 0, 'n',
                                   '/o', '/t')
    assert not any(o.startswith(('--gres', '--time')) for o in plain)
    with pytest.raises(Exception) as refused:
        mapping.check_toolkit({'nodeCount': 2, 'tensorFlowSettings': {'parameterServerCount': 3}},
                              'tensorFlowSettings')
    assert refused.value.code == 'InvalidRequestContent' and 'parameterServerCount (3)' in refused.value.message
    for toolkit in ('chainerSettings', 'horovodSettings', 'tensorFlowSettings', 'caffe2Settings', 'pyTorchSettings'):
        mapping.check_toolkit({'nodeCount': 3, toolkit: {}}, toolkit)  # every toolkit runs on several nodes


def test_array_options_keep_the_jobs_resources_and_route_each_tasks_output():
    resources = mapping.resource_options({'nodeCount': 1, 'customToolkitSettings': {},
                                          'constraints': {'maxWallClockTime': 'PT2M'}}, 'customToolkitSettings', 1)
    options = mapping.array_options(resources, 'batchai-array-t', '/d/a', 7)
    assert '--array=0-6' in options and '--gres=gpu:1' in options and '--time=2' in options
    assert {'--output=/d/a/%a.out', '--error=/d/a/%a.err', '--chdir=/d/a'} <= set(options)
    single = mapping.sbatch_options({'nodeCount': 1, 'customToolkitSettings': {}, 'constraints': {
        'maxWallClockTime': 'PT2M'}}, 'customToolkitSettings', 1, 'n', '/o', '/t')
    assert set(resources) <= set(single), 'a job array asks for what each job alone would'


@pytest.mark.parametrize('value', ['plain', '', "it's", 'a "b" $HOME `id` $(id) \\ ; & | *', 'line\nbreak',
                                   '  spaces  ', 'uni\u00e9\u4e2d', '-n', '$'])
def test_environment_file_gives_bash_exactly_the_values(tmp_path, value):
    env = {'V': value, 'OTHER_1': 'x', 'bad-name': 'dropped', 'UID': '12345'}
    path = tmp_path / 'env'
    path.write_text(mapping.environment_file(env), encoding='utf-8')
    shown = subprocess.run(['bash', '-c', '. "$1" && printf %s "$V" && printf "\\0%s\\0%s" "$OTHER_1" "$UID"',
                            'bash', str(path)], capture_output=True, check=True).stdout.decode('utf-8')
    got, other, uid = shown.split('\0')
    assert (got, other) == (value, 'x')
    assert uid != '12345' and 'bad-name' not in path.read_text(encoding='utf-8')


def test_jobs_group_by_resources_in_order_and_within_the_array_size_limit():
    from types import SimpleNamespace
    from azext_batchai_sweep.localservice.schedulers.slurm.scheduler import _groups
    jobs = [SimpleNamespace(key=k, resources=r) for k, r in
            [('a', 'x'), ('b', 'y'), ('c', 'x'), ('d', 'x'), ('e', 'x'), ('f', 'y'), ('g', 'x')]]
    keys = lambda groups: [[j.key for j in g] for g in groups]  # noqa: E731
    assert keys(_groups(jobs)) == [['a', 'c', 'd', 'e', 'g'], ['b', 'f']]
    assert keys(_groups(jobs, 2)) == [['a', 'c'], ['b', 'f'], ['d', 'e'], ['g']]
    assert keys(_groups(jobs, 1)) == [[j.key] for j in jobs], 'MaxArraySize 0 or 1: every job alone'


def test_output_paths_are_written_for_sbatchs_filename_patterns():
    # sbatch expands %j, %x, %a... in --output/--error: a % of the job's stdOutErrPathPrefix must stay a %.
    props = {'nodeCount': 1, 'customToolkitSettings': {}}
    options = mapping.sbatch_options(props, 'customToolkitSettings', 0, 'n', '/d/100%/%j/%%x', '/d/w%j')
    assert '--output=/d/100%%/%%j/%%%%x/stdout.txt' in options
    assert '--error=/d/100%%/%%j/%%%%x/stderr.txt' in options
    assert '--chdir=/d/w%j' in options  # --chdir is no pattern: as it is
    # A backslash turns sbatch's replacements off and is read in pairs.
    assert mapping.literal_filename('/d/a\\b%j') == '/d/a\\\\b%j'
    assert mapping.array_options([], 'a', '/d/50%', 2)[2:4] == ['--output=/d/50%%/%a.out', '--error=/d/50%%/%a.err']
