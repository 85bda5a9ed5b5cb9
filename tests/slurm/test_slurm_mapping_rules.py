"""The Slurm mapping's rules that need no cluster, case by case: a Slurm job's end (state, ExitCode, the batch
script's record) as a Batch AI outcome with its message, the exit record read back, the job's resources as sbatch
options, and the job array's script run by bash as Slurm runs it (SLURM_ARRAY_TASK_ID set)."""
import json
import subprocess

import pytest

from azext_batchai_sweep.localservice.schedulers.slurm import mapping


@pytest.mark.parametrize('text, expected', [('main 0\n', ('main', 0)), ('prep 3', ('prep', 3)),
                                            ('main -1\n', ('main', -1)), ('main', None), ('main x', None),
                                            ('', None), ('main 0 extra', None)])
def test_the_exit_record_is_the_step_and_its_code_or_none(tmp_path, text, expected):
    path = tmp_path / 'exit'
    path.write_text(text, encoding='ascii')
    assert mapping.read_exit_file(str(path)) == expected
    assert mapping.read_exit_file(str(tmp_path / 'missing')) is None


@pytest.mark.parametrize('slurm_exit, expected', [
    ('3:0', 3), ('0:9', 137), ('0:15', 143), ('2:9', 2),  # a signal only when the code is 0: 128 + signal
    ('0:0', 0), (None, None), ('', None), ('x:y', None), ('3', None),
])
def test_slurms_exit_code_as_the_jobs_when_the_script_left_no_record(slurm_exit, expected):
    assert mapping.outcome('FAILED', None, None, slurm_exit)[1] == expected


def test_the_script_record_wins_over_slurms_exit_code():
    assert mapping.outcome('FAILED', None, ('main', 4), '9:0')[1] == 4
    assert mapping.outcome('COMPLETED', None, ('main', 0), '9:0') == ('succeeded', 0, [])


@pytest.mark.parametrize('record, slurm_exit, expected', [
    (None, None, ('succeeded', 0, [])), (None, '0:0', ('succeeded', 0, [])),
    (('main', 5), None, ('failed', 5, [{'code': 'NonZeroExitCode',
                                        'message': 'The job exited with code 5 (Slurm FAILED on n[1-2]).'}])),
    (('prep', 2), None, ('failed', 2, [{'code': 'JobPreparationFailed',
                                        'message': 'jobPreparation.commandLine exited with 2.'}])),
])
def test_a_completed_slurm_job_succeeds_only_with_exit_code_0(record, slurm_exit, expected):
    assert mapping.outcome('COMPLETED', None, record, slurm_exit, 'n[1-2]') == expected


@pytest.mark.parametrize('nodes, where', [('n1', ' on n1'), ('(null)', ''), ('None', ''), (None, ''), ('', '')])
def test_the_messages_name_the_nodes_slurm_gave(nodes, where):
    assert mapping.outcome('FAILED', None, ('main', 1), None, nodes)[2] == [
        {'code': 'NonZeroExitCode', 'message': 'The job exited with code 1 (Slurm FAILED{}).'.format(where)}]
    assert mapping.outcome('OUT_OF_MEMORY', None, None, '0:9', nodes)[2] == [
        {'code': 'OutOfMemory', 'message': 'The job ran out of memory (Slurm OUT_OF_MEMORY{}).'.format(where)}]
    assert mapping.outcome('SPECIAL_EXIT', None, None, None, nodes)[2] == [
        {'code': 'SlurmJobFailed', 'message': 'The Slurm job ended SPECIAL_EXIT{}.'.format(where)}]


@pytest.mark.parametrize('state, code, words', [
    ('BOOT_FAIL', 'NodeBootFailed', 'A node of the job failed to boot (Slurm BOOT_FAIL on n1).'),
    ('PREEMPTED', 'JobPreempted', 'Slurm preempted the job (PREEMPTED on n1).'),
    ('DEADLINE', 'DeadlineReached', 'Slurm ended the job at its deadline (DEADLINE on n1).'),
    ('NODE_FAIL', 'NodeFailure', 'A node of the job failed (Slurm NODE_FAIL on n1); resubmit the job to run it on '
                                 'the remaining nodes.'),
    ('TIMEOUT', 'MaxWallClockTimeExceeded', 'The job ran longer than its constraints.maxWallClockTime.'),
])
def test_each_slurm_failure_state_is_its_batch_ai_error(state, code, words):
    assert mapping.outcome(state, None, None, '0:15', 'n1') == ('failed', 143, [{'code': code, 'message': words}])


def test_the_services_own_reason_wins_over_the_slurm_state():
    assert mapping.outcome('COMPLETED', 'deleted', ('main', 0), None) == (
        'failed', 0, [{'code': 'JobDeleted', 'message': 'The job was deleted while it was running.'}])
    assert mapping.outcome('CANCELLED', None, None, '0:15')[2][0]['message'] == (
        'The job was cancelled in Slurm, not through the service (scancel or an administrator).')


@pytest.mark.parametrize('wall_clock, minutes', [('PT10S', 1), ('PT1M', 1), ('PT1M1S', 2), ('PT2H', 120)])
def test_the_time_limit_is_whole_minutes_rounded_up_and_at_least_one(wall_clock, minutes):
    options = mapping.resource_options({'nodeCount': 1, 'customToolkitSettings': {},
                                        'constraints': {'maxWallClockTime': wall_clock}}, 'customToolkitSettings', 0)
    assert options == ['--nodes=1', '--ntasks-per-node=1', '--no-requeue', '--export=ALL',
                       '--time={}'.format(minutes)]


def test_tasks_per_node_is_the_process_count_spread_over_the_nodes_rounded_up():
    def per_node(nodes, processes):
        props = {'nodeCount': nodes, 'customMpiSettings': {'commandLine': 'x', 'processCount': processes}}
        return [o for o in mapping.resource_options(props, 'customMpiSettings', 0) if 'ntasks' in o]
    assert per_node(2, 4) == ['--ntasks-per-node=2'] and per_node(3, 4) == ['--ntasks-per-node=2']
    assert per_node(4, 4) == ['--ntasks-per-node=1'] and per_node(1, 5) == ['--ntasks-per-node=5']


def test_a_single_job_writes_its_output_where_batch_ai_puts_it():
    options = mapping.sbatch_options({'nodeCount': 1, 'customToolkitSettings': {}}, 'customToolkitSettings', 0,
                                     'batchai-x', '/o', '/w')
    assert options == ['--job-name=batchai-x', '--nodes=1', '--ntasks-per-node=1', '--no-requeue', '--export=ALL',
                       '--output=/o/stdout.txt', '--error=/o/stderr.txt', '--open-mode=append', '--chdir=/w']


def test_an_array_is_refused_a_folder_with_a_backslash():
    with pytest.raises(ValueError, match="^an array's output pattern cannot be written in a folder whose path "
                                         'holds a backslash$'):
        mapping.array_options([], 'a', '/d/a\\b', 2)
    assert mapping.array_options(['--nodes=1'], 'a', '/d/a', 1) == [
        '--job-name=a', '--array=0-0', '--nodes=1', '--output=/d/a/%a.out', '--error=/d/a/%a.err',
        '--open-mode=append', '--chdir=/d/a']


def test_the_array_script_runs_the_script_of_its_task(tmp_path):
    array_dir = tmp_path / "array dir's"
    array_dir.mkdir()
    for i in range(3):
        (array_dir / '{}.sh'.format(i)).write_text('echo task {} "$@"; exit {}\n'.format(i, 10 + i))
    script = tmp_path / 'array.sh'
    script.write_text(mapping.array_script(str(array_dir)))
    assert script.read_text().startswith('#!/bin/bash\n')
    ran = subprocess.run(['bash', str(script)], env={'SLURM_ARRAY_TASK_ID': '2', 'PATH': '/usr/bin:/bin'},
                         capture_output=True, text=True, check=False)
    assert (ran.stdout, ran.returncode) == ('task 2\n', 12)


def test_launch_settings_carry_the_nodes_and_the_toolkit_only():
    from types import SimpleNamespace
    props = {'nodeCount': 2, 'pyTorchSettings': {'pythonScriptFilePath': 'a.py'},
             'environmentVariables': [{'name': 'A', 'value': 'b'}],
             'secrets': [{'name': 'S', 'value': 'secret'}]}
    layout = SimpleNamespace(host_file='/j/hosts', shared_dir='/j/shared')
    assert json.loads(mapping.launch_settings(props, 'pyTorchSettings', layout)) == {
        'props': {'nodeCount': 2, 'pyTorchSettings': {'pythonScriptFilePath': 'a.py'}},
        'toolkit': 'pyTorchSettings', 'host_file': '/j/hosts', 'shared': '/j/shared'}


@pytest.mark.parametrize('name, kept', [('A', True), ('_x1', True), ('1A', False), ('A-B', False), ('A B', False),
                                        ('BASHOPTS', False), ('EUID', False), ('PPID', False), ('SHELLOPTS', False),
                                        ('BASH_VERSINFO', False), ('UID', False), ('UIDX', True), ('', False)])
def test_the_environment_file_leaves_out_names_bash_cannot_hold(name, kept):
    lines = mapping.environment_file({name: 'v', 'Z': 'z'}).splitlines()
    assert lines == sorted(['export Z=z'] + (['export {}=v'.format(name)] if kept else []))
